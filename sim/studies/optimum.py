"""The clairvoyant optimum: a removal schedule planned from the whole transcript, to bill the fewest dollars.

A policy decides from what it has seen; this planner reads the whole replay
first: every span, when each model call comes and what it will hold, when the
provider's cache would expire, and which content a later call uses again (the
closed loop's needs, :mod:`prunesim.model.reaction`, with the draws this seed
makes). Its schedule is then carried out by an ordinary policy
(:mod:`prunesim.policies.scheduled`, named ``clairvoyant``) through the engine,
so the optimum's bill is the engine's own, computed as every policy's is.

**Action space.** At the end of any set of turns (the *batches*) the policy
evicts every span that may go by then; nothing is written in its place and no
model call decides it. When a span may go is fixed before the batches are
chosen:

* a span that is not offerable (pinned, a constraint, the system prompt) never goes;
* any other span may go once the model call after it arrived has read it (the
  end of the turn after its arrival): nothing is removed before the agent saw it;
* content a later recorded call uses (a file read before it is edited: the
  closed loop's needs, those the seed's draws turn into re-fetches) stays until
  its last use, unless fetching it again before its first use costs less than
  keeping it until then (priced at noop's prompts and cache); it may then go
  like any span, and the copy the agent fetches stays until the last use;
* under an agent profile with lookback needs (:mod:`prunesim.model.agent_needs`)
  a tool output stays until the last work turn before whose call the agent
  needs it. Those needs are drawn by counters of (seed, work turn, item), so the
  planner draws them before the run with the very object the engine consults
  (:func:`enforced_needs`: the agent model the engine builds for this run says
  which mechanisms run). Such an output is never let go early: its re-fetch is a
  turn of its own, which moves every later turn and so the schedule's batches.

The agent model may also stop a run at its turn cap with its work undone; no
schedule of this action space makes the agent reach for anything, so the
optimum's run does all of its work. A policy that thrashes to the cap bills less
for less work, and is not what the optimum is compared with (docs/recommend.md).

**Method.** Which content may go at a batch does not depend on the earlier
batches (what may go at one turn may go at every later one), so the window
after a batch at turn ``b`` is the same whatever came before, and the bill of
the calls between two batches depends on those two only, except the first call
after a batch, whose cache read depends on where the batch cut the prompt and
so on the batch before. A dynamic program over the batch turns, with the pair
(previous batch, this batch) priced for that first call, finds the cheapest set
of batches exactly, in O(turns x calls) work, under the planner's model of the
bill:

* each call's prompt is noop's less what the schedule removed, billed at the
  scenario's prices with its ``reuse``, granularity and minimum;
* a call with no removal since the one before reads what noop's call read,
  bounded by the previous prompt (a full hit stays a full hit);
* after a batch, an implicit cache reads up to the first token removed; an
  explicit cache (an entry must match whole) reads the longest entry that ends
  before it: the system prompt's, or a prompt of a call since the batch before,
  written within the cache's lifetime.

It is the optimum of that model over the action space, not of every removal
schedule: which content may go is decided per span beforehand, and the model
leaves out what the engine's cache also does (an entry found past its lookback,
older entries an earlier cut left, a re-fetched copy's tokens past the next
batch). The schedule the planner picks, a variant that keeps every needed
content until its last use, and no removal at all are each replayed through the
engine; the cheapest bill wins. The optimum reported is therefore an upper bound
on the cheapest schedule of the action space as the engine bills it, and the
engine's bill, never the planner's estimate, is what every figure uses
(``Plan.predicted_usd`` beside ``Plan.billed_usd`` shows how far apart they are).

The model's own limits hold here too: the replay is open-loop beyond the
closed loop's re-fetches, so content no recorded call uses again can go as soon
as it was read once, whatever a real agent would have made of its absence
(docs/recommend.md, "The clairvoyant optimum").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from prunesim.io.transcripts import workload as wl
from prunesim.model.agent import build_agent
from prunesim.model.agent_needs import LookbackNeeds
from prunesim.model.events import Observer
from prunesim.model.reaction import draw, recorded_drop
from prunesim.model.scenario import Scenario
from prunesim.model.spans import SYSTEM_PROMPT
from prunesim.policies.scheduled import Schedule, scheduled_policy
from prunesim.studies import reprice
from prunesim.studies.transcript_replay import replay, replay_scenario

NONE = "none"  # the candidate that removes nothing (noop's bill)


class Tap(Observer):
    """What the planner reads of noop's replay: each span's tokens and the calls it was in, each call, and where
    the runtime's own edits cut the prompt (they move what an explicit cache still holds after a cut)."""

    def __init__(self):
        # id -> [kind, key, turn, tokens held, offerable, first call holding it, one past the last (None: to the
        # end), tokens left]
        self.spans: dict[int, list] = {}
        self.calls: list[tuple[float, int, int, int]] = []  # (time, turn, prompt, output)
        self.system_end: int | None = None  # where the cost observer marks the end of the system prompt
        self.warm: int | None = None  # the prefix other sessions keep warm (a recorded warm start)
        self.edits: list[tuple[int, int, bool]] = []  # (call it came before, offset, a recorded read there)
        self._order: list[int] = []  # span ids in window order

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        self.spans[span.id] = [span.kind, span.key, span.turn, kept, span.offerable, len(self.calls), None, kept]
        self._order.append(span.id)
        if span.tags and SYSTEM_PROMPT in span.tags and not self.calls:
            self.system_end = appended_total  # as the cost observer marks it (tokens appended so far)

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        self._gone(span.id, freed)

    def on_spans_removed(self, time, turn, removals) -> None:
        for _, span, freed, _, _, _ in removals:
            self._gone(span.id, freed)

    def _gone(self, span_id: int, freed: int) -> None:
        row = self.spans.get(span_id)
        if row is None:
            return
        offset = sum(self.spans[i][7] for i in self._order[: self._order.index(span_id)])
        self.edits.append((len(self.calls), offset, False))
        row[7] -= freed
        if row[7] <= 0:
            row[6] = len(self.calls)
            self._order.remove(span_id)

    def on_runtime_rewrite(self, time, turn, offset) -> None:
        self.edits.append((len(self.calls), offset, True))

    def on_cache_warmed(self, time, turn, tokens) -> None:
        self.warm = tokens

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision, pass_id=0) -> None:
        self.calls.append((time, turn, prompt_tokens, output_tokens))

    def marks(self, p) -> tuple[np.ndarray, np.ndarray]:
        """Per call: what an explicit cache still reads after a cut (the system prompt's mark, or the prefix other
        sessions keep warm, while no edit has cut before them), and the latest call a runtime edit came before
        (the entries written earlier are gone). As :class:`prunesim.observe.cache.PromptCache` keeps them."""
        calls, g = len(self.calls), max(1, p.granularity)
        mark = self.system_end if self.system_end is not None else (self.calls[0][2] if calls else 0)
        kept = 0
        if self.warm is not None:
            kept = min(self.warm, mark) if self.system_end is not None else self.warm
            kept = kept - kept % g if kept - kept % g >= p.min_tokens else 0
        reads = np.zeros(calls, dtype=np.int64)
        since = np.zeros(calls, dtype=np.int64)
        edits = iter(sorted(self.edits))
        pending = next(edits, None)
        for c in range(calls):
            while pending is not None and pending[0] <= c:
                at, offset, recorded = pending
                mark = 0 if offset < mark else mark
                kept = 0 if offset < kept else kept
                if recorded and at and self.system_end is not None and p.min_tokens <= offset <= self.system_end:
                    mark = offset - offset % g
                since[c:] = at
                pending = next(edits, None)
            reads[c] = max(mark, kept)
        return reads, since


