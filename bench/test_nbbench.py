"""bench/nbbench on a machine without a GPU: the pairing helper, the checks
on small traces, the streamed trace reader, the host scenarios on the fake
CUDA stack, the CUPTI floor
library on the fake CUPTI, every GPU scenario as a dry run, and the GPU
scenarios that run on a stand-in for PyTorch (fake_torch/, whose kernels go
to the fake CUDA runtime) for real.

    NB_BUILD=build python3 bench/test_nbbench.py      (meson test bench)
"""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from nbb import checks, trace_stream  # noqa: E402
from nbb.pairs import Pairs, abba, in_process  # noqa: E402
from nbb.registry import SCENARIOS  # noqa: E402
import nbb.cli  # noqa: E402,F401  (registers the scenarios)

BUILD = os.environ.get("NB_BUILD", os.path.join(os.path.dirname(BENCH), "build"))
NBBENCH = [sys.executable, os.path.join(BENCH, "nbbench")]
FOLDERS = []  # the runs' results, removed at the end


def tearDownModule():
    for folder in FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)


def nbbench(*args, env=None):
    out = tempfile.mkdtemp(prefix="nbbench-test-")
    FOLDERS.append(out)
    p = subprocess.run(NBBENCH + list(args) + ["--build", BUILD, "--out", out], capture_output=True, text=True,
                       timeout=150, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout + p.stderr, out


class PairsTest(unittest.TestCase):
    def test_abba(self):
        self.assertEqual(abba(0, ["bare", "a", "b"]), ["bare", "a", "b"])
        self.assertEqual(abba(1, ["bare", "a", "b"]), ["b", "a", "bare"])

    def test_ratios_pair_rounds(self):
        p = Pairs("bare")
        for i, (b, x) in enumerate([(1.0, 1.1), (2.0, 2.4), (1.0, None), (4.0, 4.0)]):
            p.add("bare", i, b)
            p.add("nb", i, x)
        self.assertEqual([round(r, 3) for r in p.ratios("nb")], [1.1, 1.2, 1.0])
        row = p.row("nb")
        self.assertEqual((row["pairs"], round(row["median"], 3)), (3, 1.1))
        self.assertIn("| nb | 3 | **1.100** |", p.table())

    def test_in_process_switches_off_the_clock_in_abba_order(self):
        log = []
        state = {"on": False}

        def switch(on):
            log.append("on" if on else "off")
            state["on"] = on

        def measure():
            log.append("measure+" if state["on"] else "measure-")
            return 2.0 if state["on"] else 1.0

        p = in_process(2, measure, switch, label="x", warm=1)
        self.assertEqual(p.ratios("x"), [2.0, 2.0])
        self.assertEqual(log, ["on", "measure+", "off", "measure-",  # warm
                               "measure-", "on", "measure+", "off",  # pair 0: off, on
                               "on", "measure+", "off", "measure-"])  # pair 1: on, off


def trace(path, events, base=0):
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "baseTimeNanoseconds": base}, f)
    return path


def call(corr, ts, name="cudaLaunchKernel", tid=1, **args):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": 1, "tid": tid, "pid": 1,
            "args": dict(args, correlation=corr)}


def kernel(corr, ts, name="k", **args):
    """A kernel made by the call of correlation `corr` (None: by no call recorded)."""
    a = dict(args)
    a["correlation"] = corr if corr is not None else 10**9 + int(ts)
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 2, "tid": 7, "pid": 0, "args": a}


class ChecksTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nbbench-checks-")
        FOLDERS.append(self.dir)

    def test_joined(self):
        ev = [call(1, 10), kernel(1, 20), {"ph": "s", "id": 1, "ts": 10}, {"ph": "f", "id": 1, "ts": 20}]
        lines, ok = checks.joined(trace(os.path.join(self.dir, "a.json"), ev))
        self.assertTrue(ok, lines)
        lines, ok = checks.joined(trace(os.path.join(self.dir, "b.json"), ev + [kernel(None, 30)]))
        self.assertFalse(ok, lines)

    def test_window(self):
        spans = [{"ph": "X", "name": f"ProfilerStep#{i}", "ts": 100 * i, "dur": 90, "cat": "cpu_op", "args": {}}
                 for i in range(2)]
        ev = spans + [call(1, 10, kernel="k"), kernel(1, 20), call(2, 110, kernel="k"), kernel(2, 120)]
        self.assertTrue(checks.window(trace(os.path.join(self.dir, "w.json"), ev), 2)[1])
        # Steps of different lengths (cuBLAS's gemms vary with the sequence's
        # length), each kernel of its step's launches: a whole window.
        longer = ev + [call(4, 130, kernel="k"), kernel(4, 140)]
        self.assertTrue(checks.window(trace(os.path.join(self.dir, "w1.json"), longer), 2)[1])
        # A launch of the step whose kernel never came (left in CUPTI's buffer).
        lost = ev + [call(4, 130, kernel="k")]
        self.assertFalse(checks.window(trace(os.path.join(self.dir, "w3.json"), lost), 2)[1])
        ev += [call(3, 95, kernel="k"), kernel(3, 125)]  # launched between two steps
        self.assertFalse(checks.window(trace(os.path.join(self.dir, "w2.json"), ev), 2)[1])

    def test_threads_joined_sees_a_wrong_call(self):
        ev = [call(1, 10, grid=[1, 1, 1]), kernel(1, 20, name="tagged", grid=[1, 1, 1]),
              call(2, 11, grid=[1, 2, 1], tid=2), kernel(2, 21, name="tagged", grid=[1, 1, 1])]
        lines, ok = checks.threads_joined(trace(os.path.join(self.dir, "t.json"), ev), 2, 1)
        self.assertFalse(ok)
        self.assertTrue(any("joined to a wrong call 1" in line for line in lines), lines)


