"""Workloads: what arrives in the window each turn.

The synthetic tool loop draws, each turn, a reasoning span, a tool call and
the tool's output, with sizes from seeded lognormal distributions and a turn
at which each goes stale. Scripted events land at given turns. All draws come
from the workload's own random stream, in fixed-size chunks, so that every
policy meets the same arrivals for a given seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from prunesim.model.scenario import ScriptedEvent, SizeDist, Workload

CHUNK = 1024  # turns drawn at a time: bounded memory, same draws for any run length
MAX_REPEAT_GAP = 4096  # a repeat reaches at most this many turns back (the keys of those turns are kept)


@dataclass(slots=True)
class Arrival:
    """One span the workload puts in the window."""

    kind: str
    tokens: int
    key: str = ""
    stale_after: int = 1_000_000_000
    pinned: bool = False
    tags: frozenset[str] = frozenset()  # (one shared empty set: no call per arrival)
    tool: str = ""  # the tool that made a call or an output, when the workload knows it
    # Resources a replayed tool call (and its output) fetches and uses (prunesim.model.reaction); synthetic: none.
    fetches: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    call: int = 0  # the tool call a call or an output belongs to, when the workload knows it (0: unknown)


@dataclass(slots=True)
class TurnPlan:
    """Everything one turn brings: the model's output, the tool's output and extras."""

    turn: int
    reasoning: Arrival
    tool_call: Arrival
    tool_output: Arrival
    tool_latency_s: float
    extra: tuple[Arrival, ...] = ()  # (a tuple: none built for a turn without extras)
    # Spans tagged with one of these leave the window before the model call: the replayed
    # runtime removed them itself (a recorded compaction), not the policy under test.
    drop_tags: frozenset[str] = frozenset()
    # A replay of a recording with times: the model call waits until this simulated time (seconds), so that
    # pauses in the real session pass in the replay too. None: the call comes as soon as the turn starts.
    call_at_s: float | None = None
    # Placed after that removal, before the model call: what the replayed runtime put in the prompt in place
    # of what it removed (a recorded compaction's summary and re-attached files).
    before_call: tuple[Arrival, ...] | list[Arrival] = ()  # (a tuple by default: no list built per turn)
    # The replayed runtime changed its prompt from this token on before the model call (a recorded cache break).
    rewrite_at: int | None = None
    # The provider's cache already held this many tokens of the prompt before the call (a recorded warm start).
    warm_cache: int | None = None
    # The output tokens the model call bills, where the workload knows them (a replay's recorded count);
    # None: what the reasoning and the tool call weigh.
    output_tokens: int | None = None
    # The reasoning and the call are inside tool_output (workload.turn_unit): the engine bills and
    # times them but does not place them.
    unit: bool = False


def lognormal_sizes(rng: np.random.Generator, dist: SizeDist, n: int, scale: np.ndarray | None = None) -> np.ndarray:
    """``n`` integer sizes with mean ``dist.mean`` (before clipping), each times ``scale`` if given."""
    mu = np.log(dist.mean) - dist.sigma**2 / 2
    draws = rng.lognormal(mu, dist.sigma, n) if dist.sigma > 0 else np.full(n, dist.mean)
    if scale is not None:  # the same draws, scaled: a run without an early factor keeps its sizes
        draws = draws * scale
    return np.clip(np.rint(draws), dist.min, dist.max).astype(np.int64)


def early_factor(p: Workload, first: int, n: int) -> np.ndarray | None:
    """``1 + early x exp(-(t - 1) / early_turns)`` for turns ``first .. first + n - 1``; None without one."""
    if p.tool_output_early <= 0:
        return None
    turns = np.arange(first, first + n, dtype=float)
    return 1 + p.tool_output_early * np.exp(-(turns - 1) / p.tool_output_early_turns)


def as_unit(plan: TurnPlan) -> None:
    """Make the turn one prunable unit: its reasoning and call ride in its tool output's span.

    The model still writes (and is billed and timed for) the reasoning and the
    call before the tool runs; they enter the window with the tool's result,
    as one span that is evicted, cleared or kept whole, and that is stale once
    every part of it is.
    """
    out, r, c = plan.tool_output, plan.reasoning, plan.tool_call
    out.tokens += r.tokens + c.tokens  # (the plan's own output, made for this turn: changed in place)
    out.stale_after = max(r.stale_after, out.stale_after)
    plan.unit = True


def _event_arrival(ev: ScriptedEvent) -> Arrival:
    return Arrival(ev.kind, ev.tokens, ev.key, ev.stale_after, ev.pinned, frozenset(ev.tags))


class SyntheticToolLoop:
    """The seeded tool-loop generator with scripted events."""

    def __init__(self, params: Workload, turns: int, tool_mean_s: float, tool_sigma: float, rng: np.random.Generator):
        self.params = params
        self.turns = turns
        self.tool_mean_s = tool_mean_s
        self.tool_sigma = tool_sigma
        self.rng = rng
        self.events: dict[int, list[ScriptedEvent]] = {}
        for ev in params.events:
            self.events.setdefault(ev.turn, []).append(ev)
        self._keys: dict[int, str] = {}  # turn -> command key, for the last MAX_REPEAT_GAP turns (repeats)

    def command_key(self, turn: int) -> str:
        """The key of the command first run at ``turn``."""
        chars = self.params.key_chars
        if not chars:
            return f"cmd-{turn}"
        text = hashlib.blake2b(str(turn).encode(), digest_size=32).hexdigest()
        return ("cmd " + text * (1 + chars // 64))[:chars]

    def initial(self) -> list[Arrival]:
        return [
            Arrival(s.kind, s.tokens, s.key, s.stale_after, s.pinned, frozenset(s.tags)) for s in self.params.initial
        ]

    def _chunk(self, first: int, n: int) -> Iterator[TurnPlan]:
        """The plans of turns ``first .. first + n - 1`` up to the run's last turn (all ``n`` drawn)."""
        p, rng = self.params, self.rng
        reasoning = lognormal_sizes(rng, p.reasoning, n)
        call = lognormal_sizes(rng, p.tool_call, n)
        output = lognormal_sizes(rng, p.tool_output, n, early_factor(p, first, n))
        # Turns until stale: geometric, so most content goes stale soon and some lingers.
        r_stale = rng.geometric(1.0 / p.reasoning_stale_after, n)
        o_stale = rng.geometric(1.0 / p.output_stale_after, n)
        mu = np.log(max(self.tool_mean_s, 1e-9)) - self.tool_sigma**2 / 2
        tool_s = rng.lognormal(mu, self.tool_sigma, n) if self.tool_mean_s > 0 else np.zeros(n)
        # As Python ints and floats (the same values): indexing numpy arrays item by item is slow.
        columns = (reasoning.tolist(), call.tolist(), output.tolist(), r_stale.tolist(), o_stale.tolist(),
                   tool_s.tolist())
        repeats = None
        if p.repeat_rate > 0:  # drawn after the rest, so that runs without repeats keep their draws
            again = (rng.random(n) < p.repeat_rate).tolist()
            back = np.minimum(rng.geometric(1.0 / p.repeat_gap_mean, n), MAX_REPEAT_GAP).tolist()
            repeats = (again, back)
        for i, (r_tok, c_tok, o_tok, r_st, o_st, t_s) in enumerate(zip(*columns, strict=True)):
            turn = first + i
            if turn > self.turns:
                return
            if repeats is None:
                key = self.command_key(turn)
            else:
                earlier = turn - repeats[1][i]
                key = self._keys.get(earlier) if repeats[0][i] and earlier >= 1 else None
                key = key or self.command_key(turn)
                self._keys[turn] = key
                self._keys.pop(turn - MAX_REPEAT_GAP, None)
            # turn, reasoning, tool call, tool output, tool latency: by position (a call by keyword costs twice as much)
            plan = TurnPlan(turn, Arrival("reasoning", r_tok, f"think-{turn}", r_st),
                            Arrival("tool_call", c_tok, key, o_st), Arrival("tool_output", o_tok, key, o_st), t_s)
            for ev in self.events.get(turn, ()):
                arrival = _event_arrival(ev)
                if ev.replaces_output and ev.kind == "tool_output":
                    plan.tool_output = arrival
                    if arrival.key:
                        plan.tool_call = Arrival("tool_call", plan.tool_call.tokens, arrival.key, arrival.stale_after)
                else:
                    plan.extra = (*plan.extra, arrival)
            if p.turn_unit:
                as_unit(plan)
            yield plan

    def __iter__(self) -> Iterator[TurnPlan]:
        first = 1
        while first <= self.turns:
            # Always draw a whole chunk: turn t gets the same arrivals whatever the run length.
            yield from self._chunk(first, CHUNK)
            first += CHUNK
