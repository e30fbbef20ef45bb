"""Where a Chrome trace's bytes go: events and bytes per (ph, cat).

    python3 bench/gpu/trace_sizes.py TRACE.json
"""
import collections, json, os, sys

path = sys.argv[1]
ev = json.load(open(path))["traceEvents"]
n, b = collections.Counter(), collections.Counter()
for e in ev:
    k = (e.get("ph"), e.get("cat", ""))
    n[k] += 1
    b[k] += len(json.dumps(e, separators=(",", ":")))
print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, {len(ev)} events")
for k, _ in b.most_common():
    print(f"  {k[0]} {k[1]:<14} {n[k]:>9} events {b[k] / 1e6:8.1f} MB  {b[k] // n[k]:>6} B/event")
