"""nb's source table against torch.profiler's with_stack on the same steps:
nb's device self time by launching line (the "sources" of a trace's
nbTable, NB_STACKS=launch) and torch's export_stacks(..., "self_cuda_time_total")
grouped by each stack's innermost Python frame, matched by file name and
function (torch names a frame by its function's first line, nb by the
line that launched). Prints the largest of both with each one's share of
its side's device time, and the share the matched ones hold.

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
        key = (os.path.basename(m[1]), m[3])
        lines, ns = out.get(key, (set(), 0))
        out[key] = (lines | {int(m[2])}, ns + r["deviceSelfNs"])
    return out


def torch_lines(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, weight = line.rpartition(" ")
            # Its frames: "file.py(LINE):_function" (spaces made '_'), among
            # modules and ops; root first.
            frames = [fr for fr in stack.split(";") if re.search(r"\.py\(\d+\):", fr)]
            if not frames:
                continue
            m = re.match(r"(.*\.py)\((\d+)\):_?(.*)$", frames[-1])
            key = (os.path.basename(m[1]), m[3])
            lines, us = out.get(key, (set(), 0.0))
            out[key] = (lines | {int(m[2])}, us + float(weight))
    return {k: (n, us * 1000.0) for k, (n, us) in out.items()}


def main():
    nb = nb_lines(sys.argv[1])
    torch = torch_lines(sys.argv[2])
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 12
    nb_sum, torch_sum = sum(v[1] for v in nb.values()), sum(v[1] for v in torch.values())
    keys = sorted(set(nb) | set(torch), key=lambda k: -max(nb.get(k, (set(), 0))[1], torch.get(k, (set(), 0))[1]))
    print(f"nb: {len(nb)} lines, {nb_sum / 1e6:.3f} ms; torch: {len(torch)} lines, {torch_sum / 1e6:.3f} ms")
    print("| file | function | nb's lines | torch's lines | nb self device ms | nb share | torch self CUDA ms | torch share |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for k in keys[:top]:
        a, b = nb.get(k, (set(), 0))[1], torch.get(k, (set(), 0))[1]
        la = ",".join(map(str, sorted(nb.get(k, (set(), 0))[0])))
        lb = ",".join(map(str, sorted(torch.get(k, (set(), 0))[0])))
        print(f"| {k[0]} | {k[1]} | {la} | {lb} | {a / 1e6:.3f} | {a / nb_sum:.1%} | {b / 1e6:.3f} | "
              f"{b / torch_sum if torch_sum else 0:.1%} |")
    both = [k for k in keys if k in nb and k in torch]
    share = lambda part, whole: f"{part / whole:.1%}" if whole else "-"
    print(f"matched lines: {len(both)}; they hold {share(sum(nb[k][1] for k in both), nb_sum)} of nb's and "
          f"{share(sum(torch[k][1] for k in both), torch_sum)} of torch's device time")


if __name__ == "__main__":
    main()
