"""llm-summary: auto-compaction as Codex and Claude Code do it, and OpenHands' ``LLMSummarizingCondenser``.

At a threshold, one model call reads the whole window (billed as a decision, with
its latency) and writes a summary of drawn size; the summary replaces everything
except pinned spans and the last ``keep_turns`` turns, earlier summaries included
(a summary of a summary). What the summary keeps is drawn span by span
(:mod:`prunesim.policies.summary`, table ``[summary]``): content it drops cannot
be recalled, and a dropped constraint counts in ``lost_constraints``.

Parameters (``[llm_summary]``; unset keys take the preset's value):

* ``threshold`` with its ``unit`` (set both or neither): ``"window"`` a fraction of
  the window, ``"tokens"`` a token count, ``"turns"`` the number of turns whose
  spans are in the window and not yet summarized;
* ``keep_turns``: the last turns kept whole.

With ``unit = "events"`` the policy is openhands-sdk's ``LLMSummarizingCondenser``
(:func:`sdk_condensation`): ``threshold`` is its ``max_size`` in events, and
``keep_first``, ``minimum_progress`` and ``max_tokens_of_window`` (its
``max_tokens``, as a share of the window: 1 is the agent LLM's input limit, which
the SDK takes when ``max_tokens`` is unset; 0 is no token trigger) are read.

A compaction is skipped when nothing but earlier summaries would be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import fraction, non_negative, searched
from prunesim.model.spans import PLACEHOLDER_OF, SUMMARY_TAG, Span
from prunesim.policies.base import Action, Policy, Preset, WindowView, resolve_table
from prunesim.policies.summary import SummaryParams, SummaryWriter


@dataclass
class LlmSummary:
    """``[llm_summary]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["codex", "claude-code", "openhands", "openhands-sdk", "openhands-sdk-class"] = "codex"
    threshold: float | None = field(default=None, metadata=searched(0, 0, by_unit={
        "window": searched(0.2, 0.95), "tokens": searched(0.2, 0.95, integer=True, per_window=True),
        "turns": searched(10, 150, integer=True), "events": searched(20, 400, integer=True)}))
    unit: Literal["window", "tokens", "turns", "events"] | None = None
    keep_turns: int | None = field(default=None, metadata=searched(0, 30, integer=True))
    keep_first: int | None = None
    minimum_progress: float | None = None
    max_tokens_of_window: float | None = None

    def check(self, key: str, where: str, scenario) -> None:
        if (self.threshold is None) != (self.unit is None):
            raise UserError(where, f"{key}.threshold",
                            "set threshold and unit together (window, tokens, turns or events)")
        if self.threshold is not None:
            check_threshold(self.threshold, self.unit, f"{key}.threshold", where, scenario.window)
        if self.keep_turns is not None:
            non_negative(self.keep_turns, f"{key}.keep_turns", where)
        if self.keep_first is not None:
            non_negative(self.keep_first, f"{key}.keep_first", where)
        if self.minimum_progress is not None and not 0 < self.minimum_progress < 1:
            raise UserError(where, f"{key}.minimum_progress",
                            f"must be above 0 and below 1 (got {self.minimum_progress})")
        if self.max_tokens_of_window is not None:
            fraction(self.max_tokens_of_window, f"{key}.max_tokens_of_window", where)


def check_threshold(value: float, unit: str, key: str, where: str, window: int) -> None:
    if value <= 0:
        raise UserError(where, key, f"must be positive (got {value})")
    if unit == "window" and value > 1:
        raise UserError(where, key, f"{value} is above the window (a fraction of it: at most 1)")
    if unit == "tokens" and value > window:
        raise UserError(where, key, f"{value:g} is above the window {window}")
    if unit in ("turns", "events") and not float(value).is_integer():
        raise UserError(where, key, f"must be a whole number of {unit} (got {value})")


