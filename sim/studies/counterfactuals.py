"""Seed 000's counterfactuals as replay rows: what the seed claims, what the model gives, and where they differ, why.

The seed's "Condition of Validity" names the conditions under which the
decision-in-band failure does *not* hold: "when the trigger fires with slack
greater than overhead (condition 1 violated), when decision rationales are
excluded from the prunable set (condition 2 violated), or when the budget is
soft (condition 3 violated)". Each is a variant of the naive policy here, run
on the replay's seeds beside its figures:

* ``trigger at 20k``: the seed's own slack experiment;
* ``rationale in a log``: index and rationale go to an external edit log
  (``placement = "log"``), out of the window and of the candidate set;
* ``rationale kept, not prunable``: they stay in the window but are pinned
  (``protect_artifacts``), so they are excluded from pruning, not from the
  window;
* ``soft budget``: the budget may be exceeded up to the window, counted;
* ``naive at the gate's trigger``: naive started as early as the slack gate
  acts (``trigger - gate.lead``), so that a reader sees whether the gate's
  boundary check does better than the earlier start alone.

A claim that the failure "does not hold" is judged by the rule of a published
"no" (docs/model.md, "Accepted ranges"): at most 15% of the runs oscillate.
The gate's row is judged against the slack-gated runs: the seed's claim holds
when naive at the same trigger does worse, by more net-negative passes in the
median run or a share of oscillating runs whose Wilson interval lies above the
gate's.

The **headroom-dependent yield** is not the seed's and not a runtime's: a pass
that frees more when it is decided with more room (its reclaim target and
span cap scaled by headroom / ``YIELD_REFERENCE_HEADROOM``, never below the
scenario's). It is reported apart, labelled as the assumption it is: it puts
the seed's 20k contrast into the model rather than reproducing it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from prunesim.io.scenario_files import replace
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics.intervals import wilson
from prunesim.observe.metrics.passes import OSC_MIN_PASSES  # noqa: F401 - the verdict these rows count
from prunesim.policies.base import ModelPass
from prunesim.policies.decision import plan_pass
from prunesim.policies.naive import NaivePolicy
from prunesim.runner import run_one
from prunesim.studies.targets import TOLERANCE

YIELD_REFERENCE_HEADROOM = 2000  # the seed's headroom at its own trigger (24k budget - 22k)


class _Placed(NaivePolicy):
    """Naive, with its passes' index and rationale placed as the subclass says."""

    options: dict = {}

    def decide(self, view):
        return [dataclasses.replace(a, **self.options) if isinstance(a, ModelPass) else a for a in super().decide(view)]


class NaiveLogged(_Placed):
    name = "naive (rationale in a log)"
    rationale_in_window = False
    options = {"placement": "log"}


class NaiveProtected(_Placed):
    name = "naive (rationale not prunable)"
    options = {"protect_artifacts": True}


class NaiveHeadroomYield(NaivePolicy):
    """ASSUMPTION: a pass frees more when it is decided with more room (see the module docstring)."""

    name = "naive (yield grows with headroom)"

    def decide(self, view):
        if view.utilization < self.scenario.trigger:
            return []
        params = self.scenario.decision
        scale = max(1.0, view.headroom / YIELD_REFERENCE_HEADROOM)
        scaled = dataclasses.replace(params, reclaim_target=params.reclaim_target * scale,
                                     select_max=max(1, math.ceil(params.select_max * scale)))
        return [plan_pass(view, scaled, self.rng).as_pass()]


@dataclass(frozen=True)
class Counterfactual:
    label: str
    claim: str  # what the seed says happens
    policy: object  # a policy name or class
    overrides: dict
    against_gate: bool = False  # judged against the slack-gated runs instead of the "no" rule
    assumption: bool = False  # not the seed's: reported apart
    why: str = ""  # where the model differs from the claim, why (docs/model.md, "Counterfactuals")


def gate_trigger(scenario: Scenario) -> int:
    return scenario.trigger - scenario.tables["gate"].lead


@dataclass
class CounterfactualResult:
    case: Counterfactual
    runs: int
    oscillating: int
    overhead_ratio: float
    passes: float
    net_negative: float
    truncated: float
    agrees: bool

    @property
    def share(self) -> float:
        return self.oscillating / self.runs

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.oscillating, self.runs)

    def as_dict(self) -> dict:
        c = self.case
        return {"counterfactual": c.label, "claim": c.claim, "assumption": c.assumption,
                "oscillating_share": self.share, "oscillating_interval": list(self.interval), "runs": self.runs,
                "median_overhead_ratio": self.overhead_ratio, "median_passes": self.passes,
                "median_net_negative_passes": self.net_negative, "median_truncated_tokens": self.truncated,
                "agrees": self.agrees, "why": "" if self.agrees else c.why}


