"""nb's trace of the decode steps, cut to the steps, against torch.profiler's.

    python3 bench/workloads/steps_size.py NB_DIR LEVEL TORCH_DIR

NB_DIR holds nb.trace.json.gz and nb.steps.json (`decode.py steps NB_DIR nb`
under nb, which records the whole run); TORCH_DIR holds torch.trace.json.gz
(`decode.py steps TORCH_DIR torch`, torch.profiler around the steps only).
nb's events inside the steps' windows are kept, with its metadata and
stacks, in nb's layout (one compact event per line), and gzipped at LEVEL;
prints both sizes, as JSON and gzipped."""
import gzip
import json
import sys
import zlib

nb_dir, level, torch_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = json.loads(gzip.open(f"{nb_dir}/nb.trace.json.gz").read())
windows = json.load(open(f"{nb_dir}/nb.steps.json"))
base = t["baseTimeNanoseconds"]
lo, hi = (windows[0][0] - base) / 1000, (windows[-1][1] - base) / 1000
keep = [e for e in t["traceEvents"]
        if e.get("ph") == "M" or e.get("cat") == "call_stack" or lo <= e.get("ts", -1) <= hi]
head = {k: v for k, v in t.items() if k not in ("traceEvents", "stackFrames", "traceName")}
text = (json.dumps(head)[:-1] + ', "traceEvents": [' + ",\n".join(json.dumps(e, separators=(",", ":")) for e in keep)
        + '\n], "stackFrames": ' + json.dumps(t.get("stackFrames", {})) + ', "traceName": '
        + json.dumps(t.get("traceName", "")) + "}\n")
z = zlib.compressobj(level, zlib.DEFLATED, 31)
nb_gz = len(z.compress(text.encode()) + z.flush())
torch_raw = gzip.open(f"{torch_dir}/torch.trace.json.gz").read()
with open(f"{torch_dir}/torch.trace.json.gz", "rb") as f:
    torch_gz = len(f.read())
kernels = sum(1 for e in keep if e.get("cat") == "kernel")
torch_kernels = sum(1 for e in json.loads(torch_raw)["traceEvents"] if e.get("cat") == "kernel")
print(f"nb, the steps: {len(keep)} events, {kernels} kernels, {len(text)} B JSON, {nb_gz} B gzip level {level}")
print(f"torch.profiler: {torch_kernels} kernels, {len(torch_raw)} B JSON, {torch_gz} B gzip")
print(f"nb / torch.profiler gzip: {nb_gz / torch_gz:.3f}")
