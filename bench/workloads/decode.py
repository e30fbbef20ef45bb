"""The seed's decode loop, defined once: GPT-2 124M (12 layers, 768 wide, 12
heads) in fp16, built from its config directly on the GPU (random weights,
nothing downloaded), a 128-token prompt, each step one forward pass over the
whole sequence (no KV cache), argmax, append. Every GPU scenario of
bench/nbbench runs its Python programs from here.

    python3 bench/workloads/decode.py PROGRAM [ARGS]

Programs:
  time [--loops 7] [--report threads,phases]
        warm up (8 and 32 steps), then time LOOPS loops of 32 steps; prints
        'decode_s <median>', 'loops <each>', the steal time and involuntary
        context switches over the timed loops; with 'threads' also the CPU
        time of the busiest threads, the cgroup's throttling, page faults and
        the main thread's context switches; with 'phases' the wall and
        main-thread CPU time of each phase (imports, model, warm-up, loops)
  steps OUTDIR nb|torch|torch-stacks|window [--steps 8]
        4 warm-up steps, then STEPS steps each ending in a synchronize; their
        wall-clock windows (epoch ns) go to OUTDIR/<who>.steps.json; with
        'torch' under torch.profiler (CUDA activity), whose trace goes to
        OUTDIR/torch.trace.json (and .json.gz, torch's own gzip export);
        with 'torch-stacks' under torch.profiler (CPU + CUDA, with_stack),
        its export_stacks of self CUDA time to OUTDIR/torch.stacks; with
        'window' inside cudaProfilerStart/Stop (nb's window for
        NB_STEP=profiler-api: the same steps, recorded alone)
  seed STEPS [--nvtx] [--pause S] [--bursts B]
        the loop as a program nb must cut into steps itself: no warm-up, no
        synchronize; with --nvtx an NVTX range "step" around each step, with
        --pause a sleep after each; with --bursts, as the seed's notebook
        times it: decode(8) to warm up, then decode(STEPS) B times, each
        synchronized and timed (8 + 8 x 32 = 264 steps for B = 8, STEPS =
        32); prints 'end_ns <epoch ns>' at the end
  profiler-inside OUT_JSON
        4 steps, then torch.profiler (CPU + CUDA) around 8 steps, exported to
        OUT_JSON, then 4 more; prints the profiler's kernel and flow counts
  interrupt
        8 steps, then an uncaught KeyboardInterrupt (as Ctrl-C would end it)
  generate
        the seed's memory example: two model.generate(max_new_tokens=64) from
        a 32-token prompt; prints torch's own peak
  graph [REPLAYS] [EAGER]
        a 2-layer model captured with torch.cuda.graph on a 64-token prompt,
        replayed REPLAYS times, then run EAGER times eagerly
"""
import os
import statistics
import sys
import time

_MARKS = [("start", time.perf_counter(), time.thread_time())]


def mark(name):
    _MARKS.append((name, time.perf_counter(), time.thread_time()))


def wait_for_go():
    """bench/nbbench may start a process ahead of its turn: it then waits
    here, after its imports (about 13 s of CPU on the H200) and before its
    first CUDA call, until the driver creates the file NBB_GO names, so that
    its imports overlap the runs before it and not the GPU work."""
    go = os.environ.get("NBB_GO")
    if go:
        while not os.path.exists(go):
            time.sleep(0.01)
        mark("held for its turn")


class Decoder:
    """The model and the prompt; `step` is one decode step, `decode` the loop."""

    def __init__(self, n_layer=12, prompt_len=128, seed=0):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        mark("imports")
        wait_for_go()
        self.torch = torch
        torch.manual_seed(seed)
        self.cfg = GPT2Config(n_layer=n_layer, n_embd=768, n_head=12)
        with torch.device("cuda"):
            self.model = GPT2LMHeadModel(self.cfg).half().eval()
        self.prompt = torch.randint(0, self.cfg.vocab_size, (1, prompt_len), device="cuda")
        torch.cuda.synchronize()
        mark("model on the GPU")

    def step(self, seq):
        with self.torch.inference_mode():
            logits = self.model(input_ids=seq).logits
        next_id = logits[0, -1].argmax()
        return self.torch.cat([seq, next_id.view(1, 1)], dim=1)

    def decode(self, steps, each=None, sync=True):
        """`steps` steps from the prompt; each(i, seq) after step i."""
        seq = self.prompt.clone()
        for i in range(steps):
            seq = self.step(seq)
            if each:
                each(i, seq)
        if sync:
            self.torch.cuda.synchronize()
        return seq

    def warm(self):
        self.decode(8)
        self.decode(32)
        mark("warm-up decodes")

    def timed(self, steps=32):
        t0 = time.perf_counter()
        self.decode(steps)
        return time.perf_counter() - t0


