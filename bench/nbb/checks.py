"""What the GPU checks read in nb's outputs (and in torch.profiler's): each
check takes file paths and returns (lines to print, passed). Standard library
only; the first line of a check's docstring is what its PASS/FAIL line says."""
import collections
import gzip
import json
import os
import pickle
import subprocess

HOST_CATS = ("cuda_runtime", "cuda_driver")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHES = ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
            "cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
            "cuLaunchCooperativeKernel", "cudaLaunchCooperativeKernel")


def resolve(path):
    """nb writes PREFIX.trace.json.gz (PREFIX.trace.json with NB_COMPRESS=0):
    either, for a path named either way."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return path + ".gz"
    return path


def load(path):
    """A JSON trace or a pickled snapshot, plain or gzipped."""
    path = resolve(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return pickle.load(f) if ".pickle" in path else json.load(f)


def events(trace):
    return trace["traceEvents"]


def host_list(ev):
    """Every host call, each with "args" (a call with nothing to say has none)."""
    calls = [e for e in ev if e.get("ph") == "X" and e.get("cat") in HOST_CATS]
    for e in calls:
        e.setdefault("args", {})
    return calls


def host_calls(ev):
    """Host calls joined to device work, by their correlation id (a device
    event's "correlation" finds the call that made it)."""
    return {e["args"]["correlation"]: e for e in host_list(ev) if "correlation" in e.get("args", {})}


def host_of(host, d):
    """The call that made device event `d`, or None (not joined)."""
    return host.get(d.get("args", {}).get("correlation"))


def demangled_kernels(calls):
    """A launch's kernel name (mangled, as the hooks read it) → as CUPTI's
    records show it (nb demangles those)."""
    names = sorted({e["args"]["kernel"] for e in calls if "kernel" in e.get("args", {})})
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return dict(zip(names, out))


def device(ev):
    return [e for e in ev if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]


# --- joins ---------------------------------------------------------------------------

def joined(trace_path, min_kernels=1):
    """all device records joined to their host call, flows bound, none backwards"""
    ev = events(load(trace_path))
    dev = device(ev)
    host = host_calls(ev)
    n_joined = sum(host_of(host, e) is not None for e in dev)
    flows = collections.Counter(e["ph"] for e in ev if e.get("ph") in ("s", "f"))
    starts = {e["id"]: e["ts"] for e in ev if e.get("ph") == "s"}
    back = sum(1 for e in ev if e.get("ph") == "f" and e["ts"] < starts.get(e["id"], -1))
    kernels = collections.Counter(e["name"][:60] for e in dev if e["cat"] == "kernel")
    lines = [f"device records {len(dev)}, joined {n_joined}, flows s={flows['s']} f={flows['f']}, backwards {back}"]
    lines += [f"  {n:5d}  {name}" for name, n in kernels.most_common(6)]
    ok = (len(dev) > 0 and n_joined == len(dev) and flows["s"] == flows["f"] == n_joined and back == 0
          and sum(kernels.values()) >= min_kernels)
    return lines, ok


def threads_joined(trace_path, threads, iters):
    """every device record of threads_join joined to its own call"""
    ev = events(load(trace_path))
    host = host_calls(ev)
    c = collections.Counter()
    tids = collections.defaultdict(set)
    for d in device(ev):
        a = d["args"]
        if d["cat"] == "kernel" and not d["name"].startswith("tagged"):
            continue
        c[d["cat"]] += 1
        h = host_of(host, d)
        if h is None:
            c[d["cat"] + " unjoined"] += 1
            continue
        if d["cat"] == "kernel":  # grid (i + 1, t + 1) names the call
            right = h["args"].get("grid") == a.get("grid")
            if right:
                tids[a["grid"][1]].add(h["tid"])
        else:  # and so do the bytes of its set and copy
            right = h["args"].get("bytes") == a.get("bytes")
        if not right:
            c[d["cat"] + " wrong call"] += 1
    want = threads * iters
    lines = [f"{k}: {c[k]} of {want} seen, unjoined {c[k + ' unjoined']}, joined to a wrong call {c[k + ' wrong call']}"
             for k in DEVICE_CATS]
    one_tid = all(len(v) == 1 for v in tids.values()) and len({next(iter(v)) for v in tids.values()}) == len(tids)
    lines.append(f"host threads per program thread: {'one each, distinct' if one_tid else dict(tids)}")
    ok = one_tid and len(tids) == threads and all(
        c[k] == want and c[k + " unjoined"] == 0 and c[k + " wrong call"] == 0 for k in DEVICE_CATS)
    return lines, ok


def graph_joined(trace_path, launches):
    """graph_join's graph work joined to its graph launches, the eager copy to its own calls"""
    ev = events(load(trace_path))
    host = host_calls(ev)
    calls = host_list(ev)
    captured = [e for e in calls if e["args"].get("captured")]
    end_capture = [e["ts"] for e in calls if e["name"] in ("cudaStreamEndCapture", "cuStreamEndCapture")]
    per_launch = collections.Counter()
    c = collections.Counter()
    for d in device(ev):
        a = d["args"]
        h = host_of(host, d)
        graph = "graph id" in a
        kind = "between" if d["name"].startswith("between") else ("graph node" if graph else "eager copy")
        c[kind] += 1
        if h is None:
            c[kind + " unjoined"] += 1
            continue
        if graph:
            right = h["name"] in ("cudaGraphLaunch", "cuGraphLaunch")
            per_launch[h["args"]["correlation"]] += 1
        elif kind == "between":
            right = "Launch" in h["name"]
        else:
            right = not h["args"].get("captured") and bool(end_capture) and h["ts"] > end_capture[0]
        if not right:
            c[kind + " joined to " + h["name"] + (" (captured)" if h["args"].get("captured") else "")] += 1
    dist = collections.Counter(per_launch.values())
    lines = [str(dict(c)), f"records per graph launch: {dict(dist)}, captured calls: {len(captured)}"]
    ok = (c["graph node"] == 3 * launches and c["between"] == launches and c["eager copy"] == 3
          and dist == {3: launches} and len(c) == 3 and len(captured) == 3)
    return lines, ok


def capture_joined(trace_path):
    """captured calls marked, graph work joined to its launches, the rest to its own calls"""
    ev = events(load(trace_path))
    host = host_calls(ev)
    calls = host_list(ev)
    windows = collections.defaultdict(list)  # per thread: from a capture's begin to its end
    open_at = {}
    for e in sorted(calls, key=lambda e: e["ts"]):
        if "BeginCapture" in e["name"]:
            open_at[e["tid"]] = e["ts"]
        elif "EndCapture" in e["name"] and e["tid"] in open_at:
            windows[e["tid"]].append((open_at.pop(e["tid"]), e["ts"]))
    work = ("Launch", "Memcpy", "Memset", "memcpy", "memset")
    inside = [e for e in calls if any(a < e["ts"] < b for a, b in windows[e["tid"]])
              and any(w in e["name"] for w in work) and "GraphLaunch" not in e["name"]
              and "HostFunc" not in e["name"] and e["args"].get("result", 0) == 0]
    unmarked = [e for e in inside if not e["args"].get("captured")]
    captured = [e for e in calls if e["args"].get("captured")]
    c = collections.Counter()
    for d in device(ev):
        graph = "graph id" in d["args"]
        kind = "graph work" if graph else "other work"
        c[kind] += 1
        h = host_of(host, d)
        if h is None:
            c[kind + " unjoined"] += 1
        elif graph and "GraphLaunch" not in h["name"]:
            c["graph work joined to " + h["name"]] += 1
        elif not graph and h["args"].get("captured"):
            c["other work joined to a captured call"] += 1
    lines = [str(dict(c)), f"captures {sum(len(w) for w in windows.values())}, captured calls {len(captured)}, "
                           f"work calls inside captures not marked {len(unmarked)}"]
    ok = c["graph work"] > 0 and captured and not unmarked and set(c) <= {"graph work", "other work"}
    return lines, bool(ok)


def corr_order(trace_path):
    """CUPTI's correlation ids (no join) dense, and in the order of the calls that made the work"""
    ev = events(load(trace_path))
    dev = device(ev)
    host = host_list(ev)
    ids = sorted(e["args"].get("correlation", 0) for e in dev)
    lines = [f"device records {len(dev)}, with an id {sum(1 for i in ids if i)}, distinct ids {len(set(ids))}",
             f"gaps between consecutive ids: {dict(collections.Counter(b - a for a, b in zip(ids, ids[1:])))}"]
    demangled = demangled_kernels(host)

    def host_sig(e):
        a = e["args"]
        if "kernel" in a:
            return ("kernel", demangled[a["kernel"]], tuple(a["grid"]))
        if "bytes" in a and "src" in a and "kind" in a:
            return ("copy", a["bytes"])
        if "bytes" in a and "dst" in a:
            return ("set", a["bytes"])
        return None

    def device_sig(e):
        k = {"kernel": "kernel", "gpu_memcpy": "copy", "gpu_memset": "set"}[e["cat"]]
        return (k, e["name"], tuple(e["args"]["grid"])) if k == "kernel" else (k, e["args"].get("bytes"))

    hs = [s for s in (host_sig(e) for e in sorted(host, key=lambda e: e["ts"])) if s]
    ds = [device_sig(e) for e in sorted(dev, key=lambda e: e["args"].get("correlation", 0))]
    differ = [i for i, (h, d) in enumerate(zip(hs, ds)) if h != d]
    lines.append(f"host calls that make work {len(hs)}, device records {len(ds)}, "
                 f"positions where the two orders differ {len(differ)}")
    lines += [f"  position {i}: host {hs[i][:2]} vs device {ds[i][:2]}" for i in differ[:6]]
    return lines, len(hs) == len(ds) and len(set(ids)) == len(ids) and len(differ) <= len(ds) // 1000


# --- steps and windows ----------------------------------------------------------------

def _per_step(trace_path, steps_path):
    trace = load(trace_path)
    with open(steps_path) as f:
        windows = json.load(f)
    base = trace.get("baseTimeNanoseconds", 0)
    host = host_calls(events(trace))
    steps = [dict(kernels=0, kernel_ns=0.0, names=set(), joined=0, device=0, calls=collections.Counter())
             for _ in windows]
    outside = 0

    def step_of(e):
        t = base + e["ts"] * 1000
        return next((i for i, (lo, hi) in enumerate(windows) if lo <= t <= hi), None)

    overlaps = 0
    per_thread = collections.defaultdict(list)
    for e in events(trace):
        if e.get("ph") != "X":
            continue
        if e.get("cat") in HOST_CATS:
            per_thread[e["tid"]].append((e["ts"], e["dur"]))
            i = step_of(e)
            if i is not None:
                steps[i]["calls"][e["name"]] += 1
            continue
        if e.get("cat") not in DEVICE_CATS:
            continue
        i = step_of(e)
        if i is None:
            outside += 1
            continue
        s = steps[i]
        s["device"] += 1
        s["joined"] += host_of(host, e) is not None
        if e["cat"] == "kernel":
            s["kernels"] += 1
            s["kernel_ns"] += e["dur"] * 1000
            s["names"].add(e["name"])
    for calls in per_thread.values():  # host calls of one thread never overlap
        calls.sort()
        overlaps += sum(1 for a, b in zip(calls, calls[1:]) if a[0] + a[1] > b[0] + 0.001)
    return steps, outside, overlaps


def steps_compare(out_dir):
    """nb's decode steps equal torch.profiler's: kernels per step, device time within 3%, kernel names, all joined"""
    nb, nb_out, overlaps = _per_step(f"{out_dir}/nb.trace.json", f"{out_dir}/nb.steps.json")
    pt, pt_out, _ = _per_step(f"{out_dir}/torch.trace.json", f"{out_dir}/torch.steps.json")
    names_nb = set().union(*[s["names"] for s in nb])
    names_pt = set().union(*[s["names"] for s in pt])
    ratios = [a["kernel_ns"] / b["kernel_ns"] for a, b in zip(nb, pt) if b["kernel_ns"]]
    calls = sum((s["calls"] for s in nb), collections.Counter())
    launches = {n: v for n, v in calls.items() if n in LAUNCHES}
    lines = [f"kernels per step: nb {[s['kernels'] for s in nb]}, torch.profiler {[s['kernels'] for s in pt]}",
             f"kernel time per step nb/torch: {[round(r, 4) for r in ratios]}",
             f"distinct kernel names: nb {len(names_nb)}, torch.profiler {len(names_pt)}, "
             f"differing {sorted(names_nb ^ names_pt)[:5]}",
             "nb device records joined per step: " + " ".join("%d/%d" % (s["joined"], s["device"]) for s in nb),
             f"events outside the steps: nb {nb_out}, torch.profiler {pt_out}",
             f"nb launch calls in the steps: {launches}, sets "
             f"{sum(v for n, v in calls.items() if 'emset' in n)}, copies {sum(v for n, v in calls.items() if 'emcpy' in n)}",
             f"host calls of one thread overlapping: {overlaps}"]
    ok = ([s["kernels"] for s in nb] == [s["kernels"] for s in pt] and all(abs(r - 1) <= 0.03 for r in ratios)
          and names_nb == names_pt and all(s["joined"] == s["device"] for s in nb) and overlaps == 0
          and sum(launches.values()) == sum(s["kernels"] for s in nb))
    return lines, ok


def window(trace_path, expected_steps):
    """the window holds exactly its ProfilerStep spans, every kernel inside one, as many in each as the step's
    kernel launches, each joined to a launch of its own kernel"""
    ev = events(load(trace_path))
    spans = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                   if str(e.get("name", "")).startswith("ProfilerStep#"))
    host = host_calls(ev)
    demangled = demangled_kernels(host.values())
    per = collections.Counter()
    outside = other_kernel = 0
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    for k in kernels:
        h = host_of(host, k)
        if h and "kernel" in h["args"] and demangled.get(h["args"]["kernel"]) != k["name"]:
            other_kernel += 1
        s = h and next((n for a, b, n in spans if a <= h["ts"] <= b), None)
        if s is None:
            outside += 1
        else:
            per[s] += 1
    # A step's kernels against its launches, not against other steps': the
    # decode loop's sequence grows a token a step, and cuBLAS picks its gemms
    # by length (a split-K gemm and its reduce kernel for some lengths only:
    # 249 or 237 kernels a token on the H200).
    launches = collections.Counter()
    for h in host_list(ev):
        if "kernel" in h.get("args", {}):
            s = next((n for a, b, n in spans if a <= h["ts"] <= b), None)
            if s is not None:
                launches[s] += 1
    unmatched = sum(1 for _, _, n in spans if per[n] != launches[n])
    names = [n for _, _, n in spans]
    annotations = collections.Counter((e["cat"], e["name"]) for e in ev if "annotation" in e.get("cat", "")
                                      and not str(e.get("name", "")).startswith("ProfilerStep#"))
    lines = [f"{os.path.basename(trace_path)}: {len(spans)} ProfilerStep spans {names[:1]}..{names[-1:]}, "
             f"{len(kernels)} kernels, per step {sorted(set(per.values()))}, outside any step {outside}, "
             f"joined to a launch of another kernel {other_kernel}, steps whose kernels are not their launches "
             f"{unmatched}"]
    if annotations:
        lines.append(f"annotations {dict(annotations)}")
    return lines, (outside == 0 and other_kernel == 0 and unmatched == 0 and len(spans) == expected_steps
                   and all(per[n] > 0 for n in names))


