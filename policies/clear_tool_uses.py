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
* ``placeholder_tokens``: the size of the placeholder left for each result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative
from prunesim.model.spans import PLACEHOLDER_OF, Span
from prunesim.policies.base import Action, Clear, Policy, Preset, WindowView, resolve_table

CLEARED_OUTPUT = PLACEHOLDER_OF + "tool_output"
CLEARED_INPUT = PLACEHOLDER_OF + "tool_call"


@dataclass
class ClearToolUses:
    """``[clear_tool_uses]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["anthropic", "langchain"] = "anthropic"
    trigger: int | None = None
    keep: int | None = None
    clear_at_least: int | None = None
    semantics: Literal["anthropic", "langchain"] | None = None
    exclude_tools: list[str] = field(default_factory=list)
    clear_tool_inputs: bool | None = None
    placeholder_tokens: int | None = None
    input_placeholder_tokens: int | None = None

    def check(self, key: str, where: str, scenario) -> None:
        for name in ("trigger", "keep", "clear_at_least", "placeholder_tokens", "input_placeholder_tokens"):
            value = getattr(self, name)
            if value is not None:
                non_negative(value, f"{key}.{name}", where)
        if self.trigger is not None and self.trigger > scenario.window:
            raise UserError(where, f"{key}.trigger", f"{self.trigger} is above the window {scenario.window}")
        for i, tool in enumerate(self.exclude_tools):
            if not tool.strip():
                raise UserError(where, f"{key}.exclude_tools[{i}]", "empty tool name")


# Both sources document trigger 100,000, keep 3 and clear_at_least 0 (Anthropic: none). The placeholder
# is LangChain's "[cleared]" (4 tokens, o200k_base); Anthropic does not publish its placeholder text.
_SHARED = {"trigger": 100_000, "keep": 3, "clear_at_least": 0, "clear_tool_inputs": False,
           "placeholder_tokens": 4, "input_placeholder_tokens": 4}
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

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        self.params = self.resolved(scenario)
        self.excluded = frozenset(self.params.exclude_tools)
        self.freed = 0  # tokens this policy took out of the window: full history = utilization + freed

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
        if view.utilization + self.freed <= p.trigger:
            return []
        results = [s for s in view.spans if is_tool_result(s)]
        older = results[: max(0, len(results) - p.keep)]
        candidates = [s for s in older if s.kind == "tool_output" and not s.pinned and s.tool not in self.excluded]
        if not candidates:
            return []
        calls = self._calls(view, candidates) if p.clear_tool_inputs else {}
        chosen: list[tuple[int, int]] = []  # (span id, placeholder tokens)
        gained = 0
        for span in candidates:
            if p.semantics == "langchain" and p.clear_at_least and self.freed + gained >= p.clear_at_least:
                break
            gained += span.tokens - p.placeholder_tokens
            chosen.append((span.id, p.placeholder_tokens))
            call = calls.get(span.id)
            if call is not None:
                gained += call.tokens - p.input_placeholder_tokens
                chosen.append((call.id, p.input_placeholder_tokens))
        if p.semantics == "anthropic" and p.clear_at_least and gained < p.clear_at_least:
            return []  # not worth the cache it would invalidate: wait until more can be cleared at once
        if not chosen:
            return []
        self.freed += gained
        return [Clear(tuple(i for i, _ in chosen), tuple(n for _, n in chosen), reason="clear_tool_uses")]

    @staticmethod
    def _calls(view: WindowView, outputs: list[Span]) -> dict[int, Span]:
        """For each output, the call that made it: the latest uncleared call with its key before it."""
        wanted = {s.id for s in outputs}
        latest: dict[str, Span] = {}
        out: dict[int, Span] = {}
        for span in view.spans:
            if span.kind == "tool_call" and span.key and not span.pinned:
                latest[span.key] = span
            elif span.id in wanted and span.key in latest:
                out[span.id] = latest.pop(span.key)
        return out