# --- what the machine did meanwhile (time --report) ------------------------------

def steal_ticks():
    """The hypervisor's steal time, all CPUs, in clock ticks (/proc/stat)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def thread_cpu():
    """tid -> (name, CPU seconds, last CPU) of every thread of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()  # state is rest[0]; utime 11, stime 12, processor 36
        out[int(tid)] = (s[s.index("(") + 1:s.rindex(")")], (int(rest[11]) + int(rest[12])) / tick, int(rest[36]))
    return out


def cgroup_cpu():
    out = {}
    try:
        with open("/sys/fs/cgroup/cpu.stat") as f:
            for line in f:
                k, v = line.split()
                out[k] = int(v)
    except OSError:
        pass
    return out


def usage():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    switches = {}
    with open(f"/proc/self/task/{os.getpid()}/status") as f:  # the main thread's
        for line in f:
            k, _, v = line.partition(":")
            if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                switches["main_" + k.split("_")[0]] = int(v)
    return dict(minflt=r.ru_minflt, majflt=r.ru_majflt, nivcsw=r.ru_nivcsw, **switches)


def program_time(args):
    loops = int(opt(args, "--loops", 7))
    report = opt(args, "--report", "").split(",")
    d = Decoder()
    d.warm()
    before = dict(steal=steal_ticks(), threads=thread_cpu(), cgroup=cgroup_cpu(), usage=usage())
    ts = [d.timed() for _ in range(loops)]
    mark(f"{loops} timed decodes")
    tick = os.sysconf("SC_CLK_TCK")
    print("decode_s", statistics.median(ts), flush=True)
    print("loops", " ".join(f"{t:.4f}" for t in ts), "steal_s", (steal_ticks() - before["steal"]) / tick,
          "invol_cs", usage()["nivcsw"] - before["usage"]["nivcsw"], flush=True)
    if "threads" in report:
        used = []
        for tid, (name, cpu_s, cpu) in thread_cpu().items():
            spent = cpu_s - before["threads"].get(tid, (name, 0.0, cpu))[1]
            if spent > 0:
                used.append((spent, f"{name.replace(' ', '_')}:{spent:.2f}@{cpu}"))
        print("threads_cpu_s", " ".join(u for _, u in sorted(used, reverse=True)[:6]), flush=True)
        after = cgroup_cpu()
        print("cgroup", {k: after[k] - before["cgroup"][k] if k in after and k in before["cgroup"] else "absent"
                         for k in ("nr_periods", "nr_throttled", "throttled_usec", "usage_usec")},
              "nproc", os.cpu_count(), "affinity", len(os.sched_getaffinity(0)), flush=True)
        now = usage()
        print("usage", {k: now[k] - before["usage"][k] for k in now}, flush=True)
    if "phases" in report:
        for (_, w0, c0), (name, w1, c1) in zip(_MARKS, _MARKS[1:]):
            print(f"phase {name:20s} wall {w1 - w0:7.3f} s  main-thread CPU {c1 - c0:7.3f} s", flush=True)


