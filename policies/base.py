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

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, NamedTuple

if TYPE_CHECKING:  # numpy only names a type here: listing the policies starts without it
    import numpy as np
    from prunesim.model.scenario import Scenario
    from prunesim.model.spans import Span


class WindowView(NamedTuple):
    """What a policy may see at the end of a turn: read-only (a named tuple, which the engine builds every
    turn at a fraction of a frozen dataclass's cost; ``_replace`` makes a changed copy).

    ``spans`` and ``unpinned`` are the window's snapshots of this turn, tuples shared with the engine;
    ``by_id`` is the window's own mapping, live: kept past this turn it follows the window (copy it to
    remember). The spans are the engine's: read them, never set their fields (docs/policies.md)."""

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
# Not frozen, unlike the other actions: a model-driven policy builds one on most turns, and a frozen
# dataclass pays object.__setattr__ per field: 703 against 113 ns a pass (docs/performance.md).
# It is read-only all the same (as a span is): the engine never changes one, and a policy must not once it
# has returned it. Hashed by its fields as a frozen one is.
@dataclass(slots=True, unsafe_hash=True)
class ModelPass:
    """A model-driven prune pass.

    The model reads an index of ``candidates`` spans (``index_tokens``) and
    writes a rationale of ``rationale_base`` tokens plus ``rationale_per_span[i]``
    for each ``selected[i]``, in that order. Under a hard budget the rationale
    is cut at the ceiling and only the selections written before the cut are
    evicted. ``placement`` is ``"window"`` (index and rationale stay in the
    window, prunable unless ``protect_artifacts``) or ``"log"`` (they go to an
    external edit log and leave the window after the pass). Read-only once
    returned from ``decide``.
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
    fallback: bool = False  # taken by a gate in place of a model-driven pass it refused


@dataclass(frozen=True, slots=True)
class Truncate:
    """Non-model cut of one span down to ``keep_tokens``."""

    span_id: int
    keep_tokens: int
    reason: str = "truncate"
    fallback: bool = False  # taken by a gate in place of a model-driven pass it refused


@dataclass(frozen=True, slots=True)
class Summarize:
    """Non-model replacement of spans by one fixed-size template summary."""

    span_ids: tuple[int, ...]
    summary_tokens: int
    reason: str = "template"
    fallback: bool = False  # taken by a gate in place of a model-driven pass it refused


@dataclass(frozen=True, slots=True)
class Clear:
    """Non-model replacement of spans by placeholders, each where its span stood; costs no decision tokens.

    ``placeholder_tokens[i]`` is the size of the marker left for ``span_ids[i]`` (a cleared tool
    result's "[cleared]", a masked observation's line count); 0 leaves none. The placeholder keeps
    the span's turn and key, and names it. The content is gone: a later need for it is a re-retrieval.
    """

    span_ids: tuple[int, ...]
    placeholder_tokens: tuple[int, ...]
    reason: str = "clear"


@dataclass(frozen=True, slots=True)
class Restore:
    """Put back the content a placeholder stands for, where the placeholder stood; costs no decision tokens.

    ``span_ids`` are placeholders. A runtime that edits a copy of its full history before every call
    (LangChain's middleware, Anthropic's server-side editing) sends a cleared result whole again once
    its rules no longer clear it: after the replayed runtime dropped content on its own, the history
    can fall back under the trigger.
    """

    span_ids: tuple[int, ...]
    reason: str = "restore"


@dataclass(frozen=True, slots=True)
class Compact:
    """A model call reads the whole window and writes a summary that replaces ``span_ids``.

    The call is billed as a decision (prompt: the window plus ``instruction_tokens``; output: the
    summary) and takes simulated time. The summary, ``summary_tokens`` long, takes the place of the
    first replaced span. ``carried`` names the content it keeps: ids of replaced spans, or ids a
    replaced summary carried (a summary of a summary). Whatever is not carried is lost: it cannot
    be recalled, a later need for it is a re-retrieval, and a lost constraint counts as such.
    """

    span_ids: tuple[int, ...]
    summary_tokens: int
    carried: tuple[int, ...] = ()
    instruction_tokens: int = 0
    reason: str = "compact"


@dataclass(frozen=True, slots=True)
class Warn:
    """A runtime message of ``tokens`` tokens appended to the window (a memory-pressure warning)."""

    tokens: int
    reason: str = "warning"


@dataclass(frozen=True, slots=True)
class BoundaryEvent:
    """A gate's decision, recorded as it was taken (``reason`` is ``"run"`` or a refusal)."""

    reason: str
    numbers: dict = field(default_factory=dict)


