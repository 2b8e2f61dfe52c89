"""Specificity: does a verdict of seed 000's replay need the mechanism the seed names, or would it fire anyway?

A verdict that is nearly as likely without its cause does not show the cause. So every verdict and signature
the oscillation replay reports on its failing setting (naive at 22k) is computed again, on the same seeds, under
two nulls:

* **mechanism removed**: the passes' index and rationale go to a log, never into the window (no
  self-eligibility, the seed's condition 2), and tool outputs are not larger early
  (``workload.tool_output_early = 0``: no stale-trace scarcity, condition 4). Everything else is naive's;
* **shuffled gaps**: naive's own passes of that seed, as many, and the same gaps between them in a random order
  (a permutation drawn from the seed, no global state), run on the same workload at those turns whatever the
  utilization: the passes keep their number and spacing and lose their order and their tie to the trigger.

For each signature the study reports the share of runs where it holds under the seed's case and under each null,
and the paired difference with its interval (:func:`~prunesim.observe.metrics.intervals.paired_difference`). A
signature is *specific* when the case exceeds each null by at least :data:`MARGIN` (stated in docs/model.md,
"Contrasts and specificity", before any run was judged) with the interval's low end above 0; a signature the
nulls meet about as often is *non-specific*, and a replay's verdict built on it is not counted as reproduced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from prunesim.io.scenario_files import replace
from prunesim.model.events import Observer
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics.intervals import paired_difference, wilson
from prunesim.policies.decision import plan_pass
from prunesim.policies.naive import NaivePolicy
from prunesim.runner import run_one
from prunesim.studies.counterfactuals import NaiveLogged
from prunesim.studies.targets import TOLERANCE

MARGIN = TOLERANCE  # how far above each null a signature's share must be: the one tolerance of the accepted ranges
CASE = "naive @22k"  # the variant whose verdicts are checked: the seed's failing runtime
SHUFFLE_STREAM = 38  # the shuffle's own stream of a seed: np.random.default_rng([seed, SHUFFLE_STREAM])

# name -> (what it says, whether a run's summary shows it)
SIGNATURES: dict[str, tuple[str, Callable[[dict], bool]]] = {
    "oscillating": ("oscillating (all four clauses)", lambda s: bool(s["oscillating"])),
    "osc_keeps_pruning": ("clause 1: >= 3 passes after the trigger", lambda s: bool(s["osc_keeps_pruning"])),
    "osc_tight_band": ("clause 2: band < 2 x pass overhead", lambda s: bool(s["osc_tight_band"])),
    "osc_rate_holds": ("clause 3: pass trend >= 0", lambda s: bool(s["osc_rate_holds"])),
    "osc_overhead_above_net": ("clause 4: overhead > net", lambda s: bool(s["osc_overhead_above_net"])),
    "rising": ("pass frequency rising (trend > 0)", lambda s: float(s["pass_trend"]) > 0),
    "pinned_under": ("pinned just under the trigger", lambda s: bool(s["pinned_under"])),
}
# A judged figure of the case variant that stands on a signature: counted only when that signature is specific.
FIGURE_SIGNATURE = {"oscillating": "oscillating", "pass_trend": "rising", "pinned_under": "pinned_under"}
NULLS = ("mechanism removed", "shuffled gaps")


class _PassTurns(Observer):
    """The turns of a run's passes, in order (what the shuffled null reorders)."""

    def __init__(self):
        self.turns: list[int] = []

    def on_prune_pass(self, time, record) -> None:
        self.turns.append(record.turn)


class ScheduledNaive(NaivePolicy):
    """Naive's pass, taken at the turns of ``schedule`` whatever the utilization (the shuffled-gap null)."""

    name = "naive (passes at shuffled gaps)"
    schedule: frozenset[int] = frozenset()

    def decide(self, view):
        if view.turn not in self.schedule:
            return []
        return [plan_pass(view, self.scenario.decision, self.rng).as_pass()]


def shuffled(turns: Sequence[int], seed: int) -> list[int]:
    """``turns`` with the gaps between them in an order drawn from ``seed``'s own stream (the first turn kept)."""
    if len(turns) < 3:
        return list(turns)
    gaps = np.diff(np.asarray(turns, dtype=np.int64))
    order = np.random.default_rng([seed, SHUFFLE_STREAM]).permutation(len(gaps))
    return [int(turns[0]), *(int(turns[0]) + np.cumsum(gaps[order])).tolist()]


