"""bench/nbbench: one entry point for every scenario (bench/README.md)."""
import argparse
import os
import sys
import time

# Imported for what they do on import: each registers its scenarios.
from . import batch, scenarios_gpu, scenarios_host, scenarios_long, scenarios_perf  # noqa: F401
from .registry import SCENARIOS
from .run import ROOT, Context, Missing

USAGE = """bench/nbbench SCENARIO [options]     (bench/nbbench SCENARIO --help)
       bench/nbbench list                   the scenarios, what each backs, which need the GPU"""


def default_build():
    for d in (os.environ.get("NB_BUILD"), os.path.join(ROOT, "build"), os.path.join(ROOT, ".carry")):
        if d and os.path.isdir(d):
            return d
    return os.path.join(ROOT, "build")


def parser_for(s):
    p = argparse.ArgumentParser(prog=f"bench/nbbench {s.name}", description=s.help,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=default_build(),
                   help="nb's build tree, or the carried copy of one (default: $NB_BUILD, build, .carry)")
    p.add_argument("--out", help="results folder (default: /tmp/nbbench-SCENARIO-TIME)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs the workloads")
    p.add_argument("--dry-run", action="store_true", help="print what would run; run nothing")
    for flags, kw in s.options:
        p.add_argument(*flags, **kw)
    return p


def run_scenario(name, argv):
    s = SCENARIOS[name]
    a = parser_for(s).parse_args(argv)
    out = a.out or f"/tmp/nbbench-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    ctx = Context(name, a.build, out, dry_run=a.dry_run, python=a.python)
    try:
        s.fn(ctx, a)
    except Missing as e:
        raise SystemExit(f"nbbench {name}: {e}")
    if ctx.dry and ctx.build.missing:
        print(f"not in {ctx.build.path} (needed for a real run): " + ", ".join(sorted(set(ctx.build.missing))))
    elif not ctx.dry:
        print(f"nbbench {name}: {ctx.elapsed():.0f} s; results in {ctx.out}", flush=True)


def list_scenarios():
    width = max(map(len, SCENARIOS))
    for s in sorted(SCENARIOS.values(), key=lambda s: s.gpu):
        print(f"{s.name:<{width}}  {'GPU ' if s.gpu else 'host'}  {s.backs}")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "list":
        list_scenarios()
        return 0
    if argv[0] not in SCENARIOS:
        print(f"nbbench: unknown scenario {argv[0]!r}; `bench/nbbench list` names them", file=sys.stderr)
        return 2
    run_scenario(argv[0], argv[1:])
    return 0
