"""Utilization over the run: peak, the band after the first trigger, and content lost from the window.

*Utilization* is sampled at every change of the window (the transient state
inside a prune pass, index and rationale written but nothing evicted yet, is a
recorded point). The *trigger* is the utilization at which the policy starts to
act: the scenario's ``trigger``, or a policy's own (``budget - [gate] headroom``
for slack-gated). The *first trigger* is the first turn whose arrivals bring
utilization to the trigger or above, before the policy is consulted; the
*band* is the range [band_floor, trigger] that the run stays in after it.
"""

from __future__ import annotations

from prunesim.model.events import Observer, RunEnd

from .definition import Metric

DEFINITIONS = (
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
    Metric(
        "forced_truncations",
        "appends",
        "Appends cut short, or spans dropped by the runtime, because the hard budget or the window was reached.",
    ),
    Metric("truncated_tokens", "tokens", "Tokens lost to forced truncations."),
    Metric("overflow_turns", "turns", "Turns ending above a soft budget."),
    Metric("lost_constraints", "spans", "Constraint spans evicted, cut, truncated or dropped by a summary (a "
           "constraint a summary carries is kept)."),
)


class WindowMetrics(Observer):
    def __init__(self, run):
        self.turns = run.scenario.turns
        self.trigger = run.acting_trigger
        self.budget = run.scenario.budget
        self.hard = run.scenario.hard
        self.peak = 0
        self.first_trigger_turn = -1
        self.band_floor = -1
        self.forced_truncations = self.truncated_tokens = 0
        self.overflow_turns = 0
        self.lost_constraints = 0
        self.final_utilization = 0
        self.sim_time = 0.0

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        if utilization > self.peak:
            self.peak = utilization
        if self.first_trigger_turn >= 0 and utilization < self.band_floor:
            self.band_floor = utilization

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        # A removal never raises the peak; only the band floor can move.
        if self.first_trigger_turn >= 0 and utilization < self.band_floor:
            self.band_floor = utilization
        if span.is_constraint and cause != "summarized":  # a summary that carries a constraint keeps it
            self.lost_constraints += 1

    def on_truncation(self, time, turn, cause, kind, wanted, kept, constraint, selections) -> None:
        self.forced_truncations += 1
        self.truncated_tokens += wanted - kept
        if constraint:
            self.lost_constraints += 1

    def on_turn_reached(self, turn: int, utilization: int) -> None:
        if self.first_trigger_turn < 0 and utilization >= self.trigger:
            self.first_trigger_turn = turn
            self.band_floor = utilization

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        if not self.hard and utilization > self.budget:
            self.overflow_turns += 1
        self.final_utilization = utilization

    def on_run_end(self, end: RunEnd) -> None:
        self.sim_time = end.time_s
        self.final_utilization = end.utilization

    def summary(self, so_far: dict) -> dict:
        return {
            "turns": self.turns,
            "acting_trigger": self.trigger,
            "sim_time_s": round(self.sim_time, 6),
            "final_utilization": self.final_utilization,
            "peak_utilization": self.peak,
            "min_headroom": self.budget - self.peak,
            "first_trigger_turn": self.first_trigger_turn,
            "band_floor": self.band_floor,
            "band_width": self.trigger - self.band_floor if self.first_trigger_turn >= 0 else -1,
            "forced_truncations": self.forced_truncations,
            "truncated_tokens": self.truncated_tokens,
            "overflow_turns": self.overflow_turns,
            "lost_constraints": self.lost_constraints,
        }
