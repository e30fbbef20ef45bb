"""The picture: allocated and reserved bytes over time, per device, with the
step boundaries, the peak, the program's end and any OOM marked; drawn
with matplotlib into a PNG.

The data to draw is a plain dict (see plot_data in cli.py), so that when
the interpreter running the report has no matplotlib, the system's python3
(where Debian's python3-matplotlib lives) can draw it instead.
"""
import json
import os
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
MAX_POINTS = 20000   # per curve; more are thinned, keeping each stretch's low and high
MAX_STEP_LINES = 64


def thin(ts, *series):
    """Fewer points that keep the shape: for each of MAX_POINTS / 4 equal
    stretches of time, the first, lowest, highest and last point of the first
    series (the other series at the same points)."""
    n = len(ts)
    if n <= MAX_POINTS:
        return [list(ts)] + [list(s) for s in series]
    buckets = MAX_POINTS // 4
    t0, t1 = ts[0], ts[-1]
    width = (t1 - t0) / buckets or 1.0
    keep = []
    main = series[0]
    start = 0
    while start < n:
        b = int((ts[start] - t0) / width)
        end = start
        lo = hi = start
        while end < n and int((ts[end] - t0) / width) <= b:
            if main[end] < main[lo]:
                lo = end
            if main[end] > main[hi]:
                hi = end
            end += 1
        keep.extend(sorted({start, lo, hi, end - 1}))
        start = end
    return [[ts[i] for i in keep]] + [[s[i] for i in keep] for s in series]


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def draw(data, path):
    """Draws with this interpreter's matplotlib, else with the system's
    python3. Returns None when drawn, else why not (one line)."""
    if have_matplotlib():
        _draw(data, path)
        return None
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(SYSTEM_PYTHON) != os.path.realpath(sys.executable):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from nb_report import picture; "
                "picture.draw_from(sys.stdin, sys.argv[2])")
        try:
            r = subprocess.run([SYSTEM_PYTHON, "-c", code, root, path], input=json.dumps(data),
                               text=True, capture_output=True, timeout=120)
            if r.returncode == 0:
                return None
            last = (r.stderr.strip().splitlines() or ["failed"])[-1]
            if "No module named 'matplotlib'" not in last:
                return f"{SYSTEM_PYTHON} could not draw it: {last}"
        except (OSError, subprocess.SubprocessError) as e:
            return f"{SYSTEM_PYTHON} could not draw it: {e}"
    return "matplotlib is not installed: apt install python3-matplotlib (scripts/install-deps.sh does)"


def draw_from(stream, path):
    _draw(json.load(stream), path)


def _bytes_axis(top):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if top >= 2 * scale:
            return unit, scale
    return "B", 1


def _draw(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    devices = data["devices"]
    steps = data["steps"]
    scale_t, unit_t = data["time_scale"], data["time_unit"]
    fig, axes = plt.subplots(len(devices), 1, figsize=(11, 0.8 + 3.4 * len(devices)), squeeze=False, sharex=True)
    for ax, dev in zip(axes[:, 0], devices):
        top = max([1] + dev["alloc"] + dev["reserved"])
        unit, scale = _bytes_axis(top)
        x = [t / scale_t for t in dev["ts"]]
        alloc = [a / scale for a in dev["alloc"]]
        reserved = [r / scale for r in dev["reserved"]]
        ax.step(x, reserved, where="post", color="tab:red", lw=2.0, alpha=0.6, label="reserved")
        ax.fill_between(x, alloc, step="post", color="tab:blue", alpha=0.3, lw=0)
        ax.step(x, alloc, where="post", color="tab:blue", lw=1.0, label="allocated")
        if steps:
            # At most MAX_STEP_LINES lines: every k-th boundary beyond that.
            every = -(-len(steps) // MAX_STEP_LINES)
            starts = [s[1] / scale_t for s in steps[::every]] + [steps[-1][2] / scale_t]
            ax.vlines(starts, 0, 1, transform=ax.get_xaxis_transform(), colors="0.55", lw=0.6, linestyles=":",
                      label="step boundaries" if every == 1 else f"every {every}th step boundary")
            span = max(x[-1] if x else 0, starts[-1]) or 1
            if len(steps) <= 24 and min(s[2] - s[1] for s in steps) / scale_t >= span / 40:
                for number, start, end in steps:
                    ax.text((start + end) / 2 / scale_t, 1.0, f"#{number}", transform=ax.get_xaxis_transform(),
                            ha="center", va="bottom", fontsize=7, color="0.35")
        if data.get("program_end") is not None:
            end = data["program_end"] / scale_t
            ax.axvline(end, color="black", ls="--", lw=0.8)
            ax.text(end, 0.97, " program end", transform=ax.get_xaxis_transform(), va="top", fontsize=8)
            if x and x[-1] > end:
                ax.axvspan(end, x[-1], color="0.92", lw=0, label="teardown")
        if dev.get("peak"):
            pt, pb = dev["peak"]
            ax.plot([pt / scale_t], [pb / scale], marker="v", color="black", ms=7, ls="none", label="peak")
            ax.annotate(f"peak {pb / scale:.1f} {unit}", (pt / scale_t, pb / scale), textcoords="offset points",
                        xytext=(6, 6), fontsize=8)
        for t, level, request in dev.get("ooms", []):
            ax.plot([t / scale_t], [level / scale], marker="X", color="crimson", ms=8, ls="none")
            ax.annotate(f"OOM: asked {request / scale:.1f} {unit}", (t / scale_t, level / scale),
                        textcoords="offset points", xytext=(6, -12), fontsize=8, color="crimson")
        ax.set_ylabel(f"GPU {dev['device']} ({unit})")
        ax.set_ylim(bottom=0, top=top / scale * 1.15)
        ax.grid(axis="y", color="0.9", lw=0.6)
    axes[-1, 0].set_xlabel(f"time since the first record ({unit_t})")
    handles, labels = [], []
    for ax in axes[:, 0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.suptitle(data["title"], fontsize=10)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 / len(devices), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
