"""What CUPTI's correlation ids on device records say without any join
(an nb trace written with NB_CUPTI_JOIN=none): are they set, one per host
call, dense, and in the order of the host calls that made the work? Prints
how many device records carry an id, the gaps between consecutive ids,
whether ids rise with start time on each stream, and where the device work
in id order and the host calls that make work, in start order, differ
(kernel name and grid, or bytes of a copy or set). Host kernel names are
mangled, CUPTI's are demangled by nb: c++filt brings them together.

    python3 corr_order.py TRACE
"""
import collections
import json
import subprocess
import sys

t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
host = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
ids = sorted(e["args"].get("correlation", 0) for e in dev)
print(f"device records {len(dev)}, with an id {sum(1 for i in ids if i)}, distinct ids {len(set(ids))}")
print("gaps between consecutive ids:", dict(collections.Counter(b - a for a, b in zip(ids, ids[1:]))))
per_stream = collections.defaultdict(list)
for e in sorted(dev, key=lambda e: e["ts"]):
    per_stream[(e["pid"], e["tid"])].append(e["args"].get("correlation", 0))
rising = sum(all(a < b for a, b in zip(v, v[1:])) for v in per_stream.values())
print(f"streams {len(per_stream)}, ids rising with start time on {rising}")

names = sorted({e["args"]["kernel"] for e in host if "kernel" in e["args"]})
out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
demangled = dict(zip(names, out))


def hsig(e):
    a = e["args"]
    if "kernel" in a:
        return ("kernel", demangled[a["kernel"]], tuple(a["grid"]))
    if "kind" in a and "bytes" in a and "src" in a:
        return ("copy", a["bytes"])
    if "bytes" in a and "dst" in a:
        return ("set", a["bytes"])
    return None


def dsig(e):
    k = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "set"}[e["cat"]]
    return (k, e["name"], tuple(e["args"]["grid"])) if k == "kernel" else (k, e["args"].get("bytes"))


hs = [(e, s) for e, s in ((e, hsig(e)) for e in sorted(host, key=lambda e: e["ts"])) if s]
ds = sorted(dev, key=lambda e: e["args"].get("correlation", 0))
print(f"host calls that make work {len(hs)}, device records {len(ds)}")
bad = 0
for i, ((h, s), d) in enumerate(zip(hs, ds)):
    if s != dsig(d):
        bad += 1
        if bad <= 6:
            print(f"  position {i}: host {s[:2]} (thread {h['tid']}, ts {h['ts']}) vs device {dsig(d)[:2]}")
print("positions where the two orders differ:", bad)
