"""Runs a Python script in this process (on its main thread), then prints
the CPU time of the process's six busiest threads (nb's is "nb-collector"),
what the cgroup's CPU controller says (its quota, and how often and how long
it throttled the group while the script ran; "absent" where the file or key
is missing), the hypervisor's steal time, and the page faults and
context switches of the script's run (the process's, and the main
thread's): whether a profiled process is slow because its threads compete
for a CPU, or fault, rather than because of the calls' own cost.

    [LD_PRELOAD=libnb_shim.so NB_STACKS=all] python3 bench/gpu/thread_cpu.py SCRIPT [ARGS...]
"""
import os, resource, runpy, sys

TICK = os.sysconf("SC_CLK_TCK")


def cgroup_stat():
    # {} when there is no cpu.stat; a key it lacks prints as "absent".
    out = {}
    try:
        for line in open("/sys/fs/cgroup/cpu.stat"):
            k, v = line.split()
            out[k] = int(v)
    except OSError:
        pass
    return out


def steal():
    # The hypervisor's steal time, all CPUs, in clock ticks (/proc/stat).
    return int(open("/proc/stat").readline().split()[8])


def threads():
    rows = []
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        f = stat[stat.rindex(")") + 2:].split()
        rows.append((name, (int(f[11]) + int(f[12])) / TICK, int(f[36])))  # utime+stime, last CPU
    return rows


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"minflt": r.ru_minflt, "majflt": r.ru_majflt, "nvcsw": r.ru_nvcsw, "nivcsw": r.ru_nivcsw}


def switches():
    # Context switches of the thread that runs the script (this one; the
    # main thread, whose task id is the process's).
    out = {}
    for line in open(f"/proc/self/task/{os.getpid()}/status"):
        k, _, v = line.partition(":")
        if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            out[k.split("_")[0]] = int(v)
    return out


before, used, sw, stolen = cgroup_stat(), usage(), switches(), steal()
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
after, used_after, sw_after, stolen_after = cgroup_stat(), usage(), switches(), steal()
try:
    quota = open("/sys/fs/cgroup/cpu.max").read().strip()
except OSError:
    quota = "?"
busy = sorted(threads(), key=lambda r: -r[1])
print("threads_cpu_s", " ".join(f"{n}:{s:.2f}@{cpu}" for n, s, cpu in busy[:6]), flush=True)
print("cgroup cpu.max", quota, "throttled",
      {k: after[k] - before[k] if k in after and k in before else "absent"
       for k in ("nr_periods", "nr_throttled", "throttled_usec", "usage_usec")},
      "steal_s", (stolen_after - stolen) / TICK,
      "nproc", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)), flush=True)
print("process", {k: used_after[k] - used[k] for k in used}, "main thread switches",
      {k: sw_after[k] - sw[k] for k in sw}, flush=True)
