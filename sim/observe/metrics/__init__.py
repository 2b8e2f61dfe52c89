"""Every metric prunesim reports, named and defined once.

Each concern is one module holding its definitions and the observer that
computes them from the engine's events, incrementally, so that a run of any
length needs no stored trace: :mod:`.window` (utilization, the band, content
lost to the ceiling), :mod:`.passes` (model-driven passes and oscillation),
:mod:`.gate` (gate decisions and fallbacks), :mod:`.eviction` (what every
policy removed and how much of it was still needed), :mod:`.provenance` (needs,
re-retrievals, constraints, the edit log), :mod:`.edits` (runtime context
edits: placeholders, summaries, warnings), :mod:`.reaction` (content a replayed
transcript's agent fetched again), :mod:`.outcome` (what the policy did to the
agent: its calls, redone work, the turn cap, success), :mod:`.cost` (what model calls
bill), :mod:`.transcript` (replays of real transcripts); :mod:`.verdict` computes the band
and the oscillation verdict again from a recorded trace and ledger.

:data:`METRICS` is the one table (name, unit, definition) that docs/metrics.md and
``prunesim metrics`` print. A new metric is one definition in its concern's
``DEFINITIONS`` and one handler in its observer.
"""

from __future__ import annotations

from functools import lru_cache

from . import cost, edits, eviction, gate, outcome, passes, provenance, reaction, transcript, window
from .definition import Metric
from .passes import OSC_BAND_PASSES, OSC_MIN_PASSES, is_oscillating, overhead_ratio

METRICS: tuple[Metric, ...] = (
    window.DEFINITIONS
    + passes.DEFINITIONS
    + gate.DEFINITIONS
    + eviction.DEFINITIONS
    + provenance.DEFINITIONS
    + edits.DEFINITIONS
    + reaction.DEFINITIONS
    + outcome.DEFINITIONS
    + cost.DEFINITIONS
    + transcript.DEFINITIONS
)

METRIC_NAMES = tuple(m.name for m in METRICS)
# Metrics whose value is a word, not a number (the agent's profile, its stop reason): kept as text in result files.
TEXT_METRICS = frozenset(m.name for m in METRICS if m.unit in ("name", "reason"))


def summarize(observers) -> dict[str, object]:
    """One run's summary from its observers' ``summary(so_far)`` parts, in the order of :data:`METRICS`.

    Observers are asked in order, each seeing what the earlier ones reported;
    keys no definition names (a study's own figures) follow, in the order given.
    """
    parts: dict[str, object] = {}
    for obs in observers:
        part = getattr(obs, "summary", None)
        if part is not None:
            parts.update(part(parts))
    for name in _out_of_order(tuple(parts)):  # moved to the end in order: the rest already stands in it
        parts[name] = parts.pop(name)
    return parts


@lru_cache(maxsize=256)
def _out_of_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys from the first one out of the summary's order on, in that order: :data:`METRICS`' names first,
    then the others as given. The observers give nearly all of theirs in order already, so moving these few
    costs less than building the summary again (the same observers give the same keys: a study's runs look
    them up)."""
    named = set(METRIC_NAMES)
    given = set(keys)
    order = [name for name in METRIC_NAMES if name in given] + [key for key in keys if key not in named]
    same = next((i for i, (a, b) in enumerate(zip(keys, order, strict=True)) if a != b), len(order))
    return tuple(order[same:])


__all__ = [
    "METRICS",
    "METRIC_NAMES",
    "TEXT_METRICS",
    "Metric",
    "OSC_BAND_PASSES",
    "OSC_MIN_PASSES",
    "is_oscillating",
    "overhead_ratio",
    "summarize",
]
