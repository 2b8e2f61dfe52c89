"""Every metric prunesim reports, named and defined once.

:data:`METRICS` is the table (name, unit, definition) that the README and
``prunesim metrics`` print. :class:`MetricsObserver` computes them from the
engine's event stream, incrementally, so that a run of any length needs no
stored trace. Terms used in the definitions:

* *utilization*: tokens in the window, sampled at every change (the
  transient state inside a prune pass, index and rationale written but nothing
  evicted yet, is a recorded point).
* *pass*: one model-driven prune pass. *index* is what the model read,
  *rationale* what it wrote, *evicted* the tokens of the spans it removed;
  ``net = evicted - index - rationale``.
* *trigger*: the utilization at which the policy starts to act: the
  scenario's ``trigger``, or a policy's own (``budget - [gate] headroom`` for slack-gated).
* *first trigger*: the first turn whose arrivals bring utilization to the
  trigger or above, before the policy is consulted. The
  *post-trigger turns* run from it to the last turn.
* *band*: the utilization range [band_floor, trigger] that a run stays in after
  the first trigger; its *width* is ``trigger - band_floor``.
* *decided in band*: a pass whose headroom at decision time (budget minus
  utilization) is below its own overhead (the index plus the rationale it
  means to write). Under a hard budget such a pass cannot finish: its
  rationale is cut at the ceiling and the selections it did not get to write
  are not evicted, so it is net-negative by construction.
* *oscillation*: the run is pinned just under the trigger by passes that are
  decided in band. Precisely: at least ``OSC_MIN_PASSES`` passes after the
  first trigger, a band narrower than ``OSC_BAND_PASSES`` times the mean pass
  overhead (utilization never gets far below the trigger), and at least one
  pass decided in band. A run whose passes all have the slack to decide, or
  that stops needing passes, does not oscillate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

OSC_MIN_PASSES = 3
OSC_BAND_PASSES = 2.0


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    definition: str


METRICS: tuple[Metric, ...] = (
    Metric("turns", "turns", "Turns simulated."),
    Metric(
        "acting_trigger",
        "tokens",
        "The utilization at which the policy starts to act: the scenario's trigger, or the policy's own.",
    ),
    Metric("sim_time_s", "s", "Simulated time at the end of the run (model calls, tool runs, prune passes)."),
    Metric("final_utilization", "tokens", "Utilization after the last turn."),
    Metric("peak_utilization", "tokens", "Maximum utilization at any recorded point of the run."),
    Metric("min_headroom", "tokens", "budget - peak_utilization (negative when a soft budget was exceeded)."),
    Metric(
        "first_trigger_turn",
        "turn",
        "First turn whose arrivals bring utilization to the trigger or above (before the policy acts); -1 if none.",
    ),
    Metric("band_floor", "tokens", "Minimum utilization at any recorded point after the first trigger; -1 if none."),
    Metric("band_width", "tokens", "trigger - band_floor; -1 if no trigger."),
    Metric("oscillating", "bool", "The run oscillates as defined in the module docstring of sim/metrics.py."),
    Metric("passes", "passes", "Model-driven prune passes."),
    Metric("passes_first_half", "passes", "Passes in the first half of the post-trigger turns."),
    Metric("passes_second_half", "passes", "Passes in the second half of the post-trigger turns."),
    Metric("pass_trend", "passes", "passes_second_half - passes_first_half; positive when pass frequency rises."),
    Metric("mean_index_tokens", "tokens", "Mean index size per pass (0 with no passes)."),
    Metric("mean_rationale_tokens", "tokens", "Mean rationale size per pass, as written (after any cut)."),
    Metric("mean_evicted_tokens", "tokens", "Mean tokens evicted per pass."),
    Metric("mean_net_tokens", "tokens", "Mean of evicted - index - rationale per pass."),
    Metric("sum_overhead_tokens", "tokens", "Sum over passes of index + rationale."),
    Metric("sum_net_tokens", "tokens", "Sum over passes of net."),
    Metric(
        "overhead_ratio",
        "ratio",
        'sum_overhead_tokens / sum_net_tokens; "inf" when sum_net_tokens <= 0 and there was a pass, 0 with no passes.',
    ),
    Metric("net_negative_passes", "passes", "Passes whose net is below zero."),
    Metric("zero_yield_passes", "passes", "Passes that evicted nothing."),
    Metric("cut_passes", "passes", "Passes whose rationale was cut short by a hard budget."),
    Metric(
        "in_band_passes",
        "passes",
        "Passes decided in band: headroom at decision time below the pass's own overhead (index + rationale wanted).",
    ),
    Metric("evicted_spans", "spans", "Spans evicted by model-driven passes."),
    Metric("gate_runs", "decisions", "Gate evaluations that allowed a model-driven pass."),
    Metric("refusals_over_budget", "decisions", "Gate refusals because utilization was above the budget."),
    Metric(
        "refusals_decision_in_band",
        "decisions",
        "Gate refusals because headroom was below the pass's own overhead: no slack to decide.",
    ),
    Metric(
        "refusals_insufficient_net",
        "decisions",
        "Gate refusals because reclaimable tokens after overhead did not clear the margin: nothing worth pruning.",
    ),
    Metric("fallback_evictions", "actions", "Non-model evictions (recency drop, truncation, template summary)."),
    Metric("fallback_tokens", "tokens", "Tokens freed by non-model evictions, net of any summary written."),
    Metric(
        "forced_truncations",
        "appends",
        "Appends cut short, or spans dropped by the runtime, because the hard budget or the window was reached.",
    ),
    Metric("truncated_tokens", "tokens", "Tokens lost to forced truncations."),
    Metric("overflow_turns", "turns", "Turns ending above a soft budget."),
    Metric("re_retrievals", "runs", "Tool runs repeated because pruned content was needed and nothing recorded it."),
    Metric("re_retrieved_tokens", "tokens", "Output tokens that re-entered the window through re_retrievals."),
    Metric(
        "re_retrieval_gap_mean",
        "turns",
        "Mean turns from the removal of a key's content to its re-retrieval (0 if none); each re-retrieval is an "
        "events.csv re_retrieval row with {key, tokens, turns_since_prune}.",
    ),
    Metric(
        "override_retrievals",
        "runs",
        "Tool runs repeated although a record in the window (tombstone or rationale) said the content was pruned as "
        "stale: explicit overrides, made only when the content is truly needed.",
    ),
    Metric("dismissed_needs", "needs", "Needs for pruned content that a record in the window showed to be stale."),
    Metric("readmit_cycles", "cycles", "Prune/re-admit cycles: pruned content run again (re-retrievals + overrides)."),
    Metric("readmit_keys", "keys", "Content keys brought back at least once."),
    Metric("readmit_max_per_key", "cycles", "Most prune/re-admit cycles of any one content key."),
    Metric("lost_constraints", "spans", "Constraint spans evicted, cut or truncated."),
    Metric(
        "unrecorded_evictions",
        "spans",
        "Spans removed from the window (prune artifacts and tombstones aside) with, at the end of the run, neither "
        "a tombstone nor a surviving rationale naming them in the window.",
    ),
    Metric("tombstone_tokens", "tokens", "Tokens held by tombstones in the window at the end of the run."),
    Metric(
        "history_gap",
        "fraction",
        "Summary drift: at the end of each turn, the share of the commands run so far of which the window holds no "
        "trace (no output, no tombstone, no rationale naming it), averaged over turns: what a rolling summary "
        "written from the window can no longer account for. Measured when the scenario models needs; else 0.",
    ),
    Metric("self_edit_refusals", "plans", "Plans a policy's guard refused (overlapping its own rationale, a "
           "tombstone, a log record or a constraint); each is an events.csv self_edit_refused row."),
    Metric("edit_log_records", "records", "Records in the external edit log (0 for policies that keep none)."),
    Metric(
        "edit_log_verified",
        "bool",
        "The policy keeps an edit log and its hash chain verifies against the anchor at the end of the run "
        "(false for policies that keep none).",
    ),
    Metric("input_tokens_billed", "tokens", "Prompt tokens over all model calls (turn calls and prune passes)."),
    Metric("decision_tokens_billed", "tokens", "Prompt and output tokens of prune-pass calls."),
    Metric(
        "decision_share",
        "fraction",
        "decision_tokens_billed / (input_tokens_billed + output tokens of prune passes).",
    ),
    # Replays of imported transcripts only (sim/transcripts/replay.py); absent from synthetic runs.
    Metric("repeats", "calls", "Tool calls whose content key was already called earlier in the transcript."),
    Metric(
        "repeats_after_prune",
        "calls",
        "Repeats made when every earlier span holding the key had been removed by the policy, or by the replayed "
        "runtime's own recorded compaction (re-retrieval caused by pruning).",
    ),
    Metric("repeats_in_window", "calls", "Repeats made while an earlier span holding the key was still in the window."),
    Metric(
        "repeat_gap_mean",
        "turns",
        "Mean turns from the latest removal of a key's content to its repeat, over repeats_after_prune (0 if none).",
    ),
    Metric("repeat_gap_max", "turns", "Largest such gap (0 if none)."),
)

METRIC_NAMES = tuple(m.name for m in METRICS)


def overhead_ratio(sum_overhead: float, sum_net: float, passes: int) -> float:
    """sum(index + rationale) / sum(net); infinite when the passes freed nothing net."""
    if passes == 0:
        return 0.0
    if sum_net <= 0:
        return math.inf
    return sum_overhead / sum_net


def is_oscillating(passes_after_trigger: int, band_width: float, mean_overhead: float, in_band_passes: int) -> bool:
    """The oscillation test of the module docstring, on a run's figures."""
    return (
        passes_after_trigger >= OSC_MIN_PASSES
        and 0 <= band_width < OSC_BAND_PASSES * mean_overhead
        and in_band_passes > 0
    )


