"""The surviving allocation of bench/gpu/leak.cu names its leaking line.

    python3 bench/gpu/leak_check.py SNAPSHOT.pickle bench/gpu/leak.cu
"""
import pickle, sys

snap = pickle.load(open(sys.argv[1], "rb"))
src = open(sys.argv[2]).read().splitlines()
line = next(i + 1 for i, s in enumerate(src) if "LEAK LINE" in s)
live = [s for s in snap["segments"] if s.get("device", 0) >= 0]
print(f"{len(live)} live segments; leak line leak.cu:{line}")
ok = False
for s in live:
    for b in s["blocks"]:
        frames = [(f["name"], f["filename"].rsplit("/", 1)[-1], f["line"]) for f in b.get("frames", [])]
        print(s["total_size"], b["state"], frames[:4])
        ok |= b["state"] == "active_allocated" and any(fn == "leak.cu" and ln == line for _, fn, ln in frames)
print("PASS" if ok and len(live) == 1 else "FAIL")
