"""Which CUPTI correlation id device work carries, on real CUPTI: for each
host call joined to device work, did the matched id equal the first id CUPTI
handed out during the call (the outermost traced API: the runtime call) or
the last (the innermost: the driver call inside it)? Needs an nb trace
written with NB_LOG=debug.   python3 which_corr.py TRACE"""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
c = collections.Counter()
for e in t["traceEvents"]:
    a = e.get("args", {})
    if e.get("ph") != "X" or "correlation" not in a or "cupti first" not in a:
        continue
    same = a["cupti first"] == a["cupti last"]
    which = "only id" if same else ("first (outer)" if a["correlation"] == a["cupti first"] else "last (inner)")
    c[(e["cat"], e["name"], which)] += 1
for (cat, name, which), n in sorted(c.items(), key=lambda kv: -kv[1])[:12]:
    print(f"{n:6d}  {cat:12s} {name:28s} matched {which}")