Action = ModelPass | Evict | Truncate | Summarize | Clear | Restore | Compact | Warn | BoundaryEvent


def named_spans(action: Action) -> tuple[int, ...]:
    """The ids of the window spans an action would remove or change (none for a BoundaryEvent)."""
    if isinstance(action, ModelPass):
        return action.selected
    if isinstance(action, (Evict, Summarize, Clear, Restore, Compact)):
        return action.span_ids
    if isinstance(action, Truncate):
        return (action.span_id,)
    return ()


@dataclass(frozen=True)
class Preset:
    """A configuration a source ships: a one-line summary and the values it gives the policy's table."""

    summary: str
    values: dict


def resolve_table(table, presets: dict[str, Preset], preset: str):
    """A copy of ``table`` whose unset keys (``None``) take ``preset``'s values: explicit values win."""
    values = presets[preset].values
    filled = {name: values[name] for name in values if getattr(table, name) is None}
    return dataclasses.replace(table, preset=preset, **filled)


class Policy:
    """Base class: subclasses set ``name`` and ``model_driven`` and override :meth:`decide`."""

    name: ClassVar[str] = "base"
    model_driven: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    # The scenario tables this policy reads, by TOML table name: dataclasses with defaults for
    # every field and a ``check(key, where, scenario)`` method. The loader validates them, and
    # the policy reads them as ``scenario.<name>``. Two policies may share a table.
    tables: ClassVar[dict[str, type]] = {}
    # The scenario parameters only some policies read (dotted names or table prefixes: "trigger",
    # "decision", "gate.lead"); every policy meets the window, the budget and the workload. A sweep
    # names any grid axis that none of these covers for one of its policies.
    reads: ClassVar[tuple[str, ...]] = ()
    # The parameter that plays each role for this policy ("threshold": where it starts to act,
    # "low_water": how far down it frees), so a sweep can say which parameter would do for it what
    # an axis does for another policy.
    roles: ClassVar[dict[str, str]] = {}

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """The policy-specific parameters this policy reads (see ``reads``)."""
        return cls.reads

    @classmethod
    def parameter_roles(cls) -> dict[str, str]:
        return dict(cls.roles)
    # Named configurations a source ships, by preset name (see :func:`preset_variant`). A policy
    # with presets is also registered once per preset as ``name:preset``; ``preset`` is set on
    # those variants (None on the policy itself, which takes its table's own ``preset`` key).
    presets: ClassVar[dict[str, Preset]] = {}
    preset: ClassVar[str | None] = None
    # True for a context edit a runtime applies to the prompt before every model call (LangChain's
    # middleware, SWE-agent's history processors): when a replayed runtime drops content on its own
    # between two turns, the engine consults the policy again before the next call.
    edits_every_call: ClassVar[bool] = False

    def __init__(self, scenario: Scenario, rng: np.random.Generator):
        self.scenario = scenario
        self.rng = rng

    def decide(self, view: WindowView) -> list[Action]:
        raise NotImplementedError

    def acting_trigger(self) -> int:
        """The utilization at which this policy starts to act; the metrics' band is measured against it."""
        return self.scenario.trigger

    @classmethod
    def check_settings(cls, scenario: Scenario, where: str) -> None:
        """Refuse (a :class:`~prunesim.errors.UserError` naming ``where``) settings that are wrong only for this
        policy once its preset fills its table in; called with the tables' own checks, before any run."""

    @classmethod
    def notes(cls, scenario: Scenario, tools: frozenset[str] | None = None) -> list[str]:
        """Warnings about running this policy on ``scenario`` (not errors: the run is valid).

        ``tools`` are the tool names the replayed transcripts use, when known. The command line
        prints each note on one line.
        """
        return []


def preset_variant(cls: type[Policy], preset: str) -> type[Policy]:
    """``cls`` fixed to one of its presets, registered as ``<name>:<preset>``."""
    if preset not in cls.presets:
        raise KeyError(f"{cls.name} has no preset {preset!r}")
    return type(
        f"{cls.__name__}[{preset}]",
        (cls,),
        {"name": f"{cls.name}:{preset}", "preset": preset, "summary": cls.presets[preset].summary,
         "__module__": cls.__module__},
    )
