"""A run's per-call token stream, kept once and priced again under other cache and price assumptions.

What a run bills is a sum over its model calls (:mod:`prunesim.observe.metrics.cost`):
each call's prompt split into tokens read from the provider's cache, written to
it and billed in full, and its output, each at its price. What a policy removed
and when, and so what each prompt held and what the cache could serve, is fixed
by the run. Three assumptions only scale it:

* ``pricing.reuse``: the share of the readable prefix a call is billed as read
  (``read = round(reuse x readable)``);
* whether the provider caches at all (``pricing.cache = "none"`` bills every
  prompt token in full);
* the model's prices, for the same cache behaviour.

So a run replayed once with ``reuse = 1`` keeps, per call, its prompt, its
readable prefix (what it read at ``reuse = 1``), its cacheable tokens and its
output (:class:`Stream`), and :func:`dollars` prices it for any number of such
draws at once, with numpy, with the cost observer's arithmetic in its order: a
call's cost ``read x r_read + write x r_write + uncached x r_input + output x
r_output``, summed call after call. The dollars are the ones a replay under
those assumptions bills, to the last bit (tests/test_reprice.py replays and
compares). Anything that changes what the policy or the agent does (a
threshold, the summary's size, the re-fetch probability) is not priced here:
it is simulated again (docs/performance.md, "recommend and tune").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from prunesim.model.scenario import Pricing, Scenario

_PER_TOKEN = 1e-6  # prices are per million tokens (as the cost observer reads them)


@dataclass(frozen=True)
class Stream:
    """One run's model calls, in order: prompt, readable prefix at ``reuse = 1``, cacheable tokens, output."""

    prompt: np.ndarray
    readable: np.ndarray
    cacheable: np.ndarray
    output: np.ndarray

    @property
    def calls(self) -> int:
        return len(self.prompt)


def at_full_reuse(scenario: Scenario) -> Scenario:
    """``scenario`` billing every readable token as read: the run whose calls make a :class:`Stream`."""
    if scenario.pricing.reuse == 1.0:
        return scenario
    return dataclasses.replace(scenario, pricing=dataclasses.replace(scenario.pricing, reuse=1.0))


def stream_of(result) -> Stream:
    """The stream of a run recorded with a trace (its ``calls`` rows) under :func:`at_full_reuse` pricing."""
    if result.scenario.pricing.reuse != 1.0:
        raise ValueError("a stream is read from a run priced at reuse = 1 (at_full_reuse)")
    if not result.calls and result.summary.get("input_tokens_billed"):
        raise ValueError("the run kept no per-call rows: replay it with a trace (trace='turns')")
    rows = np.array([(r[5], r[6], r[7], r[9]) for r in result.calls], dtype=np.int64).reshape(-1, 4)
    prompt, read, write, output = rows.T
    # Kept as int32 (16 bytes a call: a recommendation holds every run's): a count fits, and widens exactly.
    return Stream(*(np.ascontiguousarray(x, dtype=np.int32) for x in (prompt, read, read + write, output)))


def rates(p: Pricing) -> tuple[float, float, float, float]:
    """USD per token read, written, billed in full and output, as the cost observer computes them."""
    return (p.cache_read * _PER_TOKEN, p.cache_write * _PER_TOKEN, p.input * _PER_TOKEN, p.output * _PER_TOKEN)


def call_costs(s: Stream, p: Pricing, reuse: np.ndarray, cached: np.ndarray) -> np.ndarray:
    """Each call's dollars under each draw: shape (draws, calls). ``reuse`` and ``cached`` (whether the provider
    caches at all) have one value per draw."""
    reuse = np.asarray(reuse, dtype=float).reshape(-1, 1)
    cached = np.asarray(cached, dtype=bool).reshape(-1)
    r_read, r_write, r_input, r_output = rates(p)
    read = np.where(reuse == 1.0, s.readable[None, :], np.rint(reuse * s.readable[None, :])).astype(np.int64)
    cost = read * r_read + (s.cacheable - read) * r_write + (s.prompt - s.cacheable) * r_input + s.output * r_output
    if not cached.all():
        # A provider that does not cache: every prompt token billed in full (0 x r_read + 0 x r_write adds 0.0).
        bare = s.prompt * r_input + s.output * r_output
        cost[~cached] = bare
    return cost


def dollars(s: Stream, p: Pricing, reuse, cached) -> np.ndarray:
    """The run's dollars under each draw (unrounded; the cost observer reports ``round(x, 9)``)."""
    reuse = np.asarray(reuse, dtype=float).reshape(-1)
    if s.calls == 0:
        return np.zeros(len(reuse))
    # cumsum adds call after call, as the observer's running total does; a pairwise sum would differ in the last bit.
    return np.cumsum(call_costs(s, p, reuse, cached), axis=1)[:, -1]


def pricing_of(p: Pricing, cached: bool) -> Pricing:
    """``p`` as priced by a draw: its own cache, or none (reuse is a separate argument of :func:`dollars`)."""
    return p if cached else dataclasses.replace(p, cache="none")
