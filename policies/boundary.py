"""The decision boundary of a model-driven prune pass, as a pure function.

This module imports nothing but the standard library, so an agent runtime can
import (or copy) it without the simulator. Call :func:`evaluate_boundary` just
before a model-driven prune pass; run the pass only when ``.run`` is true, and
otherwise take a non-model eviction (it costs no decision tokens).

The checks, in order (the first that fails gives the reason):

* ``headroom = budget - utilization``; ``"over_budget"`` when ``headroom < 0``;
* ``overhead = index_size + expected_rationale_size``; ``"decision_in_band"``
  when ``headroom < overhead`` (no slack to decide: the pass would be written
  into room it does not have);
* ``reclaimable = sum(stale_candidate_sizes) - overhead`` and
  ``margin = margin_factor * expected_rationale_size``; ``"insufficient_net"``
  when ``reclaimable <= margin`` (nothing worth pruning: the pass would not pay
  for itself by more than the margin);
* otherwise ``"run"``.

``"decision_in_band"`` and ``"insufficient_net"`` are different states that
call for different actions, even though utilization alone cannot tell them
apart: the first says *deciding* is unaffordable now, the second that there is
too little *to decide about*.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

RUN = "run"
OVER_BUDGET = "over_budget"
DECISION_IN_BAND = "decision_in_band"
INSUFFICIENT_NET = "insufficient_net"
REASONS = (RUN, OVER_BUDGET, DECISION_IN_BAND, INSUFFICIENT_NET)


@dataclass(frozen=True, slots=True)
class BoundaryDecision:
    """The gate's answer and the numbers that decided it (all in tokens)."""

    run: bool
    reason: str
    headroom: float
    overhead: float
    reclaimable: float
    margin: float

    def as_dict(self) -> dict:
        return asdict(self)


def evaluate_boundary(
    utilization: float,
    budget: float,
    stale_candidate_sizes: Iterable[float],
    index_size: float,
    expected_rationale_size: float,
    margin_factor: float = 1.5,
) -> BoundaryDecision:
    """Whether a model-driven prune pass is worth running now, and why (see the module docstring).

    ``stale_candidate_sizes`` are the sizes of the spans the pass would evict;
    ``index_size`` what the model must read to decide, ``expected_rationale_size``
    what it would write. Every number is computed whatever the outcome, so a
    refusal can be logged with the figures behind it. Negative sizes or a
    negative ``margin_factor`` raise :class:`ValueError`.
    """
    sizes = list(stale_candidate_sizes)
    if any(s < 0 for s in sizes):
        raise ValueError(f"stale_candidate_sizes must not be negative (got {min(sizes)})")
    for name, value in (("index_size", index_size), ("expected_rationale_size", expected_rationale_size),
                        ("margin_factor", margin_factor)):
        if value < 0:
            raise ValueError(f"{name} must not be negative (got {value})")
    headroom = budget - utilization
    overhead = index_size + expected_rationale_size
    reclaimable = sum(sizes) - overhead
    margin = margin_factor * expected_rationale_size
    if headroom < 0:
        reason = OVER_BUDGET
    elif headroom < overhead:
        reason = DECISION_IN_BAND
    elif reclaimable <= margin:
        reason = INSUFFICIENT_NET
    else:
        reason = RUN
    return BoundaryDecision(reason == RUN, reason, headroom, overhead, reclaimable, margin)
