"""Utilization over the run: peak, the band after the first trigger, and content lost from the window.

*Utilization* is sampled at every change of the window (the transient state
inside a prune pass, index and rationale written but nothing evicted yet, is a
recorded point). The *trigger* is the utilization at which the policy starts to
act: the scenario's ``trigger``, or a policy's own (``trigger - [gate] lead``
for slack-gated). The *first trigger* is the first recorded point at which
utilization reaches the trigger; everything after it is *post-trigger*. Only
recorded points and their simulated times enter these figures, so they can be
recomputed from ``trace.csv`` alone (:mod:`.verdict` does exactly that).

*Post-trigger time* runs from the first trigger to the end of the run. Each
recorded utilization holds from its own time until the next recorded point
(the last one until the run ends), so the shares and quantiles below weigh each
level by the simulated seconds the window spent at it: a level the window
passes through within one instant weighs nothing.
"""

from __future__ import annotations

from prunesim.model.events import Observer, RunEnd

from .definition import Metric

DEFINITIONS = (
    Metric("turns", "turns", "Turns simulated: the workload's turns, or under an agent model the work turns done "
           "(fewer when the agent stopped at its turn cap)."),
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
        "Turn of the first recorded point at which utilization reaches the acting trigger; -1 if none.",
    ),
    Metric("band_floor", "tokens", "Minimum utilization at any recorded point after the first trigger; -1 if none."),
    Metric("band_width", "tokens", "trigger - band_floor; -1 if no trigger."),
    Metric(
        "share_above_trigger",
        "fraction",
        "Share of post-trigger simulated time with utilization above the acting trigger (0 if no trigger).",
    ),
    Metric(
        "share_at_ceiling",
        "fraction",
        "Share of post-trigger simulated time with utilization at or above the budget (0 if no trigger).",
    ),
    Metric(
        "band_p10",
        "tokens",
        "10th percentile of utilization over post-trigger simulated time (time-weighted); -1 if no trigger.",
    ),
    Metric(
        "band_p90",
        "tokens",
        "90th percentile of utilization over post-trigger simulated time (time-weighted); -1 if no trigger.",
    ),
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

# Shares are rounded for the record; :mod:`.verdict` rounds the same way and uses the same
# tolerance, so that sums of the same times taken in another order give the same quantile.
SHARE_DIGITS = 6
BAND_QUANTILES = (0.1, 0.9)
QUANTILE_TOLERANCE = 1e-9


def time_quantile(levels: list[int], seconds: list[float], q: float) -> int:
    """The smallest level at or below which the window spent at least ``q`` of the time.

    ``levels`` ascending and distinct, ``seconds`` the time spent at each. With no
    time at all (the run ended at the first trigger) every level counts once.
    """
    total = sum(seconds)
    weights = seconds if total > 0 else [1.0] * len(levels)
    total = total if total > 0 else float(len(levels))
    running, target = 0.0, q * total * (1 - QUANTILE_TOLERANCE)
    for level, w in zip(levels, weights, strict=True):
        running += w
        if running >= target:
            return level
    return levels[-1]


