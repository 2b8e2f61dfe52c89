"""Composition: ``a+b`` runs the policies ``a`` and ``b`` as one, as a runtime chains its context managers.

SWE-agent's history processors and OpenHands' condenser pipeline apply their parts in the order
configured, each to the history the part before it left: The Complexity Trap's hybrid is
``summarize_every_n_turns`` then ``last_n_observations``, a summary and masking of the
observations it keeps. A composition does the same on every consultation (docs/policies.md,
"Composition"):

* the parts decide in the order written; each is shown the window as the parts before it leave
  it (:func:`after`): what they removed is gone, what they replaced by a placeholder stands as
  one, and the utilization is what their actions free and write;
* their actions are applied in that order; an action of a later part that names a span an
  earlier part already edited on the same consultation is dropped (the earlier part acted
  first), and one that names a span its view does not hold is a broken contract of that part;
* where a later part left a placeholder, a part is shown the content it stands for (a runtime runs
  each part on the history before the later parts' edits: SWE-agent's hybrid summarizes the
  unmasked turns); a summary that takes it in has the placeholders restored just before
  (:func:`unmasked`, :func:`_restore_first`);
* a model-driven part's gate decides on the window it is shown, so a gate behind a clearing
  sees the room the clearing made;
* each part keeps its own random stream: the first takes the policy's, the others a child each,
  so ``a+noop`` draws and acts exactly as ``a`` does;
* the guards (``authorize``) of every part apply to every action, so a span one part protects
  (a tombstone) is protected from all of them.

A composition is resolved by :func:`prunesim.policies.get_policy` and named by its full spec;
it reads the union of its parts' tables, so ``--set KEY=VALUE`` reaches every part that reads KEY.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import ClassVar

from prunesim.errors import UserError
from prunesim.model.engine import PolicyContractError
from prunesim.model.spans import PLACEHOLDER_OF, Span
from prunesim.policies.base import (
    Action,
    Clear,
    Compact,
    Evict,
    ModelPass,
    Policy,
    Restore,
    Summarize,
    Truncate,
    Warn,
    WindowView,
    named_spans,
)
from prunesim.policies.contract import checked_authorize, checked_decide
from prunesim.policies.noop import NoopPolicy

SEPARATOR = "+"


class ComposedPolicy(Policy):
    """The parts of a composition, run in order (see the module docstring); built by :func:`composed`."""

    parts: ClassVar[tuple[type[Policy], ...]] = ()

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for part in cls.parts for p in part.parameters()))

    @classmethod
    def parameter_roles(cls) -> dict[str, str]:
        roles: dict[str, str] = {}
        for part in cls.parts:  # the first part that plays a role names its parameter
            for role, name in part.parameter_roles().items():
                roles.setdefault(role, name)
        return roles

    @classmethod
    def check_settings(cls, scenario, where: str) -> None:
        for part in cls.parts:
            part.check_settings(scenario, f"{where} (part {part.name})")

    @classmethod
    def notes(cls, scenario, tools=None) -> list[str]:
        return [note for part in cls.parts for note in part.notes(scenario, tools)]

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        more = len(self.parts) - 1
        rngs = [rng, *(rng.spawn(more) if more and rng is not None else [rng] * more)]
        self.members: list[Policy] = []
        for cls, stream in zip(self.parts, rngs, strict=True):
            member = cls(scenario, stream)
            if not cls.__module__.startswith("prunesim."):  # a user's part: its answers are checked as alone
                member.decide = checked_decide(member)
                if callable(getattr(member, "authorize", None)):
                    member.authorize = checked_authorize(member)
            self.members.append(member)
        self.guards = [m.authorize for m in self.members if callable(getattr(m, "authorize", None))]
        # Per part: the spans it cleared, by id, as they were (while their placeholders stand in the window).
        self.cleared: list[dict[int, Span]] = [{} for _ in self.members]
        # What the engine leaves in the window for a span it drops: a tombstone, when the run keeps a log.
        self.removal_marker = scenario.tombstone.tokens if self.keeps_edit_log else 0

    def acting_trigger(self) -> int:
        # The earliest part that acts; a part that never acts (noop) has no trigger to count.
        acting = [m for m in self.members if not isinstance(m, NoopPolicy)] or self.members
        return min(m.acting_trigger() for m in acting)

    def decide(self, view: WindowView) -> list[Action]:
        out: list[Action] = []
        edited: set[int] = set()
        shown = view
        last = len(self.members) - 1
        held = {s.names[0]: s for s in view.spans if s.kind == "placeholder" and s.names}  # original id -> placeholder
        for book in self.cleared:
            for gone in [o for o in book if o not in held]:
                del book[gone]
        for i, member in enumerate(self.members):
            later = {o: span for book in self.cleared[i + 1:] for o, span in book.items()}
            seen = unmasked(shown, later, held) if later else shown
            answer = member.decide(seen)
            if answer.__class__ is not list and answer.__class__ is not tuple:
                raise PolicyContractError(f"policy {member.name!r} (part of {self.name!r}) returned "
                                          f"{type(answer).__name__} from decide, not a list of actions (turn "
                                          f"{view.turn})", type(member))
            actions = [kept for action in answer if (kept := _without(action, edited)) is not None]
            _check(actions, seen, member, self.name)
            if later:
                actions = _restore_first(actions, later, held)
            for action in actions:
                if isinstance(action, Clear):  # what it stands for, shown to the parts before this one
                    spans = _by_id(seen)
                    self.cleared[i].update((j, spans[j]) for j in action.span_ids)
            out.extend(actions)
            if actions and i < last:
                shown = after(shown, actions, self.removal_marker)
                edited.update(i for action in actions for i in named_spans(action))
        return out


def unmasked(view: WindowView, later: dict[int, Span], held: dict[int, Span]) -> WindowView:
    """``view`` with the placeholders later parts left shown as the content they stand for: a runtime runs each
    part of its pipeline on the history before the later parts' edits (SWE-agent's summary reads the unmasked
    turns)."""
    spans = []
    added = 0
    for s in view.spans:
        original = later.get(s.names[0]) if s.kind == "placeholder" and s.names else None
        if original is not None and held.get(original.id) is s:
            spans.append(original)
            added += original.tokens - s.tokens
        else:
            spans.append(s)
    shown = tuple(spans)
    return WindowView(view.turn, view.utilization + added, view.budget, view.size, view.hard, shown,
                      tuple(s for s in shown if not s.pinned), {s.id: s for s in shown})


def _restore_first(actions: list[Action], later: dict[int, Span], held: dict[int, Span]) -> list[Action]:
    """A summary of content a later part masked reads it whole: its placeholders are restored just before. Other
    actions on such content are dropped: the later part has removed it already."""
    out: list[Action] = []
    for action in actions:
        originals = [i for i in named_spans(action) if i in later]
        if not originals:
            out.append(action)
        elif isinstance(action, Compact):
            out += [Restore(tuple(held[i].id for i in originals), reason="summarized_unmasked"), action]
        elif (kept := _without(action, set(originals))) is not None:
            out.append(kept)
    return out


def _by_id(view: WindowView):
    """The view's spans by id (a view built by hand may leave the mapping out)."""
    return view.by_id if view.by_id is not None else {s.id: s for s in view.spans}


