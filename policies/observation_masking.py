"""observation-masking: SWE-agent's ``LastNObservations`` history processor.

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

Parameters (``[observation_masking]``; unset keys take the preset's value): ``n``,
``polling``, ``placeholder_tokens``, ``always_remove_output_for_tags``,
``always_keep_output_for_tags``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prunesim.errors import UserError
from prunesim.model.scenario import non_negative, searched
from prunesim.model.spans import PLACEHOLDER_OF
from prunesim.policies.base import Action, Clear, Policy, Preset, WindowView, resolve_table

MASKED_OUTPUT = PLACEHOLDER_OF + "tool_output"


@dataclass
class ObservationMasking:
    """``[observation_masking]``: see the module docstring. ``None``: the preset's value."""

    preset: Literal["swe-agent", "complexity-trap"] = "swe-agent"
    n: int | None = field(default=None, metadata=searched(1, 30, integer=True))
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
                        {"n": 5, "polling": 1, "placeholder_tokens": 9, **_TAGS}),
    "complexity-trap": Preset("The Complexity Trap's observation masking, n=10 (its N=1_M=10 config)",
                              {"n": 10, "polling": 1, "placeholder_tokens": 9, **_TAGS}),
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
