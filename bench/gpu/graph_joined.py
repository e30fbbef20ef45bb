"""Checks an nb trace of bench/gpu/graph_join.cu: each graph launch's two
kernels and one set are there, carry a graph id, and are joined to a
cudaGraphLaunch (each launch to exactly three records); each `between`
kernel is joined to a plain launch; the eager copy of the captured work
(two kernels, a set) is joined to its own calls, made after the capture
ended, not to the captured calls (which carry "captured" and get no
device record).   python3 graph_joined.py TRACE LAUNCHES"""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
launches = int(sys.argv[2])
ev = t["traceEvents"]
calls = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
         and "External id" in e.get("args", {})]
host = {e["args"]["External id"]: e for e in calls}
captured = [e for e in calls if e["args"].get("captured")]
end_capture = [e["ts"] for e in calls if e["name"] in ("cudaStreamEndCapture", "cuStreamEndCapture")]
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
per_launch = collections.Counter()
c = collections.Counter()
for d in dev:
    a = d["args"]
    h = host.get(a.get("External id"))
    graph = "graph id" in a
    kind = "between" if d["name"].startswith("between") else ("graph node" if graph else "eager copy")
    c[kind] += 1
    if h is None:
        c[kind + " unjoined"] += 1
        continue
    if graph:
        ok = h["name"] in ("cudaGraphLaunch", "cuGraphLaunch")
        per_launch[h["args"]["External id"]] += 1
    elif kind == "between":
        ok = "Launch" in h["name"]
    else:
        ok = not h["args"].get("captured") and bool(end_capture) and h["ts"] > end_capture[0]
    if not ok:
        c[kind + " joined to " + h["name"] + (" (captured)" if h["args"].get("captured") else "")] += 1
print(dict(c))
dist = collections.Counter(per_launch.values())
print("records per graph launch:", dict(dist), "captured calls:", len(captured))
ok = (c["graph node"] == 3 * launches and c["between"] == launches and c["eager copy"] == 3
      and c["graph node unjoined"] == 0 and c["between unjoined"] == 0 and c["eager copy unjoined"] == 0
      and dist == {3: launches} and len(c) == 3 and len(captured) == 3)
print("PASS" if ok else "FAIL", "graph work joined to its graph launch, the eager copy to its own calls")
