"""The verdicts, as pure functions of a few numbers (test/unit/test_report.py
drives them with synthetic ones). Bytes are live allocated bytes on one
device; "steps" are the run's ProfilerStep spans, in order.

boundaries[0] is what was allocated when the first step began and
boundaries[k] what was allocated when step k ended (k = 1..n); highs[k-1]
is the most allocated at any moment of step k. The first step is taken as
set-up (weights, workspaces, caches being filled): the rules look at the
step ends from the first step's end on, and at the rises of steps 2..n.

leak       needs 3 steps or more. The floor at step end k is the least
           allocated at any step end from k to the last (F_k = min of
           B_k..B_n). Leak when the floor at the last step end is above the
           floor at the first step's end and the floor rose at half of the
           step ends or more (half of n - 1, rounded down: growth every
           other step counts). Bytes per step = (F_n - F_1) / (n - 1).
sawtooth   needs 2 steps or more. The baseline L is the least allocated at
           any step end; the rise of a step is its high minus what was
           allocated when it began, R their median over steps 2..n; a step
           end "returns" when it is within R/20 of L. A tooth is the stretch
           between two returns during which the live bytes rose above L +
           R/20, and the first step when it ends with a return after rising
           above L + R/20 (set-up, then a first request: two generate()
           calls, one step each, are two teeth). Sawtooth when there is no
           leak, R > 0 and there are 2 teeth or more: "every step" when
           every step end returns, else at how many step ends it does (a
           tooth may span several steps: a request's KV cache growing over
           its decode steps).
rhythm     (no steps, or too few) the allocations' own rhythm, used
           for the sawtooth only: the allocated levels before the program's
           end, less the final run of frees (its clean-up); V is the lowest
           level after the first free. Sawtooth when the live bytes come
           down to exactly V three times or more and the last such return
           comes after the highest level. A leak is not decided without
           steps: what was set up and what was kept look the same.
fragmentation  (needs no steps) reserved bytes are allocated bytes plus what
           memory pools keep beyond them. Fragmentation when an OOM asked
           for no more than the device's free bytes plus what pools held
           unused at that moment (the bytes existed, not in one piece the
           request could use), or when the most ever reserved exceeds the
           most ever allocated by 25% of it and by 64 MiB or more (pools
           grew because the memory they held could not be reused).
"""
import math
import statistics

MIN_LEAK_STEPS = 3
MIN_SAWTOOTH_STEPS = 2
RETURN_TOLERANCE = 20          # a return is within R / 20 of the baseline
FRAGMENT_EXCESS_SHARE = 0.25
FRAGMENT_EXCESS_BYTES = 64 << 20


def _median(values):
    return statistics.median(values) if values else 0


