"""openhands-sdk's ``LLMSummarizingCondenser`` (openhands-sdk 1.58.2) on prunesim's window.

The window is read as the events the SDK records for the same conversation (:func:`sdk_events`), the
places where the SDK may cut them are found by its three rules (:func:`cut_points`), and
:func:`sdk_condensation` names the spans of the events the condenser forgets. Only where it condenses
and what it keeps are modelled: the summary itself is the ``[summary]`` model's
(:mod:`prunesim.policies.summary`). tests/test_openhands_sdk_differential.py runs the SDK's own
condenser beside this on every shipped transcript.

Read in the SDK's source (``openhands/sdk/context/condenser/llm_summarizing_condenser.py``,
``openhands/sdk/context/view/properties/*.py``, ``openhands/sdk/agent/response_dispatch.py``):

* a model response with tool calls is one ``ActionEvent`` per call, sharing one ``llm_response_id``;
  the response's text is the first action's thought and its thinking blocks go on the first action;
  a response without a call is one ``MessageEvent``;
* every tool result is an observation; a call the runtime could not run gets an ``AgentErrorEvent``;
* a cut may not split the actions of one response, may not fall while a call awaits its
  observation, and may not fall inside a tool loop (an action with thinking blocks starts one; the
  actions and observations after it continue it; any other event ends it);
* past ``max_size`` events it keeps the last ``max_size // 2 - keep_first - 1``; past ``max_tokens``
  as many as bring the prompt to half of it; the stricter wins; both ends of the range move forward to
  the next place it may cut; the first ``keep_first`` events and the leading system prompt stay; a
  range under ``minimum_progress`` of the events is refused;
* token pressure is a hard requirement: when no range is allowed, the condenser resets, summarizing
  every event after the system prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prunesim.model.spans import PLACEHOLDER_OF, THINKING, Span
from prunesim.policies.base import WindowView


@dataclass(slots=True)
class Event:
    """One event of the SDK's view: the spans it holds (none for the empty observation of a result the
    runtime cleared), its kind (``system``, ``action``, ``observation`` or ``message``), the call it makes or
    answers, the response it belongs to (an action's turn) and whether it opens a tool loop."""

    kind: str
    spans: list[Span] = field(default_factory=list)
    call: int = 0
    response: int = -1
    thinking: bool = False

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.spans)


def role(s: Span) -> str:
    """What a span is in the SDK's conversation: ``call``, ``result``, ``reasoning``, ``user``, ``system`` or
    ``other`` (a placeholder stands for what it replaced)."""
    kind = s.kind
    if kind == "placeholder":
        kind = next((t[len(PLACEHOLDER_OF):] for t in s.tags if t.startswith(PLACEHOLDER_OF)), kind)
    return ROLES.get(kind, "other")


ROLES = {"tool_call": "call", "tool_output": "result", "reasoning": "reasoning", "user": "user", "system": "system"}


class Replies:
    """Which user messages are the runtime's reply to a call it could not run, judged once: when the message is
    first read, at the end of its turn, its call's result is missing because there never was one. Later the
    replayed runtime may clear a result while its call stays; a message after it is then still a message."""

    def __init__(self):
        self.call_of: dict[int, int] = {}  # user span id -> the call it answers (0: none)


def sdk_events(spans, replies: Replies | None = None) -> list[Event]:
    """The window as the SDK's events, oldest first.

    The system spans are one ``SystemPromptEvent``, where the first stands. A turn's reasoning and tool
    calls are one model response, placed where its first span stands: one action per call, the reasoning
    (and thinking) on the first, or, with no call, one message. A result is its call's observation; a user
    message that follows, in its turn, a call left without a result is that call's error observation (a
    call the runtime could not run; ``replies`` remembers the judgement); a call whose result is gone (the
    runtime cleared it) keeps an empty observation after its batch's others, as the SDK pairs every action
    with one. Anything else (a user message, a summary) is one message.
    """
    replies = replies or Replies()
    judged = replies.call_of
    roles = [role(s) for s in spans]
    calls_of: dict[int, list[Span]] = {}
    reasoning_of: dict[int, list[Span]] = {}
    answered: set[int] = set()
    for s, r in zip(spans, roles, strict=True):
        if r == "call" and s.turn > 0:
            calls_of.setdefault(s.turn, []).append(s)
        elif r == "reasoning" and s.turn > 0:
            reasoning_of.setdefault(s.turn, []).append(s)
        elif r == "result":
            answered.add(s.call)
        elif r == "user" and judged.get(s.id):
            answered.add(judged[s.id])
    unanswered = {turn: [c.call for c in calls if c.call not in answered] for turn, calls in calls_of.items()}
    events: list[Event] = []
    system: Event | None = None
    placed: set[int] = set()  # turns whose response is placed
    batch_end: dict[int, int] = {}  # turn -> index after its last action or observation so far
    for s, r in zip(spans, roles, strict=True):
        turn = s.turn
        if r == "system":
            if system is None:
                system = Event("system", [])
                events.append(system)
            system.spans.append(s)
            continue
        if (r == "reasoning" or r == "call") and turn > 0:
            if turn not in placed:
                placed.add(turn)
                events.extend(response(turn, reasoning_of.get(turn, ()), calls_of.get(turn, ())))
                batch_end[turn] = len(events)
            continue
        if r == "result":
            events.append(Event("observation", [s], s.call))
        elif r == "user" and reply(s, judged, unanswered if turn in placed else {}):
            events.append(Event("observation", [s], judged[s.id]))
        else:
            events.append(Event("message", [s]))
            continue
        batch_end[turn] = len(events)
    # a result the runtime cleared: an empty observation among its batch's (inserted from the end)
    cleared = sorted(((batch_end[turn], call) for turn, calls in unanswered.items() for call in calls),
                     reverse=True)
    for at, call in cleared:
        events.insert(at, Event("observation", [], call))
    return events