@dataclass(frozen=True)
class Need:
    """Content a later recorded call uses: the fetching output's key and turn, and the turns that re-fetch it."""

    key: str
    turn: int
    tokens: int
    call_tokens: int
    uses: tuple[int, ...]


@dataclass(frozen=True)
class Needs:
    """What the engine will make the agent fetch again for this run, read before it runs: the recorded needs of a
    transcript's resources (:func:`needs_of`) and the agent model's lookback needs (:func:`lookback_needs`).

    ``lookback`` needs are never let go early: a re-fetch of one is a turn of its own, which moves every later
    turn of the run and so every batch of a schedule keyed by turn (the schedule could not follow it)."""

    resources: list[Need]
    lookback: list[Need]
    profile: str = ""  # the agent profile the engine runs ('' without one)

    @property
    def every(self) -> list[Need]:
        return [*self.resources, *self.lookback]


def _workload(data: wl.WorkloadData, scenario: Scenario) -> wl.TranscriptWorkload:
    """The plans as :func:`prunesim.studies.transcript_replay.replay` builds them (its sizes, not its clock)."""
    return wl.TranscriptWorkload(wl.sized_as(data, scenario.replay.sizes), scenario.workload.reasoning_stale_after,
                                 scenario.workload.output_stale_after)


def enforced_needs(data: wl.WorkloadData, scenario: Scenario, seed: int) -> Needs:
    """The needs the engine enforces on this run, decided as the engine decides them: the agent model
    :func:`prunesim.model.agent.build_agent` builds for this scenario, seed and transcript says which mechanisms
    run (a profile may turn the resource re-fetch off, and may add lookback needs)."""
    agent = build_agent(scenario, seed, _workload(data, scenario))
    if agent is None:
        return Needs([], [])
    profile = getattr(agent, "profile", None)
    resources = needs_of(data, scenario, seed) if getattr(agent, "resources", None) is not None else []
    lookback = getattr(agent, "lookback", None)
    looked = lookback_needs(_workload(data, scenario), lookback) if lookback is not None else []
    return Needs(resources, looked, profile.name if profile is not None else "")


