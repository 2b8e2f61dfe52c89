"""Model-driven prune passes: their costs, their yield, and whether the run oscillates.

A *pass* is one model-driven prune pass. *index* is what the model read,
*rationale* what it wrote, *evicted* the tokens of the spans it removed;
``net = evicted - index - rationale``. The *post-trigger turns* run from the
first trigger (see :mod:`.window`) to the last turn.

A pass is *decided in band* when its headroom at decision time (budget minus
utilization) is below its own overhead (the index plus the rationale it means
to write). Under a hard budget such a pass cannot finish: its rationale is cut
at the ceiling and the selections it did not get to write are not evicted, so
it is net-negative by construction.

*Oscillation*: the run is pinned just under the trigger by passes that are
decided in band. Precisely: at least ``OSC_MIN_PASSES`` passes after the first
trigger, a band narrower than ``OSC_BAND_PASSES`` times the mean pass overhead
(utilization never gets far below the trigger), and at least one pass decided
in band. A run whose passes all have the slack to decide, or that stops needing
passes, does not oscillate.
"""

from __future__ import annotations

import math

from prunesim.model.events import Observer, PassRecord

from .definition import Metric, mean

OSC_MIN_PASSES = 3
OSC_BAND_PASSES = 2.0

DEFINITIONS = (
    Metric("oscillating", "bool", "The run oscillates as defined in the module docstring of "
           "sim/observe/metrics/passes.py."),
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
)


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


class PassMetrics(Observer):
    def __init__(self, run):
        self.turns = run.scenario.turns
        self.trigger = run.acting_trigger
        self.first_trigger_turn = -1
        # Counters only, so that a run of any length holds O(1) state.
        self.pass_count = 0
        self.passes_first = self.passes_second = 0  # halves of the post-trigger turns
        self.early_pass_turns: list[int] = []  # passes recorded before the first trigger
        self.sum_index = self.sum_rationale = self.sum_evicted = 0
        self.net_negative = self.zero_yield = self.cut_passes = self.in_band = self.evicted_spans = 0

    def on_turn_reached(self, turn: int, utilization: int) -> None:
        if self.first_trigger_turn < 0 and utilization >= self.trigger:
            self.first_trigger_turn = turn

    def on_prune_pass(self, time: float, record: PassRecord) -> None:
        self.pass_count += 1
        if self.first_trigger_turn >= 0:
            self._count_half(record.turn)
        else:  # classified once the first trigger is known (usually none: passes follow the trigger)
            self.early_pass_turns.append(record.turn)
        self.sum_index += record.index
        self.sum_rationale += record.rationale
        self.sum_evicted += record.evicted
        self.evicted_spans += record.evicted_spans
        self.net_negative += record.net < 0
        self.zero_yield += record.evicted_spans == 0
        self.cut_passes += record.cut
        self.in_band += record.in_band

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

    def summary(self, so_far: dict) -> dict:
        n = self.pass_count
        overhead = self.sum_index + self.sum_rationale
        net = self.sum_evicted - overhead
        first, second = self.passes_first, self.passes_second
        for turn in self.early_pass_turns if self.first_trigger_turn >= 0 else ():
            half = self._half(turn)
            first += half == 0
            second += half == 1
        band_width = so_far["band_width"]
        return {
            "oscillating": is_oscillating(first + second, band_width, overhead / n if n else 0.0, self.in_band),
            "passes": n,
            "passes_first_half": first,
            "passes_second_half": second,
            "pass_trend": second - first,
            "mean_index_tokens": mean(self.sum_index, n),
            "mean_rationale_tokens": mean(self.sum_rationale, n),
            "mean_evicted_tokens": mean(self.sum_evicted, n),
            "mean_net_tokens": mean(net, n),
            "sum_overhead_tokens": overhead,
            "sum_net_tokens": net,
            "overhead_ratio": overhead_ratio(overhead, net, n),
            "net_negative_passes": self.net_negative,
            "zero_yield_passes": self.zero_yield,
            "cut_passes": self.cut_passes,
            "in_band_passes": self.in_band,
            "evicted_spans": self.evicted_spans,
        }
