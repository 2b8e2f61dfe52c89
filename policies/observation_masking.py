"""observation-masking: SWE-agent's ``LastNObservations``, and OpenHands' ``ObservationMaskingCondenser``.

The last ``n`` environment observations (tool outputs) stay whole; every older
one is replaced by a one-line placeholder, "Old environment output: (K lines
omitted)", whose size (``placeholder_tokens``) stays in the window. There is no
trigger and no model call: the processor runs before every model call. It is also
the masking baseline of The Complexity Trap (arXiv 2508.21433).

Like SWE-agent, the count of observations includes the instance template (the
task), which SWE-agent never elides and which prunesim pins at turn 0; and with
``polling`` > 1 the number of observations kept moves in steps of ``polling``
(between ``n`` and ``n + polling`` are kept), which changes the prompt less often.

Every observation counts, an empty one too (it stays in the window at 0 tokens, see
``Span.call``), and an elided empty one gets the placeholder, as SWE-agent elides it.
An observation whose span carries a tag of ``always_remove_output_for_tags`` is
elided even among the last ``n``, one with a tag of ``always_keep_output_for_tags``
is never elided unless it also carries a removing tag (SWE-agent's defaults:
``remove_output`` and ``keep_output``).

With ``unit = "events"`` it is OpenHands' ``ObservationMaskingCondenser`` (0.43, the
version The Complexity Trap ran): ``n`` is its ``attention_window``, counted in
*events* (actions and observations), so n = 10 keeps about 5 observations. An
observation followed by ``n`` events or more is masked (:func:`openhands_masked`).
OpenHands turns a masked observation into a ``<MASKED>`` user message with no
tool-call id, so the assistant message that made the call never finds its answer
and leaves the prompt with it: the step's reasoning, its calls and every output
of that model call go, and only the placeholder stays.

Parameters (``[observation_masking]``; unset keys take the preset's value): ``n``,
``unit``, ``polling``, ``placeholder_tokens``, ``always_remove_output_for_tags``,
``always_keep_output_for_tags`` (``polling`` and the tags are SWE-agent's: read with
``unit = "observations"`` only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative, searched
from prunesim.model.spans import PLACEHOLDER_OF, Span
from prunesim.policies.base import Action, Clear, Policy, Preset, WindowView, resolve_table

MASKED_OUTPUT = PLACEHOLDER_OF + "tool_output"


@dataclass
class ObservationMasking:
    """``[observation_masking]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["swe-agent", "complexity-trap", "openhands"] = "swe-agent"
    n: int | None = field(default=None, metadata=searched(1, 30, integer=True))
    unit: Literal["observations", "events"] | None = None
    polling: int | None = None
    placeholder_tokens: int | None = None
    always_remove_output_for_tags: list[str] | None = None
    always_keep_output_for_tags: list[str] | None = None

    def check(self, key: str, where: str, scenario) -> None:
        for name in ("n", "polling"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(where, f"{key}.{name}", f"must be at least 1 (got {value})")
        if self.placeholder_tokens is not None:
            non_negative(self.placeholder_tokens, f"{key}.placeholder_tokens", where)
        for name in ("always_remove_output_for_tags", "always_keep_output_for_tags"):
            for i, tag in enumerate(getattr(self, name) or ()):
                if not tag.strip():
                    raise UserError(where, f"{key}.{name}[{i}]", "empty tag")


# "Old environment output: (42 lines omitted)" is 9 tokens with o200k_base. The tags are LastNObservations'
# class defaults (sweagent/agent/history_processors.py).
_TAGS = {"always_remove_output_for_tags": ["remove_output"], "always_keep_output_for_tags": ["keep_output"]}
PRESETS = {
    "swe-agent": Preset("SWE-agent LastNObservations n=5 (its 0.7 config and original paper): older outputs masked",
                        {"n": 5, "unit": "observations", "polling": 1, "placeholder_tokens": 9, **_TAGS}),
    "complexity-trap": Preset("The Complexity Trap's observation masking, n=10 (its N=1_M=10 config)",
                              {"n": 10, "unit": "observations", "polling": 1, "placeholder_tokens": 9, **_TAGS}),
    # OpenHands 0.43 (openhands/memory/condenser/impl/observation_masking_condenser.py): attention_window M counts
    # events; The Complexity Trap ran M = 10 (also 29, 58, 86). "\n\n<MASKED>" (a user message after a user
    # message gets the blank line) is 5 tokens with o200k_base.
    "openhands": Preset("OpenHands ObservationMaskingCondenser, attention_window 10 events (The Complexity Trap's "
                        "M=10): about the last 5 observations stay, older steps leave but a <MASKED> line",
                        {"n": 10, "unit": "events", "polling": 1, "placeholder_tokens": 5,
                         "always_remove_output_for_tags": [], "always_keep_output_for_tags": []}),
}


class ObservationMaskingPolicy(Policy):
    name = "observation-masking"
    summary = "keeps the last n tool outputs whole and masks older ones with a one-line placeholder"
    tables = {"observation_masking": ObservationMasking}
    reads = ("observation_masking",)  # no threshold: it masks before every model call
    presets = PRESETS
    edits_every_call = True  # a history processor: it runs on the history before every model call

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        table = scenario.observation_masking
        self.params = resolve_table(table, self.presets, self.preset or table.preset)
        self.remove_tags = frozenset(self.params.always_remove_output_for_tags)
        self.keep_tags = frozenset(self.params.always_keep_output_for_tags)

    def acting_trigger(self) -> int:
        return 0  # it acts at every turn

    def decide(self, view: WindowView) -> list[Action]:
        p = self.params
        if p.unit == "events":
            return openhands_masking(view.spans, p.n, p.placeholder_tokens)
        observations = [s for s in view.spans
                        if (s.kind == "tool_output" and not s.pinned) or MASKED_OUTPUT in s.tags]
        # SWE-agent counts the instance template as the first observation and never elides it.
        total = len(observations) + 1
        last = max(0, (total // p.polling) * p.polling - p.n)
        older = max(0, last - 1)
        masked = [s.id for i, s in enumerate(observations) if s.kind == "tool_output"
                  and ((i < older and not s.tags & self.keep_tags) or s.tags & self.remove_tags)]
        if not masked:
            return []
        return [Clear(tuple(masked), (p.placeholder_tokens,) * len(masked), reason="observation_masking")]


# -- OpenHands' ObservationMaskingCondenser -------------------------------------------------
CALL_PLACEHOLDER = PLACEHOLDER_OF + "tool_call"
_NO_EVENT = frozenset({PLACEHOLDER_OF + "reasoning"})


def openhands_masked(spans, window: int) -> list[Span]:
    """The observations OpenHands' condenser masks: each one that ``window`` events or more follow.

    The window read as OpenHands' events, in order: the system prompt is one event, a tool call one
    (the action; its turn's reasoning is the action's thought, no event of its own), an output one
    (the observation), a user message, a summary or a warning one each. A call the window no longer
    holds (a masked step's action, gone from the prompt but still an event in OpenHands' history) is
    counted before its output. The condenser's rule, ``i < len(view) - window``, depends only on the
    events after an observation, so events the window never held at the start (OpenHands' recall
    action) change nothing.
    """
    with_calls = {s.turn for s in spans if s.kind in ("tool_call", "tool_output") or CALL_PLACEHOLDER in s.tags
                  or MASKED_OUTPUT in s.tags}
    position: list[tuple[int, Span]] = []  # (event index, observation)
    events = 0
    system = False
    calls: dict[int, int] = {}  # turn -> actions counted so far
    outputs: dict[int, int] = {}  # turn -> observations counted so far
    for s in spans:
        if s.kind == "system":
            events += not system
            system = True
        elif s.kind == "reasoning" or s.tags & _NO_EVENT:
            events += s.turn not in with_calls
        elif s.kind == "tool_call" or CALL_PLACEHOLDER in s.tags:
            calls[s.turn] = calls.get(s.turn, 0) + 1
            events += 1
        elif s.kind == "tool_output" or MASKED_OUTPUT in s.tags:
            outputs[s.turn] = outputs.get(s.turn, 0) + 1
            if outputs[s.turn] > calls.get(s.turn, 0):  # its action left the window: still an event
                calls[s.turn] = outputs[s.turn]
                events += 1
            if s.kind == "tool_output" and not s.pinned:
                position.append((events, s))
            events += 1
        else:
            events += 1
    return [s for i, s in position if i < events - window]


def openhands_masking(spans, window: int, placeholder_tokens: int) -> list[Action]:
    """Mask as OpenHands does (:func:`openhands_masked`): each masked observation becomes a placeholder, and
    the model call that made it leaves the prompt whole (reasoning, calls, its other outputs: no placeholder)."""
    masked = openhands_masked(spans, window)
    if not masked:
        return []
    ids = {s.id for s in masked}
    steps = {s.turn for s in masked}
    cleared = [s for s in spans if s.id in ids or (s.turn in steps and not s.pinned
                                                   and s.kind in ("reasoning", "tool_call", "tool_output"))]
    return [Clear(tuple(s.id for s in cleared), tuple(placeholder_tokens if s.id in ids else 0 for s in cleared),
                  reason="observation_masking")]