class MetricsObserver:
    """Accumulates every metric from the engine's calls; ``summary()`` gives the record."""

    def __init__(self, turns: int, trigger: int, budget: int, hard: bool):
        self.turns = turns
        self.trigger = trigger
        self.budget = budget
        self.hard = hard
        self.peak = 0
        self.first_trigger_turn = -1
        self.band_floor = -1
        # Pass counts, kept as counters so that a run of any length holds O(1) state.
        self.pass_count = 0
        self.passes_first = self.passes_second = 0  # halves of the post-trigger turns
        self.early_pass_turns: list[int] = []  # turns of passes recorded before the first trigger
        self.sum_index = self.sum_rationale = self.sum_evicted = 0
        self.net_negative = self.zero_yield = self.cut_passes = self.in_band = self.evicted_spans = 0
        self.fallbacks = self.fallback_tokens = 0
        self.forced_truncations = self.truncated_tokens = 0
        self.overflow_turns = 0
        self.re_retrievals = 0
        self.re_retrieved_tokens = 0
        self.re_retrieval_gaps = 0
        self.override_retrievals = 0
        self.dismissed_needs = 0
        self.readmits: dict[str, int] = {}
        self.unrecorded_evictions = 0
        self.tombstone_tokens = 0
        self.self_edit_refusals = 0
        self.edit_log_records = 0
        self.edit_log_verified = False
        self.lost_constraints = 0
        self.boundary_counts = {"run": 0, "over_budget": 0, "decision_in_band": 0, "insufficient_net": 0}
        self.input_billed = 0
        self.decision_billed = 0
        self.decision_output = 0
        self.final_utilization = 0
        self.sim_time = 0.0
        self.extra: dict[str, object] = {}
        self.history_gap_sum = 0.0
        self.history_turns = 0

    # -- event stream --------------------------------------------------------
    def utilization(self, value: int) -> None:
        if value > self.peak:
            self.peak = value
        if self.first_trigger_turn >= 0 and value < self.band_floor:
            self.band_floor = value

    def turn_reached(self, turn: int, value: int) -> None:
        """Utilization after the turn's arrivals, before the policy is consulted."""
        if self.first_trigger_turn < 0 and value >= self.trigger:
            self.first_trigger_turn = turn
            self.band_floor = value

    def turn_end(self, turn: int, value: int) -> None:
        if not self.hard and value > self.budget:
            self.overflow_turns += 1
        self.final_utilization = value

    def prune_pass(
        self, turn: int, index: int, rationale: int, evicted: int, spans: int, cut: bool, in_band: bool
    ) -> None:
        self.pass_count += 1
        if self.first_trigger_turn >= 0:
            self._count_half(turn)
        else:  # classified once the first trigger is known (usually none: passes follow the trigger)
            self.early_pass_turns.append(turn)
        self.sum_index += index
        self.sum_rationale += rationale
        self.sum_evicted += evicted
        self.evicted_spans += spans
        net = evicted - index - rationale
        self.net_negative += net < 0
        self.zero_yield += spans == 0
        self.cut_passes += cut
        self.in_band += in_band

    def boundary(self, reason: str) -> None:
        self.boundary_counts[reason] = self.boundary_counts.get(reason, 0) + 1

    def fallback(self, freed: int) -> None:
        self.fallbacks += 1
        self.fallback_tokens += freed

    def truncation(self, cut: int) -> None:
        self.forced_truncations += 1
        self.truncated_tokens += cut

    def model_call(self, input_tokens: int, output_tokens: int, decision: bool) -> None:
        self.input_billed += input_tokens
        if decision:
            self.decision_billed += input_tokens + output_tokens
            self.decision_output += output_tokens

    def constraint_lost(self) -> None:
        self.lost_constraints += 1

    def re_retrieval(self, tokens: int = 0, turns_since_prune: int = 0) -> None:
        self.re_retrievals += 1
        self.re_retrieved_tokens += tokens
        self.re_retrieval_gaps += turns_since_prune

    def override(self, tokens: int) -> None:
        self.override_retrievals += 1

    def need_dismissed(self) -> None:
        self.dismissed_needs += 1

    def readmit(self, key: str) -> None:
        self.readmits[key] = self.readmits.get(key, 0) + 1

    def history(self, commands_run: int, commands_traced: int) -> None:
        if commands_run:
            self.history_gap_sum += 1 - commands_traced / commands_run
            self.history_turns += 1

    def self_edit_refused(self) -> None:
        self.self_edit_refusals += 1

    # -- the record ----------------------------------------------------------
    def _half(self, turn: int) -> int | None:
        """0 or 1: the half of the post-trigger turns that ``turn`` is in; None before the first trigger."""
        start = self.first_trigger_turn
        if turn < start:
            return None
        return 0 if turn < start + (self.turns - start + 1) / 2 else 1

    def _count_half(self, turn: int) -> None:
        half = self._half(turn)
        if half == 0:
            self.passes_first += 1
        elif half == 1:
            self.passes_second += 1

    def summary(self) -> dict[str, object]:
        n = self.pass_count
        overhead = self.sum_index + self.sum_rationale
        net = self.sum_evicted - overhead
        first, second = self.passes_first, self.passes_second
        for turn in self.early_pass_turns if self.first_trigger_turn >= 0 else ():
            half = self._half(turn)
            first += half == 0
            second += half == 1
        band_width = self.trigger - self.band_floor if self.first_trigger_turn >= 0 else -1
        after = first + second  # passes at or after the first trigger
        billed_all = self.input_billed + self.decision_output
        out: dict[str, object] = {
            "turns": self.turns,
            "acting_trigger": self.trigger,
            "sim_time_s": round(self.sim_time, 6),
            "final_utilization": self.final_utilization,
            "peak_utilization": self.peak,
            "min_headroom": self.budget - self.peak,
            "first_trigger_turn": self.first_trigger_turn,
            "band_floor": self.band_floor,
            "band_width": band_width,
            "oscillating": is_oscillating(after, band_width, overhead / n if n else 0.0, self.in_band),
            "passes": n,
            "passes_first_half": first,
            "passes_second_half": second,
            "pass_trend": second - first,
            "mean_index_tokens": _mean(self.sum_index, n),
            "mean_rationale_tokens": _mean(self.sum_rationale, n),
            "mean_evicted_tokens": _mean(self.sum_evicted, n),
            "mean_net_tokens": _mean(net, n),
            "sum_overhead_tokens": overhead,
            "sum_net_tokens": net,
            "overhead_ratio": overhead_ratio(overhead, net, n),
            "net_negative_passes": self.net_negative,
            "zero_yield_passes": self.zero_yield,
            "cut_passes": self.cut_passes,
            "in_band_passes": self.in_band,
            "evicted_spans": self.evicted_spans,
            "gate_runs": self.boundary_counts["run"],
            "refusals_over_budget": self.boundary_counts["over_budget"],
            "refusals_decision_in_band": self.boundary_counts["decision_in_band"],
            "refusals_insufficient_net": self.boundary_counts["insufficient_net"],
            "fallback_evictions": self.fallbacks,
            "fallback_tokens": self.fallback_tokens,
            "forced_truncations": self.forced_truncations,
            "truncated_tokens": self.truncated_tokens,
            "overflow_turns": self.overflow_turns,
            "re_retrievals": self.re_retrievals,
            "re_retrieved_tokens": self.re_retrieved_tokens,
            "re_retrieval_gap_mean": _mean(self.re_retrieval_gaps, self.re_retrievals),
            "override_retrievals": self.override_retrievals,
            "dismissed_needs": self.dismissed_needs,
            "readmit_cycles": sum(self.readmits.values()),
            "readmit_keys": len(self.readmits),
            "readmit_max_per_key": max(self.readmits.values(), default=0),
            "lost_constraints": self.lost_constraints,
            "unrecorded_evictions": self.unrecorded_evictions,
            "tombstone_tokens": self.tombstone_tokens,
            "history_gap": round(self.history_gap_sum / self.history_turns, 6) if self.history_turns else 0.0,
            "self_edit_refusals": self.self_edit_refusals,
            "edit_log_records": self.edit_log_records,
            "edit_log_verified": self.edit_log_verified,
            "input_tokens_billed": self.input_billed,
            "decision_tokens_billed": self.decision_billed,
            "decision_share": round(self.decision_billed / billed_all, 6) if billed_all else 0.0,
        }
        out.update(self.extra)
        return out


def _mean(total: float, n: int) -> float:
    return round(total / n, 3) if n else 0.0