PRESETS = {
    # codex-rs protocol/src/openai_models.rs: auto_compact_token_limit defaults to 90% of the context window;
    # the compacted history keeps the user messages (here: the pinned task) and the summary.
    "codex": Preset("Codex CLI auto-compaction at 90% of the window; the summary replaces the whole history",
                    {"threshold": 0.9, "unit": "window", "keep_turns": 0}),
    # Claude Code compacts at about 155k tokens of its 200k window (a 45k autocompact buffer).
    "claude-code": Preset("Claude Code auto-compact at 155k of a 200k window (77.5%); the summary replaces the "
                          "whole history", {"threshold": 0.775, "unit": "window", "keep_turns": 0}),
    # The legacy OpenHands condenser (openhands/core/config/condenser_config.py, LLMSummarizingCondenserConfig):
    # max_size=100 events, keep_first=1. Past 100 events it keeps the first and the last
    # max_size // 2 - keep_first - 1 = 48; at two events a turn (action, observation): past 50 turns, keep the
    # last 24. The first event (the task) is pinned in prunesim.
    "openhands": Preset("OpenHands LLMSummarizingCondenser (max_size 100 events, keep_first 1): past 50 turns, "
                        "summarize all but the last 24", {"threshold": 50, "unit": "turns", "keep_turns": 24}),
    # openhands-sdk 1.58.2 (openhands/sdk/context/condenser/llm_summarizing_condenser.py): the class defaults to
    # max_size=240, keep_first=2, minimum_progress=0.1, max_tokens unset (then the agent LLM's input limit);
    # default_condenser(), which the default agent uses (openhands-tools 1.58.2, get_default_agent), sets
    # max_size=80, keep_first=4.
    "openhands-sdk": Preset("openhands-sdk 1.58.2 default agent's LLMSummarizingCondenser: past 80 events keep the "
                            "first 4 and the last 35, summarize the rest",
                            {"threshold": 80, "unit": "events", "keep_turns": 0, "keep_first": 4,
                             "minimum_progress": 0.1, "max_tokens_of_window": 1.0}),
    "openhands-sdk-class": Preset("openhands-sdk 1.58.2 LLMSummarizingCondenser class defaults: past 240 events keep "
                                  "the first 2 and the last 117, summarize the rest",
                                  {"threshold": 240, "unit": "events", "keep_turns": 0, "keep_first": 2,
                                   "minimum_progress": 0.1, "max_tokens_of_window": 1.0}),
}


class LlmSummaryPolicy(Policy):
    name = "llm-summary"
    model_driven = True
    summary = "at a threshold a model call reads the window and a summary replaces all but the last turns"
    tables = {"llm_summary": LlmSummary, "summary": SummaryParams}
    reads = ("llm_summary", "summary")  # its own threshold, not the scenario's trigger
    roles = {"threshold": "llm_summary.threshold"}
    presets = PRESETS

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        table = scenario.llm_summary
        self.params = p = resolve_table(table, self.presets, self.preset or table.preset)
        if p.unit == "events" and int(p.threshold) // 2 - (p.keep_first or 0) - 1 <= 0:
            # openhands-sdk refuses it too: no event would be left to keep from the tail
            raise UserError(scenario.name, "llm_summary.keep_first", f"{p.keep_first or 0} leaves no room: it must be "
                            f"below threshold // 2 - 1 (threshold {p.threshold:g} events)")
        self.writer = SummaryWriter(scenario.summary, rng)

    def acting_trigger(self) -> int:
        p = self.params
        if p.unit == "window":
            return int(p.threshold * self.scenario.window)
        if p.unit == "tokens":
            return int(p.threshold)
        if p.unit == "events" and p.max_tokens_of_window:
            return int(p.max_tokens_of_window * self.scenario.window)
        return self.scenario.trigger  # a turn or event count: no utilization threshold

    def due(self, view: WindowView) -> bool:
        p = self.params
        if p.unit == "window":
            return view.utilization >= p.threshold * view.size
        if p.unit == "tokens":
            return view.utilization >= p.threshold
        turns = {s.turn for s in view.spans if not s.pinned and SUMMARY_TAG not in s.tags}
        return len(turns) >= p.threshold

    def decide(self, view: WindowView) -> list[Action]:
        p = self.params
        if p.unit == "events":
            limit = int(p.max_tokens_of_window * view.size) if p.max_tokens_of_window else 0
            replaced = sdk_condensation(view, int(p.threshold), p.keep_first or 0, p.minimum_progress or 0.0, limit)
            if not replaced or all(SUMMARY_TAG in s.tags for s in replaced):
                return []
            return [self.writer.compact(view.turn, replaced, reason="condensation")]
        if not self.due(view):
            return []
        last_kept = view.turn - self.params.keep_turns  # spans of later turns stay whole
        replaced = [s for s in view.spans if not s.pinned and (SUMMARY_TAG in s.tags or s.turn <= last_kept)]
        if all(SUMMARY_TAG in s.tags for s in replaced):
            return []  # nothing new to fold in
        return [self.writer.compact(view.turn, replaced, reason="auto_compact")]


