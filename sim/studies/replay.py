"""Replays of published failures: the seed's figures beside the simulated ones.

A replay runs a shipped scenario under one or more policy variants over many
seeds and reports, for each published figure, the median and spread of the
simulated metric and whether the median falls in the accepted range. The
published values and their ranges live in a targets file
(:mod:`prunesim.studies.targets`), as references to compare with; the model
never reads them. By default a replay runs seeds 1000..1099, which no
calibration of a shipped scenario has seen.

A figure in range is *counted* as a reproduction only when it also tells the
seed's settings apart (it does not hold under the variant it names as
``against``) and, for a verdict or signature of the failing setting, when it
is specific (:mod:`prunesim.studies.specificity`); the seed's contrasts are
judged as paired differences. The headline counts, beside those, the figures
that hold in most independent ranges of seeds, from the ranges record
``prunesim validate --out`` writes (:mod:`prunesim.studies.ranges`).
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
from prunesim.observe.metrics.intervals import paired_difference, wilson
from prunesim.policies import REGISTRY
from prunesim.studies import ranges, specificity
from prunesim.studies.compare import quantile
from prunesim.studies.ranges import RangeCheck, RangeRecord
from prunesim.studies.specificity import Specificity
from prunesim.studies.targets import Contrast, Target, Targets, load_targets, statistic
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
    against: float | None = None  # the statistic under the variant the seed contrasts it with (None: none named)
    against_ok: bool = False  # ... and whether it is in range there too
    specific: bool | None = None  # for a verdict or signature of the failing setting: whether it is specific

    @property
    def discriminates(self) -> bool:
        """Whether the figure tells the seed's settings apart: it is not in range under ``against`` too."""
        return self.against is None or not self.against_ok

    @property
    def counted(self) -> bool:
        """In range, discriminating, and specific where that applies: a reproduction."""
        return self.ok and self.discriminates and self.specific is not False

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
            "against": f.against or None,
            "against_statistic": self.against,
            "discriminates": self.discriminates,
            "specific": self.specific,
            "counted": self.counted,
        }


@dataclass
class ContrastResult:
    contrast: Contrast
    difference: float  # share under the variant minus share under `against`, over the same seeds
    low: float  # its paired 95% interval
    high: float
    share: float
    against_share: float
    runs: int

    @property
    def ok(self) -> bool:
        return self.contrast.accepts(self.difference, self.high)

    counted = ok

    def as_dict(self) -> dict:
        c = self.contrast
        return {"variant": c.variant, "against": c.against, "contrast": c.label, "metric": c.metric,
                "published": c.published, "compare": c.compare, "accepted": [c.low, c.high],
                "difference": self.difference, "interval": [self.low, self.high], "share": self.share,
                "against_share": self.against_share, "runs": self.runs, "ok": self.ok}


def contrast(c: Contrast, runs: dict[str, list[dict]]) -> ContrastResult:
    """The paired difference of ``c`` over the seeds both variants ran (the same seeds, in the same order)."""
    here = [_holds(s[c.metric]) for s in runs[c.variant]]
    there = [_holds(s[c.metric]) for s in runs[c.against]]
    d, low, high = paired_difference(here, there)
    return ContrastResult(c, d, low, high, sum(here) / len(here), sum(there) / len(there), len(here))


def _holds(value) -> bool:
    return value == "inf" or float(value) > 0


def judge(targets: Targets, runs: dict[str, list[dict]], spec: Specificity | None = None
          ) -> tuple[list[FigureResult], list[ContrastResult]]:
    """Every figure and contrast of ``targets`` on one set of seeds (``runs``: each variant's summaries)."""
    figures = []
    for f in targets.figures:
        if f.variant not in runs:
            continue
        result = evaluate(f, runs[f.variant])
        if f.against and f.against in runs:
            other = evaluate(f, runs[f.against])
            result.against, result.against_ok = other.median, other.ok
        signature = specificity.FIGURE_SIGNATURE.get(f.metric)
        if spec is not None and f.judged and f.variant == specificity.CASE and signature:
            result.specific = spec.signatures[signature].specific
        figures.append(result)
    contrasts = [contrast(c, runs) for c in targets.contrasts if c.variant in runs and c.against in runs]
    return figures, contrasts


