"""Kernels and device time per decode step: nb's trace against torch.profiler's
(see decode_steps.py).

  python3 steps_compare.py OUT
Prints a JSON summary and PASS/FAIL lines for the acceptance checks: the same
number of kernels in every step, device time per step within 3%, the same
distinct kernel names; and for nb, every device record joined to its host call.
"""
import json
import sys

out = sys.argv[1]


def per_step(trace_path, steps_path):
    trace = json.load(open(trace_path))
    windows = json.load(open(steps_path))
    base = trace.get("baseTimeNanoseconds", 0)
    steps = [{"kernels": 0, "kernel_ns": 0.0, "device_ns": 0.0, "names": set(), "joined": 0, "device": 0}
             for _ in windows]
    outside = 0
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        t = base + e["ts"] * 1000
        for i, (lo, hi) in enumerate(windows):
            if lo <= t <= hi:
                s = steps[i]
                s["device"] += 1
                s["device_ns"] += e["dur"] * 1000
                s["joined"] += "External id" in e.get("args", {})
                if e["cat"] == "kernel":
                    s["kernels"] += 1
                    s["kernel_ns"] += e["dur"] * 1000
                    s["names"].add(e["name"])
                break
        else:
            outside += 1
    return steps, outside


nb, nb_out = per_step(f"{out}/nb.trace.json", f"{out}/nb.steps.json")
pt, pt_out = per_step(f"{out}/torch.trace.json", f"{out}/torch.steps.json")
summary = {
    "nb_kernels_per_step": [s["kernels"] for s in nb],
    "torch_kernels_per_step": [s["kernels"] for s in pt],
    "nb_kernel_us_per_step": [round(s["kernel_ns"] / 1000, 1) for s in nb],
    "torch_kernel_us_per_step": [round(s["kernel_ns"] / 1000, 1) for s in pt],
    "nb_device_records_joined": [f'{s["joined"]}/{s["device"]}' for s in nb],
    "distinct_kernel_names": [len(set().union(*[s["names"] for s in nb])), len(set().union(*[s["names"] for s in pt]))],
    "events_outside_steps": [nb_out, pt_out],
}
print(json.dumps(summary, indent=1))
same_counts = summary["nb_kernels_per_step"] == summary["torch_kernels_per_step"]
ratios = [a / b for a, b in zip(summary["nb_kernel_us_per_step"], summary["torch_kernel_us_per_step"]) if b]
within = all(abs(r - 1) <= 0.03 for r in ratios)
names_nb = set().union(*[s["names"] for s in nb])
names_pt = set().union(*[s["names"] for s in pt])
all_joined = all(s["joined"] == s["device"] for s in nb)
print("kernel time ratio nb/torch per step:", [round(r, 4) for r in ratios])
print("PASS" if same_counts else "FAIL", "kernels per step equal")
print("PASS" if within else "FAIL", "device time per step within 3%")
print("PASS" if names_nb == names_pt else "FAIL", "same distinct kernel names",
      sorted(names_nb ^ names_pt)[:5])
print("PASS" if all_joined else "FAIL", "every nb device record joined to its host call")