def _authorize(self, action, view) -> None:
    for guard in self.guards:
        guard(action, view)


def _check(actions: list[Action], view: WindowView, member: Policy, composite: str) -> None:
    """A part names only spans of the window it is shown: else it broke the contract (named, for the error line)."""
    held = _by_id(view)
    for action in actions:
        missing = [i for i in named_spans(action) if i not in held]
        if missing:
            raise PolicyContractError(f"policy {member.name!r} (part of {composite!r}) named span(s) {missing} that "
                                      f"are not in the window (turn {view.turn})", type(member))
        if isinstance(action, Clear) and len(action.placeholder_tokens) != len(action.span_ids):
            raise PolicyContractError(f"policy {member.name!r} (part of {composite!r}) gave "
                                      f"{len(action.placeholder_tokens)} placeholder sizes for {len(action.span_ids)} "
                                      f"spans (turn {view.turn})", type(member))


def _without(action: Action, edited: set[int]) -> Action | None:
    """``action`` without the spans an earlier part edited on this consultation; None when nothing is left of it."""
    if not edited:
        return action
    names = named_spans(action)
    if not any(i in edited for i in names):
        return action
    keep = [j for j, i in enumerate(names) if i not in edited]
    if not keep:
        return None
    if isinstance(action, ModelPass):
        return ModelPass(tuple(action.selected[j] for j in keep), action.index_tokens, action.rationale_base,
                         tuple(action.rationale_per_span[j] for j in keep), action.candidates, action.placement,
                         action.protect_artifacts, action.tombstone_tokens, action.prune_own_rationale)
    if isinstance(action, Clear):
        return Clear(tuple(names[j] for j in keep), tuple(action.placeholder_tokens[j] for j in keep), action.reason)
    if isinstance(action, Compact):
        ids = tuple(names[j] for j in keep)
        return Compact(ids, action.summary_tokens, tuple(i for i in action.carried if i not in edited),
                       action.instruction_tokens, action.reason)
    return type(action)(tuple(names[j] for j in keep), *_rest(action))


