"""llm-summary: auto-compaction as Codex and Claude Code do it, and OpenHands' ``LLMSummarizingCondenser``.

At a threshold, one model call reads the whole window (billed as a decision, with
its latency) and writes a summary of drawn size; the summary replaces everything
except pinned spans and the last ``keep_turns`` turns, earlier summaries included
(a summary of a summary). What the summary keeps is drawn span by span
(:mod:`prunesim.policies.summary`, table ``[summary]``): content it drops cannot
be recalled, and a dropped constraint counts in ``lost_constraints``.

Parameters (``[llm_summary]``; unset keys take the preset's value):

* ``threshold`` with its ``unit`` (a threshold alone is in the preset's unit):  ``"window"`` a fraction of
  the window, ``"tokens"`` a token count, ``"turns"`` the number of turns whose
  spans are in the window and not yet summarized;
* ``keep_turns``: the last turns kept whole.

With ``unit = "turn_batches"`` the policy is SWE-agent's ``SummarizeEveryNTurns`` as The
Complexity Trap ran it (N = ``threshold``, M = ``keep_turns``): once ``threshold +
keep_turns`` turns are unsummarized, the oldest ``threshold`` of them (with the previous
summary) are replaced by a new summary, so a summary comes every ``threshold`` turns and
the last ``keep_turns`` stay whole.

With ``unit = "events"`` the policy is openhands-sdk's ``LLMSummarizingCondenser``
(:mod:`prunesim.policies.sdk_condenser`), consulted again when the replayed runtime
drops content before a call, as the SDK condenses before every call: ``threshold``
is its ``max_size`` in events, and ``keep_first``, ``minimum_progress`` and
``max_tokens_of_window`` (its ``max_tokens``, as a share of the window: 1 is the
agent LLM's input limit, which the SDK takes when ``max_tokens`` is unset; 0 is no
token trigger) are read. It forgets a pinned task beyond ``keep_first`` as the SDK
does (docs/policies.md says why, and what else stays).

Otherwise a compaction is skipped when nothing but earlier summaries would be replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import fraction, non_negative, searched
from prunesim.model.spans import SUMMARY_TAG
from prunesim.policies.base import Action, Policy, Preset, WindowView, resolve_table
from prunesim.policies.sdk_condenser import Replies, sdk_condensation
from prunesim.policies.summary import SummaryParams, SummaryWriter


@dataclass
class LlmSummary:
    """``[llm_summary]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["codex", "claude-code", "claude-code-1m", "claude-code-2.0", "openhands", "openhands-sdk",
                    "openhands-sdk-class", "complexity-trap"] = "codex"
    threshold: float | None = field(default=None, metadata=searched(0, 0, by_unit={
        "window": searched(0.2, 0.95), "tokens": searched(0.2, 0.95, integer=True, per_window=True),
        "turns": searched(10, 150, integer=True), "events": searched(20, 400, integer=True),
        "turn_batches": searched(5, 60, integer=True)}))
    unit: Literal["window", "tokens", "turns", "events", "turn_batches"] | None = None
    keep_turns: int | None = field(default=None, metadata=searched(0, 30, integer=True))
    keep_first: int | None = None
    minimum_progress: float | None = None
    max_tokens_of_window: float | None = None

    def check(self, key: str, where: str, scenario) -> None:
        # A threshold alone takes the unit of the preset in play (checked when the policy is built); a unit alone
        # would give the preset's number another meaning.
        if self.unit is not None and self.threshold is None:
            raise UserError(where, f"{key}.unit",
                            "set a threshold with its unit (window, tokens, turns, events or turn_batches)")
        if self.threshold is not None and self.unit is not None:
            check_threshold(self.threshold, self.unit, f"{key}.threshold", where, scenario.window)
        elif self.threshold is not None and self.threshold <= 0:
            raise UserError(where, f"{key}.threshold", f"must be positive (got {self.threshold})")
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
    if unit in ("turns", "events", "turn_batches") and not float(value).is_integer():
        raise UserError(where, key, f"must be a whole number of {unit} (got {value})")


