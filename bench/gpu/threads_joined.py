"""Checks an nb trace of bench/gpu/threads_join.cu: every device record is
joined, and joined to the right call (kernel: the host call's grid equals
the kernel's; memset and copy: the host call's bytes equal the record's,
and each (kind, bytes) is unique by construction).
python3 threads_joined.py TRACE THREADS ITERS"""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
threads, iters = int(sys.argv[2]), int(sys.argv[3])
ev = t["traceEvents"]
host = {e["args"]["External id"]: e for e in ev
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "External id" in e.get("args", {})}
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
c = collections.Counter()
tids = collections.defaultdict(set)
for d in dev:
    a = d["args"]
    if d["cat"] == "kernel" and not d["name"].startswith("tagged"):
        continue
    c[d["cat"]] += 1
    h = host.get(a.get("External id"))
    if h is None:
        c[d["cat"] + " unjoined"] += 1
        continue
    ha = h["args"]
    if d["cat"] == "kernel":
        ok = ha.get("grid") == a.get("grid")
        if ok:
            tids[a["grid"][1]].add(h["tid"])
    else:
        ok = ha.get("bytes") == a.get("bytes")
    if not ok:
        c[d["cat"] + " wrong call"] += 1
want = threads * iters
for k in ("kernel", "gpu_memset", "gpu_memcpy"):
    print(f"{k}: {c[k]} of {want} seen, unjoined {c[k + ' unjoined']}, joined to a wrong call {c[k + ' wrong call']}")
one_tid = all(len(v) == 1 for v in tids.values()) and len({next(iter(v)) for v in tids.values()}) == len(tids)
print(f"host threads per program thread: {'one each, distinct' if one_tid else dict(tids)}")
ok = all(c[k] == want and c[k + " unjoined"] == 0 and c[k + " wrong call"] == 0
         for k in ("kernel", "gpu_memset", "gpu_memcpy")) and one_tid and len(tids) == threads
print("PASS" if ok else "FAIL", "every device record joined to its own call")