def _rest(action) -> tuple:
    """The fields of an Evict, Summarize or Restore after its span ids."""
    return astuple(action)[1:]


def after(view: WindowView, actions: list[Action], removal_marker: int = 0) -> WindowView:
    """The window as ``actions`` would leave it, for the next part to decide on.

    Removed spans (evicted, summarized, compacted, selected by a pass) are gone; a cleared span stands as a
    placeholder of the given size (gone when 0 and it pairs no call); a truncated one keeps what is left. The
    utilization drops by what leaves and rises by what is written (placeholders, summaries, a pass's index and
    rationale in the window, tombstones, warnings). Spans the actions write anew (a summary) are not shown: they
    have no id until the engine places them, and a part cannot act on them before the next consultation.
    A pass whose index does not fit under the ceiling makes the engine drop the oldest spans first, each
    leaving ``removal_marker`` tokens (a tombstone of a run that keeps a log): those are gone too.
    """
    replaced: dict[int, int | tuple | None] = {}  # span id -> placeholder size, ("truncated", keep) or None: gone
    written = 0
    back: dict[int, int] = {}  # original id -> the placeholder a Restore put it back in place of
    by_id = _by_id(view)
    for action in actions:
        if isinstance(action, Restore):
            back.update((by_id[i].names[0], i) for i in action.span_ids if i in by_id and by_id[i].names)
        elif isinstance(action, Clear):
            for span_id, size in zip(action.span_ids, action.placeholder_tokens, strict=True):
                replaced[span_id] = size
                written += size
        elif isinstance(action, Truncate):
            replaced[action.span_id] = ("truncated", action.keep_tokens)
        elif isinstance(action, (Evict, Summarize, Compact)):
            replaced.update(dict.fromkeys(back.get(i, i) for i in action.span_ids))
            written += getattr(action, "summary_tokens", 0)
        elif isinstance(action, ModelPass):
            written += _make_room(view, action, replaced, written, removal_marker)
            replaced.update(dict.fromkeys(action.selected))
            written += action.tombstone_tokens * len(action.selected)
            written += action.overhead if action.placement == "window" else 0
        elif isinstance(action, Warn):
            written += action.tokens
    spans: list[Span] = []
    freed = 0
    for s in view.spans:
        if s.id not in replaced:
            spans.append(s)
            continue
        change = replaced[s.id]
        if isinstance(change, tuple):  # truncated: what is left of it
            keep = min(s.tokens, change[1])
            freed += s.tokens - keep
            if keep:
                spans.append(Span(s.id, s.kind, keep, s.turn, s.key, s.stale_at, s.pinned, s.tags, s.pass_id,
                                  s.names, s.tool, s.call))
            continue
        freed += s.tokens
        if change is not None and (change or s.call):  # a placeholder where the span stood
            spans.append(Span(s.id, "placeholder", change, s.turn, key=s.key, stale_at=s.stale_at, names=(s.id,),
                              tool=s.tool, call=s.call, tags=frozenset({PLACEHOLDER_OF + s.kind})))
    shown = tuple(spans)
    return WindowView(view.turn, view.utilization - freed + written, view.budget, view.size, view.hard, shown,
                      tuple(s for s in shown if not s.pinned), {s.id: s for s in shown})