def reply(s: Span, judged: dict[int, int], unanswered: dict[int, list[int]]) -> bool:
    """Is user message ``s`` the reply to a call of its turn left without a result (judged once)?"""
    if s.id not in judged:
        waiting = unanswered.get(s.turn)
        judged[s.id] = waiting.pop(0) if waiting else 0
    return bool(judged[s.id])


def response(turn: int, reasoning, calls) -> list[Event]:
    """One model response: an action per call, its reasoning on the first; without a call, one message."""
    if not calls:
        return [Event("message", list(reasoning))]
    first = calls[0]
    thinking = any(THINKING in s.tags for s in reasoning)
    return [Event("action", [*reasoning, first], first.call, turn, thinking),
            *(Event("action", [c], c.call, turn) for c in calls[1:])]


def cut_points(events: list[Event]) -> list[bool]:
    """``out[i]``: may the view be cut before event ``i`` (``i == len(events)``: at its end)?

    The SDK's three rules: not between two actions of one response, not while a call awaits its
    observation, not before an action or observation that continues a tool loop."""
    out = [True] * (len(events) + 1)
    pending: set[int] = set()
    in_loop = False
    for i, e in enumerate(events):
        if i and e.kind == "action" and events[i - 1].kind == "action" and events[i - 1].response == e.response:
            out[i] = False
        if e.kind == "action":
            pending.add(e.call)
        elif e.kind == "observation":
            pending.discard(e.call)
        if pending:
            out[i + 1] = False
        if e.kind == "action" and e.thinking:
            in_loop = True
        elif e.kind in ("action", "observation"):
            if in_loop:
                out[i] = False
        else:
            in_loop = False
    return out


def next_cut(cuts: list[bool], at: int) -> int | None:
    """The first place from ``at`` where the view may be cut (None: nowhere)."""
    return next((i for i in range(max(at, 0), len(cuts)) if cuts[i]), None)


def sdk_condensation(view: WindowView, max_size: int, keep_first: int, minimum_progress: float,
                     max_tokens: int, replies: Replies | None = None) -> list[Span]:
    """The spans the SDK's ``LLMSummarizingCondenser`` forgets from this window (none: no condensation).

    ``max_tokens`` 0: no token trigger. Pinned spans in the range stay, except user messages (a
    transcript's task): the SDK keeps only the system prompt and the first ``keep_first`` events, and
    forgets the task like any other event beyond them. A constraint or a tombstone is never removed by a
    policy in prunesim (tests/test_engine.py), so one in the range stays, and counts as an event after.
    """
    events = sdk_events(view.spans, replies)
    n = len(events)
    tails = []
    if n > max_size:
        tails.append(max_size // 2 - keep_first - 1)
    hard = bool(max_tokens) and view.utilization > max_tokens
    if hard:
        reduce = view.utilization - max_tokens // 2
        rest = events[keep_first:]
        prefix = total = 0
        while prefix < len(rest) and total <= reduce:
            total += rest[prefix].tokens
            prefix += 1
        tails.append(len(rest) - prefix)
    if not tails:
        return []
    system = next((i for i, e in enumerate(events) if e.kind == "system"), None)
    kept = system + 1 if system is not None else 0
    cuts = cut_points(events)
    start = next_cut(cuts, max(keep_first, kept))
    end = next_cut(cuts, n - min(tails))
    if start is None or end is None or end <= start or end - start < n * minimum_progress:
        if not hard:
            return []
        start, end = kept, n  # the hard reset: everything after the system prompt
    return [s for e in events[start:end] for s in e.spans
            if not s.pinned or (s.kind == "user" and not s.is_constraint)]
