"""Replays of published failures: the seed's figures beside the simulated ones.

A replay runs a shipped scenario under one or more policy variants over many
seeds and reports, for each published figure, the median and spread of the
simulated metric and whether the median falls in the accepted range. The
published values and their ranges live in a targets file
(:mod:`prunesim.studies.targets`), as references to compare with; the model
never reads them. By default a replay runs seeds 1000..1099, which no
calibration of a shipped scenario has seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from prunesim.errors import UserError
from prunesim.io.scenario_files import load, replace
from prunesim.kernel.choice import EngineChoice
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics.intervals import wilson
from prunesim.policies import REGISTRY
from prunesim.studies.compare import quantile
from prunesim.studies.targets import Target, Targets, load_targets, statistic
from prunesim.studies.variant import Variant

# A published figure is a target of the seed's targets file: its range comes from the one rule there.
Figure = Target


@dataclass
class FigureResult:
    figure: Target
    median: float  # the figure's statistic: the median, or for a yes/no figure the share of runs
    p10: float  # for a yes/no figure: the low end of the share's Wilson 95% interval
    p90: float  # ... and its high end
    ok: bool
    runs: int = 0

    def as_dict(self) -> dict:
        f = self.figure
        share = f.reduce == "share"
        return {
            "variant": f.variant,
            "figure": f.label,
            "metric": f.metric,
            "published": f.published,
            "compare": f.compare,
            "accepted": [f.low, f.high] if f.judged else None,
            "statistic": "share of runs" if share else "median",
            "median": self.median,
            "p10": None if share else self.p10,
            "p90": None if share else self.p90,
            "interval": [self.p10, self.p90] if share else None,  # Wilson 95%
            "runs": self.runs,
            "ok": self.ok,
        }


@dataclass
class ReplayReport:
    name: str
    scenario: str
    seeds: list[int]
    figures: list[FigureResult]
    runs: dict[str, list[dict]]  # variant label -> one summary per seed
    counterfactuals: list = field(default_factory=list)  # counterfactuals.CounterfactualResult, same seeds

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.figures if f.figure.judged)

    def as_dict(self) -> dict:
        return {
            "replay": self.name,
            "scenario": self.scenario,
            "seeds": [self.seeds[0], self.seeds[-1] + 1] if self.seeds else [],
            "n_seeds": len(self.seeds),
            "all_ok": self.ok,
            "figures": [f.as_dict() for f in self.figures],
            "counterfactuals": [c.as_dict() for c in self.counterfactuals],
        }


def metric_values(summaries: list[dict], metric: str) -> np.ndarray:
    out = []
    for s in summaries:
        v = s[metric]
        out.append(math.inf if v == "inf" else float(v))
    return np.array(out, dtype=float)


def evaluate(figure: Target, summaries: list[dict]) -> FigureResult:
    values = metric_values(summaries, figure.metric)
    stat = statistic(figure, values.tolist())
    if figure.reduce == "share":
        low, high = wilson(int(np.count_nonzero(values > 0)), len(values))
        return FigureResult(figure, stat, low, high, figure.accepts(stat), len(values))
    # The same quantiles as `prunesim compare`: defined when some values are infinite.
    p10, p90 = (quantile(values.tolist(), q) for q in (0.1, 0.9))
    return FigureResult(figure, stat, p10, p90, figure.accepts(stat), len(values))


# Seeds 0..99 fitted the shipped scenario (its header records the command); replays and tests judge
# it on seeds it was never fitted on.
CALIBRATION_SEEDS = range(0, 100)
REPLAY_SEEDS = range(1000, 1100)


@dataclass(frozen=True)
class FigureReplay:
    """A replay judged on the figures of a targets file, over many seeds."""

    name: str
    targets_name: str
    default_seeds: range = REPLAY_SEEDS
    with_counterfactuals: bool = False  # also run the seed's condition-of-validity variants (counterfactuals.py)

    def targets(self, base: Scenario | None = None) -> Targets:
        return load_targets(self.targets_name, base)

    @property
    def scenario(self) -> str:
        return self.targets().scenario

    @property
    def variants(self) -> tuple[Variant, ...]:
        return self.targets().variants

    @property
    def figures(self) -> tuple[Target, ...]:
        return self.targets().figures

    def run_variants(self, seeds: list[int], base: Scenario | None = None,
                     engine: EngineChoice | None = None) -> tuple[Targets, dict[str, list[dict]]]:
        """One summary per seed under each variant (skipping variants whose policy this build lacks), each on
        the engine ``engine`` chose for it (default: SimPy)."""
        engine = engine or EngineChoice()
        targets = self.targets(base)
        sc = base or load(targets.scenario)
        runs: dict[str, list[dict]] = {}
        for v in targets.variants:
            if v.policy not in REGISTRY:
                continue  # a variant whose policy this build lacks is skipped, with its figures
            variant_sc = replace(sc, v.overrides, policy=v.policy) if v.overrides else sc  # checked as it runs
            runs[v.label] = engine.summaries(v.label, variant_sc, v.policy, seeds)
        return targets, runs

    def run(self, seeds: list[int], base: Scenario | None = None, engine: EngineChoice | None = None) -> ReplayReport:
        targets, runs = self.run_variants(seeds, base, engine)
        figures = [evaluate(f, runs[f.variant]) for f in targets.figures if f.variant in runs]
        report = ReplayReport(self.name, targets.scenario, list(seeds), figures, runs)
        if self.with_counterfactuals:
            from prunesim.studies import counterfactuals

            report.counterfactuals = counterfactuals.run(base or load(targets.scenario), seeds,
                                                         runs.get("slack-gated"))
        return report


# -- seed 000: the 40-turn oscillation -------------------------------------------
OSCILLATION = FigureReplay("oscillation", "seed-000", with_counterfactuals=True)


def median_seed(report: ReplayReport, metrics: tuple[str, ...] = ("passes", "band_floor", "overhead_ratio")) -> int:
    """The seed whose run under the first variant lies nearest the medians over all seeds.

    Distance is the sum over ``metrics`` of |value - median| / spread, spread
    being the 10..90 percentile range (1 when it is zero); ties go to the
    lowest seed. A figure drawn from this seed shows a typical run, not a
    chosen one. A replay whose runs record other facts than ``metrics``
    (reentrancy's) is measured on every number all its runs record.
    """
    summaries = next(iter(report.runs.values()))
    present = [m for m in metrics if all(m in s for s in summaries)]
    if not present:
        present = sorted(k for k in summaries[0] if k != "seed" and all(
            isinstance(s.get(k), int | float) and not isinstance(s.get(k), bool) for s in summaries))
    columns = {m: metric_values(summaries, m) for m in present}
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