class WindowMetrics(Observer):
    deferred = True  # read when the run is over; of a span it reads only its kind and tags

    def __init__(self, run):
        self.turns = run.scenario.turns
        self.trigger = run.acting_trigger
        self.budget = run.scenario.budget
        self.hard = run.scenario.hard
        self.peak = 0
        self.first_trigger_turn = -1
        self.band_floor = -1
        # Post-trigger time at each utilization level: at most one entry per level, so the state is
        # bounded by the window size, not by the length of the run.
        self.held: dict[int, float] = {}
        self.since = 0.0  # time of the last recorded point
        self.level = 0  # utilization at the last recorded point
        self.forced_truncations = self.truncated_tokens = 0
        self.overflow_turns = 0
        self.lost_constraints = 0
        self.final_utilization = 0
        self.sim_time = 0.0
        # Under a hard budget no overflow turn is counted (a replayed runtime's turn may still end above it: its
        # content enters whole and is cut at the call), and the run's end gives the final utilization: the turn's
        # end has nothing to tell (one handler call a turn saved).
        if self.hard:
            self.muted = frozenset({"turn_end"})

    def _hold(self, time: float, utilization: int) -> None:
        """Credit the time since the last point to its level; ``utilization`` holds from ``time`` on. (A point
        at the same time as the last, as most of a pass's are, adds nothing: the level is only noted as seen.)"""
        held, level = self.held, self.level
        if time != self.since:
            held[level] = held.get(level, 0.0) + (time - self.since)
            self.since = time
        elif level not in held:
            held[level] = 0.0
        self.level = utilization
        if utilization < self.band_floor:
            self.band_floor = utilization

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        if utilization > self.peak:
            self.peak = utilization
        if self.first_trigger_turn >= 0:
            self._hold(time, utilization)
        elif utilization >= self.trigger:  # only an append can bring utilization up to the trigger
            self.first_trigger_turn = turn
            self.band_floor = utilization
            self.since, self.level = time, utilization

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        # A removal never raises the peak; only the band can move.
        if self.first_trigger_turn >= 0:
            self._hold(time, utilization)
        # A summary that carries a constraint keeps it. (Only a span with tags or of the kind can be one: most
        # spans are let by without a call of the property.)
        if (span.tags or span.kind == "constraint") and span.is_constraint and cause != "summarized":
            self.lost_constraints += 1

    def on_spans_removed(self, time, turn, removals) -> None:
        """The removals of one change, folded: they come at one time, so the time since the last point goes to
        its level and each level passed through holds none (it is still a level the band has seen)."""
        if self.first_trigger_turn >= 0:
            held = self.held
            for _, _, _, utilization, _, _ in removals[:-1]:
                held.setdefault(utilization, 0.0)
            # utilization only falls within a removal: the last is the lowest
            self._hold(time, removals[-1][3])
        if removals[0][0] != "summarized":  # one cause for the whole change
            for _, span, _, _, _, _ in removals:
                if (span.tags or span.kind == "constraint") and span.is_constraint:  # (as on_span_removed)
                    self.lost_constraints += 1

    def on_truncation(self, time, turn, cause, kind, wanted, kept, constraint, selections) -> None:
        self.forced_truncations += 1
        self.truncated_tokens += wanted - kept
        if constraint:
            self.lost_constraints += 1

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        if not self.hard and utilization > self.budget:
            self.overflow_turns += 1
        self.final_utilization = utilization

    def on_run_end(self, end: RunEnd) -> None:
        if end.work_turns is not None:  # an agent model may have stopped the run before the workload's last turn
            self.turns = end.work_turns
        self.sim_time = end.time_s
        self.final_utilization = end.utilization
        if self.first_trigger_turn >= 0:
            self._hold(end.time_s, self.level)

    def band(self) -> dict:
        """The post-trigger shares and quantiles, from the time held at each level."""
        if self.first_trigger_turn < 0:
            return {"share_above_trigger": 0.0, "share_at_ceiling": 0.0, "band_p10": -1, "band_p90": -1}
        (total, above, at_ceiling), p10, p90 = self.band_sums()

        def share(held: float) -> float:
            return round(held / total, SHARE_DIGITS) if total > 0 else 0.0

        return {
            "share_above_trigger": share(above),
            "share_at_ceiling": share(at_ceiling),
            "band_p10": p10,
            "band_p90": p90,
        }

    def band_sums(self) -> tuple[tuple[float, float, float], int, int]:
        """The seconds held in all, above the trigger and at the budget (each summed over the levels held,
        ascending), and the band's quantiles (the compiled kernel sets these from its fold)."""
        levels = sorted(self.held)
        seconds = [self.held[u] for u in levels]
        total = sum(seconds)
        above = sum(s for u, s in zip(levels, seconds, strict=True) if u > self.trigger)
        at_ceiling = sum(s for u, s in zip(levels, seconds, strict=True) if u >= self.budget)
        p10, p90 = (time_quantile(levels, seconds, q) for q in BAND_QUANTILES)
        return (total, above, at_ceiling), p10, p90

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
            **self.band(),
            "forced_truncations": self.forced_truncations,
            "truncated_tokens": self.truncated_tokens,
            "overflow_turns": self.overflow_turns,
            "lost_constraints": self.lost_constraints,
        }
