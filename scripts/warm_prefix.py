"""What Claude Code sessions read from the cache after a pause longer than its TTL, and which rule predicts it.

    python scripts/warm_prefix.py [SESSIONS] [--folds 5]   (default: the shared traces' claude-code-dev)

After a pause longer than the 5-minute TTL a session's own entries have
expired, yet most of its calls still read a prefix: one that something outside
the session kept warm (other sessions of the same runtime, which send the same
tools and system prompt). The study uses only what a session file records
before the call: the first call's read (what was warm when the session began,
written by no call of its own), the reads of its earlier calls, the Claude Code
version, the pause and the time of day (UTC). Compactions are left aside (see
scripts/compaction_reads.py).

1. The reads by Claude Code version: the first calls' and those after a pause.
2. What each read after a pause equals, as the session knew it before the
   call: its first call's read, the smallest read so far (at least the
   model's minimum), the last read after a pause (else the first call's), or
   the level the other sessions of its version read most often after a pause.
3. Calls that read nothing after a pause, by pause length and by hour (UTC),
   with Wilson 95% intervals.
4. Rules judged out of sample: the sessions split into ``--folds`` folds by
   sorted name (the i-th to fold ``i % folds``, as ``prunesim fidelity``
   splits them), anything a rule needs fitted on the other folds; each rule
   drives the cache model fed the recorded prompts
   (``cache_fidelity.predict``'s ``kept_warm``). Per run: the dollars' error
   against the recorded bill; a sign test of each run's error against the
   null's (nothing stays warm after a pause: the model before this study) and
   against the first call's read (the model since).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from prunesim.io import prices
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.observe.metrics.intervals import wilson
from prunesim.studies import cache_fidelity as cf
from scipy.stats import binomtest

MODEL = "claude-opus-4-5"
PAUSE_BINS = (300, 600, 3600)  # seconds: 5-10 minutes, 10-60 minutes, more
HOUR_BINS = (0, 6, 12, 18)  # UTC
_COST = CALL_COLUMNS.index("cost_usd")


@dataclass
class Session(cf.Run):
    version: str = "?"  # the Claude Code version of its first assistant record


def version(path: Path) -> str:
    """The Claude Code version of the session's first assistant record."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # a blank line, or a last line still being written
                continue
            if isinstance(r, dict) and r.get("type") == "assistant" and r.get("version"):
                return str(r["version"])
    return "?"


def after_pause(run: cf.Run, ttl: float) -> list[int]:
    """Indexes of the calls that came more than ``ttl`` seconds after the one before, compactions aside."""
    return [k for k in range(1, len(run.calls))
            if not run.calls[k].reset and run.calls[k].time_s - run.calls[k - 1].time_s > ttl]


def modal(reads) -> int | None:
    """The read seen most often (the longest of equals); None when there is none."""
    counts = Counter(reads)
    return max(counts, key=lambda read: (counts[read], read)) if counts else None


# -- the rules: what stays warm from each call on (cache_fidelity.predict's kept_warm) ----------------
def rule_none(run, ttl, minimum, level) -> dict[int, int]:
    return {}


def rule_first(run, ttl, minimum, level) -> dict[int, int]:
    return {1: run.calls[0].cached}


def rule_smallest(run, ttl, minimum, level) -> dict[int, int]:
    """The smallest read of at least ``minimum`` tokens recorded so far, from the call after it on."""
    out, least = {}, None
    for k, c in enumerate(run.calls, 1):
        if c.cached >= minimum and (least is None or c.cached < least):
            least = out[k if k == 1 else k + 1] = c.cached
    return out


def rule_last(run, ttl, minimum, level) -> dict[int, int]:
    """The first call's read, then the last read after a pause, from the call after it on."""
    out = {1: run.calls[0].cached}
    for k in after_pause(run, ttl):
        if run.calls[k].cached >= minimum:
            out[k + 2] = run.calls[k].cached
    return out


def rule_version(run, ttl, minimum, level) -> dict[int, int]:
    """The level the fitting sessions of the same version read most often after a pause; else the first read."""
    return {1: level.get(run.version, run.calls[0].cached)}