PRESETS = {
    # Codex CLI, codex-rs protocol/src/openai_models.rs: auto_compact_token_limit defaults to 90% of the context
    # window (the release it was read at is not recorded; unchanged from the 0.34 rollouts in traces/codex);
    # the compacted history keeps the user messages (here: the pinned task) and the summary.
    "codex": Preset("Codex CLI auto-compaction at 90% of the window; the summary replaces the whole history",
                    {"threshold": 0.9, "unit": "window", "keep_turns": 0}),
    # Claude Code 2.1 (2.1.19's binary): auto-compact at the effective window less a 13,000-token buffer, the
    # effective window being the context window less min(max output, 20,000) kept for the summary: 200,000 -
    # 20,000 - 13,000 = 167,000 (83.5%); on a 1M window 967,000 (96.7%). A share of the window cannot follow a
    # fixed buffer on every window: one preset per window size.
    "claude-code": Preset("Claude Code 2.1 auto-compact at 167k of a 200k window (83.5%: the window less 20k "
                          "for the summary and a 13k buffer); the summary replaces the whole history",
                          {"threshold": 0.835, "unit": "window", "keep_turns": 0}),
    "claude-code-1m": Preset("Claude Code 2.1 auto-compact on a 1M window: at 967k (96.7%); the summary replaces "
                             "the whole history", {"threshold": 0.967, "unit": "window", "keep_turns": 0}),
    # Claude Code 2.0 (2.0.30's /context: a 45.0k autocompact buffer, 22.5%): still run where not upgraded.
    "claude-code-2.0": Preset("Claude Code 2.0 auto-compact at 155k of a 200k window (77.5%, a 45k buffer); the "
                              "summary replaces the whole history", {"threshold": 0.775, "unit": "window",
                                                                     "keep_turns": 0}),
    # The legacy OpenHands condenser (openhands/core/config/condenser_config.py, LLMSummarizingCondenserConfig):
    # max_size=100 events, keep_first=1. Past 100 events it keeps the first and the last
    # max_size // 2 - keep_first - 1 = 48; at two events a turn (action, observation): past 50 turns, keep the
    # last 24. The first event (the task) is pinned in prunesim.
    "openhands": Preset("OpenHands LLMSummarizingCondenser (max_size 100 events, keep_first 1): past 50 turns, "
                        "summarize all but the last 24", {"threshold": 50, "unit": "turns", "keep_turns": 24}),
    # openhands-sdk 1.58.2, the current release (openhands/sdk/context/condenser/llm_summarizing_condenser.py):
    # the class defaults to max_size=240, keep_first=2, minimum_progress=0.1, max_tokens unset (the agent LLM's
    # effective input limit; set, the smaller of the two); default_condenser() in the same file sets
    # max_size=80, keep_first=4 (_DEFAULT_MAX_SIZE, _DEFAULT_KEEP_FIRST), and the default agent uses it
    # (openhands-tools 1.58.2, openhands/tools/preset/default.py, get_default_condenser).
    "openhands-sdk": Preset("openhands-sdk 1.58.2 default agent's LLMSummarizingCondenser: past 80 events keep the "
                            "first 4 and the last 35, summarize the rest",
                            {"threshold": 80, "unit": "events", "keep_turns": 0, "keep_first": 4,
                             "minimum_progress": 0.1, "max_tokens_of_window": 1.0}),
    "openhands-sdk-class": Preset("openhands-sdk 1.58.2 LLMSummarizingCondenser class defaults: past 240 events keep "
                                  "the first 2 and the last 117, summarize the rest",
                                  {"threshold": 240, "unit": "events", "keep_turns": 0, "keep_first": 2,
                                   "minimum_progress": 0.1, "max_tokens_of_window": 1.0}),
    # The Complexity Trap (arXiv 2508.21433), SWE-agent's summarize_every_n_turns with n: 21, keep_last_m_turns: 10
    # (sweagent/agent/history_processors.py, SummarizeEveryNTurns): summaries fire at n + m unsummarized turns.
    "complexity-trap": Preset("The Complexity Trap's LLM-Summary (N=21, M=10): every 21 turns the turns before the "
                              "last 10 are summarized", {"threshold": 21, "unit": "turn_batches", "keep_turns": 10}),
}