def lookback_needs(workload, lookback: LookbackNeeds) -> list[Need]:
    """The agent model's lookback needs of a run that removes nothing, drawn by the very object the engine consults
    (:class:`prunesim.model.agent_needs.LookbackNeeds`) and fed what the engine feeds it, in the same order: for
    each work item, the work turns before whose call it is needed.

    The draws are counter-based (seed, work turn, item), so the needs are the same whatever a schedule removes, as
    long as no reach moves the turns (a schedule that keeps each item until its last need makes none) and every
    item arrives whole (a window that cuts an output on arrival makes it no item: noop's run would then say so in
    ``forced_truncations``, and the candidates' engine bills decide)."""
    uses: dict[int, list[int]] = {}
    items = {}
    ids = iter(range(1, 1 << 62))
    for plan in workload:
        w = plan.turn
        for item in lookback.needed(w):
            if item.recorded_drop and item.recorded_drop <= w:
                continue  # the replayed runtime dropped it itself: the agent model does not react (agent.py)
            uses.setdefault(item.index, []).append(w)
            items[item.index] = item
        arrivals = [plan.tool_call, plan.tool_output, *plan.extra]
        if plan.unit:  # a turn unit's call is inside its output: the engine tells the model of both on one span
            output = _Arrived(next(ids), plan.tool_output.tokens)
            lookback.saw(plan.tool_call, output, w)
            lookback.saw(plan.tool_output, output, w)
            arrivals = list(plan.extra)
        for arrival in arrivals:
            lookback.saw(arrival, _Arrived(next(ids), arrival.tokens), w)
    return [Need(items[i].key, items[i].turn, items[i].tokens, items[i].call_tokens, tuple(u))
            for i, u in sorted(uses.items())]


@dataclass(frozen=True, slots=True)
class _Arrived:
    """A span as :meth:`LookbackNeeds.saw` reads one: its id and the tokens it kept (all of them: noop's window)."""

    id: int
    tokens: int


