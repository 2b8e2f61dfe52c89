"""Parameter grids: ``--grid NAME=VALUES`` parsing and the cartesian expansion.

A grid is an ordered mapping from a scenario parameter (a dotted name such as
``trigger`` or ``workload.tool_output.mean``) to the values it takes. Values are
written as

* a range ``A:B:STEP``: A, A+STEP, ... up to and including B when a step lands
  on it (``16000:23500:250`` gives 31 values). Integers stay integers; decimals
  are stepped exactly (``0.1:0.3:0.1`` gives 0.1, 0.2, 0.3, not 0.30000000000000004);
* a comma-separated list ``a,b,c``; each item is read as a TOML value (``true``,
  ``0.5``, ``"quoted"``), else kept as a bare string. A single string is one value:
  strings are never split into characters.

A name may be qualified by a policy, ``POLICY:NAME`` (``slack-gated:gate.headroom``):
the axis then applies to that policy's runs only, so each policy can be swept
along the parameter that moves it (:func:`split_axis`).

:func:`expand_grid` turns the mapping into one dict per grid point, in the
order of the axes (the last axis varies fastest), like Mesa's ``batch_run``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from prunesim.errors import UserError
from prunesim.io.labels import policy_labels
from prunesim.io.scenario_files import toml_value

MAX_POINTS = 1_000_000  # a larger grid is a typo (a step far too small), one axis or all together
# Runs in one study (grid points x policies x seeds, Sobol points x seeds): ten million runs of the smallest
# shipped scenario take days on a workstation; more is a typo, refused before a plan fills the memory.
MAX_RUNS = 10_000_000


def check_runs(parts: dict[str, int], flag: str) -> None:
    """Refuse a study of more than MAX_RUNS runs, naming what multiplies up to it (``{"grid points": n}``)."""
    total = math.prod(parts.values())
    if total > MAX_RUNS:
        what = " x ".join(f"{n:,} {name}" for name, n in parts.items())
        raise UserError(flag, None, f"{what} are {total:,} runs; at most {MAX_RUNS:,} in one command")


def expand_grid(axes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, one dict per grid point.

    ``axes`` maps a parameter name to its values: a list, tuple, range or any other
    iterable; a string or any non-iterable is a single value. No axes give one empty point. An axis
    with no values is an error naming it (a grid with a hole would silently be empty).

    >>> expand_grid({"a": [1, 2], "b": "x"})
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}]
    """
    names = list(axes)
    columns = []
    for name in names:
        values = axis_values(axes[name])
        if not values:
            raise UserError("--grid", name, "has no values")
        columns.append(values)
    count = math.prod(len(c) for c in columns)
    if count > MAX_POINTS:  # each axis may be in bounds and their product not
        raise UserError("--grid", None, f"{' x '.join(f'{len(c):,}' for c in columns)} values are {count:,} grid "
                                        f"points (at most {MAX_POINTS:,})")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*columns)]


def axis_values(values: Any) -> list[Any]:
    """An axis's values as a list: strings (and tables) are one value, other iterables many.

    Numpy scalars become plain Python numbers, so that a grid built with numpy
    (``np.linspace``) validates and hashes like one typed by hand.
    """
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        values = [values]
    return [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in values]


def parse_axis(text: str, flag: str = "--grid") -> tuple[str, list[Any]]:
    """One ``NAME=VALUES`` argument: the name and its list of values."""
    if "=" not in text:
        raise UserError(flag, text, "expected NAME=VALUES (a range A:B:STEP or a list a,b,c)")
    name, raw = (part.strip() for part in text.split("=", 1))
    policy, param = split_axis(name)
    if not param or any(not part for part in param.split(".")):
        raise UserError(flag, text, "empty parameter name")
    if policy == "":
        raise UserError(flag, text, "empty policy name (expected POLICY:NAME=VALUES)")
    if not raw:
        raise UserError(flag, name, "has no values")
    values = _parse_range(raw, flag, name) if ":" in raw and _is_range(raw) else _parse_list(raw, flag, name)
    if not values:
        raise UserError(flag, name, f"{_short(raw)} has no values (the range is empty)")
    if len(values) > MAX_POINTS:
        raise UserError(flag, name, f"{_short(raw)} has {len(values)} values (at most {MAX_POINTS})")
    seen = set()
    for v in values:
        marker = (type(v).__name__, v)
        if marker in seen:
            raise UserError(flag, name, f"value {v!r} is given twice")
        seen.add(marker)
    return name, values


def split_axis(name: str) -> tuple[str | None, str]:
    """``(policy, parameter)`` of an axis name: ``("slack-gated", "gate.headroom")``, or ``(None, "trigger")``.

    The parameter is after the last colon (parameter names have none; a policy
    given as ``file.py:Class`` does).

    >>> split_axis("slack-gated:gate.headroom"), split_axis("trigger")
    (('slack-gated', 'gate.headroom'), (None, 'trigger'))
    """
    policy, sep, param = name.rpartition(":")
    return (policy, param) if sep else (None, name)