# --- memory ---------------------------------------------------------------------------

def snapshot_peak(snapshot_path, torch_peak):
    """the snapshot's active peak within 5% of torch's, the largest allocations name a Python line"""
    snap = load(snapshot_path)
    lines, ok = [], True
    for dev, trace in enumerate(snap["device_traces"]):
        if not trace:
            continue
        # Backwards from the final state, as MemoryViz does, so that a trace
        # whose oldest entries left the ring still counts what they allocated.
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
        ok &= abs(ratio - 1) <= 0.05
        lines.append(f"device {dev}: {len(trace)} entries, active peak {peak} B, torch peak {torch_peak} B, "
                     f"ratio {ratio:.4f}")
        for e in sorted((e for e in trace if e["action"] == "alloc"), key=lambda e: -e["size"])[:5]:
            py = [f for f in e["frames"] if f["filename"].endswith(".py") and f["line"] > 0]
            where = f"{py[0]['filename']}:{py[0]['line']} {py[0]['name']}" if py else "no Python frame"
            lines.append(f"  {e['size']:>12} B  native frames {len(e['frames']) - len(py)}, Python {len(py)}: {where}")
            ok &= bool(py)
    return lines, bool(ok and lines)


def snapshot_frames(snapshot_path, script):
    """every allocation of the snapshot carries Python frames of the script"""
    snap = load(snapshot_path)
    allocs = [e for t in snap["device_traces"] for e in t if e["action"] == "alloc"]
    mine = [e for e in allocs if any(f["filename"].endswith(script) for f in e["frames"])]
    lines = [f"{len(allocs)} allocations, {len(mine)} with frames of {script}"]
    for e in sorted(allocs, key=lambda e: -e["size"])[:3]:
        lines.append(f"  {e['size']} {[(f['name'], f['line']) for f in e['frames'] if f['filename'].endswith('.py')]}")
    return lines, bool(allocs) and len(mine) == len(allocs)


