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

* ``gate with perfect knowledge``: slack-gated deciding on the very plan the
  model will carry out (``gate.knowledge = "oracle"``), beside the shipped
  gate, which decides on estimates as a runtime must: a bound, reported apart,
  that shows what knowing each plan before the call would add.

A claim that the failure "does not hold" is judged by the rule of a published
"no" (docs/model.md, "Accepted ranges"): at most 15% of the runs oscillate.
The gate's row is judged against the slack-gated runs: the seed's claim holds
when naive at the same trigger does worse, by more net-negative passes in the
median run or a share of oscillating runs whose Wilson interval lies above the
gate's.

Where the model differs from a claim, the row's reason is computed from the
runs, never written: how many runs still oscillate, the paired difference
from the setting it is compared with on the same seeds, and how often each
clause of the verdict holds, so that it changes when the model does.

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
from dataclasses import dataclass, field

import numpy as np
from prunesim.io.scenario_files import replace
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics.intervals import paired_difference, wilson
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
    bound: bool = False  # a bound on the gate (perfect knowledge), compared with the slack-gated runs: reported apart

    @property
    def judged(self) -> bool:
        return not (self.assumption or self.bound)


CASE = "naive @22k"  # what a row is compared with, on the same seeds
GATED = "slack-gated"
CLAUSES = (("osc_keeps_pruning", ">= 3 passes"), ("osc_tight_band", "tight band"), ("osc_rate_holds", "trend >= 0"),
           ("osc_overhead_above_net", "overhead > net"))


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
    summaries: list[dict] = field(default_factory=list, repr=False)
    compared: list[dict] = field(default_factory=list, repr=False)  # the runs it is set against, same seeds
    compared_label: str = ""

    @property
    def share(self) -> float:
        return self.oscillating / self.runs

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.oscillating, self.runs)

    @property
    def why(self) -> str:
        """What the runs say where the model differs from the claim, or what the bound adds (module docstring)."""
        if self.case.bound:
            return _bound_line(self.summaries, self.compared)
        if self.agrees or not self.case.judged:
            return ""
        parts = [f"{self.oscillating} of {self.runs} runs oscillate"
                 + ("" if self.case.against_gate else f" (claim: at most {TOLERANCE:.0%})")]
        if self.compared:
            d, low, high = paired_difference([bool(s["oscillating"]) for s in self.summaries],
                                             [bool(s["oscillating"]) for s in self.compared])
            parts.append(f"against {self.compared_label} on the same seeds {d:+.2f} [{low:+.2f}..{high:+.2f}]")
        if self.case.against_gate:
            parts.append(f"median net-negative passes {self.net_negative:g} against the gate's "
                         f"{_median(self.compared, 'net_negative_passes'):g}")
        else:
            shares = {label: sum(bool(s[m]) for s in self.summaries) / self.runs for m, label in CLAUSES}
            parts.append("clauses: " + ", ".join(f"{label} {v:.2f}" for label, v in shares.items()))
        return "; ".join(parts)

    def as_dict(self) -> dict:
        c = self.case
        return {"counterfactual": c.label, "claim": c.claim, "assumption": c.assumption, "bound": c.bound,
                "oscillating_share": self.share, "oscillating_interval": list(self.interval), "runs": self.runs,
                "median_overhead_ratio": self.overhead_ratio, "median_passes": self.passes,
                "median_net_negative_passes": self.net_negative, "median_truncated_tokens": self.truncated,
                "net_negative_share": _share(self.summaries, "net_negative_passes") if self.summaries else None,
                "agrees": self.agrees, "why": self.why}


def _median(summaries: list[dict], metric: str) -> float:
    values = [math.inf if s[metric] == "inf" else float(s[metric]) for s in summaries]
    return float(np.median(values))


def _share(summaries: list[dict], metric: str) -> float:
    return sum(float(s[metric]) > 0 for s in summaries) / len(summaries)


def _bound_line(oracle: list[dict], gated: list[dict]) -> str:
    """What deciding on the plan itself changes against the estimating gate, on the same seeds."""
    if not gated:
        return ""
    d, low, high = paired_difference([float(s["net_negative_passes"]) > 0 for s in oracle],
                                     [float(s["net_negative_passes"]) > 0 for s in gated])
    return (f"against the estimating gate on the same seeds: median passes {_median(oracle, 'passes'):g} against "
            f"{_median(gated, 'passes'):g}; runs with a net-negative pass {_share(oracle, 'net_negative_passes'):.2f} "
            f"against {_share(gated, 'net_negative_passes'):.2f} ({d:+.2f} [{low:+.2f}..{high:+.2f}]); median peak "
            f"{_median(oracle, 'peak_utilization'):,.0f} against {_median(gated, 'peak_utilization'):,.0f}")


