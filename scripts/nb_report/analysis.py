"""One device's memory over the run, from the snapshot's history and the
trace's curve, and the facts the report states about it.

Times are microseconds in the trace's timebase (its "ts"). The snapshot's
entries carry whole microseconds since the epoch; when the trace has the
device's curve, each allocation and free of the snapshot is matched to its
point of the curve (the collector makes one point per allocation and per
free, in the same order), which gives it the curve's nanosecond time, so
that an allocation made within the microsecond after a step ended is still
counted in the next step.

The snapshot's segments are the state at the program's end; its history is
undone from there to find what was live before its first entry (the
history is a ring of the newest entries, so a long run's begins late).
"""
import bisect

from . import frames as fr
from . import verdicts

ALLOC = ("alloc",)
FREE = ("free_completed", "free")
SEG_ALLOC = ("segment_alloc", "segment_map")
SEG_FREE = ("segment_free", "segment_unmap")
LIVE_STATES = ("active_allocated", "active_pending_free")
TOP_STACKS = 5
MAX_OOM_BLOCKS = 20         # OOMs whose largest free block is looked for

BEFORE_HISTORY = "before"   # stack key: allocated before the history nb kept


class Stacks:
    """Stack keys: one per distinct list of frames. A snapshot written by nb
    stores each stack once, so its entries share the list object and the
    key is found by identity; other snapshots are compared frame by frame,
    lazily, only for the allocations the report groups."""

    def __init__(self):
        self._by_id = {}
        self._frames = {}
        self._info = {}

    def key(self, frames):
        if frames is None:
            return BEFORE_HISTORY
        k = self._by_id.get(id(frames))
        if k is None:
            k = tuple((f.get("filename", ""), f.get("line", 0), f.get("name", "")) for f in frames)
            self._by_id[id(frames)] = k
            self._frames.setdefault(k, frames)
        return k

    def info(self, key):
        i = self._info.get(key)
        if i is None:
            i = fr.StackInfo(self._frames.get(key) if key != BEFORE_HISTORY else None)
            self._info[key] = i
        return i


def group(live_items, stacks):
    """{addr: (size, frames)} items -> [(bytes, count, key)], largest first.
    Stacks of one key are summed; keys are found once per frames object."""
    by_id = {}
    for size, frames in live_items:
        slot = by_id.get(id(frames))
        if slot is None:
            by_id[id(frames)] = [size, 1, frames]
        else:
            slot[0] += size
            slot[1] += 1
    by_key = {}
    for size, count, frames in by_id.values():
        k = stacks.key(frames)
        slot = by_key.setdefault(k, [0, 0])
        slot[0] += size
        slot[1] += count
    out = [(b, c, k) for k, (b, c) in by_key.items()]
    out.sort(key=lambda g: (-g[0], -g[1]))
    return out


