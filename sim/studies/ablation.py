"""Mechanism ablation: each combination of the model's optional mechanisms, refitted and judged on unseen seeds.

The shipped ``oscillation-40`` turns on two workload mechanisms backed by the
transcripts (docs/model.md): tool outputs larger early in a run
(``workload.tool_output_early``) and a turn as one prunable unit
(``workload.turn_unit``). An ablation asks what each one does. For every
combination (neither, each alone, both), the scenario with those mechanisms on
and the others off is refitted by :func:`prunesim.studies.calibrate.calibrate`
on the calibration seeds (the parameters and bounds of the targets file's
``[bounds]``, the same objective and protocol as ``prunesim calibrate``), and
the refitted scenario is judged by :func:`prunesim.studies.validate.validate`
on blocks of seeds no fit saw. Every combination gets the same budget, so the
comparison is fair even when that budget is smaller than the shipped fit's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prunesim.errors import UserError
from prunesim.io.scenario_files import replace
from prunesim.kernel.choice import EngineChoice
from prunesim.model.scenario import Scenario
from prunesim.studies.calibrate import Calibration, calibrate, parse_params
from prunesim.studies.replay import FigureReplay
from prunesim.studies.validate import Validation, validate

# mechanism -> (its parameter, the value that turns it off); "on" is the shipped scenario's value.
MECHANISMS = {
    "early outputs": ("workload.tool_output_early", 0.0),
    "turn unit": ("workload.turn_unit", False),
}


@dataclass
class AblationCase:
    mechanisms: tuple[str, ...]  # those on
    calibration: Calibration
    validation: Validation

    @property
    def label(self) -> str:
        return " + ".join(self.mechanisms) if self.mechanisms else "neither"

    @property
    def holding(self) -> int:
        return sum(1 for f in self.validation.figures if f.target.judged) - len(self.validation.failing)


def _value(scenario: Scenario, name: str):
    node = scenario.to_dict()
    for part in name.split("."):
        node = node[part]
    return node


def combinations() -> list[tuple[str, ...]]:
    names = list(MECHANISMS)
    return [c for k in range(len(names) + 1) for c in itertools.combinations(names, k)]


def ablation(replay: FigureReplay, base: Scenario, calibration_seeds: Sequence[int], max_evals: int, blocks: int,
             block_size: int, first_seed: int,
             progress: Callable[[str, int, float, float], None] | None = None,
             names: Sequence[str] | None = None, engine: EngineChoice | None = None) -> list[AblationCase]:
    """Refit and validate ``base`` under every combination of :data:`MECHANISMS`.

    ``names`` are the parameters refitted (default: every one of the targets' ``[bounds]``); ``engine`` runs
    each variant (default: SimPy).
    """
    if set(calibration_seeds) & set(range(first_seed, first_seed + blocks * block_size)):
        raise UserError("--seeds", None, "the calibration seeds overlap the validation blocks (--first-seed)")
    on = {}
    for name, (param, off) in MECHANISMS.items():
        value = _value(base, param)
        if value == off:
            raise UserError(base.name, param, f"the mechanism {name!r} is off in this scenario: nothing to ablate")
        on[name] = value
    targets = replay.targets(base)
    params = parse_params(",".join(names or targets.bounds), base, targets)
    cases = []
    for combo in combinations():
        label = " + ".join(combo) or "neither"
        overrides = {param: (on[name] if name in combo else off) for name, (param, off) in MECHANISMS.items()}
        scenario = replace(base, overrides)
        report = None if progress is None else (lambda n, obj, best, _l=label: progress(_l, n, obj, best))
        cal = calibrate(scenario, replay.targets(scenario), params, calibration_seeds, max_evals, report, engine)
        fitted = replace(scenario, cal.fitted)
        cases.append(AblationCase(combo, cal, validate(replay, blocks, block_size, first_seed, base=fitted,
                                                                 engine=engine)))
    return cases


def rows(cases: list[AblationCase]) -> list[dict]:
    """The ablation as tidy rows: one per (combination, judged figure)."""
    out = []
    for case in cases:
        v = case.validation
        for f in v.figures:
            if not f.target.judged:
                continue
            out.append({
                "mechanisms": case.label, "variant": f.target.variant, "figure": f.target.label,
                "metric": f.target.metric, "accepted": f.target.accepted_text(),
                "block_low": min(f.statistics), "block_high": max(f.statistics),
                "blocks_in_range": sum(f.in_range), "blocks": len(f.in_range),
                "holds": f.misses <= v.allowed_misses, "fit_objective": case.calibration.objective,
                "candidates": case.calibration.evaluations,
            })
    return out


COLUMNS = ("mechanisms", "variant", "figure", "metric", "accepted", "block_low", "block_high", "blocks_in_range",
           "blocks", "holds", "fit_objective", "candidates")
