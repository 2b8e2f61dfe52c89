"""Replays of published failures: the seed's figures beside the simulated ones.

A replay runs a shipped scenario under one or more policy variants over many
seeds and reports, for each published figure, the median and spread of the
simulated metric and whether the median falls in the accepted range. The
published values live here, as references to compare with; the model never
reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.io.scenario_files import load, replace
from prunesim.model.scenario import Scenario
from prunesim.policies import REGISTRY
from prunesim.runner import run_one
from prunesim.studies.compare import quantile
from prunesim.studies.variant import Variant


@dataclass(frozen=True)
class Figure:
    """A published figure: which variant and metric, the published text, the accepted range."""

    variant: str
    label: str
    metric: str
    published: str
    low: float
    high: float
    # "median": the median over seeds must lie in [low, high];
    # "share": for a yes/no metric, the share of seeds where it holds must lie in [low, high].
    reduce: str = "median"


@dataclass
class FigureResult:
    figure: Figure
    median: float
    p10: float
    p90: float
    ok: bool

    def as_dict(self) -> dict:
        f = self.figure
        return {
            "variant": f.variant,
            "figure": f.label,
            "metric": f.metric,
            "published": f.published,
            "accepted": [f.low, f.high],
            "median": self.median,
            "p10": self.p10,
            "p90": self.p90,
            "ok": self.ok,
        }


@dataclass
class ReplayReport:
    name: str
    scenario: str
    seeds: list[int]
    figures: list[FigureResult]
    runs: dict[str, list[dict]]  # variant label -> one summary per seed

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.figures)

    def as_dict(self) -> dict:
        return {
            "replay": self.name,
            "scenario": self.scenario,
            "seeds": [self.seeds[0], self.seeds[-1] + 1] if self.seeds else [],
            "n_seeds": len(self.seeds),
            "all_ok": self.ok,
            "figures": [f.as_dict() for f in self.figures],
        }


def metric_values(summaries: list[dict], metric: str) -> np.ndarray:
    out = []
    for s in summaries:
        v = s[metric]
        out.append(math.inf if v == "inf" else float(v))
    return np.array(out, dtype=float)


def evaluate(figure: Figure, summaries: list[dict]) -> FigureResult:
    values = metric_values(summaries, figure.metric)
    if figure.reduce == "share":
        share = float(np.mean(values > 0))
        return FigureResult(figure, share, share, share, figure.low <= share <= figure.high)
    # The same quantiles as `prunesim compare`: defined when some values are infinite.
    median, p10, p90 = (quantile(values.tolist(), q) for q in (0.5, 0.1, 0.9))
    ok = figure.low <= median <= figure.high
    return FigureResult(figure, median, p10, p90, ok)


@dataclass(frozen=True)
class FigureReplay:
    """A replay judged on figures over many seeds."""

    name: str
    scenario: str
    variants: tuple[Variant, ...]
    figures: tuple[Figure, ...]

    def run(self, seeds: list[int], base: Scenario | None = None) -> ReplayReport:
        sc = base or load(self.scenario)
        runs: dict[str, list[dict]] = {}
        for v in self.variants:
            if v.policy not in REGISTRY:
                continue  # a variant whose policy this build lacks is skipped, with its figures
            variant_sc = replace(sc, v.overrides) if v.overrides else sc
            runs[v.label] = [run_one(variant_sc, v.policy, s, trace="none").summary for s in seeds]
        figures = [evaluate(f, runs[f.variant]) for f in self.figures if f.variant in runs]
        return ReplayReport(self.name, sc.name, list(seeds), figures, runs)


# -- seed 000: the 40-turn oscillation -------------------------------------------
OSCILLATION = FigureReplay(
    name="oscillation",
    scenario="oscillation-40",
    variants=(
        Variant("naive @22k", "naive"),
        Variant("naive @20k", "naive", {"trigger": 20000}),
        Variant("slack-gated", "slack-gated"),
    ),
    figures=(
        Figure("naive @22k", "prune passes per 40-turn run", "passes", "11", 10, 12),
        Figure("naive @22k", "band floor after the first trigger", "band_floor", "20.9k", 20600, 21200),
        Figure("naive @22k", "sum(index+rationale) / sum(net)", "overhead_ratio", "~1.4", 1.25, 1.55),
        Figure("naive @22k", "index tokens per pass", "mean_index_tokens", "~600", 480, 720),
        Figure("naive @22k", "rationale tokens per pass", "mean_rationale_tokens", "~400", 320, 480),
        Figure("naive @22k", "evicted tokens per pass", "mean_evicted_tokens", "~1800", 1260, 2340),
        Figure("naive @22k", "net tokens per pass", "mean_net_tokens", "~800", 400, 1200),
        Figure("naive @22k", "pass frequency rising (2nd half - 1st half)", "pass_trend", "> 0", 1, math.inf),
        Figure("naive @22k", "share of runs oscillating", "oscillating", "yes", 0.5, 1.0, "share"),
        Figure("naive @20k", "net-negative passes", "net_negative_passes", "0", 0, 0),
        Figure("naive @20k", "share of runs oscillating", "oscillating", "no", 0.0, 0.25, "share"),
        Figure("slack-gated", "prune passes per 40-turn run", "passes", "4", 3, 5),
        Figure("slack-gated", "net-negative passes", "net_negative_passes", "0", 0, 0),
        Figure("slack-gated", "peak utilization", "peak_utilization", "~21.4k", 21100, 21700),
    ),
)

def median_seed(report: ReplayReport, metrics: tuple[str, ...] = ("passes", "band_floor", "overhead_ratio")) -> int:
    """The seed whose run under the first variant lies nearest the medians over all seeds.

    Distance is the sum over ``metrics`` of |value - median| / spread, spread
    being the 10..90 percentile range (1 when it is zero); ties go to the
    lowest seed. A figure drawn from this seed shows a typical run, not a
    chosen one.
    """
    summaries = next(iter(report.runs.values()))
    columns = {m: metric_values(summaries, m) for m in metrics}
    distance = np.zeros(len(summaries))
    for values in columns.values():
        finite = np.where(np.isinf(values), np.nan, values)
        med = np.nanmedian(finite)
        lo, hi = np.nanpercentile(finite, [10, 90])
        spread = (hi - lo) or 1.0
        distance += np.nan_to_num(np.abs(finite - med) / spread, nan=1e9)
    return report.seeds[int(np.argmin(distance))]


REPLAYS: dict[str, Callable] = {"oscillation": OSCILLATION}


def get_replay(name: str):
    try:
        return REPLAYS[name]
    except KeyError:
        raise UserError("replay", name, f"unknown replay (known: {', '.join(sorted(REPLAYS))})") from None


# The reentrancy story is its own module; it is registered here, with the oscillation.
from prunesim.studies.reentrancy import REENTRANCY  # noqa: E402

REPLAYS["reentrancy"] = REENTRANCY

from prunesim.studies.long_session import LONG_SESSION  # noqa: E402

REPLAYS["long-session"] = LONG_SESSION
