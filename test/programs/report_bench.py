"""How long `nbprof report` takes on a run the size of the seed's `generate`
example under NB_TORCH_ALLOCS=1 (218,000 snapshot entries): writes such a
run, synthetic, in nb's layout, then times the report on it. A benchmark,
not a timed test: it prints the time and fails only if the report fails.

    report_bench.py NB_REPORT [DIR] [--entries N] [--events N] [--keep]

The run: generate() calls of 64 decode steps (ProfilerStep spans) until
there are N entries (the last one stops where they are reached); 300
weight tensors first; each step grows a KV cache kept until its generate()
ends and allocates temporaries freed within the step; every tensor is its
own cudaMallocAsync segment, as nb records them (segment_alloc + alloc,
free_requested + free_completed + segment_free), with 70-frame stacks (a
few hundred distinct ones, each stored once, as nb stores them). The trace
has its "nbRun" summary before "traceEvents" and --events host events
after it (default 600,000, about 140 MB), which the report must not read;
the same run is also timed without "nbRun" (an older trace, scanned).
"""
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20


def stacks(n_sites):
    """n_sites distinct stacks: native allocator frames, an op's frames, then
    Python frames and the interpreter's."""
    native_top = [
        {"filename": "/usr/lib/libcudart.so.13", "line": 0, "name": "cudaMallocAsync"},
        {"filename": "CUDAMallocAsyncAllocator.cpp", "line": 0,
         "name": "c10::cuda::CUDACachingAllocator::CudaMallocAsync::mallocAsync(void**, int, unsigned long, CUstream_st*)"},
        {"filename": "??", "line": 0,
         "name": "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType)"},
    ]
    interp = [{"filename": "/usr/bin/python3.11", "line": 0, "name": "_PyEval_EvalFrameDefault"}] * 30
    out = []
    for s in range(n_sites):
        op = [{"filename": "RegisterCUDA_0.cpp", "line": 0, "name": f"at::(anonymous namespace)::wrapper_CUDA_op{s % 40}"}]
        py = [{"filename": f"site-packages/transformers/models/gpt2/modeling_gpt2.py", "line": 100 + s, "name": "forward"},
              {"filename": "site-packages/torch/nn/modules/module.py", "line": 1790, "name": "_call_impl"},
              {"filename": "generate.py", "line": 30 + s % 7, "name": "<module>"}]
        frames = native_top + op * 6 + py + interp
        out.append(frames[:70])
    return out


