"""HolisticTraceAnalysis on nb's traces: does HTA read them, and which of its
analyses run? Not part of the suite (HTA is not installed anywhere nb runs;
fetch facebookresearch/HolisticTraceAnalysis and install Debian's
python3-pandas, -plotly, -networkx, -pydot, -psutil).

    python3 bench/workloads/hta_check.py HTA_REPO TRACE_DIR

TRACE_DIR holds one rank's trace (.json or .json.gz). Prints the rows HTA
parsed, then runs the GPU kernel breakdown, the kernel launch statistics
(runtime launches joined to kernels on `correlation`), the queue length
summary and the temporal breakdown, each reported as ok or with its error."""
import sys

sys.path.insert(0, sys.argv[1])
from hta.trace_analysis import TraceAnalysis  # noqa: E402

a = TraceAnalysis(trace_dir=sys.argv[2])
t = a.t.get_trace(0)
print("rows", len(t), "gpu rows", int(t["stream"].ne(-1).sum()), "rows with a correlation",
      int((t["correlation"] > 0).sum()))
checks = {
    "get_gpu_kernel_breakdown": lambda: a.get_gpu_kernel_breakdown(visualize=False)[0].head(4).to_string(),
    "get_cuda_kernel_launch_stats": lambda: f"{len(a.get_cuda_kernel_launch_stats(visualize=False)[0])} launches joined",
    "get_queue_length_summary": lambda: f"{len(a.get_queue_length_summary(ranks=[0]))} rows",
    "get_temporal_breakdown": lambda: a.get_temporal_breakdown(visualize=False).to_string(),
}
for name, run in checks.items():
    try:
        print(f"{name}: ok\n{run()}")
    except Exception as e:  # noqa: BLE001 - the finding is which analysis fails, and how
        print(f"{name}: {type(e).__name__} {e}")