def scheduled(turns: Sequence[int]) -> type[ScheduledNaive]:
    return type("ScheduledNaive", (ScheduledNaive,), {"schedule": frozenset(turns)})


def removed(scenario: Scenario) -> Scenario:
    """The case's scenario with no early-output decay (the logged rationale is the policy's part)."""
    return replace(scenario, {"workload.tool_output_early": 0.0})


@dataclass
class NullShare:
    null: str
    holds: int
    difference: float
    low: float
    high: float

    @property
    def specific(self) -> bool:
        return self.difference >= MARGIN and self.low > 0


@dataclass
class SignatureResult:
    name: str
    label: str
    runs: int
    holds: int  # runs of the seed's case where it holds
    nulls: list[NullShare]

    @property
    def share(self) -> float:
        return self.holds / self.runs if self.runs else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.holds, self.runs)

    @property
    def specific(self) -> bool:
        return all(n.specific for n in self.nulls)

    def failing_nulls(self) -> list[NullShare]:
        return [n for n in self.nulls if not n.specific]

    def as_dict(self) -> dict:
        return {"signature": self.name, "label": self.label, "runs": self.runs, "share": self.share,
                "interval": list(self.interval), "specific": self.specific,
                "nulls": [{"null": n.null, "share": n.holds / self.runs if self.runs else None,
                           "difference": n.difference, "interval": [n.low, n.high], "specific": n.specific}
                          for n in self.nulls]}


@dataclass
class Specificity:
    seeds: list[int]
    signatures: dict[str, SignatureResult]
    case: list[dict]  # the case's summaries, one per seed
    null_runs: dict[str, list[dict]]

    def as_dict(self) -> dict:
        return {"case": CASE, "margin": MARGIN, "signatures": [s.as_dict() for s in self.signatures.values()]}


def null_runs(scenario: Scenario, seeds: Sequence[int]) -> tuple[list[dict], dict[str, list[dict]]]:
    """The case's summaries and each null's, one per seed, all on the SimPy engine."""
    case, mechanism, shuffle = [], [], []
    without = removed(scenario)
    for seed in seeds:
        turns = _PassTurns()
        case.append(run_one(scenario, "naive", seed, trace="none", observers=[turns]).summary)
        mechanism.append(run_one(without, NaiveLogged, seed, trace="none").summary)
        shuffle.append(run_one(scenario, scheduled(shuffled(turns.turns, seed)), seed, trace="none").summary)
    return case, dict(zip(NULLS, (mechanism, shuffle), strict=True))


def judge(case: list[dict], nulls: dict[str, list[dict]], seeds: Sequence[int]) -> Specificity:
    """Each signature's share under the case and each null, and their paired differences."""
    results = {}
    for name, (label, shows) in SIGNATURES.items():
        here = [shows(s) for s in case]
        shares = []
        for null, runs in nulls.items():
            there = [shows(s) for s in runs]
            d, low, high = paired_difference(here, there)
            shares.append(NullShare(null, sum(there), d, low, high))
        results[name] = SignatureResult(name, label, len(here), sum(here), shares)
    return Specificity(list(seeds), results, case, nulls)


def run(scenario: Scenario, seeds: Sequence[int]) -> Specificity:
    """The specificity of every signature of naive on ``scenario`` (the case's own scenario) over ``seeds``."""
    case, nulls = null_runs(scenario, seeds)
    return judge(case, nulls, seeds)


def format_rows(spec: Specificity) -> list[str]:
    names = list(NULLS)
    lines = ["", f"specificity ({CASE}, same seeds): share of runs where each holds, under the seed's case and "
             f"under each null; difference [paired 95% interval]; specific when it exceeds both nulls by "
             f">= {MARGIN:.2f} with the interval above 0",
             f"{'signature':40s} {'case':>17s}  " + "  ".join(f"{n:>30s}" for n in names) + "  specific"]
    for r in spec.signatures.values():
        low, high = r.interval
        cells = []
        for n in r.nulls:
            share = n.holds / r.runs if r.runs else float("nan")
            cells.append(f"{share:.2f}: {n.difference:+.2f} [{n.low:+.2f}..{n.high:+.2f}]".rjust(30))
        verdict = "yes" if r.specific else "NO"
        lines.append(f"{r.label:40s} {f'{r.share:.2f} [{low:.2f}..{high:.2f}]':>17s}  " + "  ".join(cells)
                     + f"  {verdict}")
    return lines
