#!/usr/bin/env python3
"""Writes the order join's input, as recorded in an nb trace, one line each:

  H host_id kind start_ns end_ns name gx gy gz bx by bz bytes tid
  D correlation kind start_ns end_ns name gx gy gz bx by bz bytes graph

kind: L launch, G graph launch, S set, C copy; name: a number per kernel
name (0: unknown), the same for a launch and its kernel's record; graph: 1
for work a graph launch made. Host calls in start order, device records in
correlation order. test/unit/test_order_join.cpp replays such a file
through OrderJoin, so that the join can be checked, and changed, against
records a real device made.

  join_events.py TRACE.json[.gz] [--from-step N --to-step M] > EVENTS
"""
import argparse
import gzip
import json
import subprocess
import sys


def kind_of(call):
    if "GraphLaunch" in call:
        return "G"
    if "Launch" in call:
        return "L"
    if "Memset" in call:
        return "S"
    if "Memcpy" in call:
        return "C"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--from-step", type=int, help="only calls in ProfilerStep#N .. #M")
    ap.add_argument("--to-step", type=int)
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith(".gz") else open
    with opener(a.trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    lo, hi = float("-inf"), float("inf")
    if a.from_step is not None:
        spans = {e["name"]: e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"}
        lo = spans[f"ProfilerStep#{a.from_step}"]["ts"]
        last = spans[f"ProfilerStep#{a.to_step if a.to_step is not None else a.from_step}"]
        hi = last["ts"] + last["dur"]
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"
             and kind_of(e["name"]) and lo <= e["ts"] <= hi]
    calls.sort(key=lambda e: e["ts"])
    mangled = sorted({e["args"]["kernel"] for e in calls if e.get("args", {}).get("kernel")})
    shown = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout
    demangled = dict(zip(mangled, shown.split("\n")))
    ids = {}

    def name_id(text):
        return ids.setdefault(text, len(ids) + 1) if text else 0

    def dims(args, key):
        return " ".join(str(v) for v in args.get(key, [0, 0, 0]))

    out = []
    graph_ids, kept = set(), set()
    for n, e in enumerate(calls, 1):
        args = e.get("args", {})
        k = kind_of(e["name"])
        corr = args.get("correlation")
        if corr:
            kept.add(corr)
            if k == "G":
                graph_ids.add(corr)
        name = name_id(demangled.get(args.get("kernel", ""), ""))
        out.append(f"H {n} {k} {round(e['ts'] * 1000)} {round((e['ts'] + e['dur']) * 1000)} {name} "
                   f"{dims(args, 'grid')} {dims(args, 'block')} {args.get('bytes', 0)} {e['tid']}")
    records = []
    for e in events:
        k = {"kernel": "L", "gpu_memset": "S", "gpu_memcpy": "C"}.get(e.get("cat"))
        args = e.get("args", {})
        corr = args.get("correlation")
        if k is None or corr not in kept:  # only the work of the calls kept
            continue
        name = name_id(e["name"]) if k == "L" else 0
        records.append((corr, f"D {corr} {k} {round(e['ts'] * 1000)} {round((e['ts'] + e['dur']) * 1000)} {name} "
                              f"{dims(args, 'grid')} {dims(args, 'block')} {args.get('bytes', 0)} "
                              f"{1 if corr in graph_ids else 0}"))
    records.sort(key=lambda r: r[0])
    out.extend(r[1] for r in records)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
