"""Checks an nb trace of a program that captures CUDA graphs from streams
(bench/gpu/torch_graph.py, bench/gpu/graph_join.cu): every device record
joined; work carrying a graph id joined to a graph launch; other work to a
call that was not captured; calls made between a capture's begin and end
on the capturing thread that make device work carry "captured" (else the
capture went unseen).   python3 capture_joined.py TRACE"""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
calls = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
         and "External id" in e.get("args", {})]
host = {e["args"]["External id"]: e for e in calls}
work_names = ("Launch", "Memcpy", "Memset", "memcpy", "memset")
# Capture windows per thread: from a begin to the next end.
windows = collections.defaultdict(list)
open_at = {}
for e in sorted(calls, key=lambda e: e["ts"]):
    if "BeginCapture" in e["name"]:
        open_at[e["tid"]] = e["ts"]
    elif "EndCapture" in e["name"] and e["tid"] in open_at:
        windows[e["tid"]].append((open_at.pop(e["tid"]), e["ts"]))
inside = [e for e in calls if any(a < e["ts"] < b for a, b in windows[e["tid"]])
          and any(w in e["name"] for w in work_names) and "GraphLaunch" not in e["name"]
          and "HostFunc" not in e["name"] and e["args"].get("result", 0) == 0]
unmarked = [e for e in inside if not e["args"].get("captured")]
captured = [e for e in calls if e["args"].get("captured")]
c = collections.Counter()
for d in (e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")):
    graph = "graph id" in d["args"]
    kind = "graph work" if graph else "other work"
    c[kind] += 1
    h = host.get(d["args"].get("External id"))
    if h is None:
        c[kind + " unjoined"] += 1
    elif graph and "GraphLaunch" not in h["name"]:
        c["graph work joined to " + h["name"]] += 1
    elif not graph and h["args"].get("captured"):
        c["other work joined to a captured call"] += 1
print(dict(c))
print("captures", sum(len(w) for w in windows.values()), "captured calls", len(captured),
      "work calls inside captures not marked", len(unmarked))
ok = (c["graph work"] > 0 and len(captured) > 0 and not unmarked
      and set(c) <= {"graph work", "other work"})
print("PASS" if ok else "FAIL", "captured calls marked, graph work to its launches, the rest to its own calls")