class Device:
    def __init__(self, run, device, entries, segments, stacks):
        self.device = device
        self.stacks = stacks
        base = run.base_us
        self.teardown_frees = self.teardown_bytes = 0

        # The end state: live blocks and segments.
        end_live, end_segs = {}, {}
        for s in segments:
            end_segs[s.get("address", 0)] = s.get("total_size", 0)
            for b in s.get("blocks", []):
                if b.get("state") in LIVE_STATES:
                    end_live[b.get("address", 0)] = (b.get("size", 0), b.get("frames"))
        self.end_live = end_live

        # The history, in order: allocations and frees, segments, OOMs (nb
        # leaves what teardown frees out of it).
        free_actions = FREE
        if not any(e.get("action") in FREE for e in entries):
            free_actions = ("free_requested",)  # a snapshot that records only requests
        ev_t, ev_size, ev_addr, ev_frames = [], [], [], []
        self.ooms = []
        self.seg_events = []  # (index of the next allocation or free, +1/-1, addr, size, time)
        for e in entries:
            a = e.get("action")
            if a in ALLOC or a in free_actions:
                ev_t.append(e.get("time_us", 0) - base)
                size = e.get("size", 0)
                ev_size.append(size if a in ALLOC else -size)
                ev_addr.append(e.get("addr", 0))
                ev_frames.append(e.get("frames") if a in ALLOC else None)
            elif a in SEG_ALLOC or a in SEG_FREE:
                self.seg_events.append((len(ev_t), 1 if a in SEG_ALLOC else -1, e.get("addr", 0), e.get("size", 0),
                                        e.get("time_us", 0) - base))
            elif a == "oom":
                self.ooms.append((len(ev_t), e.get("time_us", 0) - base, e))
        self.ev_t, self.ev_size, self.ev_addr, self.ev_frames = ev_t, ev_size, ev_addr, ev_frames

        # Undo the history from the end state: what was live before it (an
        # allocation freed in the history but made before it has no stack).
        live = dict(end_live)
        for i in range(len(ev_t) - 1, -1, -1):
            if ev_size[i] > 0:
                live.pop(ev_addr[i], None)
            else:
                live[ev_addr[i]] = (-ev_size[i], None)
        self.start_live = live
        self.start_allocated = sum(size for size, _ in live.values())
        segs = dict(end_segs)
        for _, sign, addr, size, _ in reversed(self.seg_events):
            if sign > 0:
                segs.pop(addr, None)
            else:
                segs[addr] = size
        self.start_segments = segs

        # The curve: the trace's, else the snapshot's own.
        curve = run.curve(device)
        self.aligned = False
        if curve:
            self._align(curve, ev_size, run.program_end())
            self.ts = [p[0] for p in curve]
            self.alloc = [p[1] for p in curve]
            self.reserved = [p[2] for p in curve]
            self.curve_from = "trace"
            end = run.program_end()
            if end is not None:
                # The history leaves teardown out; the curve goes on through it.
                for i in range(1, len(curve)):
                    drop = curve[i - 1][1] - curve[i][1]
                    if curve[i][0] > end and drop > 0:
                        self.teardown_frees += 1
                        self.teardown_bytes += drop
        else:
            self._snapshot_curve()
            self.curve_from = "snapshot"

    def _align(self, curve, sizes, program_end):
        """Gives each snapshot event its curve point's time when the two
        sequences match: same size changes, and each point within the
        microsecond its event was written with. The snapshot's history may
        start later than the curve (its ring was full) and end earlier (the
        curve goes on through teardown, which the history leaves out)."""
        n, m = len(sizes), len(curve)
        after_end = 0 if program_end is None else sum(1 for p in curve if p[0] > program_end)
        for offset in dict.fromkeys((0, m - n, m - n - after_end)):
            if offset < 0:
                continue
            lo, hi = max(1 - offset, 0), min(n, m - offset)
            if hi - lo < 1:
                continue
            ok = all(curve[i + offset][1] - curve[i + offset - 1][1] == sizes[i] for i in range(lo, hi))
            ok = ok and all(-0.002 <= curve[i + offset][0] - self.ev_t[i] < 1.002
                            for i in range(lo, min(hi, len(self.ev_t))))
            if ok:
                for i in range(max(-offset, 0), min(len(self.ev_t), hi)):
                    self.ev_t[i] = curve[i + offset][0]
                self.aligned = True
                return

    def _snapshot_curve(self):
        """Allocated and reserved after each change. Reserved is what the
        live segments hold (a snapshot without segment entries: allocated)."""
        alloc = self.start_allocated
        reserved = sum(self.start_segments.values())
        segments = bool(self.seg_events or self.start_segments)
        ts, al, rs = [], [], []
        segs = self.seg_events
        j = 0
        for i, t in enumerate(self.ev_t):
            while j < len(segs) and segs[j][0] <= i:
                reserved += segs[j][1] * segs[j][3]
                ts.append(segs[j][4])
                al.append(alloc)
                rs.append(reserved)
                j += 1
            alloc += self.ev_size[i]
            ts.append(t)
            al.append(alloc)
            rs.append(reserved if segments else alloc)
        for _, sign, _, size, t in segs[j:]:
            reserved += sign * size
            ts.append(t)
            al.append(alloc)
            rs.append(reserved)
        self.ts, self.alloc, self.reserved = ts, al, rs

    # --- the curve ---------------------------------------------------------------

    def index_at(self, t):
        """Index of the last curve point at or before t (-1: before all)."""
        return bisect.bisect_right(self.ts, t) - 1

    def allocated_at(self, t):
        i = self.index_at(t)
        return self.alloc[i] if i >= 0 else (self.start_allocated if self.curve_from == "snapshot" or self.aligned else 0)

    def reserved_at(self, t):
        i = self.index_at(t)
        if i >= 0:
            return self.reserved[i]
        return self.allocated_at(t)

    def high_between(self, t0, t1):
        """The most allocated at any moment of (t0, t1], counting the level at t0."""
        i = bisect.bisect_right(self.ts, t0)
        j = bisect.bisect_right(self.ts, t1)
        top = self.allocated_at(t0)
        if j > i:
            top = max(top, max(self.alloc[i:j]))
        return top

    def peak(self, until=None):
        """(index, allocated) of the first highest point at or before `until`."""
        j = len(self.ts) if until is None else bisect.bisect_right(self.ts, until)
        if j <= 0:
            return None, self.start_allocated
        top = max(self.alloc[:j])
        return self.alloc.index(top, 0, j), top

    def reserved_peak(self, until=None):
        j = len(self.ts) if until is None else bisect.bisect_right(self.ts, until)
        if j <= 0:
            return None, 0
        top = max(self.reserved[:j])
        return self.reserved.index(top, 0, j), top

    # --- live allocations --------------------------------------------------------

    def live_at(self, times):
        """{t: [(bytes, count, key)]} of the allocations live at each time."""
        wanted = sorted(set(times))
        out = {}
        live = dict(self.start_live)
        i, n = 0, len(self.ev_t)
        ev_t, ev_size, ev_addr, ev_frames = self.ev_t, self.ev_size, self.ev_addr, self.ev_frames
        for t in wanted:
            while i < n and ev_t[i] <= t:
                if ev_size[i] > 0:
                    live[ev_addr[i]] = (ev_size[i], ev_frames[i])
                else:
                    live.pop(ev_addr[i], None)
                i += 1
            out[t] = group(live.values(), self.stacks)
        return out

    def live_at_end(self):
        return group(self.end_live.values(), self.stacks)

    def largest_free_block(self, event_index):
        """The largest free stretch inside the segments live before event
        `event_index`, from the snapshot's own segments and blocks (PyTorch's
        caching allocator writes them; each allocation nb sees is its own
        segment, so there it is 0)."""
        segs = dict(self.start_segments)
        for before, sign, addr, size, _ in self.seg_events:
            if before > event_index:
                break
            if sign > 0:
                segs[addr] = size
            else:
                segs.pop(addr, None)
        live = {a: s for a, (s, _) in self.start_live.items()}
        for i in range(min(event_index, len(self.ev_t))):
            if self.ev_size[i] > 0:
                live[self.ev_addr[i]] = self.ev_size[i]
            else:
                live.pop(self.ev_addr[i], None)
        blocks = sorted(live.items())
        best = 0
        for start, size in segs.items():
            end = start + size
            at = start
            k = bisect.bisect_left(blocks, (start, -1))
            while k < len(blocks) and blocks[k][0] < end:
                best = max(best, blocks[k][0] - at)
                at = max(at, blocks[k][0] + blocks[k][1])
                k += 1
            best = max(best, end - at)
        return best