def _summarize(case: Counterfactual, summaries: list[dict], runs: dict[str, list[dict]]) -> CounterfactualResult:
    yes = sum(bool(s["oscillating"]) for s in summaries)
    result = CounterfactualResult(case, len(summaries), yes, _median(summaries, "overhead_ratio"),
                                  _median(summaries, "passes"), _median(summaries, "net_negative_passes"),
                                  _median(summaries, "truncated_tokens"), False, summaries)
    gate = runs.get(GATED)
    label = GATED if (case.against_gate or case.bound) else CASE
    result.compared, result.compared_label = runs.get(label) or [], label
    if case.against_gate and gate:
        gate_yes = sum(bool(s["oscillating"]) for s in gate)
        worse_share = result.interval[0] > wilson(gate_yes, len(gate))[1]
        result.agrees = worse_share or result.net_negative > _median(gate, "net_negative_passes")
    else:
        result.agrees = result.share <= TOLERANCE
    if not case.judged:
        result.agrees = True  # nothing of the seed's to agree with: reported, never judged
    return result


def cases(scenario: Scenario) -> list[Counterfactual]:
    early = gate_trigger(scenario)
    return [
        Counterfactual("trigger at 20k", "the oscillation disappears (slack above overhead)", "naive",
                       {"trigger": 20000}),
        Counterfactual("rationale in a log", "does not hold (rationales not prunable)", NaiveLogged, {}),
        Counterfactual("rationale kept, not prunable", "does not hold (rationales not prunable)", NaiveProtected, {}),
        Counterfactual("soft budget", "does not hold (overflow tolerated)", "naive", {"budget_kind": "soft"}),
        Counterfactual(f"naive at the gate's trigger ({early:,})", "the check, not the earlier start, removes it",
                       "naive", {"trigger": early}, against_gate=True),
        Counterfactual("gate with perfect knowledge (oracle)", "(a bound: the gate knowing each plan)",
                       "slack-gated", {"gate.knowledge": "oracle"}, bound=True),
        Counterfactual("ASSUMED yield grows with headroom, @22k", "(not a seed claim: the 20k contrast assumed)",
                       NaiveHeadroomYield, {}, assumption=True),
        Counterfactual("ASSUMED yield grows with headroom, @20k", "(not a seed claim: the 20k contrast assumed)",
                       NaiveHeadroomYield, {"trigger": 20000}, assumption=True),
    ]


def run(scenario: Scenario, seeds: Sequence[int], runs: dict[str, list[dict]] | None = None
        ) -> list[CounterfactualResult]:
    """Every counterfactual on ``seeds``; ``runs`` are the replay's summaries by variant on the same seeds (the
    rows are set against naive at 22k and the slack-gated runs)."""
    runs = runs or {}
    out = []
    for case in cases(scenario):
        sc = replace(scenario, case.overrides) if case.overrides else scenario
        summaries = [run_one(sc, case.policy, s, trace="none").summary for s in seeds]
        out.append(_summarize(case, summaries, runs))
    return out


def format_rows(results: list[CounterfactualResult]) -> list[str]:
    lines = ["", "counterfactuals (seed 000's condition of validity; naive unless named), same seeds:",
             f"{'counterfactual':40s} {'seed claims':55s} {'oscillating [Wilson 95%]':>25s} {'ratio':>6s} "
             f"{'passes':>6s} {'net-neg':>7s} {'truncated':>9s}  model"]
    for r in results:
        low, high = r.interval
        verdict = "reported apart" if not r.case.judged else ("agrees" if r.agrees else "differs")
        ratio = "inf" if math.isinf(r.overhead_ratio) else f"{r.overhead_ratio:.2f}"
        negative = _share(r.summaries, "net_negative_passes") if r.summaries else float("nan")
        lines.append(f"{r.case.label:40s} {r.case.claim:55s} {f'{r.share:.2f} [{low:.2f}..{high:.2f}]':>25s} "
                     f"{ratio:>6s} {r.passes:>6.1f} {negative:>7.2f} {r.truncated:>9,.0f}  {verdict}")
        if r.why:
            lines.append(f"    {'adds' if r.case.bound else 'why'}: {r.why}")
    lines.append("ratio: median sum(index+rationale) / sum(net); passes and truncated tokens: medians per run; "
                 "net-neg: share of runs with a net-negative pass. The assumed yield is not the seed's nor a "
                 "runtime's (docs/model.md, \"Counterfactuals\").")
    return lines
