"""memory-pressure: Letta's (formerly MemGPT's) queue manager.

Two thresholds, as fractions of the window:

* at ``warn_at`` (75%) the runtime can put a memory-pressure warning in the
  window (``send_warning``); the model then runs a self-edit pass with chance
  ``self_edit``, the same model-driven pass as ``naive``
  (:func:`prunesim.policies.decision.plan_pass`). One warning until the next
  eviction;
* at ``evict_at`` the runtime evicts the oldest messages and folds them, with the
  previous summary, into a new recursive summary written by a model call
  (:mod:`prunesim.policies.summary`, table ``[summary]``). It evicts
  ``evict_fraction`` of the messages (``evict_unit = "messages"``, Letta) or of
  their tokens (``"tokens"``, MemGPT), never the last ``keep_last``, and never
  splits a turn (Letta cuts at an assistant message). With ``evict_step`` > 0,
  while what would stay is above ``1 - evict_fraction`` of the window, it evicts
  ``evict_step`` more, as Letta's sliding window does.

A message is an unpinned span. Parameters: ``[memory_pressure]``; unset keys take
the preset's value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import fraction, non_negative, searched
from prunesim.model.spans import Span
from prunesim.policies.base import Action, Policy, Preset, Warn, WindowView, resolve_table
from prunesim.policies.decision import plan_pass
from prunesim.policies.summary import SummaryParams, SummaryWriter


@dataclass
class MemoryPressure:
    """``[memory_pressure]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["letta", "memgpt", "gemini-cli"] = "letta"
    send_warning: bool | None = None
    warn_at: float | None = None
    warning_tokens: int | None = None
    self_edit: float | None = None
    evict_at: float | None = field(default=None, metadata=searched(0.3, 0.95))
    evict_fraction: float | None = None
    evict_unit: Literal["messages", "tokens"] | None = None
    evict_step: float | None = None
    keep_last: int | None = None

    def check(self, key: str, where: str, scenario) -> None:
        for name in ("warn_at", "evict_at"):
            value = getattr(self, name)
            if value is not None:
                if value > 1:
                    raise UserError(where, f"{key}.{name}", f"{value} is above the window (a fraction of it: "
                                                            "at most 1)")
                if value <= 0:
                    raise UserError(where, f"{key}.{name}", f"must be positive (got {value})")
        for name in ("self_edit", "evict_fraction", "evict_step"):
            value = getattr(self, name)
            if value is not None:
                fraction(value, f"{key}.{name}", where)
        if self.evict_fraction is not None and self.evict_fraction == 0:
            raise UserError(where, f"{key}.evict_fraction", "must be positive (got 0)")
        for name in ("warning_tokens", "keep_last"):
            value = getattr(self, name)
            if value is not None:
                non_negative(value, f"{key}.{name}", where)


PRESETS = {
    # letta/settings.py SummarizerSettings: memory_warning_threshold 0.75, send_memory_warning_message False,
    # partial_evict_summarizer_percentage 0.30 ("of message count, not token count"); letta/constants.py
    # SUMMARIZATION_TRIGGER_MULTIPLIER 0.9; the sliding window evicts 10% more while the rest stays above 70%.
    "letta": Preset("Letta: at 90% of the window, the oldest 30% of messages folded into a recursive summary "
                    "(no warning by default)",
                    {"send_warning": False, "warn_at": 0.75, "warning_tokens": 91, "self_edit": 0.5,
                     "evict_at": 0.9, "evict_fraction": 0.3, "evict_unit": "messages", "evict_step": 0.1,
                     "keep_last": 0}),
    # MemGPT constants.py: MESSAGE_SUMMARY_WARNING_FRAC 0.75, MESSAGE_SUMMARY_TRUNC_TOKEN_FRAC 0.75,
    # MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST 3; it summarizes when the context overflows.
    "memgpt": Preset("MemGPT: a warning at 75% of the window; on overflow, 75% of the message tokens folded into "
                     "a recursive summary",
                     {"send_warning": True, "warn_at": 0.75, "warning_tokens": 33, "self_edit": 0.5,
                      "evict_at": 1.0, "evict_fraction": 0.75, "evict_unit": "tokens", "evict_step": 0.0,
                      "keep_last": 3}),
    # Gemini CLI 0.21 (packages/core/src/services/chatCompressionService.ts): DEFAULT_COMPRESSION_TOKEN_THRESHOLD
    # 0.5 of the model's token limit (model.compressionThreshold), COMPRESSION_PRESERVE_THRESHOLD 0.3: the oldest
    # 70% of the history (cut at a turn boundary) becomes one model-written state snapshot, the newest 30% stays.
    # This policy, not llm-summary, models it: llm-summary keeps a number of turns, this one a share of the
    # tokens, and folds the previous snapshot into the next as Gemini CLI does.
    "gemini-cli": Preset("Gemini CLI chat compression: at 50% of the window, the oldest 70% of the history "
                         "summarized into a snapshot, the newest 30% kept",
                         {"send_warning": False, "warn_at": 0.5, "warning_tokens": 0, "self_edit": 0.0,
                          "evict_at": 0.5, "evict_fraction": 0.7, "evict_unit": "tokens", "evict_step": 0.0,
                          "keep_last": 0}),
}


