"""Compares device work seen by torch.profiler with host calls recorded by nb
in the same region (see launch_count.py).

  python3 compare_counts.py OUT/region.json OUT/profiler.json OUT/decode.trace.json
"""
import collections
import json
import sys

region = json.load(open(sys.argv[1]))
prof = json.load(open(sys.argv[2]))
nb = json.load(open(sys.argv[3]))

kinds = collections.Counter(e.get("cat") for e in prof["traceEvents"] if e.get("ph") == "X")
device = {"kernel": kinds.get("kernel", 0), "gpu_memset": kinds.get("gpu_memset", 0),
          "gpu_memcpy": kinds.get("gpu_memcpy", 0)}

base = nb["baseTimeNanoseconds"]
lo, hi = region["start_ns"], region["end_ns"]
names = collections.Counter()
for e in nb["traceEvents"]:
    if e.get("ph") != "X" or e.get("cat") not in ("cuda_runtime", "cuda_driver"):
        continue
    t = base + e["ts"] * 1000
    if lo <= t <= hi:
        names[e["name"]] += 1

LAUNCH = ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
          "cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
          "cuLaunchCooperativeKernel", "cudaLaunchCooperativeKernel")
# Host calls of one thread never overlap and keep their order (checks the
# tick -> time conversion on real hardware).
per_thread = collections.defaultdict(list)
for e in nb["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
        per_thread[e["tid"]].append((e["ts"], e["dur"]))
overlaps = 0
for calls in per_thread.values():
    calls.sort()
    overlaps += sum(1 for a, b in zip(calls, calls[1:]) if a[0] + a[1] > b[0] + 0.001)
launches = sum(names[n] for n in LAUNCH)
memsets = sum(v for n, v in names.items() if "emset" in n)
memcpys = sum(v for n, v in names.items() if "emcpy" in n)
result = {"host_call_overlaps_on_a_thread": overlaps, "profiler": device, "nb_launches": launches, "nb_memsets": memsets, "nb_memcpys": memcpys,
          "nb_calls_by_name": dict(names.most_common())}
print(json.dumps(result, indent=1))
ok = launches == device["kernel"] and memsets == device["gpu_memset"] and overlaps == 0
print("MATCH" if ok else "MISMATCH")