def analyse(run, device, entries, segments, stacks, steps, program_end):
    """The facts of one device, as a dict (the JSON's "devices" entries)."""
    d = Device(run, device, entries, segments, stacks)
    end_t = program_end
    if end_t is None:
        end_t = d.ts[-1] if d.ts else None
    facts = {"device": device, "total_bytes": run.device_total.get(device), "curve_from": d.curve_from,
             "before_history": {"bytes": d.start_allocated, "allocations": len(d.start_live)}}

    # Peak.
    p_index, p_bytes = d.peak(program_end)
    p_t = d.ts[p_index] if p_index is not None else None
    r_index, r_peak = d.reserved_peak(program_end)
    boundaries_t = []
    if steps:
        boundaries_t = [steps[0][1]] + [s[2] for s in steps]
    queries = [t for t in ([p_t] + boundaries_t[1:2] + boundaries_t[-1:]) if t is not None]
    live = d.live_at(queries) if queries else {}
    peak = {"bytes": p_bytes, "ts_us": p_t, "step": _step_of(steps, p_t),
            "reserved_bytes": d.reserved[p_index] if p_index is not None else p_bytes}
    if p_t is not None:
        groups = live[p_t]
        peak["stacks"] = [_group_json(g, p_bytes, stacks) for g in groups[:TOP_STACKS]]
        peak["other_bytes"] = sum(g[0] for g in groups[TOP_STACKS:])
        peak["stack_groups"] = len(groups)
    facts["peak"] = peak

    # The end.
    end_alloc = d.allocated_at(end_t) if end_t is not None else d.start_allocated
    end_res = d.reserved_at(end_t) if end_t is not None else end_alloc
    end_groups = d.live_at_end()
    facts["end"] = {
        "ts_us": end_t, "allocated_bytes": end_alloc, "reserved_bytes": end_res,
        "live_bytes": sum(g[0] for g in end_groups), "live_allocations": sum(g[1] for g in end_groups),
        "live": [_group_json(g, sum(x[0] for x in end_groups), stacks) for g in end_groups],
    }
    facts["teardown"] = {"frees": d.teardown_frees, "bytes": d.teardown_bytes}

    # Verdicts.
    if len(steps) >= 1:
        boundaries = [d.allocated_at(t) for t in boundaries_t]
        highs = [d.high_between(s[1], s[2]) for s in steps]
        lk = verdicts.leak(boundaries, [s[0] for s in steps])
        if lk.get("found"):
            lk["stacks"] = _growth(live[boundaries_t[1]], live[boundaries_t[-1]], end_groups, lk, stacks)
        st = verdicts.sawtooth(boundaries, highs, bool(lk.get("found")))
        if st.get("found") is None:
            st = _rhythm(d, program_end, st)
        facts["step_ends"] = boundaries[1:]
    else:
        lk = {"found": None, "why": "needs steps (ProfilerStep spans: run with NB_STEP, e.g. --step sync)"}
        st = _rhythm(d, program_end, None)
    facts["verdicts"] = {"leak": lk, "sawtooth": st, "fragmentation": _fragmentation(d, p_index, p_bytes, r_index,
                                                                                   r_peak, end_alloc, end_res,
                                                                                   stacks)}
    facts["_device"] = d
    return facts


