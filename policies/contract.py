"""The contract's numbers, checked for a policy a user supplied (a file or an installed plugin).

Built-in policies answer plain ints. A user's policy may answer what Python
accepts as an integer without being an ``int`` (``numpy.int64`` from an
array, ``True``); those are made plain ints here, so that every output (JSON
details, CSV cells) writes them as it writes an int. A value that is not an
integer at all (a float token count, a string), or a negative one (every
integer field is a token count, a count or a span id), is refused with a
:class:`~prunesim.model.engine.PolicyContractError` naming the action, the
field and the value, which the command line shows as one line. The policy's
``authorize`` guard, which the engine asks after those checks, may not change
the pass it is asked about (:func:`checked_authorize`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
import typing
from collections.abc import Set as AbstractSet

import numpy as np
from prunesim.errors import PolicyContractError
from prunesim.policies.base import Action, BoundaryEvent, ModelPass, WindowView

# The fields each action declares as an int, as a tuple of ints, as a string and as a flag: of every action
# there is (the union ``Action``), so that a new action is checked as soon as it exists.
_FIELDS: dict[type, tuple[tuple[str, ...], ...]] = {
    cls: tuple(tuple(f.name for f in dataclasses.fields(cls) if f.type == declared)
               for declared in ("int", "tuple[int, ...]", "str", "bool"))
    for cls in typing.get_args(Action)
}

# The string fields that take one of a few values (any other would be read as one of them without a word).
_CHOICES = {(ModelPass, "placement"): ("window", "log")}


def checked_decide(policy):
    """``policy.decide``, its answer's integer fields made plain ints (or refused)."""
    decide = policy.decide
    cls = type(policy)

    def checked(view):
        answer = decide(view)
        if isinstance(answer, (str, bytes, WindowView, AbstractSet)) or not hasattr(answer, "__iter__"):
            return answer  # not a list of actions (a view is a named tuple, a set unordered): the engine says so
        return [_plain(action, cls, view.turn) for action in answer]

    return checked


def checked_authorize(policy):
    """``policy.authorize``, refusing a guard that changes the :class:`ModelPass` it is asked about.

    A returned action is read-only, and the engine has checked the pass (its numbers, above; its spans, in
    the window) when it asks the guard, then applies it: ``ModelPass`` is not frozen (docs/performance.md),
    so a change made here would be applied unchecked. The other actions are frozen.
    """
    authorize = policy.authorize
    cls = type(policy)

    def checked(action, view):
        if not isinstance(action, ModelPass):
            return authorize(action, view)
        before = dataclasses.astuple(action)
        answer = authorize(action, view)  # a refusal (SelfEditRefused) goes on: nothing of the pass is applied
        after = dataclasses.astuple(action)
        if after != before:
            changed = [f.name for f, was, now in zip(dataclasses.fields(action), before, after, strict=True)
                       if was != now]
            raise PolicyContractError(f"policy {cls.name!r} changed the ModelPass it returned ({', '.join(changed)}) "
                                      f"in authorize: an action is read-only once returned (turn {view.turn})", cls)
        return answer

    return checked


def _plain(action, cls: type, turn: int):
    fields = _FIELDS.get(type(action))
    if fields is None:
        return action  # not an action: the engine says so
    ints, tuples, texts, flags = fields
    for name in texts:  # written out in the events' JSON details and the edit log
        if not isinstance(getattr(action, name), str):
            raise _refusal(action, name, getattr(action, name), "not a string", cls, turn)
        choices = _CHOICES.get((type(action), name))
        if choices and getattr(action, name) not in choices:
            raise _refusal(action, name, getattr(action, name), f"not one of {', '.join(choices)}", cls, turn)
    if isinstance(action, BoundaryEvent):  # written out as a JSON detail of the gate's event
        problem = _json_problem(action.numbers)
        if problem:
            raise _refusal(action, "numbers", action.numbers, problem, cls, turn)
    changes = {}
    for name in flags:
        value = getattr(action, name)
        if type(value) is not bool:
            if not isinstance(value, np.bool_):
                raise _refusal(action, name, value, "not True or False", cls, turn)
            changes[name] = bool(value)
    for name in ints:
        value = getattr(action, name)
        if type(value) is not int:
            value = changes[name] = _integer(value, action, name, cls, turn)
        if value < 0:
            raise _refusal(action, name, value, "negative", cls, turn)
    for name in tuples:
        values = getattr(action, name)
        if type(values) is not tuple or any(type(v) is not int for v in values):
            if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
                raise _refusal(action, name, values, "not a sequence of integers", cls, turn)
            values = changes[name] = tuple(_integer(v, action, name, cls, turn) for v in values)
        if any(v < 0 for v in values):
            raise _refusal(action, name, values, "holds a negative number", cls, turn)
    return dataclasses.replace(action, **changes) if changes else action


def _integer(value, action, name: str, cls: type, turn: int) -> int:
    try:
        return operator.index(value)  # int, bool, numpy integers; not floats, not strings
    except TypeError:
        raise _refusal(action, name, value, "not an integer", cls, turn) from None


def _json_problem(detail) -> str | None:
    """Why ``detail`` is not a mapping of names to JSON values (finite numbers, strings, booleans, null,
    lists and mappings of them), or None."""
    if not isinstance(detail, dict):
        return "not a mapping of names to JSON values"
    stack = [(detail, 0)]
    while stack:
        value, level = stack.pop()
        if level > 32:
            return "nested more than 32 deep"
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                return "a key that is not a string"
            stack += [(v, level + 1) for v in value.values()]
        elif isinstance(value, list | tuple):
            stack += [(v, level + 1) for v in value]
        elif isinstance(value, numbers.Real):  # numpy's numbers too: written as plain ones
            if not math.isfinite(float(value)):
                return "a number that is not finite"
        elif not (value is None or isinstance(value, str)):
            return f"a {type(value).__name__}, not a JSON value"
    return None


def _refusal(action, name, value, problem, cls, turn) -> PolicyContractError:
    return PolicyContractError(f"policy {cls.name!r} answered {type(action).__name__} with {name}={value!r}: "
                               f"{problem} (turn {turn})", cls)