def needs_of(data: wl.WorkloadData, scenario: Scenario, seed: int) -> list[Need]:
    """The closed loop's needs, read from the plans the engine replays: for each fetching output, the later turns
    whose recorded calls use a resource it fetched, while it is that resource's latest content, and whose draw
    for this seed turns a missing content into a re-fetch (:class:`prunesim.model.reaction.Reaction`)."""
    r = scenario.reaction
    workload = wl.TranscriptWorkload(data, scenario.workload.reasoning_stale_after,
                                     scenario.workload.output_stale_after)
    if r.mode != "closed" or not workload.has_resources:
        return []
    latest: dict[str, tuple] = {}  # resource -> (key, turn, tokens, call tokens, recorded drop)
    uses: dict[tuple, list[int]] = {}
    for plan in workload:
        turn = plan.turn
        calls = [plan.tool_call, *(a for a in plan.extra if a.kind == "tool_call")]
        fetched_now = {res for a in calls for res in a.fetches}
        for a in calls:
            for res in a.uses:
                content = latest.get(res)
                if content is None or res in fetched_now or (content[4] and content[4] <= turn):
                    continue
                if draw(seed, res, turn) < r.probability:
                    uses.setdefault(content, []).append(turn)
        call_tokens: dict[str, int] = {}
        for a in (plan.tool_call, plan.tool_output, *plan.extra):
            if a.kind == "tool_call":
                call_tokens[a.key] = a.tokens
            elif a.kind == "tool_output" and a.fetches:
                content = (a.key, turn, a.tokens, call_tokens.get(a.key, 0), recorded_drop(a.tags))
                for res in a.fetches:
                    latest[res] = content
    return [Need(c[0], c[1], c[2], c[3], tuple(sorted(set(u)))) for c, u in uses.items()]


@dataclass
class Plan:
    """The schedule chosen, what the planner expected it to bill, and what the engine billed each candidate."""

    schedule: Schedule
    chosen: str
    predicted_usd: float
    billed_usd: float
    candidates: dict[str, float] = field(default_factory=dict)
    refetched: int = 0  # needed contents the schedule lets go and the agent fetches again
    result: object = None  # the chosen candidate's replay (priced at reuse 1: reprice.stream_of reads it)

    @property
    def policy(self) -> type:
        return scheduled_policy(self.schedule)


@dataclass
class _Model:
    """The planner's arrays: calls, spans and the prices (see the module docstring)."""

    turn: np.ndarray  # per call
    time: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    readable: np.ndarray  # noop's read at reuse 1
    tokens: np.ndarray  # per span, in window order
    first: np.ndarray  # first call that holds the span
    last: np.ndarray  # one past the last call that holds it
    release: np.ndarray  # the turn from whose end it may go
    system: np.ndarray  # per call, the system prompt's cache mark: what an explicit cache reads after a cut
    since: np.ndarray  # per call, the latest call at or before it that a recorded cache break came before
    pricing: object

    def cost(self, prompt, readable, output):
        p = self.pricing
        r_read, r_write, r_input, r_output = reprice.rates(p)
        if p.cache == "none":
            return prompt * r_input + output * r_output
        g = max(1, p.granularity)
        cacheable = prompt - prompt % g
        cacheable = np.where(cacheable < p.min_tokens, 0, cacheable)
        readable = np.minimum(readable, cacheable)
        readable = np.where(readable < p.min_tokens, 0, readable)
        read = readable if p.reuse == 1.0 else np.rint(p.reuse * readable)
        return read * r_read + (cacheable - read) * r_write + (prompt - cacheable) * r_input + output * r_output

    def floor(self, x):
        g = max(1, self.pricing.granularity)
        return x - x % g


def _removed(m: _Model, turns: int) -> np.ndarray:
    """removed[b, c]: tokens call ``c`` of noop held that may go by the end of turn ``b`` (shape turns+1 x calls)."""
    calls = len(m.prompt)
    diff = np.zeros((turns + 2, calls + 1), dtype=np.int64)
    ok = m.release <= turns
    np.add.at(diff, (m.release[ok], m.first[ok]), m.tokens[ok])
    np.add.at(diff, (m.release[ok], m.last[ok]), -m.tokens[ok])
    return np.cumsum(np.cumsum(diff, axis=1), axis=0)[: turns + 1, :calls]