def rule_constant(run, ttl, minimum, level) -> dict[int, int]:
    """The median read after a pause in all fitting sessions, whatever the version."""
    return {1: level["all"]}


RULES = {
    "null: nothing warm after a pause": rule_none,
    "the first call's read": rule_first,
    "the smallest read so far": rule_smallest,
    "the last read after a pause (else the first call's)": rule_last,
    "a level per version (fitted; else the first call's read)": rule_version,
    "one level for all (fitted: the median read after a pause)": rule_constant,
}


def levels(train: list[cf.Run], ttl: float) -> dict:
    """What the fitted rules need: per version the read seen most often after a pause, and the median of all."""
    by_version: dict[str, list[int]] = {}
    for run in train:
        by_version.setdefault(run.version, []).extend(
            run.calls[k].cached for k in after_pause(run, ttl) if run.calls[k].cached > 0)
    out = {v: modal(reads) for v, reads in by_version.items() if reads}
    every = [x for reads in by_version.values() for x in reads]
    out["all"] = int(np.median(every)) if every else 0
    return out


# -- 1-3: what the sessions recorded -----------------------------------------------------------------
def share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} [{100 * lo:.0f}%, {100 * hi:.0f}%]" if n else "0/0"


def counted(values) -> str:
    return ", ".join(f"{x:,} x{n}" for x, n in sorted(Counter(values).items()))


def describe(runs: list[cf.Run], ttl: float, minimum: int) -> None:
    print("1. reads by Claude Code version: first calls; calls after a pause longer than the TTL")
    for v in sorted({r.version for r in runs}, key=lambda v: [int(x) if x.isdigit() else -1 for x in v.split(".")]):
        mine = [r for r in runs if r.version == v]
        paused = [r.calls[k].cached for r in mine for k in after_pause(r, ttl)]
        print(f"   {v}: {len(mine)} session(s); first {counted(r.calls[0].cached for r in mine)}; "
              f"after a pause {counted(paused) or 'none'}")
    tally, other = Counter(), []
    n = 0
    for run in runs:
        level = levels([r for r in runs if r is not run], ttl).get(run.version)
        for k in after_pause(run, ttl):
            read = run.calls[k].cached
            if not read:
                continue
            n += 1
            before = [c.cached for c in run.calls[:k] if c.cached >= minimum]
            pauses = [run.calls[j].cached for j in after_pause(run, ttl) if j < k and run.calls[j].cached >= minimum]
            matched = {"the first call's read": read == run.calls[0].cached,
                       "the smallest read so far": bool(before) and read == min(before),
                       "the last read after a pause (else the first call's)":
                           read == (pauses[-1] if pauses else run.calls[0].cached),
                       "the other sessions' level for its version": read == level}
            tally.update(name for name, yes in matched.items() if yes)
            if not any(matched.values()):
                pause = run.calls[k].time_s - run.calls[k - 1].time_s
                other.append(f"{run.name[-12:]} call {k + 1}, {pause:.0f} s after the one before, read {read:,} of "
                             f"the previous prompt's {run.calls[k - 1].prompt:,}")
    print(f"2. of {n} calls after a pause that read a prefix, the read equals:")
    for name, count in tally.most_common():
        print(f"   {name}: {share(count, n)}")
    print(f"   none of these: {len(other)}" + "".join(f"\n     {line}" for line in other))


def bin_label(edges, i: int, unit: str) -> str:
    return f"{edges[i]}+ {unit}" if i == len(edges) - 1 else f"{edges[i]}-{edges[i + 1]} {unit}"


