"""What a recording window holds: its ProfilerStep spans, and each kernel
assigned to a step by the host call that launched it (through the trace's
External id). A window of exactly its steps has every kernel inside a span
and the same number of kernels per step.

    python3 bench/gpu/window_check.py TRACE.json [EXPECTED_STEPS]
"""
import collections, json, sys

t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
spans = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev if str(e.get("name", "")).startswith("ProfilerStep#"))
host = {e["args"]["External id"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and "External id" in e.get("args", {})}
per = collections.Counter()
outside = 0
kernels = [e for e in ev if e.get("cat") == "kernel"]
for k in kernels:
    h = host.get(k["args"].get("External id"))
    if h is None:
        outside += 1
        continue
    s = next((n for a, b, n in spans if a <= h["ts"] <= b), None)
    if s is None:
        outside += 1
    else:
        per[s] += 1
names = [n for _, _, n in spans]
print(f"{sys.argv[1]}: {len(spans)} ProfilerStep spans {names[:1]}..{names[-1:]}, {len(kernels)} kernels, "
      f"per step {sorted(set(per.values()))}, outside any step {outside}")
ok = outside == 0 and len(set(per.values())) == 1
if len(sys.argv) > 2:
    ok = ok and len(spans) == int(sys.argv[2])
print("PASS" if ok else "FAIL")
