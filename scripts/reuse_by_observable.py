"""Does an implicit cache's ``reuse`` depend on something a simulation can see? Judged leave-one-out.

    python scripts/reuse_by_observable.py [--traces ../shared/traces]

The shipped model bills every call ``reuse x`` the prefix it could read, one
``reuse`` per model (docs/cost.md). The recorded Gemini bills miss more often
early in a run and when the readable prefix is short, so two schedules are
tried against it, each with one ``reuse`` per bin, fitted the same way (recorded
over readable cached tokens, summed over the fitting runs):

* by the call's number in its run, bins starting at calls 2, 4, 8, 16, 32;
* by the readable prefix, bins starting at 4,096, 8,192, 16,384, 32,768 tokens.

Two more shapes follow what the recorded bills show: Gemini reports cached
tokens in steps of about 2,048, and about one hit in six reads an older entry
(the prefix of a call before the previous one) rather than the latest:

* an older entry: ``a x`` the readable prefix ``+ b x`` the previous call's
  readable prefix (capped at this call's), ``a`` and ``b`` by least squares over
  the fitting runs' calls;
* an offset: ``a x`` the readable prefix ``- b`` on every call that can read at
  all, by least squares the same way.

The bills also name the upstream provider that served each call (the router
sent them to "Google" or "Google AI Studio"), and a call reads from the cache
of the provider that serves it. Two rows follow from that:

* a cache per upstream provider: each provider's cache sees only the calls it
  served, one ``reuse`` over that readable prefix, fitted as above;
* the same with ``reuse`` chosen to minimise the median per-run cost error of
  the fitting runs (on a grid of 0.0005 steps) instead of summed tokens;
* the same with the misses known: a call that recorded no cached tokens is
  predicted to read none and every other call ``h x`` its readable prefix,
  ``h`` fitted over the hits alone. This is not a prediction (which calls miss
  is taken from the bill being judged); it measures how much of the error is
  the misses' alone.

The bin edges are powers of two fixed before looking at any error, not fitted.
Each run of ``mini-swe-agent-dev`` is judged with the bins fitted on the other
41; the runs of ``mini-swe-agent`` with the bins fitted on all 42. An implicit
cache stores whole prompts whatever ``reuse`` is, so a call's readable prefix is
computed once (``reuse = 1``) and each schedule only scales it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
from prunesim.io import prices
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies import cache_fidelity as cf

READ = CALL_COLUMNS.index("cache_read")
SCHEDULES = {
    "one reuse (shipped)": None,
    "by call number": ("call", (2, 4, 8, 16, 32)),
    "by readable prefix": ("readable", (4096, 8192, 16384, 32768)),
}


def upstream(folder: Path, run) -> list[str]:
    """The upstream provider that served each of the run's calls, as its bill names it."""
    data = json.loads((folder / f"{run.name}.traj.json").read_text(encoding="utf-8"))
    return [str(((m.get("extra") or {}).get("response") or {}).get("provider"))
            for m in data["messages"] if m.get("role") == "assistant"]


def readable_by_provider(run, served: list[str], whole) -> np.ndarray:
    """Each call's readable prefix when every upstream provider keeps its own cache."""
    readable = np.zeros(len(run.calls))
    for name in sorted(set(served)):
        mine = [i for i, s in enumerate(served) if s == name]
        sub = dataclasses.replace(run, calls=[run.calls[i] for i in mine])
        readable[mine] = cf.predict(sub, whole)[:, READ]
    return readable


def prepared(folder: Path, base) -> list[dict]:
    """Per run and call: readable prefix (reuse 1), recorded cached tokens, prompt, output, recorded bill."""
    out = []
    whole = dataclasses.replace(base, reuse=1.0)
    for run in cf.collect(folder)[0]:
        readable = cf.predict(run, whole)[:, READ]
        served = upstream(folder, run)
        assert len(served) == len(run.calls), run.name
        out.append({
            "readable": readable,
            "by_provider": readable_by_provider(run, served, whole),
            "call": np.arange(1, len(run.calls) + 1),
            "cached": np.array([c.cached for c in run.calls], float),
            "prompt": np.array([c.prompt for c in run.calls], float),
            "output": np.array([c.output for c in run.calls], float),
            "bill": np.array([cf.recorded_cost_of_call(c, base) for c in run.calls]),
        })
    return out


def previous_readable(run: dict) -> np.ndarray:
    prev = np.concatenate([[0.0], run["readable"][:-1]])
    return np.minimum(prev, run["readable"])


def can_read(run: dict) -> np.ndarray:
    return (run["readable"] > 0).astype(float)


def least_squares(data: list[dict], columns) -> np.ndarray:
    x = np.vstack([np.concatenate([c(d) for d in data]) for c in columns]).T
    y = np.concatenate([d["cached"] for d in data])
    return np.linalg.lstsq(x, y, rcond=None)[0]


