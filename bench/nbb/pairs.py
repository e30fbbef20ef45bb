"""The one pairing helper: ABBA order, pairs of a baseline and a mode taken in
the same round, their ratios, medians and spread.

Machines are noisy: the GPU machine changes speed by up to 2x over seconds,
whatever runs. A figure is therefore never a time but the median of ratios of
runs paired in time: a mode and the baseline of its round, in ABBA order (the
baseline first in even rounds, last in odd ones), so that a drift of speed
favours neither side.

Used both by the driver (process pairs: one process per run) and inside a
workload process (in-process pairs: nb armed and disarmed by SIGUSR2 under
NB_TRIGGER=signal, a peer started and stopped through its own API). Standard
library only: it runs on any Python 3.8+.
"""
import statistics


def abba(round_index, runs):
    """The order of one round: `runs` (baseline first) in even rounds,
    reversed in odd ones."""
    runs = list(runs)
    return runs if round_index % 2 == 0 else runs[::-1]


def median(values):
    return statistics.median(values) if values else None


class Pairs:
    """Times (seconds, or any cost) by label and round. The baseline's label
    is `base`; every other label's ratios are to the baseline of its round."""

    def __init__(self, base="bare"):
        self.base = base
        self.times = {}  # label -> {round: value}

    def add(self, label, round_index, value):
        if value is not None:
            self.times.setdefault(label, {})[round_index] = value

    def labels(self):
        return [k for k in self.times if k != self.base]

    def ratios(self, label):
        base = self.times.get(self.base, {})
        mine = self.times.get(label, {})
        return [mine[i] / base[i] for i in sorted(mine) if i in base and base[i]]

    def differences(self, label):
        base = self.times.get(self.base, {})
        mine = self.times.get(label, {})
        return [mine[i] - base[i] for i in sorted(mine) if i in base]

    def row(self, label):
        """One label's figures: pairs, median ratio, spread, all ratios, and
        the median times of both sides."""
        r = self.ratios(label)
        return {
            "label": label,
            "pairs": len(r),
            "median": median(r),
            "min": min(r) if r else None,
            "max": max(r) if r else None,
            "ratios": r,
            "median_s": median(list(self.times.get(label, {}).values())),
            "base_median_s": median(list(self.times.get(self.base, {}).values())),
        }

    def table(self, labels=None):
        """A markdown table, one row per label."""
        lines = [f"| mode | pairs | median ratio to {self.base} | min | max | median s | {self.base} median s | ratios |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for label in labels or self.labels():
            r = self.row(label)
            if not r["pairs"]:
                lines.append(f"| {label} | 0 | – | – | – | – | – | |")
                continue
            lines.append(f"| {label} | {r['pairs']} | **{r['median']:.3f}** | {r['min']:.3f} | {r['max']:.3f} | "
                         f"{r['median_s']:.4f} | {r['base_median_s']:.4f} | "
                         f"{' '.join(f'{x:.3f}' for x in r['ratios'])} |")
        return "\n".join(lines)


def in_process(pairs, measure, switch, label="on", base="off", warm=1, report=None):
    """In-process on/off pairs: `switch(True)` before an "on" measurement and
    `switch(False)` after it, both off the clock; `measure()` returns the
    measured value. `warm` unmeasured on/off rounds come first (the first
    switch-on may load libraries). ABBA: pair i runs off, on when i is even,
    on, off when odd. `report(i, off, on)` is called after each pair.
    Returns a Pairs with `base` and `label`."""

    def one(on):
        if on:
            switch(True)
        try:
            return measure()
        finally:
            if on:
                switch(False)

    for _ in range(warm):
        one(True)
        one(False)
    result = Pairs(base)
    for i in range(pairs):
        got = {}
        for on in abba(i, [False, True]):
            got[on] = one(on)
        result.add(base, i, got[False])
        result.add(label, i, got[True])
        if report:
            report(i, got[False], got[True])
    return result