def _median(summaries: list[dict], metric: str) -> float:
    values = [math.inf if s[metric] == "inf" else float(s[metric]) for s in summaries]
    return float(np.median(values))


def _summarize(case: Counterfactual, summaries: list[dict], gate: list[dict] | None) -> CounterfactualResult:
    yes = sum(bool(s["oscillating"]) for s in summaries)
    result = CounterfactualResult(case, len(summaries), yes, _median(summaries, "overhead_ratio"),
                                  _median(summaries, "passes"), _median(summaries, "net_negative_passes"),
                                  _median(summaries, "truncated_tokens"), False)
    if case.against_gate and gate:
        gate_yes = sum(bool(s["oscillating"]) for s in gate)
        worse_share = result.interval[0] > wilson(gate_yes, len(gate))[1]
        result.agrees = worse_share or result.net_negative > _median(gate, "net_negative_passes")
    else:
        result.agrees = result.share <= TOLERANCE
    return result


def cases(scenario: Scenario) -> list[Counterfactual]:
    early = gate_trigger(scenario)
    return [
        Counterfactual("trigger at 20k", "the oscillation disappears (slack above overhead)", "naive",
                       {"trigger": 20000},
                       why="a pass costs and frees the same at any trigger in the model; slack only keeps it off "
                           "the hard ceiling"),
        Counterfactual("rationale in a log", "does not hold (rationales not prunable)", NaiveLogged, {},
                       why="fewer passes, but each still pays its index and rationale (billed, read and written) "
                           "for a yield near its cost, so some runs keep the tight net-negative cycle"),
        Counterfactual("rationale kept, not prunable", "does not hold (rationales not prunable)", NaiveProtected, {},
                       why="pinned rationales pile up in the window: passes fire more often and free less; "
                           "excluding them helps only if they also leave the window (the log row)"),
        Counterfactual("soft budget", "does not hold (overflow tolerated)", "naive", {"budget_kind": "soft"},
                       why="the cycle stays under the 24k ceiling (it peaks below it), so a soft ceiling is never "
                           "used and changes nothing"),
        Counterfactual(f"naive at the gate's trigger ({early:,})", "the check, not the earlier start, removes it",
                       "naive", {"trigger": early}, against_gate=True,
                       why="naive started as early does as well as the gate: the gate's benefit is its earlier "
                           "start"),
        Counterfactual("ASSUMED yield grows with headroom, @22k", "(not a seed claim: the 20k contrast assumed)",
                       NaiveHeadroomYield, {}, assumption=True, why="-"),
        Counterfactual("ASSUMED yield grows with headroom, @20k", "(not a seed claim: the 20k contrast assumed)",
                       NaiveHeadroomYield, {"trigger": 20000}, assumption=True, why="-"),
    ]


def run(scenario: Scenario, seeds: Sequence[int], gate_runs: list[dict] | None) -> list[CounterfactualResult]:
    """Every counterfactual on ``seeds``; ``gate_runs`` are the slack-gated summaries on the same seeds."""
    out = []
    for case in cases(scenario):
        sc = replace(scenario, case.overrides) if case.overrides else scenario
        summaries = [run_one(sc, case.policy, s, trace="none").summary for s in seeds]
        result = _summarize(case, summaries, gate_runs)
        if case.assumption:
            result.agrees = True  # nothing of the seed's to agree with: reported, never judged
        out.append(result)
    return out


def format_rows(results: list[CounterfactualResult]) -> list[str]:
    lines = ["", "counterfactuals (seed 000's condition of validity; naive unless named), same seeds:",
             f"{'counterfactual':40s} {'seed claims':55s} {'oscillating [Wilson 95%]':>25s} {'ratio':>6s} "
             f"{'passes':>6s} {'truncated':>9s}  model"]
    for r in results:
        low, high = r.interval
        verdict = "reported apart" if r.case.assumption else ("agrees" if r.agrees else "differs")
        ratio = "inf" if math.isinf(r.overhead_ratio) else f"{r.overhead_ratio:.2f}"
        lines.append(f"{r.case.label:40s} {r.case.claim:55s} {f'{r.share:.2f} [{low:.2f}..{high:.2f}]':>25s} "
                     f"{ratio:>6s} {r.passes:>6.1f} {r.truncated:>9,.0f}  {verdict}")
        if verdict == "differs":
            lines.append(f"    why: {r.case.why}")
    lines.append("ratio: median sum(index+rationale) / sum(net); passes and truncated tokens: medians per run. "
                 "The assumed yield is not the seed's nor a runtime's (docs/model.md, \"Counterfactuals\").")
    return lines