class TraceStreamTest(unittest.TestCase):
    """The streamed trace reader against json.load, with chunks of a few
    characters so that every value is cut somewhere."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nbbench-stream-")
        FOLDERS.append(self.dir)
        self.chunk = trace_stream.CHUNK
        trace_stream.CHUNK = 5

    def tearDown(self):
        trace_stream.CHUNK = self.chunk

    def read(self, text, name="t.json"):
        path = os.path.join(self.dir, name)
        with (gzip.open(path, "wt") if name.endswith(".gz") else open(path, "w")) as f:
            f.write(text)
        events = []
        return trace_stream.read(path, events.append), events

    def test_as_json_load(self):
        whole = {"traceEvents": [call(1, 123456.789), kernel(1, 1e3), {"ph": "M", "x": [True, None, -0.5e-3]}],
                 "nbTable": {"rows": [{"name": "cuLaunchKernel", "calls": 1234567}], "footer": {"dropped": 0}},
                 "baseTimeNanoseconds": 98765432109876543}
        for text in (json.dumps(whole), json.dumps(whole, indent=3), " \n" + json.dumps(whole, separators=(",", ":"))):
            for name in ("t.json", "t.json.gz"):
                top, events = self.read(text, name)
                self.assertEqual(events, whole["traceEvents"])
                self.assertEqual(top["nbTable"], whole["nbTable"])
                self.assertEqual(top["baseTimeNanoseconds"], whole["baseTimeNanoseconds"])
        self.assertEqual(self.read('{"traceEvents" : [ ] }'), ({"traceEvents": None}, []))
        self.assertEqual(self.read("{}"), ({}, []))

    def test_refuses_what_json_load_refuses(self):
        for text in ('{"traceEvents": [{"ph": "X"}, ]}', '{"traceEvents": [{"ph": "X"}]', '{"a": 1} x',
                     '{"traceEvents": [{"ph": "X"} {"ph": "X"}]}', '{"a": 12', '{"a": tru}', ""):
            with self.subTest(text):
                with self.assertRaises(ValueError):
                    json.loads(text)
                with self.assertRaises(ValueError):
                    self.read(text)
        with self.assertRaises(ValueError):  # JSON, but not a trace
            self.read("[1]")


class HostScenariosTest(unittest.TestCase):
    def run_ok(self, *args):
        rc, out, folder = nbbench(*args)
        self.assertEqual(rc, 0, out)
        return out, folder

    def test_launch_cost(self):
        rc, out, folder = nbbench("launch-cost", "--pairs", "1", "--bursts", "2")
        if rc != 0 and os.environ.get("NB_TEST_PRELOAD_FIRST"):
            # Under a sanitizer (-O0) the collector may not keep up with the
            # launch loop: the scenario must then refuse the figure.
            self.assertIn("the figure would flatter nb", out)
            return
        self.assertEqual(rc, 0, out)
        self.assertIn("| launch_ns |", out)
        self.assertTrue(os.path.exists(os.path.join(folder, "summary.txt")))

    def test_order_join(self):
        out, _ = self.run_ok("order-join", "--calls", "20000", "--runs", "1")
        self.assertIn("joined 20000", out)

    def test_alloc_stack(self):
        out, _ = self.run_ok("alloc-stack", "--rounds", "1", "--bursts", "2", "--modes", "bare,memory")
        self.assertIn("Stacks taken", out)
        self.assertIn("| memory | 1 |", out)

    def test_stack_cold(self):
        out, _ = self.run_ok("stack-cold", "--no-torch", "--kib", "0")
        self.assertIn("cold 0 KiB", out)

    def test_stack_sites(self):
        shim = os.path.join(os.environ["NB_BUILD"], "shim", "libnb_shim.so")
        out, _ = self.run_ok("stack-sites", "--pairs", "1", "--rounds", "40", "--base-shim", shim)
        self.assertRegex(out, r"\| native us per stack \(mean\) \| [0-9.]+ \| [0-9.]+ \|")
        self.assertRegex(out, r"\| page faults on the launching thread \| [0-9.]+ \| [0-9.]+ \|")
        out, _ = self.run_ok("stack-sites", "--probe", "--pairs", "1", "--rounds", "40")
        self.assertRegex(out, r"unwind ns per capture: median [0-9]+, mean [0-9]+ .*, [0-9]+ frames")

    def test_long_run(self):
        out, folder = self.run_ok("long-run", "--iterations", "1000", "--sample-ms", "20")
        self.assertIn("calls in nbTable against nb-demo's: cuLaunchKernel 2000 of 2000 exact, "
                      "cuMemAlloc 1004 of 1004 exact, cuMemFree 1003 of 1003 exact", out)
        self.assertRegex(out, r"nb\.trace\.json(\.gz)? loads")
        for row in ("| peak RSS MiB", "| exit delay ms |", "| loop s |"):
            self.assertIn(row, out)
        with open(os.path.join(folder, "rss.tsv")) as f:
            self.assertIn("\nnb\t", f.read())
        out, _ = self.run_ok("long-run", "--dry-run", "--seconds", "2", "--rate", "100000", "--launches-only",
                             "--env", "NB_KEEP=1s")
        self.assertEqual(out.count("would run:"), 2, out)
        self.assertIn("nb-demo 300000 --rate 100000 --seconds 2 --launches-only", out)
        self.assertIn("NB_KEEP=1s", out)

    def test_unknown_scenario(self):
        p = subprocess.run(NBBENCH + ["no-such"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


class GpuScenariosTest(unittest.TestCase):
    def test_every_gpu_scenario_dry_runs(self):
        for name, s in SCENARIOS.items():
            if s.gpu:
                with self.subTest(name):
                    rc, out, _ = nbbench(name, "--dry-run")
                    self.assertEqual(rc, 0, out)
                    self.assertIn("would", out)

    def test_batch_parts(self):
        from nbb.batch import PARTS
        for part in PARTS:
            self.assertLess(sum(secs for _, _, secs in part), 9 * 60)
            for name, opts, _ in part:
                self.assertIn(name, SCENARIOS)
                nbb.cli.parser_for(SCENARIOS[name]).parse_args(opts)  # the options exist
        rc, out, _ = nbbench("gpu-batch", "--list")
        self.assertIn(f"part {len(PARTS)}/{len(PARTS)}", out)

    def test_workloads_run_nothing_without_a_program(self):
        for args in (["decode.py"], ["inprocess.py", "--modes", "no-such"]):
            p = subprocess.run([sys.executable, os.path.join(BENCH, "workloads", args[0])] + args[1:],
                               capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertNotIn("Traceback", p.stderr)


class FakeGpuTest(unittest.TestCase):
    """GPU scenarios on fake_torch and the fake CUDA stack: nb is really
    preloaded, armed by signals, cut into steps, and its files are read."""

    def run_fake(self, *args):
        fakes = os.path.join(BUILD, "test", "fake_cuda")
        rc, out, folder = nbbench(*args, env={"PYTHONPATH": os.path.join(BENCH, "fake_torch"),
                                              "NBB_FAKE_CUDART": os.path.join(fakes, "libcudart.so.13"),
                                              "NBB_CUDA_LIB": fakes})
        self.assertEqual(rc, 0, out)
        return out, folder

    def test_overhead(self):
        out, _ = self.run_fake("overhead", "--modes", "nostacks,cupti,memhist-all,prof-cuda", "--pairs", "2")
        for row in ("| nb, NB_STACKS=none | 2 |", "| CUPTI kernel + copy + set activity alone (the floor) | 2 |",
                    '| memory history, stacks="all" | 2 |', "| torch.profiler, CUDA activity only | 2 |"):
            self.assertIn(row, out)
        self.assertIn("nostacks: Device records: 96 (0 dropped by CUPTI)", out)

    def test_pairs(self):
        out, folder = self.run_fake("pairs", "--modes", "nostacks,dormant", "--rounds", "2", "--report",
                                    "threads,phases")
        self.assertIn("| dormant | 2 |", out)
        with open(os.path.join(folder, "processes.txt")) as f:
            text = f.read()
        self.assertIn("nostacks 1 phase", text)
        self.assertIn("nostacks 1 phase held for its turn", text)  # started ahead, held after its imports
        self.assertIn("nostacks 0 Calls: ", text)

    def test_pairs_deadline(self):
        # The deadline is asked at each round's start: round 0 is finished,
        # and the processes started ahead for round 1 are stopped, not run.
        out, folder = self.run_fake("pairs", "--modes", "nostacks", "--rounds", "3", "--deadline", "0.01")
        self.assertIn("nostacks 0 decode_s", out)
        self.assertNotIn("bare 1 decode_s", out)
        with open(os.path.join(folder, "work", "pairs.log")) as f:
            self.assertEqual(f.read().count("[exit "), 2)

    def test_stack_decode(self):
        shim = os.path.join(BUILD, "shim", "libnb_shim.so")
        out, _ = self.run_fake("stack-decode", "--rounds", "1", "--steps", "2", "--base-shim", shim)
        for side in ("base-0", "shim-0"):
            self.assertRegex(out, side + r": native us [0-9.]+, Python us [0-9.]+, median stack us [0-9.]+, "
                                          r"native frames [0-9.]+, Python frames [1-9][0-9.]*, memo share % [0-9.]+")
        self.assertRegex(out, r"\| native us \| \*\*[0-9.]+\*\* \([0-9.]+–[0-9.]+\) \| \*\*[0-9.]+\*\*")

    def test_compare(self):
        out, folder = self.run_fake("compare", "--pairs", "1", "--process-pairs", "1", "--reps", "0")
        with open(os.path.join(folder, "compare.md")) as f:
            table = f.read()
        # Every mode's row: one that is missing says which run failed in the
        # scenario's output ("inprocess MODE exited ...") and its log.
        logs = "".join(open(p).read()[-3000:] for p in glob.glob(os.path.join(folder, "work", "*.log")))
        self.assertEqual(table.count("| 1 | **"), 9, table + out + logs)

    def test_windows(self):
        out, _ = self.run_fake("window-check", "--parts", "census")
        self.assertIn("kernel:fake_cat ", out)  # ranked; which of the three comes first depends on timing
        out, _ = self.run_fake("window-check", "--parts", "kernel,signal", "--marker", "kernel:fake_cat",
                               "--signal-after", "1")
        self.assertEqual(out.count("PASS the window holds exactly its ProfilerStep spans"), 2, out)
        self.assertNotIn("FAIL", out)

    def test_interrupt_handover_demo_frames(self):
        for args, passes in ((["interrupt"], 2), (["handover"], 1), (["demo"], 4),
                             (["memory-check", "--parts", "frames"], 2)):
            out, _ = self.run_fake(*args)
            self.assertEqual(out.count("\nPASS "), passes, out)


FLOOR_CHILD = """
import ctypes, sys
floor = ctypes.CDLL(sys.argv[1])
floor.nbb_cupti_on.argtypes = [ctypes.c_char_p]
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuModuleLoadData(ctypes.byref(mod), b"fake-module\\nk\\n") == 0
assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"k") == 0
def launch(n):
    for _ in range(n):
        assert cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0
counts = []
for on, n in ((True, 5), (False, 4), (True, 3)):
    if on:
        assert floor.nbb_cupti_on(b"act") == 0
    launch(n)
    if on:
        assert floor.nbb_cupti_off() == 0
    counts.append(floor.nbb_cupti_records())
print(counts)
"""


class CuptiFloorTest(unittest.TestCase):
    def test_records_only_while_on(self):
        lib = os.path.join(BUILD, "bench", "libnbb_cupti_floor.so")
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "test", "fake_cuda"), LD_PRELOAD="")
        p = subprocess.run([sys.executable, "-c", FLOOR_CHILD, lib], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "[5, 5, 8]")


if __name__ == "__main__":
    unittest.main(verbosity=2)
