"""Checks an nb trace of bench/gpu/graph_join.cu: each graph launch's two
kernels and one set are there, carry a graph id, and are joined to a
cudaGraphLaunch (each launch to exactly three records); each `between`
kernel is joined to a plain launch.   python3 graph_joined.py TRACE LAUNCHES"""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
launches = int(sys.argv[2])
ev = t["traceEvents"]
host = {e["args"]["External id"]: e for e in ev
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "External id" in e.get("args", {})}
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
per_launch = collections.Counter()
c = collections.Counter()
for d in dev:
    a = d["args"]
    h = host.get(a.get("External id"))
    graph = "graph id" in a
    kind = "between" if d["name"].startswith("between") else ("graph node" if graph else "other")
    c[kind] += 1
    if h is None:
        c[kind + " unjoined"] += 1
        continue
    if graph:
        ok = h["name"] in ("cudaGraphLaunch", "cuGraphLaunch")
        per_launch[h["args"]["External id"]] += 1
    else:
        ok = "Launch" in h["name"]
    if not ok:
        c[kind + " joined to " + h["name"]] += 1
print(dict(c))
dist = collections.Counter(per_launch.values())
print("records per graph launch:", dict(dist))
ok = (c["graph node"] == 3 * launches and c["between"] == launches and c["graph node unjoined"] == 0
      and c["between unjoined"] == 0 and dist == {3: launches} and len(c) == 2)
print("PASS" if ok else "FAIL", "graph work joined to its graph launch")
