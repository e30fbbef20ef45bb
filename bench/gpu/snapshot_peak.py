"""Checks an nb memory snapshot against torch's own peak (issue 4):
  - the peak of the active-memory curve (allocations live at once, replayed
    from device_traces as MemoryViz's Active Memory Timeline does) within 5%
    of TORCH_PEAK (torch.cuda.max_memory_allocated() of an unprofiled run);
  - the largest allocations' stacks include a Python file:line.

    python3 bench/gpu/snapshot_peak.py SNAPSHOT.pickle TORCH_PEAK
"""
import pickle, sys

snap = pickle.load(open(sys.argv[1], "rb"))
torch_peak = int(sys.argv[2])
ok = True
for dev, trace in enumerate(snap["device_traces"]):
    if not trace:
        continue
    live, cur, peak = {}, 0, 0
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            cur += e["size"]
            peak = max(peak, cur)
        elif e["action"] == "free_completed" and e["addr"] in live:
            cur -= live.pop(e["addr"])
    ratio = peak / torch_peak if torch_peak else 0
    within = abs(ratio - 1) <= 0.05
    ok &= within
    print(f"device {dev}: {len(trace)} entries, active peak {peak} B, torch peak {torch_peak} B, "
          f"ratio {ratio:.4f}", "PASS" if within else "FAIL")
    allocs = sorted((e for e in trace if e["action"] == "alloc"), key=lambda e: -e["size"])[:5]
    for e in allocs:
        py = [f for f in e["frames"] if f["filename"].endswith(".py") and f["line"] > 0]
        where = f"{py[0]['filename']}:{py[0]['line']} {py[0]['name']}" if py else "no Python frame"
        print(f"  {e['size']:>12} B  native frames {len(e['frames']) - len(py)}, Python {len(py)}: {where}")
        ok &= bool(py)
print("PASS" if ok else "FAIL")
