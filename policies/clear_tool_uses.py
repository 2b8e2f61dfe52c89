"""clear-tool-uses: runtime-side clearing of old tool results, as Anthropic and LangChain ship it.

Anthropic's context editing (``clear_tool_uses_20250919``) and LangChain v1's
``ClearToolUsesEdit`` middleware replace the oldest tool results by a short
placeholder once the conversation passes a token threshold. No model call: the
runtime edits the prompt. Both edit a copy of the full history before every model
call, so the threshold is compared with the *full* history, not the edited one;
this policy keeps the window edited and adds back what it has freed to get the
full history's size.

Parameters (``[clear_tool_uses]``, named as the sources name them; unset keys take
the preset's value):

* ``trigger``: act when the full history exceeds this many input tokens;
* ``keep``: the most recent tool results are never cleared. Like LangChain, the
  count takes every tool result, cleared ones and those of excluded tools included;
* ``clear_at_least``, where the sources differ (``semantics``):

  - ``"anthropic"``: the fewest tokens a clearing must free, or it is not applied
    (a clearing invalidates the prompt cache, so it must be worth it). A clearing
    takes every result it may clear; this policy waits until those not yet
    cleared free at least ``clear_at_least``;
  - ``"langchain"``: clear oldest-first and stop as soon as the history is
    ``clear_at_least`` smaller than the full one; 0 clears every candidate. Since
    LangChain edits a copy of the full history each time, once that much is freed
    it never clears more;

* ``exclude_tools``: results of these tools are never cleared;
* ``clear_tool_inputs``: also clear the call's input, leaving
  ``input_placeholder_tokens`` of it;
* ``placeholder_tokens``: the size of the placeholder left for each result;
* ``token_count_method`` (``model``, ``approximate``) and ``chars_per_token``: how the
  full history is counted against ``trigger`` (see :func:`approximate_tokens`);
* ``clear_thinking``: Anthropic's ``clear_thinking_20251015`` strategy, applied first:
  the thinking of all but the last ``clear_thinking`` assistant turns with thinking
  leaves the window (0: the strategy is off, every thinking block stays).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative, searched
from prunesim.model.spans import PLACEHOLDER_OF, THINKING, Span
from prunesim.policies.base import Action, Clear, Policy, Preset, Restore, WindowView, resolve_table

CLEARED_OUTPUT = PLACEHOLDER_OF + "tool_output"
CLEARED_INPUT = PLACEHOLDER_OF + "tool_call"


@dataclass
class ClearToolUses:
    """``[clear_tool_uses]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["anthropic", "langchain"] = "anthropic"
    trigger: int | None = field(default=None, metadata=searched(0.1, 0.95, integer=True, per_window=True))
    keep: int | None = field(default=None, metadata=searched(0, 10, integer=True))
    clear_at_least: int | None = field(default=None, metadata=searched(0, 0.2, integer=True, per_window=True))
    semantics: Literal["anthropic", "langchain"] | None = None
    exclude_tools: list[str] = field(default_factory=list)
    clear_tool_inputs: bool | list[str] | None = None
    placeholder_tokens: int | None = None
    input_placeholder_tokens: int | None = None
    token_count_method: Literal["model", "approximate"] | None = None
    chars_per_token: float | None = None
    clear_thinking: int | None = None

    def check(self, key: str, where: str, scenario) -> None:
        for name in ("trigger", "keep", "clear_at_least", "placeholder_tokens", "input_placeholder_tokens",
                     "clear_thinking"):
            value = getattr(self, name)
            if value is not None:
                non_negative(value, f"{key}.{name}", where)
        if self.trigger is not None and self.trigger > scenario.window:
            raise UserError(where, f"{key}.trigger", f"{self.trigger} is above the window {scenario.window}")
        inputs = self.clear_tool_inputs if isinstance(self.clear_tool_inputs, list) else []
        for name, tools in (("exclude_tools", self.exclude_tools), ("clear_tool_inputs", inputs)):
            for i, tool in enumerate(tools):
                if not tool.strip():
                    raise UserError(where, f"{key}.{name}[{i}]", "empty tool name")
        if self.chars_per_token is not None and self.chars_per_token <= 0:
            raise UserError(where, f"{key}.chars_per_token", f"must be positive (got {self.chars_per_token})")


# Both sources document trigger 100,000, keep 3 and clear_at_least 0 (Anthropic: none). The placeholder
# is LangChain's "[cleared]" (4 tokens, o200k_base); Anthropic does not publish its placeholder text.
_SHARED = {"trigger": 100_000, "keep": 3, "clear_at_least": 0, "clear_tool_inputs": False,
           "placeholder_tokens": 4, "input_placeholder_tokens": 4, "token_count_method": "model",
           "chars_per_token": 4.0, "clear_thinking": 0}
PRESETS = {
    "anthropic": Preset("Anthropic context editing (clear_tool_uses_20250919): clears old tool results past 100k "
                        "tokens, keeps 3", {**_SHARED, "semantics": "anthropic"}),
    "langchain": Preset("LangChain v1 ClearToolUsesEdit: clears old tool results past 100k tokens, keeps 3",
                        {**_SHARED, "semantics": "langchain"}),
}


