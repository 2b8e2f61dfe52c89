"""The model of a model-written summary, shared by ``llm-summary`` and ``memory-pressure``.

A compaction is one model call that reads the whole window and writes a summary
replacing many spans. What it costs is the engine's business (the window read is
billed, the summary written); what it *keeps* is drawn here, span by span: each
piece of content is carried by the summary with a probability that depends on its
kind, its size and its age. Content the summary does not carry is lost: the agent
cannot recall it, a later need for it is a re-retrieval, and a lost constraint
counts in ``lost_constraints``. Content an earlier summary carried is judged again
when that summary is itself summarized, so a summary of a summary loses more.

Nothing here is calibrated on a published figure except the summary's size: the
default mean is that of the three compaction summaries in the Claude Code session
logs under ``traces/claude-code-dev`` (2,429, 2,522 and 3,357 tokens with
``o200k_base``). The keep probabilities are assumptions, stated in
``docs/policies.md``; every one of them is a ``[summary]`` key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from prunesim.errors import UserError
from prunesim.model.scenario import fraction, non_negative
from prunesim.model.spans import SUMMARY_TAG, Span
from prunesim.policies.base import Compact

if TYPE_CHECKING:  # numpy only names a type here
    import numpy as np

# The compaction summaries recorded in the Claude Code sessions of traces/claude-code-dev (o200k_base tokens): the
# evidence for the default mean size, and for how uncertain it is (prunesim recommend draws it).
SEEN_SIZES = (2429, 2522, 3357)


@dataclass
class SummaryParams:
    """``[summary]``: how large a model-written summary is and what it keeps (see the module docstring)."""

    mean_tokens: float = 2800.0  # mean summary size (lognormal)
    sigma: float = 0.2  # lognormal spread of the size
    max_tokens: int = 20_000  # a summary is never longer (Claude Code reserves 20,000 output tokens for it)
    instruction_tokens: int = 95  # the summarization request read with the window (Codex's compact prompt)
    keep_constraint: float = 0.95  # chance that the summary carries a span of each kind ...
    keep_user: float = 0.9
    keep_tool_call: float = 0.8
    keep_tool_output: float = 0.5
    keep_reasoning: float = 0.3
    keep_other: float = 0.5  # summaries from elsewhere, placeholders, warnings, prune artifacts
    size_half: float = 2000.0  # ... times size_half / (size_half + tokens): big outputs keep only their gist (0: off)
    age_half_life: float = 0.0  # ... times 0.5 ** (age / age_half_life), age in turns (0: off)

    def check(self, key: str, where: str, scenario) -> None:
        if self.mean_tokens <= 0:
            raise UserError(where, f"{key}.mean_tokens", f"must be positive (got {self.mean_tokens})")
        for name in ("sigma", "max_tokens", "instruction_tokens", "size_half", "age_half_life"):
            non_negative(getattr(self, name), f"{key}.{name}", where)
        for name in ("keep_constraint", "keep_user", "keep_tool_call", "keep_tool_output", "keep_reasoning",
                     "keep_other"):
            fraction(getattr(self, name), f"{key}.{name}", where)


class Content(NamedTuple):
    """What a policy remembers of a span a summary carries (the span itself has left the window)."""

    id: int
    kind: str
    tokens: int
    turn: int
    constraint: bool


def content_of(span: Span) -> Content:
    return Content(span.id, span.kind, span.tokens, span.turn, span.is_constraint)


def keep_probability(c: Content, turn: int, p: SummaryParams) -> float:
    """The chance that a summary written at ``turn`` carries ``c``."""
    if c.constraint:
        base = p.keep_constraint
    else:
        base = {"user": p.keep_user, "tool_call": p.keep_tool_call, "tool_output": p.keep_tool_output,
                "reasoning": p.keep_reasoning}.get(c.kind, p.keep_other)
    if p.size_half > 0:
        base *= p.size_half / (p.size_half + c.tokens)
    if p.age_half_life > 0:
        base *= 0.5 ** (max(0, turn - c.turn) / p.age_half_life)
    return base


class SummaryWriter:
    """Draws the compactions of one policy, and remembers the content its summaries carry."""

    def __init__(self, params: SummaryParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.carried: dict[int, Content] = {}  # content id -> what it was, for the content a summary carries
        self._mu = math.log(params.mean_tokens) - params.sigma**2 / 2  # a lognormal whose mean is mean_tokens

    def compact(self, turn: int, replaced: list[Span], reason: str) -> Compact:
        """The compaction replacing ``replaced`` (in window order) at ``turn``: its size and what it carries.

        One uniform draw per piece of content judged (in window order, an earlier summary's content in
        the order it carried it), then one for the size: the stream advances the same way whatever is kept.
        """
        p = self.params
        judged: list[Content] = []
        for span in replaced:
            if SUMMARY_TAG in span.tags:
                judged.extend(self.carried.pop(i) for i in span.names if i in self.carried)
            else:
                judged.append(content_of(span))
        draws = self.rng.random(len(judged)).tolist()
        carried = []
        for content, u in zip(judged, draws, strict=True):
            if u < keep_probability(content, turn, p):
                carried.append(content.id)
                self.carried[content.id] = content
        replaced_tokens = sum(s.tokens for s in replaced)
        size = float(self.rng.lognormal(self._mu, p.sigma)) if p.sigma > 0 else p.mean_tokens
        tokens = max(1, min(int(round(size)), p.max_tokens, replaced_tokens))
        return Compact(
            span_ids=tuple(s.id for s in replaced),
            summary_tokens=tokens,
            carried=tuple(carried),
            instruction_tokens=p.instruction_tokens,
            reason=reason,
        )
