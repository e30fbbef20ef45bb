"""The plain-text report, from the facts (the same dict --json prints)."""
from . import frames as fr


def size(n):
    """Bytes as people read them: 512 B, 1.5 KiB, 16.0 MiB, 1.25 GiB."""
    if n is None:
        return "?"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{sign}{v:.2f} {unit}" if unit == "GiB" else f"{sign}{v:.1f} {unit}"
    return f"{sign}{int(round(n))} B"


def duration(us):
    """Microseconds as people read them."""
    if us is None:
        return "?"
    if abs(us) < 1000:
        return f"{us:.0f} \u00b5s"
    if abs(us) < 1e6:
        return f"{us / 1000:.3g} ms" if abs(us) < 1e4 else f"{us / 1000:.1f} ms"
    return f"{us / 1e6:.3f} s"


def pct(share):
    return f"{100 * share:.1f}%"


def _frame(j, width=48):
    if not j:
        return "-"
    f = {"filename": j["file"], "line": j["line"], "name": j["function"]}
    return fr.short(f, width)


def _chain(g, depth=3):
    frames = g.get("python_frames") or []
    if frames:
        return " <- ".join(_frame(f, 32) for f in frames[:depth])
    return _frame(g.get("top_native"))


def _groups(lines, groups, limit):
    if not groups:
        lines.append("    (none)")
        return
    lines.append(f"    {'share':>6}  {'bytes':>10}  {'allocs':>6}  top Python frame / top native frame")
    for g in groups[:limit]:
        label = _frame(g["top_python"]) + "  /  " + _frame(g["top_native"])
        if not g.get("known", True):
            label = "(allocated before the history the snapshot kept: stack unknown)"
        elif not g.get("recorded", True):
            label = "(no stack recorded)"
        elif not g["top_python"] and not g["top_native"]:
            label = "(only nb's, the allocator's and the interpreter's frames)"
        lines.append(f"    {pct(g['share']):>6}  {size(g['bytes']):>10}  {g['allocations']:>6}  {label}")
    rest = groups[limit:]
    if rest:
        lines.append(f"    {'':>6}  {size(sum(g['bytes'] for g in rest)):>10}  "
                     f"{sum(g['allocations'] for g in rest):>6}  in {len(rest)} more stacks")


def render(report, t0):
    """t0: the trace time that "at ..." counts from (the first record)."""
    lines = []
    files = ", ".join(p for p in (report["files"].get("snapshot"), report["files"].get("trace")) if p)
    lines.append(f"nb memory report: {report['run']} ({files})")
    steps = report["steps"]
    if steps["count"]:
        lines.append(f"Steps: {steps['count']} (ProfilerStep#{steps['first']} to #{steps['last']})")
    else:
        lines.append("Steps: none in this run (the leak needs them; cut steps with NB_STEP, e.g. --step sync)")
    if report.get("program_end_us") is not None:
        lines.append(f"Program end: at {duration(report['program_end_us'] - t0)}")
    for note in report["notes"]:
        lines.append(f"Note: {note}")

    for dev in report["devices"]:
        lines.append("")
        total = f" of {size(dev['total_bytes'])}" if dev.get("total_bytes") else ""
        lines.append(f"GPU {dev['device']}{total}")
        before = dev.get("before_history") or {}
        if before.get("allocations"):
            lines.append(f"  Note: {size(before['bytes'])} in {before['allocations']} allocations were live before the "
                         "snapshot's history begins (a window's start, or entries its ring overwrote): the peak "
                         "and the verdicts cover the history")
        p = dev["peak"]
        where = f", in ProfilerStep#{p['step']}" if p.get("step") is not None else ""
        at = f" at {duration(p['ts_us'] - t0)}" if p.get("ts_us") is not None else ""
        lines.append(f"  Peak: {size(p['bytes'])} allocated{at}{where}; reserved then {size(p['reserved_bytes'])}")
        if "stacks" in p:
            _groups(lines, p["stacks"], 5)
            if p.get("other_bytes"):
                lines.append(f"    {pct(p['other_bytes'] / p['bytes']):>6}  {size(p['other_bytes']):>10}  {'':>6}  "
                             f"in {p['stack_groups'] - len(p['stacks'])} more stacks")
        e = dev["end"]
        lines.append(f"  Live at the end: {size(e['live_bytes'])} in {e['live_allocations']} allocations"
                     f" (reserved {size(e['reserved_bytes'])})")
        _groups(lines, e["live"], 10)
        td = dev.get("teardown") or {}
        if td.get("frees"):
            lines.append(f"  Freed during teardown (after the program's end): {td['frees']} allocations, "
                         f"{size(td['bytes'])}")
        lines.append("  Verdicts:")
        _leak(lines, dev["verdicts"]["leak"])
        _sawtooth(lines, dev["verdicts"]["sawtooth"])
        _fragmentation(lines, dev["verdicts"]["fragmentation"], t0)

    lines.append("")
    pic = report.get("picture") or {}
    if pic.get("path"):
        lines.append(f"Picture: {pic['path']}")
    elif pic.get("skipped"):
        lines.append(f"Picture: skipped ({pic['skipped']})")
    return "\n".join(lines) + "\n"