def _normal_reads(m: _Model, prompts: np.ndarray) -> np.ndarray:
    """Each call's readable prefix when no batch came just before it, for each row of ``prompts`` (one per last
    batch): noop's read, a full hit staying a full hit of the smaller previous prompt."""
    prev_noop = np.concatenate([[0], m.floor(m.prompt[:-1])])
    hit = (m.readable > 0) & (m.readable >= prev_noop)
    hit[0] = False  # the first call reads what was warm before the run, whatever the schedule
    start = np.full((len(prompts), 1), np.iinfo(np.int64).max)
    prev = np.concatenate([start, m.floor(prompts[:, :-1])], axis=1)
    return np.where(hit[None, :], prev, np.minimum(m.readable[None, :], prev))


def optimal_batches(m: _Model) -> tuple[list[int], float]:
    """The dynamic program of the module docstring: the batch turns and the bill the model predicts for them."""
    calls = len(m.prompt)
    turns = int(m.turn.max()) if calls else 0
    removed = _removed(m, turns)
    prompts = m.prompt[None, :] - removed  # prompts[b, c]: call c's prompt when the last batch was at b
    normal = m.cost(prompts, _normal_reads(m, prompts), m.output[None, :])
    cum = np.concatenate([np.zeros((turns + 1, 1)), np.cumsum(normal, axis=1)], axis=1)
    first_call = np.searchsorted(m.turn, np.arange(turns + 1), side="right")  # first call after turn b's end
    ttl = m.pricing.ttl_s
    floors = m.floor(prompts)
    g = np.full(turns + 1, np.inf)
    back = np.zeros(turns + 1, dtype=np.int64)
    candidates = [b for b in range(1, turns + 1) if first_call[b] < calls]
    prev_noop = np.concatenate([[0], m.floor(m.prompt[:-1])])
    hit = (m.readable > 0) & (m.readable >= prev_noop)  # noop's call read all of the call before's prompt
    index = np.arange(len(m.tokens))
    for b in candidates:
        c1 = first_call[b]
        prev = np.array([0, *[x for x in candidates if x < b]], dtype=np.int64)  # 0: no batch before
        # The window the call before the batch read (spans in window order): under a previous batch ``p`` it holds
        # the spans whose release is after ``p``; this batch cuts at the first whose release is in (p, b]. The
        # spans before that one are those released after b (the others went at p), so the cut is where they end.
        held = (m.first <= c1 - 1) & (m.last > c1 - 1)
        t, rel, at_index = m.tokens[held], m.release[held], index[: int(held.sum())]
        ends = np.concatenate([[0], np.cumsum(np.where(rel > b, t, 0))])
        first_of = np.full(b + 2, len(t), dtype=np.int64)  # the first held span released at each turn up to b
        soon = rel <= b
        np.minimum.at(first_of, rel[soon], at_index[soon])
        after = np.minimum.accumulate(first_of[::-1])[::-1]  # after[r]: the first released in [r, b]
        at = after[prev + 1]
        edits = at < len(t)
        cut = ends[np.minimum(at, len(t))]
        before = floors[prev, c1 - 1]
        reads = before if hit[c1] else np.minimum(m.readable[c1], before)  # as if nothing was cut
        if m.pricing.cache == "implicit":
            cut_read = m.floor(cut)
        else:  # explicit: the longest entry that ends before the cut, written since the batch before, still live
            lo = max(int(np.searchsorted(m.time, m.time[c1] - ttl, side="left")), int(m.since[c1]))
            cols = np.arange(lo, c1)
            start = np.where(prev == 0, 0, first_call[prev])
            entries = floors[prev][:, lo:c1]
            ok = (cols[None, :] >= start[:, None]) & (entries <= cut[:, None]) & (entries >= m.pricing.min_tokens)
            entry = np.where(ok, entries, 0).max(axis=1) if len(cols) else np.zeros(len(prev), dtype=np.int64)
            cut_read = np.maximum(entry, min(int(m.readable[c1]), int(m.system[c1])))
        read = np.where(edits, np.minimum(reads, cut_read), reads)
        here = m.cost(np.full(len(prev), prompts[b, c1]), read, np.full(len(prev), m.output[c1]))
        # the calls from the batch before (after its own first call) up to this batch, then this first call
        lo_call = np.where(prev == 0, 0, first_call[prev] + 1)
        span = cum[prev, c1] - cum[prev, lo_call]
        total = np.where(prev == 0, 0.0, g[prev]) + span + here
        k = int(np.argmin(total))
        g[b], back[b] = total[k], prev[k]
    best, last = float(cum[0, calls]), 0
    for b in candidates:
        c1 = first_call[b]
        value = g[b] + cum[b, calls] - cum[b, c1 + 1]
        if value < best:
            best, last = float(value), b
    batches = []
    while last:
        batches.append(last)
        last = int(back[last])
    return sorted(batches), best


