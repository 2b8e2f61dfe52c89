"""The policy contract.

A policy is consulted by the engine at the end of every turn with a read-only
view of the window, and answers with a list of actions. It never touches the
SimPy environment, the window or the recorder: the engine applies the actions
and records what they did. A policy owns one random generator, handed to its
constructor, and nothing else that varies.

A new policy is one file defining a subclass of :class:`Policy`, one line in
``policies/__init__.py``'s registry, and one test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:
    from prunesim.model.scenario import Scenario
    from prunesim.model.spans import Span


@dataclass(frozen=True, slots=True)
class WindowView:
    """What a policy may see at the end of a turn. Treat ``spans`` as read-only."""

    turn: int
    utilization: int
    budget: int
    size: int
    hard: bool
    spans: Sequence[Span]
    # Shortcuts the engine fills in (a view built by hand may leave them out): the unpinned spans in
    # window order, and the spans by id. Policies that only want candidates need not walk pinned spans
    # (tombstones, under a provenance-keeping policy, can be most of the window).
    unpinned: Sequence[Span] | None = None
    by_id: Mapping[int, Span] | None = None

    @property
    def headroom(self) -> int:
        return self.budget - self.utilization


# -- actions ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelPass:
    """A model-driven prune pass.

    The model reads an index of ``candidates`` spans (``index_tokens``) and
    writes a rationale of ``rationale_base`` tokens plus ``rationale_per_span[i]``
    for each ``selected[i]``, in that order. Under a hard budget the rationale
    is cut at the ceiling and only the selections written before the cut are
    evicted. ``placement`` is ``"window"`` (index and rationale stay in the
    window, prunable unless ``protect_artifacts``) or ``"log"`` (they go to an
    external edit log and leave the window after the pass).
    """

    selected: tuple[int, ...]
    index_tokens: int
    rationale_base: int
    rationale_per_span: tuple[int, ...]
    candidates: int
    placement: str = "window"
    protect_artifacts: bool = False
    tombstone_tokens: int = 0  # size of the marker each evicted span leaves (0: none)
    # A reentrant plan: its own rationale, written into the window, is evicted with its selections.
    prune_own_rationale: bool = False

    @property
    def rationale_tokens(self) -> int:
        return self.rationale_base + sum(self.rationale_per_span)

    @property
    def overhead(self) -> int:
        return self.index_tokens + self.rationale_tokens


@dataclass(frozen=True, slots=True)
class Evict:
    """Non-model eviction of whole spans; costs no decision tokens."""

    span_ids: tuple[int, ...]
    reason: str = "recency"


@dataclass(frozen=True, slots=True)
class Truncate:
    """Non-model cut of one span down to ``keep_tokens``."""

    span_id: int
    keep_tokens: int
    reason: str = "truncate"


@dataclass(frozen=True, slots=True)
class Summarize:
    """Non-model replacement of spans by one fixed-size template summary."""

    span_ids: tuple[int, ...]
    summary_tokens: int
    reason: str = "template"


@dataclass(frozen=True, slots=True)
class BoundaryEvent:
    """A gate's decision, recorded as it was taken (``reason`` is ``"run"`` or a refusal)."""

    reason: str
    numbers: dict = field(default_factory=dict)


Action = ModelPass | Evict | Truncate | Summarize | BoundaryEvent


def named_spans(action: Action) -> tuple[int, ...]:
    """The ids of the window spans an action would remove or change (none for a BoundaryEvent)."""
    if isinstance(action, ModelPass):
        return action.selected
    if isinstance(action, (Evict, Summarize)):
        return action.span_ids
    if isinstance(action, Truncate):
        return (action.span_id,)
    return ()


class Policy:
    """Base class: subclasses set ``name`` and ``model_driven`` and override :meth:`decide`."""

    name: ClassVar[str] = "base"
    model_driven: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    # The scenario tables this policy reads, by TOML table name: dataclasses with defaults for
    # every field and a ``check(key, where, scenario)`` method. The loader validates them, and
    # the policy reads them as ``scenario.<name>``. Two policies may share a table.
    tables: ClassVar[dict[str, type]] = {}

    def __init__(self, scenario: Scenario, rng: np.random.Generator):
        self.scenario = scenario
        self.rng = rng

    def decide(self, view: WindowView) -> list[Action]:
        raise NotImplementedError

    def acting_trigger(self) -> int:
        """The utilization at which this policy starts to act; the metrics' band is measured against it."""
        return self.scenario.trigger