def make_run(directory, entries, events, with_nb_run):
    rng = random.Random(7)
    sites = stacks(400)
    weights_sites, kv_sites, tmp_sites = sites[:50], sites[50:80], sites[80:]
    base_ns = 1_796_000_000_000_000_000
    t = 1000.0  # µs in the trace's timebase
    trace = []      # snapshot entries
    points = []     # [ts, allocated, reserved]
    steps = []
    live = {}
    allocated = 0
    reserved = 0
    next_addr = [0x7F0000000000]

    def alloc(size, frames):
        nonlocal t, allocated, reserved
        t += 0.8 + rng.random()
        addr = next_addr[0]
        next_addr[0] += (size + 511) // 512 * 512
        us = base_ns // 1000 + int(t)
        trace.append({"action": "segment_alloc", "addr": addr, "size": size, "stream": 0, "time_us": us, "frames": frames})
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": us, "frames": frames})
        live[addr] = size
        allocated += size
        reserved = max(reserved, allocated)
        points.append([round(t, 3), allocated, reserved])
        return addr

    def free(addr, frames):
        nonlocal t, allocated
        t += 0.5 + rng.random()
        size = live.pop(addr)
        us = base_ns // 1000 + int(t)
        for action in ("free_requested", "free_completed", "segment_free"):
            trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": us, "frames": frames})
        allocated -= size
        points.append([round(t, 3), allocated, reserved])

    for i in range(300):
        alloc(rng.choice([768 * 3072 * 2, 768 * 768 * 2, 768 * 2]), weights_sites[i % len(weights_sites)])
    step = 0
    while len(trace) < entries:
        kv = []
        for token in range(64):
            if len(trace) >= entries:
                break
            start = t
            for layer in range(12):
                kv.append(alloc(2 * 12 * 64 * (token + 8) * 2, kv_sites[layer % len(kv_sites)]))
                temps = [alloc(rng.choice([96 * 1024, 288 * 1024, 1 * MiB, 3 * MiB]), rng.choice(tmp_sites))
                         for _ in range(rng.randint(8, 14))]
                for a in temps:
                    free(a, tmp_sites[0])
            t += 5
            steps.append([step, round(start, 3), round(t - start, 3), 4242])
            step += 1
        if len(trace) < entries:
            for a in kv:
                free(a, kv_sites[0])
    end_us = base_ns // 1000 + int(t)
    # The end state: what is live, as segments of one block each.
    live_at_end = {}
    for e in trace:
        if e["action"] == "alloc":
            live_at_end[e["addr"]] = e
        elif e["action"] == "free_completed":
            live_at_end.pop(e["addr"], None)
    segments = [{"device": 0, "address": a, "total_size": e["size"], "allocated_size": e["size"],
                 "active_size": e["size"], "requested_size": e["size"], "stream": 0, "segment_type": "large",
                 "segment_pool_id": (0, 0), "is_expandable": False, "frames": e["frames"],
                 "blocks": [{"address": a, "size": e["size"], "requested_size": e["size"],
                             "state": "active_allocated", "frames": e["frames"]}]}
                for a, e in sorted(live_at_end.items())]
    snapshot = {"segments": segments, "device_traces": [trace], "allocator_settings": {},
                "external_annotations": []}
    prefix = os.path.join(directory, "bench")
    with open(prefix + ".memory.pickle", "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    n_points = sum(1 for p in points if p[0] <= t)
    with open(prefix + ".trace.json", "w") as f:
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "bench", "totalGlobalMem": 150000000000}],\n')
        f.write(f'  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {base_ns},\n')
        f.write('  "nbTable": {"title": "bench", "rows": [], "footer": {"records": 0, "dropped": 0, "notes": []}},\n')
        if with_nb_run:
            run = {"programEnd": round(t + 10, 3), "steps": steps, "memory": [{"device": 0, "points": points[:n_points]}],
                   "teardown": {"frees": 0, "bytes": 0}}
            f.write('  "nbRun": ' + json.dumps(run, separators=(",", ":")) + ",\n")
        f.write('  "traceEvents": [')
        sep = "\n  "
        for i in range(events):
            ts = 1000 + i * 0.4
            f.write(sep + '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242, '
                    f'"ts": {ts:.3f}, "dur": 0.310, "args": {{"correlation": {i}, '
                    '"stack": "forward (modeling_gpt2.py:240)\\n_call_impl (module.py:1790)"}}')
            sep = ",\n  "
        if not with_nb_run:
            for number, ts, dur, tid in steps:
                f.write(f'{sep}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{number}", "pid": 4242, '
                        f'"tid": {tid}, "ts": {ts}, "dur": {dur}}}')
            for ts, a, r in points:
                f.write(f'{sep}{{"ph": "C", "name": "Device memory (bytes)", "pid": 0, "tid": 0, "ts": {ts}, '
                        f'"args": {{"allocated": {a}, "reserved": {r}}}}}')
        f.write('\n  ],\n  "traceName": "bench"\n}\n')
    return prefix, len(trace), end_us


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    tool = args.pop(0)
    entries, events, keep, directory = 218_000, 600_000, False, None
    while args:
        a = args.pop(0)
        if a == "--entries":
            entries = int(args.pop(0))
        elif a == "--events":
            events = int(args.pop(0))
        elif a == "--keep":
            keep = True
        else:
            directory = a
    tmp = None
    if directory is None:
        tmp = tempfile.TemporaryDirectory()
        directory = tmp.name
    failed = False
    for with_nb_run in (True, False):
        prefix, n, _ = make_run(directory, entries, events, with_nb_run)
        size_mb = os.path.getsize(prefix + ".trace.json") / 1e6
        for picture in (True, False):
            start = time.monotonic()
            r = subprocess.run([tool, prefix, "--json"] + ([] if picture else ["--no-picture"]),
                               capture_output=True, text=True)
            took = time.monotonic() - start
            what = "nbRun" if with_nb_run else "no nbRun (scanned)"
            if r.returncode != 0:
                print(f"report failed ({what}): {r.stderr}")
                failed = True
                continue
            report = json.loads(r.stdout)
            dev = report["devices"][0]
            v = dev["verdicts"]
            print(f"{n} entries, trace {size_mb:.0f} MB ({what}), picture {'on' if picture else 'off'}: "
                  f"{took:.2f} s; peak {dev['peak']['bytes']} B, sawtooth {v['sawtooth']['found']}, "
                  f"leak {v['leak']['found']}, picture: {report['picture']}")
    if tmp and not keep:
        tmp.cleanup()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