def model_bill(m: _Model, batches) -> np.ndarray:
    """Each call's dollars under the planner's model for the given batch turns, call by call: the reference the
    dynamic program is checked against (its optimum is the cheapest of these over every set of batches)."""
    calls = len(m.prompt)
    turns = int(m.turn.max()) if calls else 0
    removed = _removed(m, turns)
    batches = sorted(batches)
    last = np.zeros(calls, dtype=np.int64)  # the last batch before each call (0: none)
    for b in batches:
        last[m.turn > b] = b
    prompts = m.prompt - removed[last, np.arange(calls)]
    out = np.zeros(calls)
    for c in range(calls):
        rows = prompts[None, :].copy()
        read = int(_normal_reads(m, rows)[0, c])
        if c and last[c] != last[c - 1]:
            prev, b = int(last[c - 1]), int(last[c])
            held = (m.first <= c - 1) & (m.last > c - 1)
            t, rel = m.tokens[held], m.release[held]
            present = rel > prev
            new = present & (rel <= b)
            if new.any():
                cut = int(t[: int(np.argmax(new))][present[: int(np.argmax(new))]].sum())
                if m.pricing.cache == "implicit":
                    cut_read = int(m.floor(cut))
                else:
                    start = 0 if prev == 0 else int(np.searchsorted(m.turn, prev, side="right"))
                    start = max(start, int(m.since[c]))
                    entries = [int(m.floor(prompts[k])) for k in range(start, c)
                               if m.time[c] - m.time[k] <= m.pricing.ttl_s
                               and m.pricing.min_tokens <= m.floor(prompts[k]) <= cut]
                    cut_read = max([*entries, min(int(m.readable[c]), int(m.system[c]))])
                read = min(read, cut_read)
        out[c] = float(m.cost(np.array([prompts[c]]), np.array([read]), np.array([m.output[c]]))[0])
    return out


def release_turns(tap: Tap, needs: list[Need], early: set[tuple[str, int]]) -> tuple[dict, np.ndarray]:
    """The schedule's release table and each tapped span's release turn (window order)."""
    table: dict[tuple[str, str, int], int] = {}
    for n in needs:
        last = n.uses[-1]
        if (n.key, n.turn) not in early:
            table[("tool_output", n.key, n.turn)] = max(n.turn + 1, last)
        for u in n.uses:  # a copy the agent fetched again stays until the last use
            key = ("tool_output", n.key, u)
            table[key] = max(table.get(key, 0), last)
    schedule = Schedule(frozenset(), table)
    rel = np.array([schedule.release_of(kind, key, turn, offerable)
                    for kind, key, turn, _, offerable, *_ in tap.spans.values()], dtype=np.int64)
    return table, rel