def _rhythm(d, program_end, with_steps):
    j = len(d.ts) if program_end is None else bisect.bisect_right(d.ts, program_end)
    r = verdicts.rhythm(d.alloc[:j])
    if r.get("found") is None and with_steps is not None:
        return with_steps
    if with_steps is not None and r.get("found"):
        r["why_steps"] = with_steps.get("why")
    return r


def _step_of(steps, t):
    if t is None:
        return None
    for number, start, end, _ in steps:
        if start <= t <= end:
            return number
    return None


def _group_json(g, total, stacks):
    size, count, key = g
    info = stacks.info(key)
    return {
        "bytes": size, "allocations": count, "share": size / total if total else 0.0,
        "top_python": fr.as_json(info.python), "top_native": fr.as_json(info.native),
        "where": fr.as_json(info.where())["where"] if info.where() else None,
        "python_frames": [fr.as_json(f) for f in info.python_chain[:8]],
        "known": key != BEFORE_HISTORY,
        "recorded": bool(key) and key != BEFORE_HISTORY,
        "_key": key,
    }


def _growth(first, last, end_groups, lk, stacks):
    """Stacks whose live bytes grew from the first step's end to the last
    step's end, largest growth first, with how much of it is live at the end."""
    before = {k: b for b, _, k in first}
    at_end = {k: b for b, _, k in end_groups}
    grown = []
    for b, c, k in last:
        g = b - before.get(k, 0)
        if g > 0:
            grown.append((g, c, k))
    grown.sort(key=lambda x: -x[0])
    total = sum(g for g, _, _ in grown)
    steps = lk["step_ends"]
    out = []
    for g, c, k in grown[:TOP_STACKS]:
        j = _group_json((g, c, k), total, stacks)
        j["growth_bytes"] = j.pop("bytes")
        j["bytes_per_step"] = g / steps if steps else 0
        j["live_at_end_bytes"] = at_end.get(k, 0)
        j.pop("allocations")
        out.append(j)
    return out


def _fragmentation(d, p_index, p_bytes, r_index, r_peak, end_alloc, end_res, stacks):
    def gap(alloc, res):
        return {"allocated_bytes": alloc, "reserved_bytes": res, "gap_bytes": res - alloc,
                "share": (res - alloc) / res if res else 0.0}
    at_peak = gap(p_bytes, d.reserved[p_index] if p_index is not None else p_bytes)
    at_reserved_peak = gap(d.alloc[r_index] if r_index is not None else 0, r_peak)
    at_end = gap(end_alloc, end_res)
    ooms = []
    for n, (before, t, e) in enumerate(d.ooms):
        alloc, res = d.allocated_at(t), d.reserved_at(t)
        largest = d.largest_free_block(before) if n < MAX_OOM_BLOCKS else 0
        info = stacks.info(stacks.key(e.get("frames")))
        ooms.append({
            "ts_us": t, "request_bytes": e.get("size", 0), "device_free_bytes": e.get("device_free", 0),
            "allocated_bytes": alloc, "reserved_bytes": res, "pool_unused_bytes": res - alloc,
            "largest_free_block_bytes": largest if largest > 0 else None,
            "top_python": fr.as_json(info.python), "top_native": fr.as_json(info.native),
            "where": fr.as_json(info.where())["where"] if info.where() else None,
        })
    v = verdicts.fragmentation(p_bytes, r_peak, ooms)
    for o in ooms:
        o["explained"] = verdicts.oom_explained(o["request_bytes"], o["device_free_bytes"], o["pool_unused_bytes"])
    v.update(at_peak=at_peak, at_reserved_peak=at_reserved_peak, at_end=at_end, ooms=ooms)
    return v
