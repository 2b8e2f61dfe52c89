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

**Deciding on estimates.** A runtime cannot know, before the model call, the
rationale the model will write nor what it will name: it knows the window, the
candidates it lists in the index (each one's size), and what its earlier passes
wrote and named. :class:`IndexEstimate` turns that into an expected *yield*
(tokens the pass will name for eviction): the expected number of selections
(``prior_selections``, the seed's ~3, then the running mean of what passes
named) times what the largest candidates of *this* index hold, scaled by the
learned ratio of what a pass named to what its that-many largest candidates
held (1 before the first pass: a model asked to free room names the largest
spans it judges stale; the ratio is at most 1 by construction). The yield thus
grows with the window the pass decides on, where a fixed number of tokens
would be outgrown by the index of a large window and refuse every pass, and a
gate that runs no pass learns nothing. :class:`PassEstimate` is the simpler
alternative: the running mean of yields from a fixed ``prior_yield``.

Feed the expected yield as the one stale size and the expected rationale as the
rationale: the checks above are then the seed's rule on what the runtime knows,
and a pass they let through may still turn out net-negative. What the gate then
guarantees is a bound, not a certainty: for a pass run with an estimated net
``mu > margin >= 0`` and an estimated spread ``s`` of its error, Cantelli's
inequality gives ``P(net <= 0) <= s^2 / (s^2 + mu^2)``
(:func:`net_negative_bound`; 1, no guarantee, before the first pass gives a
spread). It holds for the true mean and spread; with estimates it is an
approximation, which prunesim measures against the share of passes that did
turn out net-negative (docs/policies.md, "slack-gated").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

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


PRIOR_PASSES = 1.0  # the prior counts as one pass already seen: the first real pass moves the means halfway


@dataclass(slots=True)
class PassEstimate:
    """Running mean and spread of what a runtime's model-driven passes wrote and freed, with a prior.

    ``prior_yield`` and ``prior_rationale`` stand for :data:`PRIOR_PASSES` pass(es)
    already seen; :meth:`observe` adds one pass (the tokens it named for eviction,
    the rationale it wrote). Every sum is kept in the order the passes came, so
    that a copy of this arithmetic elsewhere (prunesim's compiled kernel) gives
    the same numbers to the last bit.
    """

    prior_yield: float
    prior_rationale: float
    n: float = field(init=False)
    sum_yield: float = field(init=False)
    sum_rationale: float = field(init=False)
    sum_yield_sq: float = field(init=False)
    sum_rationale_sq: float = field(init=False)
    sum_net: float = field(init=False)  # of yield - rationale
    sum_net_sq: float = field(init=False)

    def __post_init__(self) -> None:
        if self.prior_yield < 0 or self.prior_rationale < 0:
            raise ValueError("priors must not be negative")
        y, r = float(self.prior_yield), float(self.prior_rationale)
        self.n = PRIOR_PASSES
        self.sum_yield, self.sum_rationale = PRIOR_PASSES * y, PRIOR_PASSES * r
        self.sum_yield_sq, self.sum_rationale_sq = PRIOR_PASSES * (y * y), PRIOR_PASSES * (r * r)
        d = y - r
        self.sum_net, self.sum_net_sq = PRIOR_PASSES * d, PRIOR_PASSES * (d * d)

    def observe(self, yield_tokens: int, rationale_tokens: int) -> None:
        d = yield_tokens - rationale_tokens
        self.n += 1.0
        self.sum_yield += yield_tokens
        self.sum_rationale += rationale_tokens
        self.sum_yield_sq += yield_tokens * yield_tokens
        self.sum_rationale_sq += rationale_tokens * rationale_tokens
        self.sum_net += d
        self.sum_net_sq += d * d

    @property
    def expected_yield(self) -> float:
        return self.sum_yield / self.n

    @property
    def expected_rationale(self) -> float:
        return self.sum_rationale / self.n

    def _variance(self, total: float, squares: float) -> float:
        return sample_variance(self.n, total, squares)

    @property
    def net_variance(self) -> float:
        """The estimated variance of ``yield - rationale`` (infinite before a pass gives a spread)."""
        return self._variance(self.sum_net, self.sum_net_sq)

    def spreads(self) -> dict[str, float]:
        """Standard deviations of the yield, the rationale and their difference (``inf`` before any pass)."""
        return {"spread_yield": math.sqrt(self._variance(self.sum_yield, self.sum_yield_sq)),
                "spread_rationale": math.sqrt(self._variance(self.sum_rationale, self.sum_rationale_sq)),
                "spread_net": math.sqrt(self.net_variance)}


PRIOR_YIELD_RATIO = 1.0  # before any pass: the selections hold what as many of the largest candidates hold


@dataclass(frozen=True, slots=True)
class Forecast:
    """What :meth:`IndexEstimate.forecast` expects of a pass on one index (tokens, and spans for ``selections``).

    ``favoured`` is what the ``selections`` largest candidates hold (a fraction of the next one for a fractional
    count); ``expected_yield`` is ``ratio`` x ``favoured``; ``sizes`` are the candidates' sizes, largest first.
    """

    expected_yield: float
    expected_rationale: float
    selections: float
    ratio: float
    favoured: float
    held: int
    sizes: tuple[int, ...]

    def largest(self, count: int) -> int:
        """What the ``count`` largest candidates of this index hold."""
        return sum(self.sizes[:count])


@dataclass(slots=True)
class IndexEstimate:
    """Running estimates of a runtime's model-driven passes that read the candidate index of each pass.

    Before the call a runtime knows each candidate's size (it lists them in the index) but not which the model
    will name. It expects ``selections`` spans named (the mean count of earlier passes, from
    ``prior_selections``), holding ``ratio`` x what the that-many largest candidates of this index hold, where
    ``ratio`` is the mean over earlier passes of what a pass named over what its as-many largest candidates held
    (at most 1; :data:`PRIOR_YIELD_RATIO` before the first); and the mean rationale, from ``prior_rationale``.
    Each prior counts as :data:`PRIOR_PASSES` pass(es) already seen. The spread is that of each pass's error,
    ``(yield - rationale)`` minus what the forecast expected of it, the prior's error 0. Sums are kept in the
    order the passes came, so that a copy of this arithmetic (prunesim's compiled kernel) gives the same numbers
    to the last bit.
    """

    prior_selections: float
    prior_rationale: float
    n: float = field(init=False)
    sum_selections: float = field(init=False)
    sum_rationale: float = field(init=False)
    ratio_n: float = field(init=False)  # passes that named something (a ratio of nothing is not one), the prior's
    sum_ratio: float = field(init=False)
    sum_error: float = field(init=False)
    sum_error_sq: float = field(init=False)

    def __post_init__(self) -> None:
        if self.prior_selections < 0 or self.prior_rationale < 0:
            raise ValueError("priors must not be negative")
        self.n = self.ratio_n = PRIOR_PASSES
        self.sum_selections = PRIOR_PASSES * float(self.prior_selections)
        self.sum_rationale = PRIOR_PASSES * float(self.prior_rationale)
        self.sum_ratio = PRIOR_PASSES * PRIOR_YIELD_RATIO
        self.sum_error = self.sum_error_sq = 0.0

    def forecast(self, candidate_sizes: Iterable[int]) -> Forecast:
        """The expected yield and rationale of a pass over candidates of these sizes (see the class)."""
        sizes = tuple(sorted(candidate_sizes, reverse=True))
        if sizes and sizes[-1] < 0:
            raise ValueError(f"candidate sizes must not be negative (got {sizes[-1]})")
        k = self.sum_selections / self.n
        whole = int(k)
        favoured = float(sum(sizes[:whole]))
        if whole < len(sizes):
            favoured = favoured + (k - whole) * sizes[whole]
        ratio = self.sum_ratio / self.ratio_n
        return Forecast(ratio * favoured, self.expected_rationale, k, ratio, favoured, sum(sizes), sizes)

    def observe(self, forecast: Forecast, selections: int, yield_tokens: int, rationale_tokens: int) -> None:
        """Add the pass run on ``forecast``'s index: the spans it named, their tokens, the rationale it wrote."""
        error = (yield_tokens - rationale_tokens) - (forecast.expected_yield - forecast.expected_rationale)
        self.n += 1.0
        self.sum_selections += selections
        self.sum_rationale += rationale_tokens
        held = forecast.largest(selections)
        if held > 0:
            self.ratio_n += 1.0
            self.sum_ratio += yield_tokens / held
        self.sum_error += error
        self.sum_error_sq += error * error

    @property
    def expected_rationale(self) -> float:
        return self.sum_rationale / self.n

    @property
    def net_variance(self) -> float:
        """The estimated variance of a pass's error (infinite before a pass gives a spread)."""
        return sample_variance(self.n, self.sum_error, self.sum_error_sq)


def sample_variance(n: float, total: float, squares: float) -> float:
    """The sample variance of ``n`` values (counted with the prior) from their sum and sum of squares; infinite for
    one (pseudo-)pass, which gives no spread yet."""
    if n <= 1.0:
        return math.inf
    return max(0.0, (squares - total * total / n) / (n - 1.0))


def net_negative_bound(expected_net: float, net_variance: float) -> float:
    """Cantelli's bound on ``P(net <= 0)`` for a pass whose net has this mean and variance (1 when it says nothing).

    >>> net_negative_bound(300.0, 90000.0)
    0.5
    >>> net_negative_bound(300.0, math.inf), net_negative_bound(-5.0, 1.0)
    (1.0, 1.0)
    """
    if expected_net <= 0 or math.isinf(net_variance):
        return 1.0
    return net_variance / (net_variance + expected_net * expected_net)