class MemoryPressurePolicy(Policy):
    name = "memory-pressure"
    model_driven = True
    summary = "a memory-pressure warning, then eviction of the oldest messages into a recursive summary"
    tables = {"memory_pressure": MemoryPressure, "summary": SummaryParams}
    reads = ("memory_pressure", "summary", "decision")  # its own thresholds, not the scenario's trigger
    roles = {"threshold": "memory_pressure.evict_at"}
    presets = PRESETS

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        table = scenario.memory_pressure
        self.params = resolve_table(table, self.presets, self.preset or table.preset)
        self.writer = SummaryWriter(scenario.summary, rng)
        self.warned = False

    def acting_trigger(self) -> int:
        p = self.params
        first = min(p.warn_at, p.evict_at) if p.send_warning else p.evict_at
        return int(first * self.scenario.window)

    def decide(self, view: WindowView) -> list[Action]:
        p = self.params
        if view.utilization >= p.evict_at * view.size:
            evicted = self.oldest(view)
            if not evicted:
                return []
            self.warned = False  # the next warning comes after this eviction
            return [self.writer.compact(view.turn, evicted, reason="memory_pressure")]
        if p.send_warning and not self.warned and view.utilization >= p.warn_at * view.size:
            self.warned = True
            actions: list[Action] = [Warn(p.warning_tokens, reason="memory_pressure")]
            if self.rng.random() < p.self_edit:  # the model answers the warning by pruning
                plan = plan_pass(view, self.scenario.decision, self.rng)
                if plan.selected:
                    actions.append(plan.as_pass())
            return actions
        return []

    def oldest(self, view: WindowView) -> list[Span]:
        """The messages to evict: the oldest share, to the end of a turn, the last ``keep_last`` spared."""
        p = self.params
        messages = [s for s in view.spans if not s.pinned]
        pinned = view.utilization - sum(s.tokens for s in messages)
        limit = max(0, len(messages) - p.keep_last)
        share = p.evict_fraction
        while True:
            cut = self._cut(messages, limit, share)
            kept_tokens = view.utilization - sum(s.tokens for s in messages[:cut])
            if p.evict_step <= 0 or share >= 1 or kept_tokens < (1 - p.evict_fraction) * view.size \
                    or kept_tokens <= pinned:
                return messages[:cut]
            share = min(1.0, share + p.evict_step)

    def _cut(self, messages: list[Span], limit: int, share: float) -> int:
        if self.params.evict_unit == "messages":
            cut = round(share * len(messages))
        else:
            goal = share * sum(s.tokens for s in messages)
            cut, total = 0, 0
            while cut < len(messages) and total < goal:
                total += messages[cut].tokens
                cut += 1
        cut = min(cut, limit)
        while 0 < cut < limit and messages[cut].turn == messages[cut - 1].turn:
            cut += 1  # never split a turn: its call and its output go together
        return min(cut, limit)
