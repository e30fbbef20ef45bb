#!/usr/bin/env python3
"""Writes nbprof(1), troff, with one entry per NB_* option of the shim's own
table (nb-options prints it as NAME TYPE DEFAULT HELP, tab-separated), so the
man page lists what nbprof accepts, with the defaults the shim uses.

    nbprof_man.py NB_OPTIONS VERSION OUTPUT

Each option's entry has this shape (test/unit/test_manpage.cpp reads it back
and compares it with the table):

    .TP
    \\fB\\-\\-table\\-sort\\fR \\fIchoice\\fR
    (\\fBNB_TABLE_SORT\\fR; default \\fBdevice\\fR)
    Ranking table order: ...
"""
import subprocess
import sys

# nb-options' type names, as the README's table writes them.
TYPES = {"String": "text", "Path": "path", "Bool": "bool", "UInt": "integer", "OptUInt": "integer",
         "LogLevel": "level", "Choice": "choice", "Step": "marker"}


def text(s):
    """Literal text on a line of its own: backslashes and hyphens escaped
    (so values copy as typed), a leading '.' or '\\'' kept from being a request."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def bold(s):
    return "\\fB" + text(s) + "\\fR"


def italic(s):
    return "\\fI" + text(s) + "\\fR"


HEAD = r""".TH NBPROF 1 "" "nb {version}" "nb manual"
.nh
.SH NAME
nbprof \- run a CUDA program under nb: where its time and its device memory go
.SH SYNOPSIS
.B nbprof
[\fIOPTIONS\fR] \fB\-\-\fR \fICOMMAND\fR [\fIARGS\fR...]
.br
.B nbprof steps
[\fB\-\-for\fR \fISECONDS\fR] [\fIOPTIONS\fR] \fB\-\-\fR \fICOMMAND\fR [\fIARGS\fR...]
.br
.B nbprof stats
\fIRUN\fR [\fB\-\-sort\fR \fBdevice\fR|\fBhost\fR|\fBcalls\fR|\fBname\fR] [\fB\-\-rows\fR \fIN\fR] [\fB\-\-by source\fR] [\fB\-\-folded\fR]
.br
.B nbprof report
\fIRUN\fR [\fB\-\-json\fR] [\fB\-\-out\fR \fIPATH\fR] [\fB\-\-no\-picture\fR]
.br
.B nbprof
\fB\-\-help\fR | \fB\-\-version\fR
.SH DESCRIPTION
.B nbprof
runs \fICOMMAND\fR, unchanged, with \fBlibnb_shim.so\fR preloaded. The shim
sees every CUDA runtime and driver call the program makes, the device work
those calls cause (kernels, copies, sets, through CUPTI) and every device
allocation and free with its native and Python stack. When the program ends,
or when a recording window is complete, it writes a Chrome trace, a memory
snapshot and a ranking table (see \fBFILES\fR) and prints the table on
standard error.
.PP
The program to run always comes after \fB\-\-\fR, so a program named like a
subcommand runs too. nbprof execs it: the process keeps nbprof's pid and the
program's exit status is nbprof's.
.PP
Before starting \fICOMMAND\fR, nbprof expands the output prefix as the shim
will and stops, with one line, if the directory cannot be made or if an
earlier run's files are there (windows' files included), unless
\fB\-\-overwrite\fR is given.
.SH SUBCOMMANDS
.TP
\fBsteps\fR [\fB\-\-for\fR \fISECONDS\fR]
Runs \fICOMMAND\fR once (for \fISECONDS\fR, then SIGINT, if given) recording
host calls only, and prints the kernels and NVTX ranges that recur like the
steps of a loop, ranked, with the \fB\-\-step\fR value for each (also in
\fIPREFIX\fR.steps.txt).
.TP
\fBstats\fR \fIRUN\fR
Prints the ranking table of a finished run again, from its trace: the table
the run printed, with the same rows and figures. \fIRUN\fR is the output
prefix (\fIRUN\fR.trace.json.gz; a window's is \fIPREFIX\fR.w1) or the trace's
path. \fB\-\-sort\fR \fBdevice\fR|\fBhost\fR|\fBcalls\fR|\fBname\fR and
\fB\-\-rows\fR \fIN\fR change the order and the number of rows (default: the
run's own; 0: every row, as \fIPREFIX\fR.table.txt has them), the regions'
too. \fB\-\-by source\fR prints the source lines that launched device work
instead, by the device time of that work (a run with launch stacks,
\fBNB_STACKS=launch\fR or \fBall\fR; as \fIPREFIX\fR.source.txt has them).
\fB\-\-folded\fR writes the run's flame graph files from its trace instead,
\fIPREFIX\fR.device.folded and \fIPREFIX\fR.host.folded (a run with launch
stacks).
.TP
\fBreport\fR \fIRUN\fR
Says what a finished run's device memory did, from its snapshot and trace:
the peak, when it came and the stacks that held it; what was live at the
program's end, by allocating stack; and three verdicts with the numbers
behind them: \fBsawtooth\fR (the live bytes come back to a baseline every
step), \fBleak\fR (the baseline at step ends rises; by how much per step,
and the stacks that hold the growth) and \fBfragmentation\fR (reserved
against allocated bytes; each OOM's request against the free bytes). Steps
are the run's ProfilerStep spans (\fB\-\-step\fR). Draws allocated and
reserved bytes over time into \fIPREFIX\fR.memory.png (\fB\-\-out\fR
\fIPATH\fR; \fB\-\-no\-picture\fR: none), with matplotlib. \fB\-\-json\fR
prints the same facts as JSON.
.SH OPTIONS
.TP
\fB\-o\fR, \fB\-\-out\fR \fIPREFIX\fR
Output prefix (the same as \fB\-\-out\fR below).
.TP
\fB\-\-shim\fR \fIPATH\fR
The libnb_shim.so to preload (default: the one beside nbprof in the build
tree, or the installed one).
.TP
\fB\-\-dry\-run\fR
Prints the environment and the command instead of running it.
.TP
\fB\-h\fR, \fB\-\-help\fR
Prints the options with their defaults.
.TP
\fB\-\-version\fR
Prints nb's version.
.SS Recording options
Each is also an environment variable of the shim (shown with each), for a
program started with \fBLD_PRELOAD=libnb_shim.so\fR and no nbprof. A boolean
given alone means 1 (\fB\-\-torch\-allocs\fR); booleans take 1/0, true/false,
yes/no, on/off; integers take a k/m/g suffix (\(mu1000). A bad value prints
one line naming the variable and the default is used.
"""

TAIL = r""".SH FILES
.TP
\fIPREFIX\fR.trace.json.gz
The timeline: host calls on their threads, device work on its streams, an
arrow from each call to the work it caused, device memory curves. Open it in
Perfetto (https://ui.perfetto.dev) or chrome://tracing.
.TP
\fIPREFIX\fR.memory.pickle
The memory snapshot, in the format of torch.cuda.memory._dump_snapshot():
open it at https://pytorch.org/memory_viz, or read it with
\fBpython \-m torch.cuda._memory_viz\fR.
.TP
\fIPREFIX\fR.table.txt
The ranking table, every row (standard error shows the first
\fB\-\-table\-rows\fR).
.TP
\fIPREFIX\fR.w\fIN\fR.trace.json.gz, .memory.pickle, .table.txt
The same, per recording window (\fB\-\-active\fR).
.TP
\fIPREFIX\fR.memory.png
The picture \fBnbprof report\fR draws.
.SH EXIT STATUS
The program's own status; 2 when nbprof itself stops (a usage mistake, an
unknown subcommand or option, outputs that exist).
.SH EXAMPLES
.nf
nbprof \-\- python3 serve.py
nbprof \-o out/run1 \-\-stacks all \-\- ./my_cuda_binary args
nbprof steps \-\- python3 serve.py
nbprof \-\-step nvtx:step \-\-wait 4 \-\-warmup 2 \-\-active 8 \-\- python3 train.py
nbprof stats out/run1 \-\-sort host \-\-rows 20
nbprof report out/run1
.fi
.SH SEE ALSO
README.md in nb's documentation directory (share/doc/nb).
"""


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: nbprof_man.py NB_OPTIONS VERSION OUTPUT")
    tool, version, output = sys.argv[1:]
    table = subprocess.run([tool], check=True, capture_output=True, text=True).stdout
    out = [HEAD.replace("{version}", version)]
    for line in table.splitlines():
        name, kind, default, help_text = line.split("\t")
        flag = "--" + name[len("NB_"):].lower().replace("_", "-")
        value = "[" + italic(TYPES.get(kind, kind.lower())) + "]" if kind == "Bool" else italic(TYPES.get(kind, kind.lower()))
        out.append(".TP\n")
        out.append(bold(flag) + " " + value + "\n")
        out.append("(" + bold(name) + "; default " + (bold(default) if default else "empty") + ")\n")
        out.append(text(help_text) + "\n")
    out.append(TAIL)
    with open(output, "w", encoding="utf-8") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