# -- openhands-sdk's condenser --------------------------------------------------------------
CALL_PLACEHOLDER = PLACEHOLDER_OF + "tool_call"


def sdk_events(spans) -> list[list[Span]]:
    """The window as the SDK's events, oldest first, each with the spans it holds.

    One ``SystemPromptEvent`` for the system spans; a reasoning span is the thought of its turn's first
    action (an ``ActionEvent`` per tool call) when the turn has one, a message of its own otherwise; every
    other span (an observation, a user message, a summary) is one event.
    """
    with_calls = {s.turn for s in spans if s.kind == "tool_call" or CALL_PLACEHOLDER in s.tags}
    events: list[list[Span]] = []
    system: list[Span] | None = None
    thought: dict[int, list[Span]] = {}
    for s in spans:
        if s.kind == "system":
            if system is None:
                system = []
                events.append(system)
            system.append(s)
        elif s.kind == "reasoning" and s.turn in with_calls:
            thought.setdefault(s.turn, []).append(s)
        elif s.kind == "tool_call" or CALL_PLACEHOLDER in s.tags:
            events.append([*thought.pop(s.turn, ()), s])
        else:
            events.append([s])
    events.extend(thought.values())  # thoughts after their turn's last call
    return events


def sdk_condensation(view: WindowView, max_size: int, keep_first: int, minimum_progress: float,
                     max_tokens: int) -> list[Span]:
    """The spans openhands-sdk 1.58.2's ``LLMSummarizingCondenser`` forgets from this window (none: no condensation).

    Past ``max_size`` events it keeps the last ``max_size // 2 - keep_first - 1``; past ``max_tokens``
    (0: off) as many as bring the window to half of it, the events after the first ``keep_first``
    going first. The stricter wins. The first ``keep_first`` events and the system prompt are never
    forgotten; both ends of the range move forward to the next boundary between turns (a batch of
    calls and their results is not split). A range under ``minimum_progress`` of the events is refused.
    Pinned spans stay whatever the range (prunesim never replaces them).
    """
    events = sdk_events(view.spans)
    n = len(events)
    tails = []
    if n > max_size:
        tails.append(max_size // 2 - keep_first - 1)
    if max_tokens and view.utilization > max_tokens:
        reduce = view.utilization - max_tokens // 2
        rest = events[keep_first:]
        prefix = total = 0
        while prefix < len(rest) and total <= reduce:
            total += sum(s.tokens for s in rest[prefix])
            prefix += 1
        tails.append(len(rest) - prefix)
    if not tails:
        return []
    system = next((i for i, e in enumerate(events) if e[0].kind == "system"), None)
    start = _boundary(events, max(keep_first, system + 1 if system is not None else 0))
    end = _boundary(events, n - min(tails))
    if end <= start or end - start < n * minimum_progress:
        return []
    return [s for e in events[start:end] for s in e if not s.pinned]


def _boundary(events: list[list[Span]], at: int) -> int:
    """The first index from ``at`` where an event does not continue the batch before it (the end counts)."""
    for i in range(max(at, 0), len(events)):
        if i == 0 or events[i][0].turn == 0 or events[i][0].turn != events[i - 1][-1].turn:
            return i
    return len(events)