def leak(boundaries, step_numbers):
    """boundaries: B_0..B_n; step_numbers: the n steps' numbers."""
    n = len(boundaries) - 1
    if n < MIN_LEAK_STEPS:
        return {"found": None, "why": f"needs {MIN_LEAK_STEPS} steps or more (the first is set-up); this run has {n}"}
    ends = boundaries[1:]
    floors = list(ends)
    for k in range(n - 2, -1, -1):
        floors[k] = min(floors[k], floors[k + 1])
    rises = sum(1 for k in range(n - 1) if floors[k + 1] > floors[k])
    growth = floors[-1] - floors[0]
    found = growth > 0 and rises >= max(1, (n - 1) // 2)
    return {
        "found": found,
        "bytes_per_step": growth / (n - 1) if growth > 0 else 0,
        "growth_bytes": max(growth, 0),
        "floor_first_bytes": floors[0],
        "floor_last_bytes": floors[-1],
        "first_step": step_numbers[0],
        "last_step": step_numbers[-1],
        "rising_step_ends": rises,
        "step_ends": n - 1,
    }


def sawtooth(boundaries, highs, leak_found):
    """boundaries: B_0..B_n; highs: H_1..H_n."""
    n = len(boundaries) - 1
    if n < MIN_SAWTOOTH_STEPS:
        return {"found": None, "why": f"needs {MIN_SAWTOOTH_STEPS} steps or more; this run has {n}"}
    rises = [highs[k - 1] - boundaries[k - 1] for k in range(2, n + 1)]
    rise = _median(rises)
    baseline = min(boundaries[1:])
    tol = rise / RETURN_TOLERANCE
    returns = [k for k in range(1, n + 1) if boundaries[k] <= baseline + tol]
    teeth = []
    if returns and returns[0] == 1 and highs[0] > baseline + tol:
        teeth.append((highs[0] - baseline, 1))
    for a, b in zip(returns, returns[1:]):
        top = max(highs[a:b])
        if top > baseline + tol:
            teeth.append((top - baseline, b - a))
    out = {
        "baseline_bytes": baseline,
        "rise_bytes": _median([h for h, _ in teeth]) if teeth else rise,
        "step_rise_bytes": rise,
        "returns": len(returns),
        "step_ends": n,
        "every_step": len(returns) == n,
        "teeth": len(teeth),
        "longest_tooth_steps": max((length for _, length in teeth), default=None),
        "from": "steps",
    }
    if leak_found:
        out.update(found=False, why="the level the live bytes come back to rises from step to step (a leak)")
    elif rise <= 0:
        out.update(found=False, why="no step allocates more than it began with")
    elif len(teeth) < 2:
        out.update(found=False, why="the live bytes do not come back to the baseline at step ends")
    else:
        out.update(found=True)
    return out


def rhythm(levels):
    """The sawtooth from the allocations' own rhythm: levels are the allocated
    bytes after each allocation and free, in order, before the program's end."""
    v = list(levels)
    while len(v) >= 2 and v[-1] < v[-2]:
        v.pop()  # the clean-up: the final run of frees
    first_drop = next((i for i in range(1, len(v)) if v[i] < v[i - 1]), None)
    no = {"found": None, "from": "rhythm",
          "why": "needs steps (ProfilerStep spans; NB_STEP) and the allocations show no unambiguous rhythm"}
    if first_drop is None:
        return no
    low = min(v[first_drop:])
    returns = [i for i in range(first_drop, len(v)) if v[i] == low and v[i] < v[i - 1]]
    top_at = max(range(len(v)), key=v.__getitem__)
    if len(returns) < 3 or returns[-1] < top_at:
        return no
    heights = [max(v[a:b]) - low for a, b in zip(returns, returns[1:])]
    return {"found": True, "from": "rhythm", "baseline_bytes": low, "rise_bytes": _median(heights),
            "returns": len(returns), "teeth": len(heights)}


def oom_explained(request, device_free, pool_unused):
    """Whether the bytes an OOM asked for existed, free, in total."""
    return request <= device_free + max(pool_unused, 0)


def fragmentation(alloc_peak, reserved_peak, ooms):
    """ooms: [{"request_bytes", "device_free_bytes", "pool_unused_bytes"}]."""
    excess = reserved_peak - alloc_peak
    explained = [o for o in ooms if oom_explained(o["request_bytes"], o["device_free_bytes"], o["pool_unused_bytes"])]
    grew = (reserved_peak > 0 and excess >= FRAGMENT_EXCESS_SHARE * reserved_peak and
            excess >= FRAGMENT_EXCESS_BYTES)
    why = []
    if explained:
        why.append(f"{len(explained)} of {len(ooms)} OOM asked for no more than the device's free bytes "
                   "plus what pools held unused")
    if grew:
        why.append("the most reserved exceeds the most allocated by "
                   f"{math.floor(100 * excess / reserved_peak)}%")
    if not why:
        why.append("no OOM that the free bytes could have met, and reserved stays within 25% (or 64 MiB) "
                   "of the most allocated" if ooms else
                   "no OOM, and reserved stays within 25% (or 64 MiB) of the most allocated")
    return {"found": bool(explained) or grew, "why": "; ".join(why),
            "reserved_excess_bytes": max(excess, 0)}
