"""Scenario files (TOML): reading, ``--set`` overrides and validation.

Loading walks the TOML against the dataclasses of :mod:`prunesim.model.scenario`,
so an unknown key, a wrong type or an out-of-range value is reported with the
file and the dotted key that holds it.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from prunesim import policies
from prunesim.errors import UserError
from prunesim.io import prices
from prunesim.model.scenario import (  # noqa: F401 - the types are part of this module's interface
    Decision,
    InitialSpan,
    Latency,
    NeedParams,
    Pricing,
    Scenario,
    ScriptedEvent,
    SizeDist,
    TombstoneParams,
    Workload,
)

# -- building dataclasses from plain data -------------------------------------
_MAX_INT = 10**12  # larger sizes are typos, and would overflow numpy's draws


def _coerce(value: Any, tp: Any, key: str, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        # ``X | None``: None means "unset" (a preset gives the value); a file can only set an X.
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else _coerce(value, inner, key, where)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise UserError(where, key, f"must be a table, got {_type_name(value)}")
        return _build(tp, value, key, where)
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise UserError(where, key, f"must be a list, got {_type_name(value)}")
        return [_coerce(v, item_tp, f"{key}[{i}]", where) for i, v in enumerate(value)]
    if origin is Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise UserError(where, key, f"must be one of {', '.join(map(str, choices))} (got {value!r})")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise UserError(where, key, f"must be true or false, got {_type_name(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value.is_integer():
                value = int(value)
            else:
                raise UserError(where, key, f"must be an integer, got {_type_name(value)} {value!r}")
        if abs(value) > _MAX_INT:
            raise UserError(where, key, f"{value} is out of range (at most {_MAX_INT})")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(where, key, f"must be a number, got {_type_name(value)} {value!r}")
        if not math.isfinite(value):
            raise UserError(where, key, f"must be a finite number (got {value})")
        if abs(value) > _MAX_INT:
            raise UserError(where, key, f"{value} is out of range (at most {_MAX_INT})")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise UserError(where, key, f"must be a string, got {_type_name(value)}")
        return value
    raise TypeError(f"unsupported schema type {tp!r}")  # a bug in the schema, not user input


def _build(cls, data: dict, prefix: str, where: str):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else name
        if name not in names:
            raise UserError(where, key, "unknown key")
        kwargs[name] = _coerce(value, hints[name], key, where)
    missing = [
        f.name
        for f in dataclasses.fields(cls)
        if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        key = f"{prefix}.{missing[0]}" if prefix else missing[0]
        raise UserError(where, key, "missing required key")
    return cls(**kwargs)


def _type_name(value: Any) -> str:
    names = {dict: "a table", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    return names.get(type(value), type(value).__name__)


# -- overrides ----------------------------------------------------------------
def parse_set(text: str) -> tuple[str, Any]:
    """Parse one ``--set key=value``; the value is read as a TOML value, else as a bare string."""
    if "=" not in text:
        raise UserError("--set", text, "expected key=value")
    key, raw = text.split("=", 1)
    key, raw = key.strip(), raw.strip()
    if not key or any(not part for part in key.split(".")):
        raise UserError("--set", text, "empty key")
    if raw == "":
        raise UserError("--set", key, "empty value")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError("--set", key, f"must be a finite number (got {raw})")
    return key, value


def apply_overrides(data: dict, overrides: dict[str, Any], where: str = "--set") -> dict:
    """A copy of ``data`` with dotted-key overrides placed in it."""
    import copy

    out = copy.deepcopy(prices.switch_model(data, overrides))
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise UserError(where, dotted, f"{part!r} is not a table")
            node = child
        node[parts[-1]] = value
    return out


# -- loading ------------------------------------------------------------------
def shipped_scenarios() -> dict[str, Path]:
    """Scenario files shipped inside the installed ``scenarios`` package, by name."""
    root = resources.files("prunesim.scenarios")
    return {
        Path(entry.name).stem: Path(str(entry))
        for entry in root.iterdir()
        if entry.name.endswith(".toml")
    }


def resolve_path(name_or_path: str) -> Path:
    """A scenario path: an existing file, else the name of a shipped scenario."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists() or "/" in name_or_path:
        if path.is_dir():
            raise UserError(str(path), None, "is a directory, not a scenario file")
        if not path.exists():
            raise UserError(str(path), None, "no such scenario file")
        return path
    shipped = shipped_scenarios()
    if name_or_path not in shipped:
        known = ", ".join(sorted(shipped))
        raise UserError(name_or_path, None, f"unknown scenario (shipped: {known}; or give a path to a .toml file)")
    return shipped[name_or_path]


def read_toml(path: Path) -> dict:
    where = str(path)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise UserError(where, None, "is a directory, not a scenario file") from None
    except OSError as err:
        raise UserError(where, None, f"cannot read: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(where, None, f"malformed TOML: {err}") from None


def from_dict(data: dict, where: str = "<scenario>") -> Scenario:
    """A validated scenario from plain data; the policies' own tables are built from their declarations.

    A ``[pricing]`` table is completed from the model's entry in prices.toml first.
    """
    declared = policies.tables()
    data = dict(prices.fill(data, where))
    raw_tables = {name: data.pop(name) for name in list(data) if name in declared}
    if "tables" in data:
        raise UserError(where, "tables", "unknown key")
    scenario = _build(Scenario, data, "", where)
    scenario.tables = {name: _coerce(raw_tables.get(name, {}), cls, name, where) for name, cls in declared.items()}
    scenario.check(where)
    if scenario.policy not in policies.REGISTRY:
        known = ", ".join(sorted(policies.REGISTRY))
        raise UserError(where, "policy", f"unknown policy {scenario.policy!r} (known: {known})")
    for name, table in scenario.tables.items():
        table.check(name, where, scenario)
    return scenario


def load(name_or_path: str, overrides: dict[str, Any] | None = None) -> Scenario:
    """Load, override and validate a scenario; every problem is a :class:`UserError`."""
    path = resolve_path(name_or_path)
    data = read_toml(path)
    data.setdefault("name", path.stem)
    if overrides:
        data = apply_overrides(data, overrides)
        where = f"{path} (with --set)"
    else:
        where = str(path)
    return from_dict(data, where)


def replace(scenario: Scenario, overrides: dict[str, Any]) -> Scenario:
    """A new scenario with dotted-key overrides, validated."""
    return from_dict(apply_overrides(scenario.to_dict(), overrides), f"{scenario.name} (with overrides)")
