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

*Oscillation* is a verdict on what the run observably did, never on a label the
mechanism under test assigns (whether a pass was decided in band, why a gate
refused). It reads the trace (utilization over time, see :mod:`.window`) and
the ledger (each pass's turn, index, rationale and evicted tokens) and encodes
the seed's signature, "a utilization trace that oscillates in a tight band just
below the trigger threshold, with prune-pass frequency increasing over time"
while "the sum of decision overhead exceeded the sum of net reclamation". A run
oscillates when all four hold:

1. it keeps pruning: at least ``OSC_MIN_PASSES`` passes after the first trigger;
2. the band is tight: ``0 <= band_width < OSC_BAND_PASSES`` times the mean pass
   overhead (index + rationale), so utilization never gets far below the trigger;
3. the pass rate does not fall: ``pass_trend >= 0`` (below);
4. deciding costs more than it frees: ``sum_overhead_tokens > sum_net_tokens``.

*Pinned just under the trigger* (``pinned_under``), the seed's "a tight band just
below the trigger threshold" as a verdict of its own: the middle 80% of the
post-trigger time lies in that band, ``trigger - OSC_BAND_PASSES x`` the mean
pass overhead ``<= band_p10`` and ``band_p90 <= trigger`` (the time-weighted
quantiles of :mod:`.window`). Clause 2 asks only that utilization never falls
far below the trigger; this also asks that it does not sit above it.

*pass_trend* is how much shorter the gaps between passes become over the run:
for the passes from the first trigger on, at turns ``p_0 < ... < p_m``, the
gaps ``g_i = p_i - p_(i-1)`` are fitted by least squares against their order
``i``, and the trend is minus the slope times ``m - 1``, the fitted shortening
in turns from the first gap to the last (0 with fewer than two gaps). Positive
when passes come more often. Under "no trend" its expectation is 0 exactly:
shuffling a run's gaps leaves its mean at 0 by symmetry, and so does any
renewal process (independent, identically distributed gaps) observed from a
pass to a fixed end, because the joint density of the complete gaps is
symmetric in them. The count it replaces (passes in the second half of the
post-trigger turns minus the first) was not: the pass at the first trigger
always falls at the very start of the first half, so shuffled gaps gave it a
mean of about -0.5 (docs/model.md, "The pass trend").

:func:`prunesim.observe.metrics.verdict.from_trace` computes the same verdict
from a recorded trace and ledger; the tests check that both agree.
"""

from __future__ import annotations

import math

from prunesim.model.events import Observer, PassRecord

from .definition import Metric, mean

OSC_MIN_PASSES = 3
OSC_BAND_PASSES = 2.0

DEFINITIONS = (
    Metric("oscillating", "bool", "The run oscillates as defined in the module docstring of "
           "sim/observe/metrics/passes.py (from utilization, pass turns and pass sizes only)."),
    Metric("osc_keeps_pruning", "bool", f"Clause 1 of the oscillation verdict: at least {OSC_MIN_PASSES} passes "
           "after the first trigger."),
    Metric("osc_tight_band", "bool", f"Clause 2: 0 <= band_width < {OSC_BAND_PASSES:g} x the mean pass overhead."),
    Metric("osc_rate_holds", "bool", "Clause 3: pass_trend >= 0 (the pass rate does not fall)."),
    Metric("osc_overhead_above_net", "bool", "Clause 4: sum_overhead_tokens > sum_net_tokens."),
    Metric("pinned_under", "bool", f"Utilization pinned just under the trigger: band_p10 >= trigger - "
           f"{OSC_BAND_PASSES:g} x the mean pass overhead and band_p90 <= trigger (most post-trigger time in the "
           "band just below the trigger, little above it)."),
    Metric("passes", "passes", "Model-driven prune passes."),
    Metric("passes_first_half", "passes", "Passes in the first half of the post-trigger turns."),
    Metric("passes_second_half", "passes", "Passes in the second half of the post-trigger turns."),
    Metric("pass_trend", "turns", "Fitted shortening of the gap between passes from the first gap after the first "
           "trigger to the last (least squares over the gaps' order); positive when pass frequency rises, 0 in "
           "expectation when gaps are exchangeable."),
    Metric("mean_pass_gap", "turns", "Mean turns between one pass and the next (0 with fewer than two passes)."),
    Metric("mean_index_tokens", "tokens", "Mean index size per pass (0 with no passes)."),
    Metric("mean_rationale_tokens", "tokens", "Mean rationale size per pass, as written (after any cut)."),
    Metric("mean_evicted_tokens", "tokens", "Mean tokens evicted per pass."),
    Metric("mean_evicted_spans", "spans", "Mean spans evicted per pass."),
    Metric("mean_net_tokens", "tokens", "Mean of evicted - index - rationale per pass."),
    Metric("mean_utilization_after", "tokens", "Mean utilization right after a pass (0 with no passes)."),
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
        "Passes decided in band: headroom at decision time below the pass's own overhead (index + rationale "
        "wanted). A label of the mechanism, for diagnosis: no verdict and no replayed figure uses it.",
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


def is_oscillating(*clause_args, **clause_kwargs) -> bool:
    """The oscillation verdict of the module docstring: every clause of :func:`oscillation_clauses` holds."""
    return all(oscillation_clauses(*clause_args, **clause_kwargs).values())


def oscillation_clauses(
    passes_after_trigger: int,
    band_width: float,
    mean_overhead: float,
    pass_trend: float,
    sum_overhead: float,
    sum_net: float,
) -> dict[str, bool]:
    """Each clause of the verdict by name (the metrics ``osc_*``), so that a report can say which one binds."""
    return {
        "osc_keeps_pruning": passes_after_trigger >= OSC_MIN_PASSES,
        "osc_tight_band": 0 <= band_width < OSC_BAND_PASSES * mean_overhead,
        "osc_rate_holds": pass_trend >= 0,
        "osc_overhead_above_net": sum_overhead > sum_net,
    }


def is_pinned_under(trigger: int, band_p10: int, band_p90: int, mean_overhead: float) -> bool:
    """``pinned_under`` of the module docstring (False with no trigger reached or no pass)."""
    if band_p10 < 0 or mean_overhead <= 0:
        return False
    return trigger - OSC_BAND_PASSES * mean_overhead <= band_p10 and band_p90 <= trigger


class GapTrend:
    """``pass_trend`` from pass turns fed in order, in O(1) state (running sums of the gaps)."""

    __slots__ = ("last", "gaps", "sum_gap", "sum_order_gap")

    def __init__(self) -> None:
        self.last = -1
        self.gaps = 0
        self.sum_gap = self.sum_order_gap = 0

    def add(self, turn: int) -> None:
        if self.last >= 0:
            gap = turn - self.last
            self.sum_gap += gap
            self.sum_order_gap += self.gaps * gap
            self.gaps += 1
        self.last = turn

    def value(self) -> float:
        m = self.gaps
        if m < 2:
            return 0.0
        # Least squares of gap on order 0..m-1: slope = sum((i - mean_i) g_i) / sum((i - mean_i)^2).
        slope = (self.sum_order_gap - (m - 1) / 2 * self.sum_gap) / (m * (m * m - 1) / 12)
        return round(-slope * (m - 1), 3)


def gap_trend(pass_turns) -> float:
    """``pass_trend`` of passes at these turns (in order)."""
    trend = GapTrend()
    for turn in pass_turns:
        trend.add(turn)
    return trend.value()


def half_of(turn: int, first_trigger_turn: int, turns: int) -> int | None:
    """0 or 1: the half of the post-trigger turns ``turn`` is in; None before the first trigger."""
    if first_trigger_turn < 0 or turn < first_trigger_turn:
        return None
    return 0 if turn < first_trigger_turn + (turns - first_trigger_turn + 1) / 2 else 1


class PassMetrics(Observer):
    deferred = True  # read when the run is over; it hears records, not spans

    def __init__(self, run):
        self.turns = run.scenario.turns
        self.trigger = run.acting_trigger
        self.first_trigger_turn = -1
        # Counters only, so that a run of any length holds O(1) state.
        self.pass_count = 0
        self.passes_first = self.passes_second = 0  # halves of the post-trigger turns
        self.trend = GapTrend()  # gaps between the passes from the first trigger on
        self.early_pass_turns: list[int] = []  # passes recorded before the first trigger
        self.first_pass_turn = self.last_pass_turn = -1
        self.sum_index = self.sum_rationale = self.sum_evicted = self.sum_after = 0
        self.net_negative = self.zero_yield = self.cut_passes = self.in_band = self.evicted_spans = 0
        self._window = None  # window metrics whose first trigger this follows (see follow)

    def follow(self, window) -> None:
        """Take the first trigger from ``window`` (the run's window metrics, which define it) instead of hearing
        every append for it: the passes before it are classified at the next pass or at the summary, in order.
        ``window`` must hear each append before this hears the next pass's record (both deferred, as registered,
        or ``window`` live): a window metrics heard later would give the trigger too late."""
        self._window = window
        self.muted = frozenset({"span_appended"})

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        # The first trigger as the window metrics define it: the first recorded point at the trigger.
        if self.first_trigger_turn < 0 and utilization >= self.trigger:
            self._triggered(turn)

    def _triggered(self, turn: int) -> None:
        self.first_trigger_turn = turn
        for early in self.early_pass_turns:  # they precede every later pass, so the order holds
            self._count_half(early)
        self.early_pass_turns.clear()

    def _follow_trigger(self) -> None:
        """The first trigger, once the followed window metrics have seen it."""
        window = self._window
        if window is not None and self.first_trigger_turn < 0 and window.first_trigger_turn >= 0:
            self._triggered(window.first_trigger_turn)

    def on_prune_pass(self, time: float, record: PassRecord) -> None:
        if self.first_trigger_turn < 0:
            self._follow_trigger()
        self.pass_count += 1
        if self.first_trigger_turn >= 0:
            self._count_half(record.turn)
        else:  # classified once the first trigger is known (usually none: passes follow the trigger)
            self.early_pass_turns.append(record.turn)
        if self.first_pass_turn < 0:
            self.first_pass_turn = record.turn
        self.last_pass_turn = record.turn
        self.sum_index += record.index
        self.sum_rationale += record.rationale
        self.sum_evicted += record.evicted
        self.sum_after += record.utilization_after
        self.evicted_spans += record.evicted_spans
        self.net_negative += record.net < 0
        self.zero_yield += record.evicted_spans == 0
        self.cut_passes += record.cut
        self.in_band += record.in_band

    def _count_half(self, turn: int) -> None:
        half = half_of(turn, self.first_trigger_turn, self.turns)
        if half is not None:
            self.trend.add(turn)
        if half == 0:
            self.passes_first += 1
        elif half == 1:
            self.passes_second += 1

    def summary(self, so_far: dict) -> dict:
        if self.first_trigger_turn < 0:
            self._follow_trigger()
        n = self.pass_count
        overhead = self.sum_index + self.sum_rationale
        net = self.sum_evicted - overhead
        first, second = self.passes_first, self.passes_second  # early passes left here: no trigger, no half
        trend = self.trend.value()
        clauses = oscillation_clauses(first + second, so_far["band_width"], overhead / n if n else 0.0, trend,
                                      overhead, net)
        gap = (self.last_pass_turn - self.first_pass_turn) / (n - 1) if n > 1 else 0.0
        return {
            "oscillating": all(clauses.values()),
            **clauses,
            # (the band's quantiles are the window metrics', summarized before these; none: not pinned)
            "pinned_under": is_pinned_under(self.trigger, so_far.get("band_p10", -1), so_far.get("band_p90", -1),
                                            overhead / n if n else 0.0),
            "passes": n,
            "passes_first_half": first,
            "passes_second_half": second,
            "pass_trend": trend,
            "mean_pass_gap": round(gap, 3),
            "mean_index_tokens": mean(self.sum_index, n),
            "mean_rationale_tokens": mean(self.sum_rationale, n),
            "mean_evicted_tokens": mean(self.sum_evicted, n),
            "mean_evicted_spans": mean(self.evicted_spans, n),
            "mean_net_tokens": mean(net, n),
            "mean_utilization_after": mean(self.sum_after, n),
            "sum_overhead_tokens": overhead,
            "sum_net_tokens": net,
            "overhead_ratio": overhead_ratio(overhead, net, n),
            "net_negative_passes": self.net_negative,
            "zero_yield_passes": self.zero_yield,
            "cut_passes": self.cut_passes,
            "in_band_passes": self.in_band,
            "evicted_spans": self.evicted_spans,
        }
