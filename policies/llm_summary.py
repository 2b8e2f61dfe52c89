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

A compaction is skipped when nothing but earlier summaries would be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative
from prunesim.model.spans import SUMMARY_TAG
from prunesim.policies.base import Action, Policy, Preset, WindowView, resolve_table
from prunesim.policies.summary import SummaryParams, SummaryWriter


@dataclass
class LlmSummary:
    """``[llm_summary]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["codex", "claude-code", "openhands", "openhands-sdk"] = "codex"
    threshold: float | None = None
    unit: Literal["window", "tokens", "turns"] | None = None
    keep_turns: int | None = None

    def check(self, key: str, where: str, scenario) -> None:
        if (self.threshold is None) != (self.unit is None):
            raise UserError(where, f"{key}.threshold", "set threshold and unit together (window, tokens or turns)")
        if self.threshold is not None:
            check_threshold(self.threshold, self.unit, f"{key}.threshold", where, scenario.window)
        if self.keep_turns is not None:
            non_negative(self.keep_turns, f"{key}.keep_turns", where)


def check_threshold(value: float, unit: str, key: str, where: str, window: int) -> None:
    if value <= 0:
        raise UserError(where, key, f"must be positive (got {value})")
    if unit == "window" and value > 1:
        raise UserError(where, key, f"{value} is above the window (a fraction of it: at most 1)")
    if unit == "tokens" and value > window:
        raise UserError(where, key, f"{value:g} is above the window {window}")
    if unit == "turns" and not float(value).is_integer():
        raise UserError(where, key, f"must be a whole number of turns (got {value})")


PRESETS = {
    # codex-rs protocol/src/openai_models.rs: auto_compact_token_limit defaults to 90% of the context window;
    # the compacted history keeps the user messages (here: the pinned task) and the summary.
    "codex": Preset("Codex CLI auto-compaction at 90% of the window; the summary replaces the whole history",
                    {"threshold": 0.9, "unit": "window", "keep_turns": 0}),
    # Claude Code compacts at about 155k tokens of its 200k window (a 45k autocompact buffer).
    "claude-code": Preset("Claude Code auto-compact at 155k of a 200k window (77.5%); the summary replaces the "
                          "whole history", {"threshold": 0.775, "unit": "window", "keep_turns": 0}),
    # The legacy OpenHands condenser (openhands/core/config/condenser_config.py, LLMSummarizingCondenserConfig):
    # max_size=100 events, keep_first=1. Past 100 events it keeps the
    # first and the last max_size // 2 - keep_first - 1 = 48; at two events a turn (action, observation): past
    # 50 turns, keep the last 24. The first event (the task) is pinned in prunesim.
    # openhands-sdk 1.58.2 (openhands/sdk/context/condenser/llm_summarizing_condenser.py): the class defaults to
    # max_size=240, keep_first=2; default_condenser(), which the default agent (openhands-tools 1.58.2,
    # get_default_agent) uses, sets max_size=80, keep_first=4. Past max_size events it keeps the first keep_first
    # and the last max_size // 2 - keep_first - 1 = 35 events; at two events a turn: past 40 turns, keep 17.
    # Not modelled: keep_first counts the system-prompt event; a turn of parallel calls is more than two events;
    # the token trigger (max_tokens, the LLM's input limit by default), minimum_progress and batch snapping.
    "openhands-sdk": Preset("openhands-sdk 1.58.2 default agent's LLMSummarizingCondenser (max_size 80 events, "
                            "keep_first 4): past 40 turns, summarize all but the last 17",
                            {"threshold": 40, "unit": "turns", "keep_turns": 17}),
    "openhands": Preset("OpenHands LLMSummarizingCondenser (max_size 100 events, keep_first 1): past 50 turns, "
                        "summarize all but the last 24", {"threshold": 50, "unit": "turns", "keep_turns": 24}),
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
        self.params = resolve_table(table, self.presets, self.preset or table.preset)
        self.writer = SummaryWriter(scenario.summary, rng)

    def acting_trigger(self) -> int:
        p = self.params
        if p.unit == "window":
            return int(p.threshold * self.scenario.window)
        if p.unit == "tokens":
            return int(p.threshold)
        return self.scenario.trigger  # a turn count: no utilization threshold

    def due(self, view: WindowView) -> bool:
        p = self.params
        if p.unit == "window":
            return view.utilization >= p.threshold * view.size
        if p.unit == "tokens":
            return view.utilization >= p.threshold
        turns = {s.turn for s in view.spans if not s.pinned and SUMMARY_TAG not in s.tags}
        return len(turns) >= p.threshold

    def decide(self, view: WindowView) -> list[Action]:
        if not self.due(view):
            return []
        last_kept = view.turn - self.params.keep_turns  # spans of later turns stay whole
        replaced = [s for s in view.spans if not s.pinned and (SUMMARY_TAG in s.tags or s.turn <= last_kept)]
        if all(SUMMARY_TAG in s.tags for s in replaced):
            return []  # nothing new to fold in
        return [self.writer.compact(view.turn, replaced, reason="auto_compact")]
