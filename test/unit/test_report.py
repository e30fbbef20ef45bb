"""nbprof report (scripts/nb_report/) on synthetic inputs: the verdict rules,
the top-frame rules, reading a trace up to "traceEvents", and whole reports
of small runs written here in nb's layout.

    python3 test/unit/test_report.py      (meson test report_unit)
"""
import contextlib
import io
import json
import os
import pickle
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from nb_report import cli, frames, inputs, verdicts  # noqa: E402

MiB = 1 << 20


class LeakRule(unittest.TestCase):
    def test_steady_growth_is_a_leak_with_its_bytes_per_step(self):
        # Set-up to 8 MiB in the first step, then +1 MiB kept per step.
        b = [0] + [8 * MiB + k * MiB for k in range(8)]
        v = verdicts.leak(b, list(range(8)))
        self.assertTrue(v["found"])
        self.assertEqual(v["bytes_per_step"], MiB)
        self.assertEqual(v["rising_step_ends"], 7)

    def test_a_flat_baseline_is_no_leak(self):
        v = verdicts.leak([0] + [8 * MiB] * 8, list(range(8)))
        self.assertFalse(v["found"])
        self.assertEqual(v["bytes_per_step"], 0)

    def test_growth_that_comes_back_down_is_no_leak(self):
        # A KV cache growing over a request's steps and freed at its end.
        b = [0, 8, 9, 10, 11, 8, 9, 10, 11, 8]
        self.assertFalse(verdicts.leak(b, list(range(9)))["found"])

    def test_one_step_up_then_flat_is_no_leak(self):
        b = [0, 8, 8, 8, 8, 12, 12, 12, 12, 12]
        self.assertFalse(verdicts.leak(b, list(range(9)))["found"])

    def test_growth_every_other_step_is_a_leak(self):
        b = [0, 8, 8, 9, 9, 10, 10, 11, 11]
        self.assertTrue(verdicts.leak(b, list(range(8)))["found"])

    def test_fewer_than_three_steps_decide_nothing(self):
        v = verdicts.leak([0, 8, 9], [0, 1])
        self.assertIsNone(v["found"])
        self.assertIn("3 steps", v["why"])


class SawtoothRule(unittest.TestCase):
    def test_back_to_the_baseline_every_step(self):
        b = [0] + [8 * MiB] * 8
        h = [23 * MiB] * 8
        v = verdicts.sawtooth(b, h, False)
        self.assertTrue(v["found"])
        self.assertTrue(v["every_step"])
        self.assertEqual(v["baseline_bytes"], 8 * MiB)
        self.assertEqual(v["rise_bytes"], 15 * MiB)

    def test_a_leak_is_no_sawtooth(self):
        b = [0] + [8 * MiB + k * MiB for k in range(8)]
        h = [x + 4 * MiB for x in b[:-1]]
        v = verdicts.sawtooth(b, h, True)
        self.assertFalse(v["found"])

    def test_nothing_allocated_in_the_steps_is_no_sawtooth(self):
        v = verdicts.sawtooth([0] + [8] * 6, [8] * 6, False)
        self.assertFalse(v["found"])

    def test_two_requests_one_step_each_are_two_teeth(self):
        # Set-up and the first request in step 1, the second in step 2.
        v = verdicts.sawtooth([0, 300, 301], [520, 515], False)
        self.assertTrue(v["found"], v)
        self.assertEqual(v["teeth"], 2)
        self.assertTrue(v["every_step"])

    def test_one_step_decides_nothing(self):
        self.assertIsNone(verdicts.sawtooth([0, 300], [520], False)["found"])

    def test_teeth_of_several_steps(self):
        # Two requests of four steps each, back to 8 after each.
        b = [0, 8, 9, 10, 11, 8, 9, 10, 11, 8]
        h = [8, 12, 13, 14, 15, 12, 13, 14, 15]
        v = verdicts.sawtooth(b, h, False)
        self.assertTrue(v["found"])
        self.assertFalse(v["every_step"])
        self.assertEqual(v["returns"], 3)
        self.assertEqual(v["longest_tooth_steps"], 4)


class RhythmRule(unittest.TestCase):
    def test_returns_to_one_level_make_a_sawtooth(self):
        levels = [8]
        for _ in range(5):
            levels += [12, 17, 12, 8]
        levels += [0]  # the clean-up
        v = verdicts.rhythm(levels)
        self.assertTrue(v["found"])
        self.assertEqual(v["baseline_bytes"], 8)
        self.assertEqual(v["rise_bytes"], 9)

    def test_a_staircase_is_not_decided(self):
        levels = [8]
        for k in range(6):
            levels += [levels[-1] + 4, levels[-1] + 5, levels[-1] + 1]
        self.assertIsNone(verdicts.rhythm(levels)["found"])

    def test_returns_within_the_first_steps_only_are_not_a_rhythm(self):
        # A leak whose first step comes back to one level three times.
        levels = [8, 9, 12, 9, 12, 9, 12, 9, 10, 14, 10, 11, 15, 11, 12]
        self.assertIsNone(verdicts.rhythm(levels)["found"])