@dataclass
class ReplayReport:
    name: str
    scenario: str
    seeds: list[int]
    figures: list[FigureResult]
    runs: dict[str, list[dict]]  # variant label -> one summary per seed
    counterfactuals: list = field(default_factory=list)  # counterfactuals.CounterfactualResult, same seeds
    contrasts: list[ContrastResult] = field(default_factory=list)
    specificity: Specificity | None = None
    ranges: RangeCheck | None = None  # what the ranges record says of each figure (None: no record consulted)

    @property
    def judged(self) -> list:
        """The judged figures and the contrasts, in the order the report lists them."""
        return [f for f in self.figures if f.figure.judged] + list(self.contrasts)

    @property
    def ok(self) -> bool:
        return all(r.counted for r in self.judged)

    def as_dict(self) -> dict:
        return {
            "replay": self.name,
            "scenario": self.scenario,
            "seeds": [self.seeds[0], self.seeds[-1] + 1] if self.seeds else [],
            "n_seeds": len(self.seeds),
            "all_ok": self.ok,
            "figures": [{**f.as_dict(), "why": why(f, self) if f.figure.judged else ""} for f in self.figures],
            "contrasts": [{**c.as_dict(), "why": why(c, self)} for c in self.contrasts],
            "headline": {"judged": len(self.judged), "counted": sum(r.counted for r in self.judged),
                         "holding": sum(counted(r, self) for r in self.judged)},
            "specificity": self.specificity.as_dict() if self.specificity else None,
            "ranges": self.ranges.as_dict() if self.ranges else None,
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
    with_specificity: bool = False  # also run the nulls of specificity.py beside the failing setting

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

    def specificity(self, seeds: list[int], targets: Targets, base: Scenario | None = None) -> Specificity | None:
        """The nulls of the failing setting's signatures on ``seeds`` (None when this replay has none)."""
        if not self.with_specificity or specificity.CASE not in {v.label for v in targets.variants}:
            return None
        case = targets.variant(specificity.CASE)
        sc = base or load(targets.scenario)
        return specificity.run(replace(sc, case.overrides) if case.overrides else sc, seeds)

    def run(self, seeds: list[int], base: Scenario | None = None, engine: EngineChoice | None = None,
            record: RangeRecord | None = None) -> ReplayReport:
        """The figures on ``seeds``; ``record`` (default: the shipped one, for the shipped scenario) says which hold
        in most independent ranges of seeds."""
        targets, runs = self.run_variants(seeds, base, engine)
        spec = self.specificity(seeds, targets, base)
        figures, contrasts = judge(targets, runs, spec)
        report = ReplayReport(self.name, targets.scenario, list(seeds), figures, runs, contrasts=contrasts,
                              specificity=spec)
        if self.with_counterfactuals:
            from prunesim.studies import counterfactuals

            report.counterfactuals = counterfactuals.run(base or load(targets.scenario), seeds, runs)
        if record is None and base is None:
            record = ranges.shipped(self.targets_name)
        if record is not None:
            report.ranges = ranges.check(record, self, base)
        return report


# -- seed 000: the 40-turn oscillation -------------------------------------------
OSCILLATION = FigureReplay("oscillation", "seed-000", with_counterfactuals=True, with_specificity=True)


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


# -- what a report says beyond the table: reasons, the band, the gate's bound, the headline ------------------------
def why(result, report: ReplayReport) -> str:
    """Why a judged figure or contrast is not counted, from the runs (empty when it is counted and holds)."""
    if isinstance(result, ContrastResult):
        c = result.contrast
        if result.ok:
            return _ranges_why(result, report)
        return (f"{c.variant} {result.share:.2f} against {c.against} {result.against_share:.2f}: "
                f"{result.difference:+.2f} [{result.low:+.2f}..{result.high:+.2f}], needs {c.accepted_text()} "
                "with the interval below 0")
    f = result.figure
    if not result.ok:
        if f.reduce == "share":
            text = f"{result.median:.2f} of runs, needs {f.accepted_text()}"
            clauses = _binding_clause(report.runs.get(f.variant, []), f.metric)
            return text + (f"; {clauses}" if clauses else "")
        side = "below" if result.median < f.low else "above"
        gap = (f.low - result.median) if side == "below" else (result.median - f.high)
        return f"median {_num(result.median)} is {_num(gap)} {side} {f.accepted_text()}"
    if not result.discriminates:
        return (f"also in range under {f.against} ({_num(result.against)}): it does not tell the two settings "
                "apart")
    if result.specific is False and report.specificity is not None:
        signature = report.specificity.signatures[specificity.FIGURE_SIGNATURE[f.metric]]
        nulls = "; ".join(f"{n.null} {n.holds / signature.runs:.2f} ({n.difference:+.2f} [{n.low:+.2f}..{n.high:+.2f}])"
                          for n in signature.failing_nulls())
        return (f"not specific: '{signature.label}' holds in {signature.share:.2f} of runs, and under {nulls}; "
                f"needs >= {specificity.MARGIN:.2f} above each null")
    return _ranges_why(result, report)


def _ranges_why(result, report: ReplayReport) -> str:
    if report.ranges is None or not report.ranges.current:
        return ""
    held = report.ranges.held(ranges.key(result))
    if held is None or ranges.most(*held):
        return ""
    return f"holds in {held[0]} of {held[1]} independent ranges: in range here by the luck of the seeds"


def _binding_clause(summaries: list[dict], metric: str) -> str:
    """For the oscillation verdict: the clause that fails in most runs, and how often it holds; for the band's
    verdict, where the trace spends its time instead."""
    if metric == "pinned_under" and summaries:
        above = float(np.median([s["share_above_trigger"] for s in summaries]))
        p90 = float(np.median([s["band_p90"] for s in summaries]))
        return (f"the median run spends {above:.2f} of its post-trigger time above the trigger, and its band's p90 "
                f"is {_num(p90)} against the trigger {_num(summaries[0]['acting_trigger'])}")
    if metric != "oscillating" or not summaries:
        return ""
    shares = {name: sum(bool(s[name]) for s in summaries) / len(summaries)
              for name in ("osc_keeps_pruning", "osc_tight_band", "osc_rate_holds", "osc_overhead_above_net")}
    name = min(shares, key=shares.get)
    return f"the clause that fails most, {specificity.SIGNATURES[name][0]}, holds in {shares[name]:.2f}"


def counted(result, report: ReplayReport) -> bool:
    """Counted as a reproduction in the headline: counted on these seeds and, where a current ranges record has a
    word on it, holding in most ranges; with no current record, on these seeds alone."""
    if not result.counted:
        return False
    if report.ranges is None or not report.ranges.current:
        return True
    held = report.ranges.held(ranges.key(result))
    return held is None or ranges.most(*held)


def band_lines(report: ReplayReport) -> list[str]:
    """Where each variant's trace spends its post-trigger time (medians over the runs), and how often it is pinned."""
    lines = []
    for label, runs in report.runs.items():
        above = float(np.median([s["share_above_trigger"] for s in runs]))
        ceiling = float(np.median([s["share_at_ceiling"] for s in runs]))
        p10 = float(np.median([s["band_p10"] for s in runs]))
        p90 = float(np.median([s["band_p90"] for s in runs]))
        pinned = sum(bool(s["pinned_under"]) for s in runs)
        lines.append(f"{label:13s} at or below the trigger {1 - above:.2f}, above it {above:.2f} (at the budget "
                     f"{ceiling:.2f}); p10..p90 {_num(p10)}..{_num(p90)}; pinned just under the trigger in {pinned} "
                     f"of {len(runs)} runs")
    return lines


def gate_bound(report: ReplayReport, label: str = "slack-gated") -> dict | None:
    """The estimating gate's guarantee, measured: net-negative passes among its passes against its own bound."""
    runs = report.runs.get(label)
    if not runs:
        return None
    passes = sum(int(s["passes"]) for s in runs)
    negative = sum(int(s["net_negative_passes"]) for s in runs)
    decided = [(s["gate_risk_bound"], s["gate_runs"]) for s in runs if s["gate_runs"]]
    weight = sum(n for _, n in decided)
    bound = sum(b * n for b, n in decided) / weight if weight else math.nan
    low, high = wilson(negative, passes) if passes else (math.nan, math.nan)
    return {"passes": passes, "net_negative": negative, "share": negative / passes if passes else math.nan,
            "interval": [low, high], "mean_bound": bound, "within": bool(passes) and high <= bound}


def _num(x) -> str:
    if x is None or x != x or abs(x) == math.inf:
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"