def missing(runs: list[cf.Run], ttl: float) -> None:
    calls = [(r, k) for r in runs for k in after_pause(r, ttl)]
    pause = np.array([r.calls[k].time_s - r.calls[k - 1].time_s for r, k in calls])
    hour = np.array([datetime.fromtimestamp(r.calls[k].time_s, UTC).hour for r, k in calls])
    miss = np.array([r.calls[k].cached == 0 for r, k in calls])
    print(f"3. calls after a pause that read nothing: {share(int(miss.sum()), len(miss))}, in "
          f"{len({r.name for (r, _), m in zip(calls, miss, strict=True) if m})} of "
          f"{len({r.name for r, _ in calls})} sessions with such a pause")
    for title, values, edges, unit in (("pause", pause, PAUSE_BINS, "s"), ("hour", hour, HOUR_BINS, "h UTC")):
        b = np.searchsorted(np.array(edges), values, side="right") - 1
        cells = [f"{bin_label(edges, i, unit)} {share(int(miss[b == i].sum()), int((b == i).sum()))}"
                 for i in range(len(edges))]
        print(f"   by {title}: " + "; ".join(cells))
    # Not a predictor (other files, as recent as the call): could the folder's own sessions have kept it warm?
    times = {r.name: np.array([c.time_s for c in r.calls]) for r in runs}
    near = sum(any(((t >= r.calls[k].time_s - ttl) & (t < r.calls[k].time_s)).any()
                   for name, t in times.items() if name != r.name) for r, k in calls)
    print(f"   another session of this folder called in the TTL before {near} of these {len(calls)} calls")


# -- 4: out of sample --------------------------------------------------------------------------------
def judged(runs: list[cf.Run], folds: int, price, ttl: float) -> dict[str, np.ndarray]:
    """Per rule, each run's (error, predicted - recorded dollars over its calls after a pause), on held-out folds."""
    bills = [cf.reference_cost(r, price) for r in runs]
    out = {}
    for name, rule in RULES.items():
        rows = np.zeros((len(runs), 2))
        for fold in range(folds):
            level = levels([r for i, r in enumerate(runs) if i % folds != fold], ttl)
            for i, run in enumerate(runs):
                if i % folds != fold:
                    continue
                cost = cf.predict(run, price, kept_warm=rule(run, ttl, price.min_tokens, level))[:, _COST]
                paused = after_pause(run, ttl)
                over = sum(cost[k] - cf.recorded_cost_of_call(run.calls[k], price) for k in paused)
                rows[i] = abs(cost.sum() - bills[i]) / bills[i], over
        out[name] = rows
    return out


def compared(e: np.ndarray, against: np.ndarray) -> str:
    better, worse = int((e < against - 1e-12).sum()), int((e > against + 1e-12).sum())
    p = binomtest(better, better + worse).pvalue if better + worse else 1.0
    return f"better on {better} runs, worse on {worse} (sign test p = {p:.3f})"


def mechanisms(runs: list[cf.Run], folds: int, price, ttl: float) -> None:
    results = judged(runs, folds, price, ttl)
    names = list(results)
    null, first = results[names[0]][:, 0], results[names[1]][:, 0]
    print(f"4. out of sample ({folds} folds by sorted name): per-run dollars' error median / p90 / mean; "
          f"predicted minus recorded dollars on the calls after a pause")
    for name, rows in results.items():
        e = 100 * rows[:, 0]
        line = (f"   {name}: {np.median(e):.2f}% / {np.percentile(e, 90):.2f}% / {e.mean():.2f}%, "
                f"${rows[:, 1].sum():+.2f}")
        if name != names[0]:
            line += f"; against the null: {compared(rows[:, 0], null)}"
        if name not in names[:2]:
            line += f"; against the first call's read: {compared(rows[:, 0], first)}"
        print(line)


def main() -> int:
    traces = Path(os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sessions", type=Path, nargs="?", default=traces / "claude-code-dev")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    price = prices.pricing(MODEL)
    runs = []
    for path in sorted(args.sessions.glob("*.jsonl")):
        run = next(iter(cf.read_runs(path)), None)
        if isinstance(run, cf.Run) and run.model == MODEL:
            runs.append(Session(run.name, run.format, run.model, run.calls, run.model_recorded, version(path)))
    runs.sort(key=lambda r: r.name)
    if args.folds < 2 or args.folds > len(runs):
        why = "must be at least 2" if args.folds < 2 else f"needs as many {MODEL} sessions, found {len(runs)}"
        print(f"error: --folds {args.folds} {why} (in {args.sessions})", file=sys.stderr)
        return 2
    print(f"{len(runs)} sessions, {sum(len(r.calls) for r in runs)} calls ({MODEL}); TTL {price.ttl_s:.0f} s")
    describe(runs, price.ttl_s, price.min_tokens)
    missing(runs, price.ttl_s)
    mechanisms(runs, args.folds, price, price.ttl_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
