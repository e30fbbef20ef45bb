"""Runs bench/decode_loop.py (the seed's decode loop, workload unchanged) and
also prints every timed loop, to tell a process that is slow throughout from
one slowed by a few outliers. The figures we quote come from decode_loop.py.

    python3 bench/gpu/decode_loop_all.py bench/decode_loop.py"""
import sys
src = open(sys.argv[1]).read()
# CPU time the hypervisor took from this VM (steal) and this process's
# involuntary context switches, over the timed loops only: a slow process on
# a shared machine shows here, whatever it runs under.
hook = "ts = []"
assert src.count(hook) == 1, "decode_loop.py changed: update this wrapper"
src = src.replace(hook, "ts = []; _nb_before = _nb_probe()")


def _nb_probe():
    import resource
    with open("/proc/stat") as f:
        steal = int(f.readline().split()[8])  # cpu user nice system idle iowait irq softirq steal
    return steal, resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


g = {"__name__": "__main__", "_nb_probe": _nb_probe}
exec(compile(src, sys.argv[1], "exec"), g)
after = _nb_probe()
print("loops", " ".join(f"{t:.4f}" for t in g["ts"]),
      "steal_ticks", after[0] - g["_nb_before"][0], "invol_cs", after[1] - g["_nb_before"][1], flush=True)