def parse_axes(items: list[str] | None, flag: str = "--grid") -> dict[str, list[Any]]:
    """Several ``--grid`` arguments, in order; a name given twice is an error."""
    axes: dict[str, list[Any]] = {}
    for item in items or []:
        name, values = parse_axis(item, flag)
        if name in axes:
            raise UserError(flag, name, "is given twice")
        axes[name] = values
    return axes


def _is_range(raw: str) -> bool:
    """Ranges are all numbers around the colons; anything else is a list of strings."""
    try:
        for part in raw.split(":"):
            Decimal(part.strip())
    except InvalidOperation:
        return False
    return True


def _parse_range(raw: str, flag: str, name: str) -> list[Any]:
    parts = [p.strip() for p in raw.split(":")]
    if len(parts) != 3:
        raise UserError(flag, name, f"range {_short(raw)} must be A:B:STEP")
    a, b, step = (Decimal(p) for p in parts)
    if not all(x.is_finite() for x in (a, b, step)):
        raise UserError(flag, name, f"range {_short(raw)} must be made of finite numbers")
    if step <= 0:
        raise UserError(flag, name, f"range {_short(raw)}: the step must be positive")
    if b < a:
        return []
    try:
        count = int((b - a) // step) + 1
    except InvalidOperation:  # a quotient of more digits than Decimal holds (a 400-digit end): far too many
        raise UserError(flag, name, f"{_short(raw)} has more than {MAX_POINTS} values") from None
    if count > MAX_POINTS:
        raise UserError(flag, name, f"{_short(raw)} has {count} values (at most {MAX_POINTS})")
    integral = all(_is_int_text(p) for p in parts)
    return [int(a + i * step) if integral else float(a + i * step) for i in range(count)]


def _short(text: str) -> str:
    """A value as an error line shows it: a typo of hundreds of digits cut to its start and end."""
    return text if len(text) <= 60 else f"{text[:28]}...{text[-28:]} ({len(text)} characters)"


def _is_int_text(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit()


def _parse_list(raw: str, flag: str, name: str) -> list[Any]:
    values = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            raise UserError(flag, name, f"{_short(raw)} has an empty item")
        value = toml_value(item, flag, name)
        if isinstance(value, (dict, list)):
            raise UserError(flag, name, f"{item} is a table or list; grid values are single values")
        if not isinstance(value, (bool, int, float, str)):  # TOML dates and times stay text
            value = item
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(flag, name, f"{item} is not a finite number")
        if isinstance(value, str) and ("\n" in value or "\r" in value):
            raise UserError(flag, name, "values must not contain line breaks")
        values.append(value)
    return values


def covers(prefix: str, name: str) -> bool:
    """Whether parameter ``name`` is ``prefix``, inside it (a key of its table) or holds it (its table)."""
    return name == prefix or name.startswith(prefix + ".") or prefix.startswith(name + ".")


def inert_axes(axes: Iterable[str], policies: Iterable[str]) -> list[str]:
    """One line per grid axis that cannot affect some of ``policies``, naming the parameter that would.

    An axis is policy-specific when some registered policy declares it in
    ``Policy.reads``; such an axis cannot affect a policy that does not read it.
    Every other parameter (window, budget, workload, ...) affects every run. A
    policy-qualified axis (``slack-gated:gate.lead``) is judged for its policy only.
    """
    from prunesim.policies import REGISTRY, get_policy

    classes = {name: get_policy(name) for name in policies}
    label = policy_labels(classes)  # a policy from a file by its class, as every table shows it
    builtin = set(REGISTRY.values())
    specific = [p for cls in (*REGISTRY.values(), *classes.values()) for p in cls.parameters()]
    lines = []
    for axis in axes:
        owner, param = split_axis(axis)
        if not any(covers(p, param) for p in specific):
            continue
        role = next((r for cls in REGISTRY.values() for r, name in cls.parameter_roles().items()
                     if covers(name, param)), None)
        deaf, undeclared = [], []
        for name, cls in classes.items():
            if owner is not None and name != owner:
                continue  # not this policy's axis: its runs do not take it
            if any(covers(p, param) for p in cls.parameters()):
                continue
            if cls not in builtin and not _declares_reads(cls):  # a user's policy that does not say what it reads
                undeclared.append(label[name])
                continue
            other = cls.parameter_roles().get(role) if role else None
            deaf.append(f"{label[name]} ({other} would)" if other else f"{label[name]} (no parameter of it would)")
        if deaf:
            lines.append(f"note: --grid {axis} cannot affect {', '.join(deaf)}")
        if undeclared:
            lines.append(f"note: --grid {axis} may not affect {', '.join(undeclared)}: it does not declare "
                         "the parameters it reads (Policy.reads)")
    return lines


def _declares_reads(cls) -> bool:
    """Whether the policy class, or a class it extends below the base, sets ``reads``."""
    from prunesim.policies.base import Policy

    return any("reads" in vars(k) for k in cls.__mro__ if k is not Policy and issubclass(k, Policy))
