"""Device records in an nb trace, and how many are joined to their host call
with a bound arrow (python3 joined.py TRACE [EXPECTED_MIN_KERNELS])."""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
dev = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
joined = sum("External id" in e.get("args", {}) for e in dev)
flows = collections.Counter(e["ph"] for e in t["traceEvents"] if e.get("ph") in ("s", "f"))
back = 0
starts = {e["id"]: e["ts"] for e in t["traceEvents"] if e.get("ph") == "s"}
for e in t["traceEvents"]:
    if e.get("ph") == "f" and e["ts"] < starts.get(e["id"], -1):
        back += 1
kernels = collections.Counter(e["name"][:60] for e in dev if e["cat"] == "kernel")
print(f"device records {len(dev)}, joined {joined}, flows s={flows['s']} f={flows['f']}, backwards {back}")
for name, n in kernels.most_common(6):
    print(f"  {n:5d}  {name}")
ok = len(dev) > 0 and joined == len(dev) and flows["s"] == flows["f"] == joined and back == 0
if len(sys.argv) > 2:
    ok = ok and sum(kernels.values()) >= int(sys.argv[2])
print("PASS" if ok else "FAIL", "all device records joined")