def leak(snapshot_path, source):
    """the one surviving allocation names the leaking line"""
    snap = load(snapshot_path)
    with open(source) as f:
        line = next(i + 1 for i, s in enumerate(f) if "LEAK LINE" in s)
    live = [s for s in snap["segments"] if s.get("device", 0) >= 0]
    lines = [f"{len(live)} live segments; the leak is at {os.path.basename(source)}:{line}"]
    found = False
    for s in live:
        for b in s["blocks"]:
            frames = [(f["name"], os.path.basename(f["filename"]), f["line"]) for f in b.get("frames", [])]
            lines.append(f"  {s['total_size']} {b['state']} {frames[:4]}")
            found |= b["state"] == "active_allocated" and any(
                fn == os.path.basename(source) and ln == line for _, fn, ln in frames)
    return lines, found and len(live) == 1


def trace_sizes(trace_path):
    """the trace loads (where its bytes go, by event kind)"""
    ev = events(load(trace_path))
    n, size = collections.Counter(), collections.Counter()
    for e in ev:
        k = (e.get("ph"), e.get("cat", ""))
        n[k] += 1
        size[k] += len(json.dumps(e, separators=(",", ":")))
    trace_path = resolve(trace_path)
    lines = [f"{os.path.basename(trace_path)}: {os.path.getsize(trace_path) / 1e6:.1f} MB, {len(ev)} events"]
    lines += [f"  {k[0]} {k[1]:<14} {n[k]:>9} events {size[k] / 1e6:8.1f} MB  {size[k] // n[k]:>6} B/event"
              for k, _ in size.most_common(8)]
    return lines, bool(ev)


def gz_sizes(nb_path, torch_path):
    """nb's .json.gz is smaller than torch.profiler's .json.gz of the same steps (the same kernels in each)"""
    nb_size, torch_size = os.path.getsize(nb_path), os.path.getsize(torch_path)
    kernels = [sum(1 for e in events(load(p)) if e.get("cat") == "kernel") for p in (nb_path, torch_path)]
    return ([f"{os.path.basename(nb_path)} {nb_size:,} B, {os.path.basename(torch_path)} "
             f"{torch_size:,} B (nb / torch = {nb_size / torch_size:.3f}); kernels nb {kernels[0]}, "
             f"torch.profiler {kernels[1]}"], nb_size < torch_size and kernels[0] == kernels[1])


def kernel_names(trace_path):
    """the trace has kernels (launches by kernel name)"""
    ev = events(load(trace_path))
    c = collections.Counter((e["name"], e.get("args", {}).get("kernel", "-")) for e in ev if e.get("ph") == "X"
                            and e.get("cat") in HOST_CATS)
    return [f"  {v} {k[0]} {k[1]}" for k, v in sorted(c.items())], bool(c)