# name -> (fit over runs, predicted reads of one run)
LINEAR = {
    "older entry": (lambda data: least_squares(data, (lambda d: d["readable"], previous_readable)),
                    lambda d, c: c[0] * d["readable"] + c[1] * previous_readable(d)),
    "offset": (lambda data: least_squares(data, (lambda d: d["readable"], lambda d: -can_read(d))),
               lambda d, c: np.where(d["readable"] > 0, np.maximum(0.0, c[0] * d["readable"] - c[1]), 0.0)),
}


def ratio(data: list[dict], readable: str, hits_only: bool = False) -> float:
    """Recorded over readable cached tokens, summed over the runs' calls (over their hits alone if asked)."""
    recorded = sum(d["cached"].sum() for d in data)  # a miss records none, so hits alone sum the same
    readable_of = (lambda d: d[readable][d["cached"] > 0].sum()) if hits_only else (lambda d: d[readable].sum())
    return recorded / sum(readable_of(d) for d in data)


REUSE_GRID = np.round(np.arange(0.80, 1.0 + 1e-9, 0.0005), 4)


def median_cost_fit(data: list[dict]) -> float:
    """The ``reuse`` whose median per-run cost error over the fitting runs is least (the first such on the grid)."""
    price = prices.pricing("gemini-3-pro-preview")
    losses = [np.median([read_errors(d, np.round(np.minimum(r * d["by_provider"], d["prompt"])), price)[1]
                         for d in data]) for r in REUSE_GRID]
    return float(REUSE_GRID[int(np.argmin(losses))])


# name -> (fit over runs, predicted reads of one run); each provider keeps its own cache
BY_PROVIDER = {
    "one reuse, a cache per upstream provider": (
        lambda data: ratio(data, "by_provider"),
        lambda d, r: np.minimum(r * d["by_provider"], d["prompt"])),
    "the same, reuse by the median run's cost error": (
        lambda data: median_cost_fit(data),
        lambda d, r: np.minimum(r * d["by_provider"], d["prompt"])),
    "the same, misses known (not a prediction)": (
        lambda data: ratio(data, "by_provider", hits_only=True),
        lambda d, h: np.where(d["cached"] > 0, np.minimum(h * d["by_provider"], d["prompt"]), 0.0)),
}


def bins(run: dict, schedule) -> np.ndarray:
    if schedule is None:
        return np.zeros(len(run["call"]), int)
    key, edges = schedule
    return np.searchsorted(np.array(edges), run[key], side="right")


def fit(data: list[dict], schedule) -> np.ndarray:
    count = 1 if schedule is None else len(schedule[1]) + 1
    reuse = np.ones(count)
    for b in range(count):
        recorded = sum(d["cached"][bins(d, schedule) == b].sum() for d in data)
        readable = sum(d["readable"][bins(d, schedule) == b].sum() for d in data)
        if readable > 0:
            reuse[b] = min(1.0, recorded / readable)
    return reuse


def errors(run: dict, schedule, reuse: np.ndarray, p) -> tuple[float, float]:
    """The run's relative error on its cached tokens and on its cost (implicit: writes at the input price)."""
    return read_errors(run, np.round(reuse[bins(run, schedule)] * run["readable"]), p)


def read_errors(run: dict, read: np.ndarray, p) -> tuple[float, float]:
    cost = ((run["prompt"] - read) * p.input + read * p.cache_read + run["output"] * p.output) / 1e6
    return (abs(read.sum() - run["cached"].sum()) / run["cached"].sum(),
            abs(cost.sum() - run["bill"].sum()) / run["bill"].sum())


def line(errs: list[tuple[float, float]]) -> str:
    e = np.array(errs) * 100
    return (f"cached {np.median(e[:, 0]):.2f}% / {np.percentile(e[:, 0], 90):.2f}%, "
            f"cost {np.median(e[:, 1]):.2f}% / {np.percentile(e[:, 1], 90):.2f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("PRUNESIM_TRACES", str(Path(__file__).resolve().parents[2] / "shared" / "traces"))
    ap.add_argument("--traces", type=Path, default=Path(default))
    args = ap.parse_args()
    base = prices.pricing("gemini-3-pro-preview")
    dev = prepared(args.traces / "mini-swe-agent-dev", base)
    held = prepared(args.traces / "mini-swe-agent", base)
    print(f"{len(dev)} dev runs judged leave-one-out; {len(held)} unseen runs judged with the fit on all dev runs")
    print("per run, median / p90")
    for name, schedule in SCHEDULES.items():
        loo = [errors(d, schedule, fit(dev[:i] + dev[i + 1:], schedule), base) for i, d in enumerate(dev)]
        whole = fit(dev, schedule)
        unseen = [errors(d, schedule, whole, base) for d in held]
        print(f"{name}: dev {line(loo)} | unseen {line(unseen)} | reuse fitted on all dev {np.round(whole, 4)}")
    for name, (fit_of, predict) in (LINEAR | BY_PROVIDER).items():
        loo = [read_errors(d, np.round(predict(d, fit_of(dev[:i] + dev[i + 1:]))), base) for i, d in enumerate(dev)]
        whole = fit_of(dev)
        unseen = [read_errors(d, np.round(predict(d, whole)), base) for d in held]
        print(f"{name}: dev {line(loo)} | unseen {line(unseen)} | fitted on all dev {np.round(whole, 4)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