class FragmentationRule(unittest.TestCase):
    def test_an_oom_the_free_bytes_could_have_met(self):
        ooms = [{"request_bytes": 60, "device_free_bytes": 56, "pool_unused_bytes": 24}]
        self.assertTrue(verdicts.fragmentation(32, 32, ooms)["found"])

    def test_an_oom_beyond_all_free_bytes(self):
        ooms = [{"request_bytes": 100, "device_free_bytes": 56, "pool_unused_bytes": 24}]
        self.assertFalse(verdicts.fragmentation(32, 32, ooms)["found"])

    def test_pools_that_grew_beyond_the_most_allocated(self):
        self.assertTrue(verdicts.fragmentation(200 * MiB, 400 * MiB, [])["found"])
        self.assertFalse(verdicts.fragmentation(KiB(4), 2 * MiB, [])["found"])  # a granule, not fragmentation


def KiB(n):
    return n << 10


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


class TopFrames(unittest.TestCase):
    def test_python_program_through_ctypes(self):
        stack = [frame("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0, "libffi.so.8+0x6f79"),
                 frame("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0, "ffi_call"),
                 frame("/tmp/Python-3.11.7/Modules/_ctypes/callproc.c", 923, "_call_function_pointer"),
                 frame("/tmp/Python-3.11.7/Objects/call.c", 214, "_PyObject_MakeTpCall"),
                 frame("/home/u/leak.py", 9, "step"),
                 frame("<frozen runpy>", 88, "_run_code"),
                 frame("/home/u/leak.py", 20, "<module>"),
                 frame("/usr/bin/python3.11", 0, "_PyEval_EvalFrameDefault"),
                 frame("/opt/nb/shim/program_end.cpp", 37, "(anonymous namespace)::main_then_end(int, char**, char**)"),
                 frame("../csu/libc-start.c", 360, "__libc_start_main"),
                 frame("/usr/bin/python3.11", 0, "_start")]
        info = frames.StackInfo(stack)
        self.assertEqual(info.python["line"], 9)
        self.assertIsNone(info.native)
        self.assertEqual([f["line"] for f in info.python_chain], [9, 20])
        self.assertEqual(frames.short(info.where()), "leak.py:9 (step)")

    def test_native_program_skips_nb_and_cuda(self):
        stack = [frame("/opt/nb/shim/hooks.cpp", 50, "nb::shim::record_alloc"),
                 frame("/usr/lib/libcudart.so.13", 0, "libcudart.so.13+0x1234"),
                 frame("??", 0, "cudaMalloc"),
                 frame("/src/app.c", 40, "make_buffers"),
                 frame("/src/app.c", 90, "main"),
                 frame("/opt/nb/shim/program_end.cpp", 37, "(anonymous namespace)::main_then_end(int, char**, char**)")]
        info = frames.StackInfo(stack)
        self.assertIsNone(info.python)
        self.assertEqual(info.native["name"], "make_buffers")
        self.assertEqual(frames.short(info.where()), "make_buffers (app.c:40)")

    def test_pytorch_skips_its_allocator_and_the_empty_factories(self):
        stack = [frame("??", 0, "cudaMallocAsync"),
                 frame("CUDAMallocAsyncAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::CudaMallocAsync::mallocAsync(void**)"),
                 frame("/site-packages/torch/lib/libc10_cuda.so", 0, "libc10_cuda.so+0x99"),
                 frame("??", 0, "at::detail::empty_generic(c10::ArrayRef<long>)"),
                 frame("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>)"),
                 frame("RegisterCUDA_0.cpp", 0, "at::(anonymous namespace)::wrapper_CUDA_pow_Tensor_Scalar(at::Tensor const&)"),
                 frame("site-packages/transformers/activations.py", 66, "forward")]
        info = frames.StackInfo(stack)
        self.assertTrue(info.native["name"].startswith("at::(anonymous namespace)::wrapper_CUDA_pow"))
        self.assertEqual(info.python["line"], 66)

    def test_no_frames(self):
        info = frames.StackInfo([])
        self.assertIsNone(info.where())


class TraceHead(unittest.TestCase):
    def test_reads_up_to_trace_events_and_no_further(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.trace.json")
            points = [[1000.5 + i, i * 1234567, i * 1234567 + 7] for i in range(5000)]
            head = {"schemaVersion": 1, "baseTimeNanoseconds": 1796000000000000000,
                    "nbTable": {"title": "x \u00e9\u6f22", "rows": []},
                    "nbRun": {"programEnd": 99.5, "steps": [[0, 1.0, 2.0, 7]],
                              "memory": [{"device": 0, "points": points}], "teardown": {"frees": 1, "bytes": 2}}}
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(head, indent=1)[:-2] + ',\n "traceEvents": [ this is not JSON')
            # Small chunks: values, numbers and UTF-8 characters cut in two.
            old = inputs._Reader.__init__

            def small(self, f):
                old(self, f)
                self.chunk = 7
            inputs._Reader.__init__ = small
            try:
                got, reached = inputs.read_trace_head(path)
            finally:
                inputs._Reader.__init__ = old
            self.assertTrue(reached)
            self.assertEqual(got["nbRun"], head["nbRun"])
            self.assertEqual(got["nbTable"]["title"], "x \u00e9\u6f22")

    def test_an_older_trace_is_scanned_for_counters_and_steps(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.trace.json")
            with open(path, "w") as f:
                f.write('{\n  "baseTimeNanoseconds": 5000,\n  "traceEvents": [\n'
                        '  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 9, "ts": 10.5, "dur": 2},\n'
                        '  {"ph": "C", "name": "Device memory (bytes)", "pid": 0, "tid": 0, "ts": 11.25, "args": {"allocated": 4, "reserved": 6}}\n'
                        '  ]\n}\n')
            got = inputs.scan_trace_events(path)
            self.assertEqual(got["steps"], [[3, 10.5, 2.0, 9]])
            self.assertEqual(got["memory"], [{"device": 0, "points": [[11.25, 4, 6]]}])


# --- whole reports of small synthetic runs ---------------------------------------

BASE_NS = 1_796_000_000_000_000_000
LEAK_STACK = [frame("libffi.so.8", 0, "ffi_call"), frame("/w/leak.py", 9, "step"), frame("/w/leak.py", 20, "<module>")]
TMP_STACK = [frame("libffi.so.8", 0, "ffi_call"), frame("/w/leak.py", 7, "step"), frame("/w/leak.py", 20, "<module>")]
W_STACK = [frame("libffi.so.8", 0, "ffi_call"), frame("/w/leak.py", 3, "<module>")]


class Writer:
    """A run in nb's layout: one entry sequence per allocation and free,
    the curve point the collector makes for each, ProfilerStep spans."""

    def __init__(self):
        self.entries, self.points, self.steps = [], [], []
        self.t = 100.0          # µs, the trace's timebase
        self.allocated = 0
        self.reserved_extra = 0
        self.live = {}
        self.addr = 0x10000

    def _entry(self, action, addr, size, frames_):
        self.entries.append({"action": action, "addr": addr, "size": size, "stream": 0,
                             "time_us": BASE_NS // 1000 + int(self.t), "frames": frames_})

    def alloc(self, size, stack, dt=3.0):
        self.t += dt
        self.addr += 1 << 24
        self._entry("segment_alloc", self.addr, size, stack)
        self._entry("alloc", self.addr, size, stack)
        self.live[self.addr] = (size, stack)
        self.allocated += size
        self.points.append([round(self.t, 3), self.allocated, self.allocated + self.reserved_extra])
        return self.addr

    def free(self, addr, dt=3.0, teardown=False):
        """A free; in teardown (after the program's end) it is a point of the
        curve only: nb leaves teardown out of the snapshot's history."""
        self.t += dt
        size, _ = self.live.pop(addr)
        if not teardown:
            for a in ("free_requested", "free_completed", "segment_free"):
                self._entry(a, addr, size, [])
        self.allocated -= size
        self.points.append([round(self.t, 3), self.allocated, self.allocated + self.reserved_extra])

    def oom(self, size, device_free, stack):
        self.t += 3
        self.entries.append({"action": "oom", "device_free": device_free, "size": size, "stream": 0,
                             "time_us": BASE_NS // 1000 + int(self.t), "frames": stack})

    def step(self, number, start):
        self.t += 0.2
        self.steps.append([number, round(start, 3), round(self.t - start, 3), 7])

    def write(self, prefix, end_live=None, program_end=None, nb_run=True, teardown=None):
        live = self.live if end_live is None else end_live
        segments = [{"device": 0, "address": a, "total_size": s, "allocated_size": s, "active_size": s,
                     "requested_size": s, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                     "is_expandable": False, "frames": st,
                     "blocks": [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": st}]}
                    for a, (s, st) in sorted(live.items())]
        with open(prefix + ".memory.pickle", "wb") as f:
            pickle.dump({"segments": segments, "device_traces": [self.entries], "allocator_settings": {}}, f)
        with open(prefix + ".trace.json", "w") as f:
            f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "totalGlobalMem": 1073741824}],\n')
            f.write(f'  "baseTimeNanoseconds": {BASE_NS},\n')
            if nb_run:
                run = {"programEnd": program_end, "steps": self.steps, "memory": [{"device": 0, "points": self.points}],
                       "teardown": teardown}
                f.write('  "nbRun": ' + json.dumps(run) + ",\n")
            f.write('  "traceEvents": [')
            events = []
            if not nb_run:
                events += [json.dumps({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                                       "tid": tid, "ts": ts, "dur": dur}) for n, ts, dur, tid in self.steps]
                events += [json.dumps({"ph": "C", "name": "Device memory (bytes)", "pid": 0, "tid": 0, "ts": ts,
                                       "args": {"allocated": a, "reserved": r}}) for ts, a, r in self.points]
            f.write(",\n  ".join([""] + events)[1:] if events else "")
            f.write('\n  ],\n  "traceName": "t"\n}\n')


def report_of(prefix, *extra):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main([prefix, "--json", "--no-picture", *extra])
    return json.loads(out.getvalue())


def leak_run(w, steps=8, step_gap=3.0):
    """Weights, then per step: a 4 MiB temporary and 1 MiB kept."""
    w.alloc(8 * MiB, W_STACK)
    kept = []
    for n in range(steps):
        start = w.t
        tmp = w.alloc(4 * MiB, TMP_STACK, dt=step_gap)
        kept.append(w.alloc(MiB, LEAK_STACK))
        w.free(tmp)
        w.step(n, start if n else 100.0)
    return kept


class WholeReports(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.prefix = os.path.join(self.dir.name, "run")

    def tearDown(self):
        self.dir.cleanup()

    def test_leak_names_its_line_and_the_end_state_is_before_teardown(self):
        w = Writer()
        kept = leak_run(w)
        end_live = dict(w.live)
        program_end = w.t + 1
        w.t += 2
        for a in list(w.live):
            w.free(a, teardown=True)
        w.write(self.prefix, end_live=end_live, program_end=program_end,
                teardown={"frees": 9, "bytes": 16 * MiB})
        r = report_of(self.prefix)
        dev = r["devices"][0]
        leak = dev["verdicts"]["leak"]
        self.assertTrue(leak["found"])
        self.assertEqual(leak["bytes_per_step"], MiB)
        self.assertEqual(leak["stacks"][0]["where"], "leak.py:9")
        self.assertEqual(leak["stacks"][0]["share"], 1.0)
        self.assertEqual(leak["stacks"][0]["live_at_end_bytes"], len(kept) * MiB)
        self.assertFalse(dev["verdicts"]["sawtooth"]["found"])
        self.assertEqual(dev["end"]["live_bytes"], 16 * MiB)
        self.assertEqual(dev["end"]["allocated_bytes"], 16 * MiB)
        self.assertEqual(dev["end"]["live"][0]["where"], "leak.py:9")
        self.assertEqual(dev["teardown"], {"frees": 9, "bytes": 16 * MiB})
        self.assertEqual(dev["peak"]["bytes"], 20 * MiB)
        self.assertEqual(dev["peak"]["stacks"][0]["where"], "leak.py:9")
        self.assertEqual(dev["peak"]["step"], 7)
        self.assertEqual(r["notes"], [])

    def test_allocations_within_a_microsecond_of_each_other_keep_their_order(self):
        # Allocations and frees 0.3 µs apart: the snapshot's whole
        # microseconds cannot order them against the peak or a step's end;
        # the curve's times can.
        w = Writer()
        w.alloc(8 * MiB, W_STACK)
        for n in range(6):
            start = w.t
            bufs = [w.alloc(4 * MiB, TMP_STACK, dt=0.3) for _ in range(3)]
            for b in bufs:
                w.free(b, dt=0.3)
            w.step(n, start if n else 100.0)
        w.write(self.prefix)
        dev = report_of(self.prefix)["devices"][0]
        # What was live at the peak is what the curve's peak counts.
        self.assertEqual(dev["peak"]["bytes"], 20 * MiB)
        self.assertEqual(sum(g["bytes"] for g in dev["peak"]["stacks"]), 20 * MiB)
        v = dev["verdicts"]
        self.assertTrue(v["sawtooth"]["found"], v["sawtooth"])
        self.assertTrue(v["sawtooth"]["every_step"])
        self.assertEqual(v["sawtooth"]["baseline_bytes"], 8 * MiB)
        self.assertEqual(v["sawtooth"]["rise_bytes"], 12 * MiB)
        self.assertFalse(v["leak"]["found"])

    def test_an_older_trace_without_nbrun_gives_the_same_verdicts(self):
        w = Writer()
        leak_run(w)
        w.write(self.prefix, nb_run=False)
        r = report_of(self.prefix)
        self.assertTrue(r["devices"][0]["verdicts"]["leak"]["found"])
        self.assertEqual(r["devices"][0]["verdicts"]["leak"]["stacks"][0]["where"], "leak.py:9")
        self.assertTrue(any("program-end" in n for n in r["notes"]))

    def test_without_steps_the_leak_waits_for_them_and_the_rhythm_decides_the_sawtooth(self):
        w = Writer()
        w.alloc(8 * MiB, W_STACK)
        for _ in range(5):
            bufs = [w.alloc(4 * MiB, TMP_STACK) for _ in range(2)]
            for b in bufs:
                w.free(b)
        w.write(self.prefix)
        v = report_of(self.prefix)["devices"][0]["verdicts"]
        self.assertIsNone(v["leak"]["found"])
        self.assertIn("needs steps", v["leak"]["why"])
        self.assertTrue(v["sawtooth"]["found"])
        self.assertEqual(v["sawtooth"]["from"], "rhythm")

    def test_fragmentation_at_an_oom(self):
        w = Writer()
        w.alloc(8 * MiB, W_STACK)
        for n in range(4):
            start = w.t
            bufs = [w.alloc(4 * MiB, TMP_STACK) for _ in range(6)]
            w.reserved_extra = 24 * MiB  # the pool keeps what is freed
            for b in bufs:
                w.free(b)
            w.step(n, start if n else 100.0)
        w.oom(60 * MiB, 56 * MiB, LEAK_STACK)
        w.write(self.prefix)
        f = report_of(self.prefix)["devices"][0]["verdicts"]["fragmentation"]
        self.assertTrue(f["found"])
        o = f["ooms"][0]
        self.assertEqual((o["request_bytes"], o["device_free_bytes"], o["pool_unused_bytes"]),
                         (60 * MiB, 56 * MiB, 24 * MiB))
        self.assertIsNone(o["largest_free_block_bytes"])  # each allocation its own segment
        self.assertEqual(o["where"], "leak.py:9")
        self.assertEqual(f["at_end"]["gap_bytes"], 24 * MiB)

    def test_what_was_live_before_the_history_is_counted_and_keeps_its_stack(self):
        # A window: the weights were allocated before it, so its history and
        # curve start with them live; the end state still has their stack.
        w = Writer()
        w.alloc(8 * MiB, W_STACK)
        w.entries, w.points = [], []
        leak_run(w, steps=6)
        w.entries = [e for e in w.entries if e["size"] != 8 * MiB]  # the second weights of leak_run: before too
        w.points = w.points[1:]
        w.write(self.prefix)
        dev = report_of(self.prefix)["devices"][0]
        self.assertEqual(dev["before_history"], {"bytes": 16 * MiB, "allocations": 2})
        self.assertTrue(dev["verdicts"]["leak"]["found"])
        self.assertEqual(dev["verdicts"]["leak"]["bytes_per_step"], MiB)
        weights = [g for g in dev["peak"]["stacks"] if g["where"] == "leak.py:3"]
        self.assertEqual(weights[0]["bytes"], 16 * MiB)

    def test_a_window_prefix_and_a_file_of_the_run_both_name_it(self):
        w = Writer()
        leak_run(w)
        w.write(self.prefix + ".w1")
        self.assertTrue(report_of(self.prefix + ".w1")["devices"][0]["verdicts"]["leak"]["found"])
        self.assertTrue(report_of(self.prefix + ".w1.trace.json")["devices"][0]["verdicts"]["leak"]["found"])
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            cli.main([self.prefix])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("recorded in windows: " + self.prefix + ".w1", err.getvalue())

    def test_the_text_report_states_the_verdicts(self):
        w = Writer()
        leak_run(w)
        w.write(self.prefix)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli.main([self.prefix, "--no-picture"])
        text = out.getvalue()
        self.assertIn("leak: YES", text)
        self.assertIn("+1.0 MiB per step", text)
        self.assertIn("leak.py:9 (step)", text)
        self.assertIn("Picture: skipped (--no-picture)", text)


if __name__ == "__main__":
    unittest.main()