def _make_room(view: WindowView, p: ModelPass, replaced: dict, written: int, marker: int) -> int:
    """What the engine drops before ``p`` when its index does not fit under the ceiling (Engine.make_room: the
    oldest unpinned spans, its selections spared, each leaving ``marker`` tokens), marked gone in ``replaced``,
    so that a later part never names a span the engine dropped; returns the tokens the markers write. (A
    marker cut at the ceiling or folded into a digest frees more than counted here: the engine then drops
    fewer, never a span shown as kept.)"""
    by_id = _by_id(view)
    freed = 0
    for span_id, change in replaced.items():
        tokens = by_id[span_id].tokens if span_id in by_id else 0
        freed += tokens - min(tokens, change[1]) if isinstance(change, tuple) else tokens
    ceiling = view.budget if view.hard else view.size
    used = view.utilization - freed + written
    spared = set(p.selected)
    markers = 0
    for s in view.spans:
        if used + p.index_tokens <= ceiling:
            break
        if not s.pinned and s.id not in replaced and s.id not in spared:
            replaced[s.id] = None
            used -= s.tokens - marker
            markers += marker
    return markers


def split(spec: str, known) -> list[str]:
    """The part names of ``spec``, ``+``-separated; a run of words that ``known(name)`` accepts as one name
    (``slack-gated+tombstoned``) is one part, the longest first. A UserError names a part that is no policy."""
    words = [w.strip() for w in spec.split(SEPARATOR)]
    if any(not w for w in words):
        raise UserError("policy", spec, "an empty part in a composition ('+' joins two policy names)")
    parts: list[str] = []
    i = 0
    while i < len(words):
        for j in range(len(words), i, -1):
            name = SEPARATOR.join(words[i:j])
            if known(name):
                parts.append(name)
                i = j
                break
        else:
            raise UserError("policy", spec, f"part {words[i]!r} of the composition is not a policy")
    return parts


_BUILT: dict[tuple, type[Policy]] = {}


def composed(spec: str, parts: list[type[Policy]]) -> type[Policy]:
    """The policy that runs ``parts`` in order, named ``spec`` (one class per spec and parts, built once)."""
    key = (spec, *parts)
    if key in _BUILT:
        return _BUILT[key]
    tables: dict[str, type] = {}
    for part in parts:
        for name, table in part.tables.items():
            if tables.setdefault(name, table) is not table:
                raise UserError("policy", spec, f"its parts declare the table [{name}] differently")
    attrs = {
        "name": spec,
        "summary": " then ".join(f"{p.name} ({p.summary})" if p.summary else p.name for p in parts),
        "model_driven": any(p.model_driven for p in parts),
        "tables": tables,
        "parts": tuple(parts),
        "edits_every_call": any(p.edits_every_call for p in parts),
        "keeps_edit_log": any(getattr(p, "keeps_edit_log", False) for p in parts),
        "__module__": __name__,
    }
    if any(callable(getattr(p, "authorize", None)) for p in parts):
        attrs["authorize"] = _authorize
    cls = type(f"Composed[{spec}]", (ComposedPolicy,), attrs)
    _BUILT[key] = cls
    return cls
