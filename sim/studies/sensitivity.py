"""Global sensitivity of a replay's figures to the fitted parameters: Sobol indices through SALib.

Which parameters does each published figure depend on, over the whole box a
calibration searches? For the parameters of the targets file's ``[bounds]``
(the ones ``prunesim calibrate`` fits), Saltelli's sampling scheme
(``SALib.sample.sobol``, ``n`` base samples, ``n (d + 2)`` points for ``d``
parameters, without second-order terms) draws points across the bounds; at each
point every variant runs on the same seeds (common random numbers, so that the
indices measure the parameters and not the seeds' luck), and each judged
figure's statistic is computed as a replay computes it (median over the runs,
or share of runs for a yes/no). ``SALib.analyze.sobol`` then gives, per figure
and parameter, the first-order index ``S1`` (the share of the figure's variance
the parameter explains alone) and the total index ``ST`` (alone and through
its interactions), each with its 95% bootstrap half-width. A parameter whose
``ST`` is near 0 for a figure cannot move that figure anywhere in the box: the
fit does not constrain it through that figure.

A statistic that is infinite at some points (``overhead_ratio`` when the median
run frees nothing net) is clipped to the largest finite value seen, and the
number of clipped points is reported with the figure.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.io.scenario_files import apply_overrides, from_dict
from prunesim.kernel.choice import EngineChoice
from prunesim.model.scenario import Scenario
from prunesim.studies.calibrate import Param, parse_params
from prunesim.studies.replay import FigureReplay
from prunesim.studies.targets import Target, statistic

# Seeds of SALib's sampling scramble and of its bootstrap of the confidence half-widths: part of the method,
# so that the output is reproducible. The bootstrap's is not 0: SALib reads a seed of 0 as none given and
# draws from numpy's global state.
SAMPLE_SEED = 0
BOOTSTRAP_SEED = 1


@dataclass
class FigureSensitivity:
    target: Target
    s1: dict[str, float]
    s1_conf: dict[str, float]
    st: dict[str, float]
    st_conf: dict[str, float]
    clipped: int
    spread: tuple[float, float]  # the statistic's 5th and 95th percentiles over the points


@dataclass
class Sensitivity:
    name: str
    params: list[Param]
    seeds: list[int]
    base_samples: int
    points: int
    figures: list[FigureSensitivity]


def problem(params: list[Param]) -> dict:
    return {"num_vars": len(params), "names": [p.name for p in params], "bounds": [[p.low, p.high] for p in params]}


def check_base_samples(n: int) -> None:
    if n < 2 or n & (n - 1):
        raise UserError("--samples", str(n), "must be a power of 2, at least 2 (Sobol sequences need it)")


def sensitivity(replay: FigureReplay, base: Scenario, seeds: Sequence[int], base_samples: int,
                names: Sequence[str] | None = None,
                progress: Callable[[int, int], None] | None = None, engine: EngineChoice | None = None) -> Sensitivity:
    """Sobol indices of every judged figure of ``replay`` over the bounds of its fitted parameters (each
    variant run on the engine ``engine`` chose for it; default SimPy)."""
    engine = engine or EngineChoice()
    try:
        from SALib.analyze import sobol as analyze
        from SALib.sample import sobol as sample
    except ImportError:
        raise UserError("sensitivity", None, "needs SALib: pip install 'prunesim[sensitivity]'") from None
    check_base_samples(base_samples)
    targets = replay.targets(base)
    params = parse_params(",".join(names or targets.bounds), base, targets, "--params")
    figures = [f for f in targets.figures if f.judged]
    variants = [v for v in targets.variants if any(f.variant == v.label for f in figures)]
    spec = problem(params)
    points = sample.sample(spec, base_samples, calc_second_order=False, seed=SAMPLE_SEED)
    data = base.to_dict()
    stats = np.empty((len(points), len(figures)))
    for i, row in enumerate(points):
        values = {p.name: p.value((x - p.low) / (p.high - p.low)) for p, x in zip(params, row, strict=True)}
        runs = {}
        for v in variants:
            sc = from_dict(apply_overrides(apply_overrides(data, values), v.overrides), f"sample {values}", v.policy)
            runs[v.label] = engine.summaries(v.label, sc, v.policy, seeds)
        for j, f in enumerate(figures):
            stats[i, j] = statistic(f, [r[f.metric] for r in runs[f.variant]])
        if progress is not None:
            progress(i + 1, len(points))
    out = []
    for j, f in enumerate(figures):
        y = stats[:, j].copy()
        bad = ~np.isfinite(y)
        if bad.all():
            continue
        y[bad] = np.nanmax(np.where(bad, np.nan, y))
        if np.ptp(y) == 0:  # a figure no parameter moves: every index is 0
            zero = dict.fromkeys(spec["names"], 0.0)
            out.append(FigureSensitivity(f, zero, zero, zero, zero, int(bad.sum()), (float(y[0]), float(y[0]))))
            continue
        with warnings.catch_warnings():  # a bootstrap resample of equal values: SALib counts it 0, as we would
            warnings.filterwarnings("ignore", message="Constant values encountered", category=UserWarning)
            res = analyze.analyze(spec, y, calc_second_order=False, seed=BOOTSTRAP_SEED)
        named = {key: dict(zip(spec["names"], (float(x) for x in res[key]), strict=True))
                 for key in ("S1", "S1_conf", "ST", "ST_conf")}
        out.append(FigureSensitivity(f, named["S1"], named["S1_conf"], named["ST"], named["ST_conf"], int(bad.sum()),
                                     (float(np.percentile(y, 5)), float(np.percentile(y, 95)))))
    return Sensitivity(replay.name, params, list(seeds), base_samples, len(points), out)


COLUMNS = ("variant", "figure", "metric", "parameter", "S1", "S1_conf", "ST", "ST_conf", "clipped_points", "points")


def rows(result: Sensitivity) -> list[dict]:
    """Tidy rows: one per (figure, parameter)."""
    return [
        {"variant": f.target.variant, "figure": f.target.label, "metric": f.target.metric, "parameter": p.name,
         "S1": f.s1[p.name], "S1_conf": f.s1_conf[p.name], "ST": f.st[p.name], "ST_conf": f.st_conf[p.name],
         "clipped_points": f.clipped, "points": result.points}
        for f in result.figures for p in result.params
    ]