def _choose_early(m: _Model, needs: list[Need]) -> set[tuple[str, int]]:
    """The needed contents to let go and fetch again: where keeping them from the turn after they arrived to
    their first use costs more, at noop's prompts and cache, than the call that fetches them again."""
    r_read, r_write, _, r_output = reprice.rates(m.pricing)
    prev_noop = np.concatenate([[0], m.floor(m.prompt[:-1])])
    hit = (m.readable > 0) & (m.readable >= prev_noop)
    rate = np.where(hit, r_read, r_write)  # what a kept token costs each call: read, or written again
    early = set()
    for n in needs:
        calls = (m.turn > n.turn + 1) & (m.turn <= n.uses[0])
        keep = n.tokens * float(rate[calls].sum())
        at = np.searchsorted(m.turn, n.uses[0])
        prompt = int(m.prompt[min(at, len(m.prompt) - 1)]) if len(m.prompt) else 0
        again = prompt * r_read + n.call_tokens * (r_output + r_write) + n.tokens * r_write
        if keep > again:
            early.add((n.key, n.turn))
    return early


def _model(tap: Tap, result, rel: np.ndarray, pricing) -> _Model:
    spans = list(tap.spans.values())
    calls = np.array(tap.calls, dtype=float).reshape(-1, 4)
    stream = reprice.stream_of(result)
    first = np.array([s[5] for s in spans], dtype=np.int64)
    last = np.array([len(tap.calls) if s[6] is None else s[6] for s in spans], dtype=np.int64)
    tokens = np.array([s[3] for s in spans], dtype=np.int64)
    system, since = tap.marks(pricing)
    return _Model(calls[:, 1].astype(np.int64), calls[:, 0], stream.prompt, stream.output, stream.readable,
                  tokens, first, last, rel, system, since, pricing)


def plan(data: wl.WorkloadData, base: Scenario, seed: int | None = None, scenario: Scenario | None = None) -> Plan:
    """The clairvoyant schedule of one transcript under ``base`` (module docstring); every candidate is replayed."""
    scenario = scenario or replay_scenario(base, data)
    seed = scenario.seed if seed is None else seed
    full = reprice.at_full_reuse(scenario)
    tap = Tap()
    noop, _ = replay(data, base, "noop", seed, trace="turns", scenario=full, observers=[tap])
    enforced = enforced_needs(data, scenario, seed)
    needs = enforced.every
    price = scenario.pricing
    one = lambda result: float(reprice.dollars(reprice.stream_of(result), price, [price.reuse], [True])[0])  # noqa: E731
    billed = {NONE: one(noop)}
    runs = {NONE: (noop, Schedule(), 0.0, 0)}
    _, rel = release_turns(tap, needs, set())
    m = _model(tap, noop, rel, price)
    if not np.array_equal(m.prompt, _held(m)):
        raise AssertionError("the planner's tap does not add up to noop's prompts")  # a bug, not bad input
    early = _choose_early(m, enforced.resources)
    for name, chosen in (("planned", early), ("keep-needed", set())):
        if name == "keep-needed" and not early:
            continue
        table, rel = release_turns(tap, needs, chosen)
        m = dataclasses.replace(m, release=rel)
        batches, predicted = optimal_batches(m)
        if not batches:
            continue
        schedule = Schedule(frozenset(batches), table)
        result, _ = replay(data, base, scheduled_policy(schedule), seed, trace="turns", scenario=full)
        billed[name] = one(result)
        runs[name] = (result, schedule, predicted, len(chosen))
    best = min(billed, key=lambda k: (billed[k], k != NONE))  # a tie goes to removing nothing
    result, schedule, predicted, refetched = runs[best]
    return Plan(schedule, best, predicted if best != NONE else billed[NONE], billed[best], billed, refetched, result)


def _held(m: _Model) -> np.ndarray:
    """What the tapped spans add up to at each call (the planner's check against noop's prompts)."""
    calls = len(m.prompt)
    diff = np.zeros(calls + 1, dtype=np.int64)
    np.add.at(diff, m.first, m.tokens)
    np.add.at(diff, m.last, -m.tokens)
    return np.cumsum(diff)[:calls]