def is_tool_result(span: Span) -> bool:
    """A tool result, or the placeholder left for one."""
    return span.kind == "tool_output" or CLEARED_OUTPUT in span.tags


class ClearToolUsesPolicy(Policy):
    name = "clear-tool-uses"
    summary = "clears the oldest tool results past a token trigger, keeping the most recent (no model call)"
    tables = {"clear_tool_uses": ClearToolUses}
    reads = ("clear_tool_uses",)  # its own trigger, not the scenario's
    roles = {"threshold": "clear_tool_uses.trigger"}
    presets = PRESETS
    edits_every_call = True  # the runtime edits the prompt before every model call

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        self.params = self.resolved(scenario)
        self.excluded = frozenset(self.params.exclude_tools)
        # Tokens each span this policy cleared took out of the window (its size less its placeholder's), by
        # span id, while the span's placeholder is still there: the full history is utilization + their sum.
        self.gains: dict[int, int] = {}
        # Cleared spans whose placeholder stays in the window (all but 0-token placeholders of spans
        # without a call number, which the window does not hold): when it leaves, what it freed is forgotten.
        self.followed: set[int] = set()

    @classmethod
    def resolved(cls, scenario) -> ClearToolUses:
        table = scenario.clear_tool_uses
        return resolve_table(table, cls.presets, cls.preset or table.preset)

    def acting_trigger(self) -> int:
        return self.params.trigger

    @classmethod
    def notes(cls, scenario, tools=None) -> list[str]:
        p = cls.resolved(scenario)
        out = []
        if p.trigger >= scenario.window:
            out.append(f"{cls.name}: clear_tool_uses.trigger {p.trigger:,} is not below the window "
                       f"{scenario.window:,}: it never clears")
        if tools is not None:
            unused = [t for t in p.exclude_tools if t not in tools]
            if unused:
                out.append(f"{cls.name}: clear_tool_uses.exclude_tools names {', '.join(map(repr, unused))}, "
                           f"which no transcript uses (tools seen: {', '.join(sorted(tools)) or 'none'})")
        return out

    def decide(self, view: WindowView) -> list[Action]:
        p = self.params
        results: list[Span] = []
        placed: dict[int, Span] = {}  # span this policy cleared -> its placeholder in the window
        for s in view.spans:
            if s.kind == "tool_output" or CLEARED_OUTPUT in s.tags:
                results.append(s)
            if s.kind == "placeholder" and s.names and s.names[0] in self.gains:
                placed[s.names[0]] = s
        self._follow_drops(placed)
        thinking = self._old_thinking(view) if p.clear_thinking else []
        # Anthropic applies clear_thinking first: clear_tool_uses sees the history without that thinking.
        history = self._history_tokens(view) - sum(s.tokens for s in thinking)
        cleared = [Clear(tuple(s.id for s in thinking), (0,) * len(thinking), reason="clear_thinking")] \
            if thinking else []
        if history <= p.trigger:
            # Both runtimes edit a copy of the full history: below the trigger they send it whole.
            return cleared + self._restore(list(placed.values()))
        older = results[: max(0, len(results) - p.keep)]
        if p.semantics == "langchain":
            return cleared + self._langchain(view, older, placed)
        candidates = [s for s in older if s.kind == "tool_output" and not s.pinned and s.tool not in self.excluded]
        calls = self._calls(view, candidates) if p.clear_tool_inputs else {}
        chosen: list[Span] = []
        for span in candidates:
            chosen.append(span)
            call = calls.get(span.id)
            if call is not None and call.kind == "tool_call" and self._clears_input(call):
                chosen.append(call)
        gained = sum(s.tokens - self._placeholder(s) for s in chosen)
        if p.clear_at_least and gained < p.clear_at_least:
            return cleared  # not worth the cache it would invalidate: wait until more can be cleared at once
        return cleared + self._clear(view, chosen)

    def _old_thinking(self, view: WindowView) -> list[Span]:
        """Anthropic's ``clear_thinking_20251015``: the thinking blocks of all but the last ``clear_thinking``
        assistant turns that have thinking (they leave the window; no placeholder)."""
        thinking = [s for s in view.spans if s.kind == "reasoning" and THINKING in s.tags and not s.pinned]
        kept = sorted({s.turn for s in thinking})[-self.params.clear_thinking:]
        return [s for s in thinking if s.turn not in kept]

    def _langchain(self, view: WindowView, older: list[Span], placed: dict[int, Span]) -> list[Action]:
        """What LangChain's ``ClearToolUsesEdit`` clears on a fresh copy of the full history, oldest first:
        results whose call is in the call's message, not of an excluded tool, until ``clear_at_least`` is
        freed. Results (and inputs) cleared before and not in that set now are restored."""
        p = self.params
        calls = self._calls(view, older)
        wanted: list[Span] = []  # results and inputs in the set, as they are in the window
        freed = 0
        for s in older:
            if s.pinned or s.tool in self.excluded:
                continue
            call = calls.get(s.id)
            if s.call and call is None:
                continue  # LangChain finds no tool call for it in the message before it: it stays
            wanted.append(s)
            freed += self._full_size(s) - p.placeholder_tokens
            if call is not None and self._clears_input(call):
                wanted.append(call)
                freed += self._full_size(call) - p.input_placeholder_tokens
            if p.clear_at_least and freed >= p.clear_at_least:
                break
        keep_cleared = {s.names[0] for s in wanted if s.kind == "placeholder"}
        actions = self._restore([m for i, m in placed.items() if i not in keep_cleared])
        actions.extend(self._clear(view, [s for s in wanted if s.kind != "placeholder"]))
        return actions

    def _clear(self, view: WindowView, spans: list[Span]) -> list[Action]:
        if not spans:
            return []
        sizes = [self._placeholder(s) for s in spans]
        for s, size in zip(spans, sizes, strict=True):
            self.gains[s.id] = s.tokens - size
            if size > 0 or s.call:  # the window holds its placeholder (see Span.call)
                self.followed.add(s.id)
        return [Clear(tuple(s.id for s in spans), tuple(sizes), reason="clear_tool_uses")]

    def _restore(self, placeholders: list[Span]) -> list[Action]:
        if not placeholders:
            return []
        for m in placeholders:
            self.gains.pop(m.names[0], None)
            self.followed.discard(m.names[0])
        return [Restore(tuple(m.id for m in placeholders), reason="clear_tool_uses")]

    def _placeholder(self, span: Span) -> int:
        p = self.params
        return p.placeholder_tokens if span.kind == "tool_output" else p.input_placeholder_tokens

    def _full_size(self, span: Span) -> int:
        """A span's tokens in the full history: a placeholder's, those of the span it stands for."""
        if span.kind == "placeholder" and span.names:
            return span.tokens + self.gains.get(span.names[0], 0)
        return span.tokens

    def _follow_drops(self, placed) -> None:
        """Forget what was freed by clearing spans whose placeholder the runtime has since dropped.

        The runtime edits a copy of its full history, so what clearing frees is measured on the history
        as it is now: a span the replayed runtime dropped on its own (with its placeholder) frees nothing
        any more. A 0-token placeholder of a span without a call number is not held by the window and
        cannot be followed: its span counts as freed for good.
        """
        gone = [i for i in self.followed if i not in placed]
        for i in gone:
            self.gains.pop(i, None)
            self.followed.discard(i)

    def _history_tokens(self, view: WindowView) -> int:
        """The full history's size as the runtime counts it, to compare with the trigger."""
        p = self.params
        if p.token_count_method == "approximate":
            return approximate_tokens(view.spans, self.gains, p.chars_per_token)
        return view.utilization + sum(self.gains.values())

    def _clears_input(self, call: Span) -> bool:
        inputs = self.params.clear_tool_inputs
        return inputs is True or (isinstance(inputs, list) and call.tool in inputs)

    @staticmethod
    def _calls(view: WindowView, outputs: list[Span]) -> dict[int, Span]:
        """For each result (or its placeholder), the call that made it (or the call's placeholder).

        With a ``call`` number (the runtime's ``tool_call_id``, kept by the import): the call of that
        number in the same turn, as LangChain looks for it in the message before the result, so parallel
        calls answered in another order pair right. Without one (synthetic workloads): the latest
        uncleared call with the result's key before it.
        """
        wanted = {s.id for s in outputs}
        by_call = {s.call: s for s in view.spans
                   if s.call and not s.pinned and (s.kind == "tool_call" or CLEARED_INPUT in s.tags)}
        latest: dict[str, Span] = {}
        out: dict[int, Span] = {}
        for span in view.spans:
            if span.kind == "tool_call" and not span.call and span.key and not span.pinned:
                latest[span.key] = span
            elif span.id in wanted:
                if span.call:
                    call = by_call.get(span.call)
                    if call is not None and call.turn == span.turn:
                        out[span.id] = call
                elif span.key in latest:
                    out[span.id] = latest.pop(span.key)
        return out


def approximate_tokens(spans, gains: dict[int, int], chars_per_token: float) -> int:
    """LangChain's ``count_tokens_approximately`` on the full history, from span sizes.

    LangChain counts ``ceil(characters / 4) + 3`` per message and leaves the system message out (it is
    not among the request's messages). prunesim knows tokens, not characters: a span of ``t`` tokens
    is taken to hold ``t * chars_per_token`` characters, and each span to be one message. Cleared spans
    count at their size before clearing (the runtime counts its full history).
    """
    total = 0
    for s in spans:
        if s.kind == "system":
            continue
        tokens = s.tokens + (gains.get(s.names[0], 0) if s.kind == "placeholder" and s.names else 0)
        total += math.ceil(tokens * chars_per_token / 4) + 3
    return total