class LlmSummaryPolicy(Policy):
    name = "llm-summary"
    model_driven = True
    summary = "at a threshold a model call reads the window and a summary replaces all but the last turns"
    tables = {"llm_summary": LlmSummary, "summary": SummaryParams}
    reads = ("llm_summary", "summary")  # its own threshold, not the scenario's trigger
    roles = {"threshold": "llm_summary.threshold"}
    presets = PRESETS

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A preset by events is openhands-sdk's condenser, which runs before every model call: asked again after
        # the replayed runtime's own drops (set on the class, which a composition of policies reads).
        if cls.preset and cls.presets[cls.preset].values.get("unit") == "events":
            cls.edits_every_call = True

    @classmethod
    def check_settings(cls, scenario, where: str) -> None:
        table = scenario.tables.get("llm_summary") or LlmSummary()
        p = resolve_table(table, cls.presets, cls.preset or table.preset)
        if table.unit is None and table.threshold is not None:  # a threshold in the preset's unit
            check_threshold(p.threshold, p.unit, "llm_summary.threshold", f"{where} (a threshold in {p.unit}, "
                            f"the unit of its preset {p.preset})", scenario.window)
        if p.unit == "events" and int(p.threshold) // 2 - (p.keep_first or 0) - 1 <= 0:
            # openhands-sdk refuses it too: no event would be left to keep from the tail
            raise UserError(where, "llm_summary.keep_first", f"{p.keep_first or 0} leaves no room: it must be "
                            f"below threshold // 2 - 1 (threshold {p.threshold:g} events)")

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        table = scenario.llm_summary
        self.params = resolve_table(table, self.presets, self.preset or table.preset)
        self.writer = SummaryWriter(scenario.summary, rng)
        # The SDK condenses before every model call: after the replayed runtime's own drops too (the preset
        # variants say so on their class, for the policy reading its table's unit here).
        self.edits_every_call = self.params.unit == "events"
        self.replies = Replies()  # the SDK's reading of the window, as far as it must be remembered

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
            replaced = sdk_condensation(view, int(p.threshold), p.keep_first or 0, p.minimum_progress or 0.0, limit,
                                        self.replies)
            if not replaced:  # (an earlier summary alone is summarized again, as the SDK does)
                return []
            return [self.writer.compact(view.turn, replaced, reason="condensation")]
        if p.unit == "turn_batches":
            return self.batch(view)
        if not self.due(view):
            return []
        last_kept = view.turn - self.params.keep_turns  # spans of later turns stay whole
        replaced = [s for s in view.spans if not s.pinned and (SUMMARY_TAG in s.tags or s.turn <= last_kept)]
        if all(SUMMARY_TAG in s.tags for s in replaced):
            return []  # nothing new to fold in
        return [self.writer.compact(view.turn, replaced, reason="auto_compact")]

    def batch(self, view: WindowView) -> list[Action]:
        """The oldest ``threshold`` unsummarized turns and the previous summary, once ``keep_turns`` more follow."""
        p = self.params
        turns = sorted({s.turn for s in view.spans if not s.pinned and SUMMARY_TAG not in s.tags})
        n = int(p.threshold)
        if len(turns) < n + p.keep_turns:
            return []
        last = turns[n - 1]
        replaced = [s for s in view.spans if not s.pinned and (SUMMARY_TAG in s.tags or s.turn <= last)]
        return [self.writer.compact(view.turn, replaced, reason="auto_compact")]
