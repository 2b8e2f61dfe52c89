"""The cost model of a model-driven prune pass, shared by every model-driven policy.

The model reads an *index* of the candidate spans (its size grows with their
number), judges which are stale (correctly with probability
``selection_quality``), selects the largest spans it judged stale, and writes a
*rationale* whose size grows with the number selected. Nothing here knows any
published figure: index, rationale and net reclamation come out of the window's
contents at the moment of the pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

from prunesim.model.spans import Span
from prunesim.policies.base import ModelPass, WindowView

if TYPE_CHECKING:  # numpy only names a type here
    import numpy as np

_tokens = attrgetter("tokens")
_id = attrgetter("id")


@dataclass(slots=True)
class Plan:
    """What a model-driven pass would do, before anyone decides whether to run it."""

    candidates: list[Span]
    selected: list[Span]
    index_tokens: int
    rationale_base: int
    rationale_per_span: list[int]

    @property
    def selected_tokens(self) -> int:
        return sum(s.tokens for s in self.selected)

    @property
    def rationale_tokens(self) -> int:
        return self.rationale_base + sum(self.rationale_per_span)

    @property
    def overhead(self) -> int:
        return self.index_tokens + self.rationale_tokens

    def as_pass(self, **options) -> ModelPass:
        # selected, index_tokens, rationale_base, rationale_per_span, candidates: by position, as a keyword call
        # costs 322 ns against 120 (docs/performance.md), on most turns of a model-driven policy
        return ModelPass(tuple(map(_id, self.selected)), self.index_tokens, self.rationale_base,
                         tuple(self.rationale_per_span), len(self.candidates), **options)


def plan_pass(
    view: WindowView,
    params,
    rng: np.random.Generator,
    protected: frozenset[int] = frozenset(),
) -> Plan:
    """Draw the plan a model-driven pass makes on ``view`` (``params`` is the scenario's ``decision``)."""
    turn = view.turn
    # Candidates: prunable, unpinned, not a constraint, and older than the protected turns; prune
    # artifacts of earlier passes at once (the self-eligibility the decision-in-band failure feeds on).
    cutoff = turn - params.protect_recent_turns
    spans = view.spans if view.unpinned is None else view.unpinned  # offerable spans are unpinned
    candidates = [s for s in spans if s.offerable and (s.turn <= cutoff or s.artifact)]
    if protected:
        candidates = [s for s in candidates if s.id not in protected]
    n = len(candidates)
    index_tokens = round(params.index_base + params.index_per_candidate * n)
    # The model's staleness judgement, right with probability `selection_quality`.
    quality = params.selection_quality
    draws = rng.random(n).tolist()
    judged = [s for s, u in zip(candidates, draws, strict=True) if (u < quality) == (turn >= s.stale_at)]
    # It frees the most by naming the largest spans it believes stale; ties go to the oldest
    # (a reverse sort is stable too).
    judged.sort(key=_tokens, reverse=True)
    if params.reclaim_target > 0:
        # It names spans until they add up to what it was asked to free (or it runs out).
        selected = []
        total = 0
        for span in judged:
            if total >= params.reclaim_target or len(selected) >= params.select_max:
                break
            selected.append(span)
            total += span.tokens
    else:
        # It names a number of spans drawn around `select_mean`.
        extra_max = max(0, params.select_max - 1)
        p = 0.0 if extra_max == 0 else min(1.0, max(0.0, (params.select_mean - 1) / extra_max))
        want = 1 + int(rng.binomial(extra_max, p)) if extra_max else 1
        selected = judged[:want]
    noise = rng.lognormal(0.0, params.rationale_sigma, len(selected)).tolist() if selected else []
    per_token = params.rationale_per_span
    per_span = [max(1, round(per_token * x)) for x in noise]  # (round of a float is an int)
    return Plan(candidates, selected, index_tokens, int(params.rationale_base), per_span)
