"""nb's source table against torch.profiler's with_stack on the same steps:
nb's device self time by launching line (the "sources" of a trace's
nbTable, NB_STACKS=launch) and torch's export_stacks(..., "self_cuda_time_total")
grouped by each stack's innermost Python frame, matched by file name and
line. Prints the largest lines of both with their ratio, and the share of
each side's device time that the matched lines hold.

    python3 bench/workloads/source_check.py NB_TRACE.json.gz TORCH.stacks [--top 12]
"""
import gzip
import json
import os
import re
import sys


def nb_lines(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    out = {}
    for r in doc["nbTable"].get("sources", []):
        m = re.match(r"(.*\.py):(\d+) (.*)$", r["location"])
        if not m:
            continue
        key = (os.path.basename(m[1]), int(m[2]))
        name, ns = out.get(key, (m[3], 0))
        out[key] = (name, ns + r["deviceSelfNs"])
    return out


def torch_lines(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, weight = line.rpartition(" ")
            frames = [fr for fr in stack.split(";") if re.search(r"\.py\(\d+\): ", fr)]
            if not frames:
                continue
            m = re.match(r"(.*\.py)\((\d+)\): (.*)$", frames[-1])  # export_stacks: root first
            key = (os.path.basename(m[1]), int(m[2]))
            name, us = out.get(key, (m[3], 0.0))
            out[key] = (name, us + float(weight))
    return {k: (n, us * 1000.0) for k, (n, us) in out.items()}


def main():
    nb = nb_lines(sys.argv[1])
    torch = torch_lines(sys.argv[2])
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 12
    nb_sum, torch_sum = sum(v[1] for v in nb.values()), sum(v[1] for v in torch.values())
    keys = sorted(set(nb) | set(torch), key=lambda k: -max(nb.get(k, ("", 0))[1], torch.get(k, ("", 0))[1]))
    print(f"nb: {len(nb)} lines, {nb_sum / 1e6:.3f} ms; torch: {len(torch)} lines, {torch_sum / 1e6:.3f} ms")
    print("| line | function | nb self device ms | torch self CUDA ms | nb / torch |")
    print("| --- | --- | --- | --- | --- |")
    for k in keys[:top]:
        a, b = nb.get(k, ("", 0))[1], torch.get(k, ("", 0))[1]
        name = (nb.get(k) or torch.get(k))[0]
        print(f"| {k[0]}:{k[1]} | {name} | {a / 1e6:.3f} | {b / 1e6:.3f} | {a / b if b else float('inf'):.3f} |")
    both = [k for k in keys if k in nb and k in torch]
    print(f"matched lines: {len(both)}; they hold {sum(nb[k][1] for k in both) / nb_sum:.1%} of nb's and "
          f"{sum(torch[k][1] for k in both) / torch_sum:.1%} of torch's device time")


if __name__ == "__main__":
    main()
