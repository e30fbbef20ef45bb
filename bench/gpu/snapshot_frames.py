"""How many allocations in an nb snapshot carry Python frames from SCRIPT,
and the Python frames of the largest ones.

    python3 bench/gpu/snapshot_frames.py SNAPSHOT.pickle SCRIPT_NAME
"""
import pickle, sys

snap = pickle.load(open(sys.argv[1], "rb"))
script = sys.argv[2]
allocs = [e for t in snap["device_traces"] for e in t if e["action"] == "alloc"]
with_py = [e for e in allocs if any(f["filename"].endswith(script) for f in e["frames"])]
print(f"{len(allocs)} allocations, {len(with_py)} with frames of {script}")
for e in sorted(allocs, key=lambda e: -e["size"])[:3]:
    print(e["size"], [(f["name"], f["line"]) for f in e["frames"] if f["filename"].endswith(".py")])
print("PASS" if allocs and len(with_py) == len(allocs) else "FAIL")
