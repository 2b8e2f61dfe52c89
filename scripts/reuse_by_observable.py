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

The bin edges are powers of two fixed before looking at any error, not fitted.
Each run of ``mini-swe-agent-dev`` is judged with the bins fitted on the other
41; the runs of ``mini-swe-agent`` with the bins fitted on all 42. An implicit
cache stores whole prompts whatever ``reuse`` is, so a call's readable prefix is
computed once (``reuse = 1``) and each schedule only scales it.
"""

from __future__ import annotations

import argparse
import dataclasses
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


def prepared(runs, base) -> list[dict]:
    """Per run and call: readable prefix (reuse 1), recorded cached tokens, prompt, output, recorded bill."""
    out = []
    for run in runs:
        readable = cf.predict(run, dataclasses.replace(base, reuse=1.0))[:, READ]
        out.append({
            "readable": readable,
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
    dev = prepared(cf.collect(args.traces / "mini-swe-agent-dev")[0], base)
    held = prepared(cf.collect(args.traces / "mini-swe-agent")[0], base)
    print(f"{len(dev)} dev runs judged leave-one-out; {len(held)} unseen runs judged with the fit on all dev runs")
    print("per run, median / p90")
    for name, schedule in SCHEDULES.items():
        loo = [errors(d, schedule, fit(dev[:i] + dev[i + 1:], schedule), base) for i, d in enumerate(dev)]
        whole = fit(dev, schedule)
        unseen = [errors(d, schedule, whole, base) for d in held]
        print(f"{name}: dev {line(loo)} | unseen {line(unseen)} | reuse fitted on all dev {np.round(whole, 4)}")
    for name, (fit_of, predict) in LINEAR.items():
        loo = [read_errors(d, np.round(predict(d, fit_of(dev[:i] + dev[i + 1:]))), base) for i, d in enumerate(dev)]
        whole = fit_of(dev)
        unseen = [read_errors(d, np.round(predict(d, whole)), base) for d in held]
        print(f"{name}: dev {line(loo)} | unseen {line(unseen)} | fitted on all dev {np.round(whole, 4)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