def program_steps(args):
    import json
    out, who = args[0], args[1]
    steps = int(opt(args, "--steps", 8))
    d = Decoder()
    torch = d.torch
    windows = []

    def run():
        seq = d.prompt.clone()
        for _ in range(steps):
            torch.cuda.synchronize()
            t0 = time.time_ns()
            seq = d.step(seq)
            torch.cuda.synchronize()
            windows.append([t0, time.time_ns()])

    d.decode(4)  # handles, allocator, autotuning
    if who == "torch":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
        # torch's own compressed form (one export per trace), and the plain
        # JSON the checks read.
        prof.export_chrome_trace(f"{out}/torch.trace.json.gz")
        import gzip
        import shutil
        with gzip.open(f"{out}/torch.trace.json.gz", "rb") as src, open(f"{out}/torch.trace.json", "wb") as dst:
            shutil.copyfileobj(src, dst)
    elif who == "torch-stacks":
        # torch.profiler's own answer to "which line costs the GPU": Python
        # stacks on every op, exported as folded stacks of self CUDA time.
        from torch.profiler import ProfilerActivity, profile
        # export_stacks reads the stacks only with the verbose config.
        verbose = torch._C._profiler._ExperimentalConfig(verbose=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True,
                     experimental_config=verbose) as prof:
            run()
        prof.export_stacks(f"{out}/torch.stacks", "self_cuda_time_total")
        # Where export_stacks' total comes from: the events with a stack and
        # self device time, by name, against the device work in torch's own
        # trace of the same steps (torch.stacks.account.json).
        by_name = {}
        for e in prof.events():
            self_us = getattr(e, "self_device_time_total", 0)
            if e.stack and int(self_us) > 0:
                n, t = by_name.get(e.name, (0, 0.0))
                by_name[e.name] = (n + 1, t + self_us)
        prof.export_chrome_trace(f"{out}/torch-stacks.trace.json")
        with open(f"{out}/torch-stacks.trace.json") as f:
            events = json.load(f)["traceEvents"]
        work_us = sum(e.get("dur", 0) for e in events
                      if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
        with open(f"{out}/torch.stacks") as f:
            stacks_us = sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())
        account = {"device_work_us_in_trace": work_us, "export_stacks_us": stacks_us,
                   "stacked_self_device_us_by_event": sorted(([k, n, t] for k, (n, t) in by_name.items()),
                                                              key=lambda r: -r[2])}
        with open(f"{out}/torch.stacks.account.json", "w") as f:
            json.dump(account, f, indent=1)
        print("torch-stacks: device work in its trace", round(work_us), "us; export_stacks", stacks_us,
              "us; top stacked events", account["stacked_self_device_us_by_event"][:6], flush=True)
    elif who == "window":
        torch.cuda.profiler.start()
        run()
        torch.cuda.profiler.stop()
    else:
        run()
    with open(f"{out}/{who}.steps.json", "w") as f:
        json.dump(windows, f)
    print(who, "steps", len(windows), flush=True)


def program_seed(args):
    steps = int(args[0])
    nvtx = "--nvtx" in args
    pause = float(opt(args, "--pause", 0))
    d = Decoder()

    def each(i, seq):
        if nvtx:
            d.torch.cuda.nvtx.range_pop()
        if pause:
            time.sleep(pause)
        if nvtx and i + 1 < steps:
            d.torch.cuda.nvtx.range_push("step")

    bursts = int(opt(args, "--bursts", 0))
    if bursts:
        d.decode(8)
        for _ in range(bursts):
            print(f"decode({steps}) {d.timed(steps) * 1e3:.1f} ms", flush=True)
        print("end_ns", time.time_ns(), flush=True)
        return
    if nvtx:
        d.torch.cuda.nvtx.range_push("step")
    d.decode(steps, each)
    print("end_ns", time.time_ns(), flush=True)


def program_profiler_inside(args):
    import json
    from torch.profiler import ProfilerActivity, profile
    d = Decoder()
    seq = d.decode(4)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(8):
            seq = d.step(seq)
        d.torch.cuda.synchronize()
    prof.export_chrome_trace(args[0])
    d.decode(4)
    with open(args[0]) as f:
        ev = json.load(f)["traceEvents"]
    print("torch.profiler kernels", sum(1 for e in ev if e.get("cat") == "kernel"),
          "flows", sum(1 for e in ev if e.get("cat") == "ac2g"), flush=True)


def program_interrupt(args):
    Decoder().decode(8, sync=False)
    raise KeyboardInterrupt


def program_generate(args):
    d = Decoder(prompt_len=32)
    for _ in range(2):
        # One request per NVTX range "generate": nb's steps for NB_STEP=nvtx:generate.
        d.torch.cuda.nvtx.range_push("generate")
        d.model.generate(d.prompt, max_new_tokens=64, do_sample=False, pad_token_id=0)
        d.torch.cuda.synchronize()
        d.torch.cuda.nvtx.range_pop()
    torch = d.torch
    print("max_memory_allocated", torch.cuda.max_memory_allocated(), "max_memory_reserved",
          torch.cuda.max_memory_reserved(), flush=True)


def program_graph(args):
    replays = int(args[0]) if args else 5
    eager = int(args[1]) if len(args) > 1 else 3
    d = Decoder(n_layer=2, prompt_len=64)
    torch, model, x = d.torch, d.model, d.prompt
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(input_ids=x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = model(input_ids=x).logits
        for _ in range(replays):
            g.replay()
        for _ in range(eager):
            z = model(input_ids=x).logits
    torch.cuda.synchronize()
    print("torch_graph replays", replays, "eager", eager, "same", bool(torch.equal(y, z)), flush=True)


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


PROGRAMS = {"time": program_time, "steps": program_steps, "seed": program_seed,
            "profiler-inside": program_profiler_inside, "interrupt": program_interrupt,
            "generate": program_generate, "graph": program_graph}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in PROGRAMS:
        sys.exit(__doc__)
    PROGRAMS[sys.argv[1]](sys.argv[2:])
