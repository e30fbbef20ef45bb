"""Runs bench/decode_loop.py (workload unchanged) with the process's threads
placed on chosen cores just before the timed loops, and reports every timed
loop plus the CPU time each thread used over them. The question it answers:
is the slowdown under CUPTI the main thread's own extra work, or another
thread (CUPTI's worker, nb's collector) competing for its core or for the
other hyperthread of it?

    python3 bench/gpu/thread_placement.py bench/decode_loop.py MODE

MODE: free    leave placement to the kernel
      apart   main thread on one CPU, every other thread on CPUs of other cores
      sibling main thread on one CPU, every other thread on its hyperthread
              sibling (the same CPU where the machine has no SMT)
Prints 'loops ...' and 'threads name=cpu_s@cpu ...' lines."""
import os, sys

SRC, MODE = sys.argv[1], sys.argv[2]
TICK = os.sysconf("SC_CLK_TCK")


def threads():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        # fields after the name: state is rest[0]; utime rest[11], stime rest[12], processor rest[36]
        out[int(tid)] = (name, (int(rest[11]) + int(rest[12])) / TICK, int(rest[36]))
    return out


def siblings(cpu):
    with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
        spec = f.read().strip()
    cpus = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        cpus.update(range(int(a), int(b or a) + 1))
    return cpus


def place():
    if MODE == "free":
        return
    allowed = sorted(os.sched_getaffinity(0))
    main_cpu = allowed[len(allowed) // 2]
    sib = siblings(main_cpu)
    if MODE == "apart":
        others = set(allowed) - sib
    elif MODE == "sibling":
        others = (sib - {main_cpu}) or {main_cpu}
    else:
        raise SystemExit("MODE: free, apart or sibling")
    me = os.getpid()
    for tid in threads():
        os.sched_setaffinity(tid, {main_cpu} if tid == me else others)
    print("placement main", main_cpu, "others", ",".join(map(str, sorted(others))), flush=True)


src = open(SRC).read()
hook = "ts = []"
assert src.count(hook) == 1, "decode_loop.py changed: update this wrapper"
src = src.replace(hook, "_nb_place(); ts = []; _nb_before = _nb_threads()")
g = {"__name__": "__main__", "_nb_place": place, "_nb_threads": threads}
exec(compile(src, SRC, "exec"), g)
after = threads()
before = g["_nb_before"]
print("loops", " ".join(f"{t:.4f}" for t in g["ts"]), flush=True)
used = []
for tid, (name, cpu_s, cpu) in after.items():
    d = cpu_s - before.get(tid, (name, 0.0, cpu))[1]
    if d > 0:
        used.append((d, f"{name.replace(' ', '_')}={d:.2f}@{cpu}"))
print("threads", " ".join(u for _, u in sorted(used, reverse=True)), flush=True)
