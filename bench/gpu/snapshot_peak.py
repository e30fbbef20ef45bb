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
    # Backwards from the final state, as MemoryViz does, so a trace whose
    # oldest entries were pushed out of the ring (NB_MEM_MAX_ENTRIES) still
    # counts what was allocated before it began.
    cur = sum(b["size"] for seg in snap["segments"] if seg["device"] == dev
              for b in seg["blocks"] if b["state"] == "active_allocated")
    peak = cur
    for e in reversed(trace):
        if e["action"] == "alloc":
            cur -= e["size"]
        elif e["action"] == "free_completed":
            cur += e["size"]
        peak = max(peak, cur)
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
