"""HolisticTraceAnalysis on nb's traces: does HTA read them, and which of its
analyses run? HTA is not installed anywhere nb runs: fetch
facebookresearch/HolisticTraceAnalysis and install Debian's python3-pandas,
-plotly, -networkx, -pydot, -psutil (scripts/install-deps.sh does).

    python3 bench/workloads/hta_check.py HTA_REPO TRACE_DIR

TRACE_DIR holds one trace per rank (.json or .json.gz; each names its rank
in "distributedInfo"). Prints the ranks HTA found and the rows it parsed for
the first, then runs the GPU kernel breakdown, the kernel launch statistics
(runtime launches joined to kernels on `correlation`), the queue length
summary, the temporal breakdown and the communication/computation overlap,
each reported as ok or with its error. Exits 1 if HTA cannot read the
directory."""
import sys

sys.path.insert(0, sys.argv[1])
from hta.trace_analysis import TraceAnalysis  # noqa: E402

a = TraceAnalysis(trace_dir=sys.argv[2])
ranks = sorted(a.t.traces.keys())
print("ranks", ranks)
t = a.t.get_trace(ranks[0])
print("rows", len(t), "gpu rows", int(t["stream"].ne(-1).sum()), "rows with a correlation",
      int((t["correlation"] > 0).sum()))
checks = {
    "get_gpu_kernel_breakdown": lambda: a.get_gpu_kernel_breakdown(visualize=False)[0].head(4).to_string(),
    "get_cuda_kernel_launch_stats": lambda: f"{len(a.get_cuda_kernel_launch_stats(visualize=False)[0])} launches joined",
    "get_queue_length_summary": lambda: f"{len(a.get_queue_length_summary(ranks=ranks))} rows",
    "get_temporal_breakdown": lambda: a.get_temporal_breakdown(visualize=False).to_string(),
    "get_comm_comp_overlap": lambda: a.get_comm_comp_overlap(visualize=False).to_string(),
}
for name, run in checks.items():
    try:
        print(f"{name}: ok\n{run()}")
    except Exception as e:  # noqa: BLE001 - the finding is which analysis fails, and how
        print(f"{name}: {type(e).__name__} {e}")