def _yes(found):
    return {True: "YES", False: "no", None: "not decided"}[found]


def _leak(lines, v):
    if v["found"] is None:
        lines.append(f"    leak: not decided: {v['why']}")
        return
    head = (f"    leak: {_yes(v['found'])}. Live bytes at step ends, at their lowest from each step on: "
            f"{size(v['floor_first_bytes'])} after ProfilerStep#{v['first_step']}, "
            f"{size(v['floor_last_bytes'])} after ProfilerStep#{v['last_step']}")
    if v["found"]:
        head += (f": +{size(v['bytes_per_step'])} per step (rising at {v['rising_step_ends']} "
                 f"of {v['step_ends']} step ends)")
    else:
        head += f" (rising at {v['rising_step_ends']} of {v['step_ends']} step ends)"
    lines.append(head)
    for g in v.get("stacks", []):
        lines.append(f"      {pct(g['share']):>6} of the growth, +{size(g['bytes_per_step'])}/step: {_chain(g)}"
                     f" (live at the end: {size(g['live_at_end_bytes'])})")


def _sawtooth(lines, v):
    if v["found"] is None:
        lines.append(f"    sawtooth: not decided: {v['why']}")
        return
    if v.get("from") == "rhythm":
        lines.append(f"    sawtooth: {_yes(v['found'])}, from the allocations' own rhythm (no steps to go by): "
                     f"the live bytes come back to {size(v['baseline_bytes'])} {v['returns']} times; "
                     f"rise per tooth {size(v['rise_bytes'])}")
        return
    if v["found"]:
        if v["every_step"]:
            lines.append(f"    sawtooth: YES. The live bytes come back to a baseline of {size(v['baseline_bytes'])} "
                         f"at every step end; rise per step {size(v['rise_bytes'])}")
        else:
            lines.append(f"    sawtooth: YES. The live bytes come back to a baseline of {size(v['baseline_bytes'])} "
                         f"at {v['returns']} of {v['step_ends']} step ends ({v['teeth']} teeth, the longest "
                         f"{v['longest_tooth_steps']} steps); rise per tooth {size(v['rise_bytes'])}")
    else:
        lines.append(f"    sawtooth: no. {v['why'][0].upper() + v['why'][1:]} (baseline "
                     f"{size(v['baseline_bytes'])}, median rise per step {size(v['step_rise_bytes'])})")


def _fragmentation(lines, v, t0):
    lines.append(f"    fragmentation: {_yes(v['found'])}. {v['why'][0].upper() + v['why'][1:]}")
    def gap(g):
        return f"{size(g['gap_bytes'])} ({pct(g['share'])} of {size(g['reserved_bytes'])})"
    lines.append(f"      reserved - allocated: {gap(v['at_peak'])} at the peak, {gap(v['at_reserved_peak'])} "
                 f"when most was reserved, {gap(v['at_end'])} at the end")
    for o in v["ooms"]:
        block = (size(o["largest_free_block_bytes"]) if o["largest_free_block_bytes"] is not None else
                 "none known (CUDA gives nb totals only: the device's free bytes and what pools hold)")
        lines.append(f"      OOM at {duration(o['ts_us'] - t0)} from {o['where'] or '?'}: asked {size(o['request_bytes'])};"
                     f" the device had {size(o['device_free_bytes'])} free, pools held {size(o['pool_unused_bytes'])}"
                     f" unused; largest free block: {block}"
                     + ("; the bytes were there, not in one piece" if o["explained"] else
                        "; more than was free in all"))
