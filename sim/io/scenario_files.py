"""Scenario files (TOML): reading, ``extends``, ``--set`` overrides and validation.

Loading walks the TOML against the dataclasses of :mod:`prunesim.model.scenario`,
so an unknown key, a wrong type or an out-of-range value is reported with the
file and the dotted key that holds it.

A file may start from another scenario, ``extends = "oscillation-40"`` (a
shipped name, or a path relative to the file), and then changes only what it
names: tables merge key by key, any other value (lists included) replaces the
base's. The base may extend another in turn; a cycle or an unknown base is an
error naming the file. A scenario's ``name`` and ``description`` are its own.

A replay of a recording takes its window, budget, trigger and ``[pricing]``
from the recorded run (``[replay] recorded``); a file extending another, a
``--set``, a ``--grid`` point or a user's own ``[pricing]`` that sets one of
them means it: the key (``pricing.KEY`` for a price key: that key alone) is
listed in ``[replay] pinned`` and the recording no longer sets it. Which
source each value came from is resolved by :mod:`prunesim.io.settings`, which
:func:`load` and :func:`replace` call.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import tomllib
import types
import typing
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from prunesim import policies
from prunesim.errors import UserError
from prunesim.io import inputs, prices
from prunesim.model.scenario import (  # noqa: F401 - the types are part of this module's interface
    PINNABLE,
    Decision,
    InitialSpan,
    Latency,
    NeedParams,
    Pricing,
    ReplayParams,
    Scenario,
    ScriptedEvent,
    SizeDist,
    TombstoneParams,
    Workload,
    seed_problem,
)

# -- building dataclasses from plain data -------------------------------------
_MAX_INT = 10**12  # larger sizes are typos, and would overflow numpy's draws


def _coerce(value: Any, tp: Any, key: str, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        # ``X | None``: None means "unset" (a preset gives the value); a file can only set an X. ``X | Y``: the
        # first that takes the value (``bool | list[str]``: true, or a list of names).
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        for i, one in enumerate(inner):
            try:
                return _coerce(value, one, key, where)
            except UserError as err:
                if i == len(inner) - 1:
                    if len(inner) > 1:
                        raise UserError(where, key, f"must be {' or '.join(map(_schema_name, inner))}, "
                                                    f"got {_type_name(value)}") from None
                    raise err from None
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
        if key == "seed" and (problem := seed_problem(value)):  # worded as a seed is everywhere
            raise UserError(where, key, problem)
        if abs(value) > _MAX_INT:
            raise UserError(where, key, f"{value} is out of range (at most {_MAX_INT})")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(where, key, f"must be a number, got {_type_name(value)} {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # (an int as large as 10**400 is no float)
            raise UserError(where, key, f"must be a finite number (got {value})")
        if abs(value) > _MAX_INT:
            raise UserError(where, key, f"{value} is out of range (at most {_MAX_INT})")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise UserError(where, key, f"must be a string, got {_type_name(value)}")
        return value
    raise TypeError(f"unsupported schema type {tp!r}")  # a bug in the schema, not user input


@functools.cache
def _hints(cls) -> dict:
    """The field types of a scenario table: resolved once per class (every scenario build reads them)."""
    return typing.get_type_hints(cls)


def _build(cls, data: dict, prefix: str, where: str):
    hints = _hints(cls)
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


def _schema_name(tp: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(tp, "a list" if typing.get_origin(tp) is list else "a table")


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
    value = toml_value(raw, "--set", key)
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError("--set", key, f"must be a finite number (got {raw})")
    return key, value


def toml_value(raw: str, flag: str, key: str) -> Any:
    """A value typed on the command line read as a TOML value, else the text itself (a bare string)."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    except ValueError:  # an integer of thousands of digits (Python's limit on converting them)
        raise UserError(flag, key, "a number too long to read (thousands of digits)") from None
    except RecursionError:
        raise UserError(flag, key, "a value nested too deeply to read") from None


def merge(base: dict, layer: dict) -> dict:
    """``base`` with ``layer`` on top: tables merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def check_replay_overrides(overrides: dict[str, Any] | None, flag: str = "--set") -> None:
    """Refuse what a replay of a transcript cannot take: it runs the transcript's own turns, so a ``turns``
    override would change nothing and say nothing."""
    if overrides and "turns" in overrides:
        raise UserError(flag, "turns", "cannot be set for a replay: it runs the transcript's own turns")



def pinned_by(layer) -> list[str]:
    """What a layer (a file's data over its base, or dotted overrides) sets of the keys a recording would set:
    ``window``, ``budget``, ``trigger`` and each ``pricing.KEY`` it names (a whole ``pricing`` table: its keys)."""
    out: list[str] = []
    items = layer.items() if isinstance(layer, dict) else ((k, None) for k in layer)
    for key, value in items:
        head, _, rest = str(key).partition(".")
        if head == "pricing":
            if rest:
                out.append(f"pricing.{rest.split('.', 1)[0]}")
            elif isinstance(value, dict):
                out.extend(f"pricing.{k}" for k in value)
            else:
                out.append("pricing")
        elif head in PINNABLE and not rest:
            out.append(head)
    return list(dict.fromkeys(out))


def absolute_sizes_win(data: dict, layer) -> dict:
    """What a layer sets of the recorded runtime's keys is pinned (module docstring).

    ``layer``: the layer's data or its dotted keys (:func:`pinned_by`). The scenario's own window, budget and
    trigger are placeholders on a replay of a recording: each replay sets those not pinned. So that the
    scenario itself is valid, a budget not set follows a window that is, and a window and budget not set make
    room for a trigger that is.
    """
    replay = data.get("replay")
    if not isinstance(replay, dict):
        return data
    named = pinned_by(layer)
    have = replay.get("pinned", [])
    if not named or not isinstance(have, list):
        return data
    pinned = [*have, *(k for k in named if k not in have)]
    out = merge(data, {"replay": {"pinned": pinned}})
    if replay.get("recorded") is True:
        sizes = {k: out.get(k) for k in ("window", "budget", "trigger")}
        if all(type(v) is int and abs(v) <= _MAX_INT for v in sizes.values()):  # else the check names the key
            if "budget" not in pinned:
                out["budget"] = sizes["window"] if "window" in pinned else max(sizes["budget"], sizes["trigger"])
            if "window" not in pinned:
                out["window"] = max(sizes["window"], out["budget"])
            if "trigger" not in pinned:
                out["trigger"] = min(sizes["trigger"], out["budget"])
    return out


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


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a scenario file, or None when it can (only a regular file is read)."""
    return inputs.problem(path, "scenario file")


def resolve_path(name_or_path: str) -> Path:
    """A scenario path: an existing file, else the name of a shipped scenario."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or os.path.lexists(path) or "/" in name_or_path:
        problem = file_problem(path)
        if problem:
            raise UserError(str(path), None, problem)
        return path
    shipped = shipped_scenarios()
    if name_or_path not in shipped:
        known = ", ".join(sorted(shipped))
        raise UserError(name_or_path, None, f"unknown scenario (shipped: {known}; or give a path to a .toml file)")
    return shipped[name_or_path]


def read_toml(path: Path, what: str = "scenario file") -> dict:
    where = str(path)
    try:
        text = inputs.read_bytes(path, what).decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(where, None, f"malformed TOML: {err}") from None
    except ValueError:  # tomllib converts an integer of thousands of digits, past Python's limit
        raise UserError(where, None, "malformed TOML: a number too long to read (thousands of digits)") from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise UserError(where, None, "malformed TOML: nested too deeply to read") from None


def from_dict(data: dict, where: str = "<scenario>", policy: str | type | Sequence | None = None,
              price_file: tuple[dict, str] | None = None) -> Scenario:
    """A validated scenario from plain data; the policies' own tables are built from their declarations.

    ``policy``: the policy the scenario will run under when it is not the one the data names (a name or a
    Policy subclass), or several (a compare, a sweep): their tables are known too, whatever was loaded before
    in the process. Every table is read and typed, but checked against the scenario only for the policies
    that will run (these, else the data's; none for ``()``: :func:`~prunesim.runner.check_tables`), so a
    ``[gate]`` that would be wrong for slack-gated does not refuse a naive run; ``run_one`` checks the tables
    of the policy it runs. A ``[pricing]`` table is completed from the model's entry first
    (:func:`prices.fill`; ``price_file``: a user's price table and the file it was read from).
    """
    named = [] if policy is None else [policy] if isinstance(policy, str | type) else list(policy)
    if isinstance(data.get("policy"), str):  # a policy from a file or a plugin declares its tables once loaded
        inputs.note_policy(data["policy"])
        try:
            policies.get_policy(data["policy"])
        except UserError as err:
            raise UserError(where, "policy", err.problem) from None
    # Every scenario has the built-in policies' tables; a table of a policy from a plugin or a file only when
    # the data sets it or names that policy, so that what was loaded earlier in a process never changes a
    # scenario (its to_dict(), a sweep's run ids) or what a worker must import to read it.
    fields = {f.name for f in dataclasses.fields(Scenario)}
    known = policies.tables()
    if any(isinstance(v, dict) and k not in fields and k not in known for k, v in data.items()):
        known = policies.tables(plugins=True)  # a table only an installed plugin may declare
    own = dict(policies.get_policy(data["policy"]).tables) if isinstance(data.get("policy"), str) else {}
    for one in named:
        own.update(policies.get_policy(one).tables)
    known = {**known, **own}
    declared = {name: cls for name, cls in known.items()
                if name in policies.builtin_tables() or name in data or name in own}
    data = dict(prices.fill(data, where, *(price_file or ())))
    raw_tables = {name: data.pop(name) for name in list(data) if name in declared}
    if "tables" in data:
        raise UserError(where, "tables", "unknown key")
    scenario = _build(Scenario, data, "", where)
    scenario.tables = {name: _coerce(raw_tables.get(name, {}), cls, name, where) for name, cls in declared.items()}
    scenario.check(where)
    from prunesim.runner import check_tables  # late: reading a scenario file need not import the engine

    in_play = [policies.get_policy(one) for one in dict.fromkeys(named if policy is not None else [scenario.policy])]
    for cls in in_play:  # the data's policy, or the default; () checks none. Of several, the one refused is named
        check_tables(scenario, cls, where if len(in_play) == 1 else f"{where} under {cls.name}")
    return scenario


MAX_EXTENDS = 64  # files in one extends chain; shipped scenarios use one or two


def dumps(data: dict) -> str:
    """Scenario data as the text of a scenario file: the one writer of scenario files (``calibrate``)."""
    import tomli_w  # late: only calibrate writes a scenario file

    return tomli_w.dumps(data)


def resolve_text(text: str, path: Path) -> Scenario:
    """The scenario a file holding ``text`` would be at ``path`` (its ``extends`` resolved from there), validated:
    what a writer checks before it writes, so that nothing it writes is a file ``run`` refuses."""
    where = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(where, None, f"malformed TOML: {err}") from None
    data = resolve_extends(data, path)
    data.setdefault("name", inputs.text_name(path.stem))
    return from_dict(data, where)


def read_scenario(path: Path, chain: tuple[Path, ...] = (), trail: list | None = None) -> dict:
    """A scenario file's data with its ``extends`` chain resolved (see the module docstring). ``trail``, when
    given, receives each file of the chain with its own data, the base first (where each value came from)."""
    return resolve_extends(read_toml(path), path, chain, trail)


def resolve_extends(data: dict, path: Path, chain: tuple[Path, ...] = (), trail: list | None = None) -> dict:
    """``data``, read from ``path``, with its ``extends`` chain resolved (``trail``: as :func:`read_scenario`)."""
    data = dict(data)
    base = data.pop("extends", None)
    if base is None:
        if trail is not None:
            trail.append((path, data))
        return data
    where = str(path)
    if not isinstance(base, str) or not base.strip():
        raise UserError(where, "extends", "must be a shipped scenario's name or a path to a .toml file")
    if len(chain) >= MAX_EXTENDS:  # each link is a frame of this recursion
        raise UserError(where, "extends", f"a chain of more than {MAX_EXTENDS} scenario files")
    base_path = _base_path(base, path)
    here = path.resolve()
    seen = (*chain, here)
    if base_path.resolve() in seen:
        names = " -> ".join(p.name for p in (*seen, base_path.resolve()))
        raise UserError(where, "extends", f"a cycle: {names}")
    inherited = read_scenario(base_path, seen, trail)
    if trail is not None:
        trail.append((path, data))
    for own in ("name", "description"):  # a scenario's name and description are its own
        inherited.pop(own, None)
    merged = merge(inherited, data)
    return absolute_sizes_win(merged, data)


def _base_path(base: str, path: Path) -> Path:
    candidate = Path(base)
    if candidate.suffix == ".toml" or "/" in base:
        if not candidate.is_absolute():
            candidate = path.parent / candidate
        problem = file_problem(candidate)
        if problem:
            raise UserError(str(path), "extends", f"{str(candidate)!r}: {problem}")
        return candidate
    shipped = shipped_scenarios()
    if base not in shipped:
        raise UserError(str(path), "extends",
                        f"unknown scenario {base!r} (shipped: {', '.join(sorted(shipped))}; or a path to a .toml file)")
    return shipped[base]


def load(name_or_path: str, overrides: dict[str, Any] | None = None, policy: str | type | Sequence | None = None,
         given_as: str = "--set", prices: str | Path | None = None) -> Scenario:
    """Load, override and validate a scenario; every problem is a :class:`UserError`. ``policy``: as in
    :func:`from_dict`; ``given_as``: what the caller gave the overrides with (``--set``, or the API's
    ``overrides``), named by an error in them; ``prices``: a user's price file. The values are resolved, each
    with where it came from, by :func:`prunesim.io.settings.load`."""
    from prunesim.io import settings  # late: settings reads scenario files through this module

    return settings.load(name_or_path, overrides, policy, given_as, prices).scenario


def load_replay(name_or_path: str, overrides: dict[str, Any] | None = None,
                policy: str | type | Sequence | None = None, given_as: str = "--set",
                prices: str | Path | None = None) -> Scenario:
    """:func:`load` for a replay of transcripts: every command that replays one refuses what it cannot take
    (:func:`check_replay_overrides`) here, so that none can forget to."""
    check_replay_overrides(overrides, given_as)
    return load(name_or_path, overrides, policy, given_as, prices)


def replace(scenario: Scenario, overrides: dict[str, Any], pin: bool = True,
            policy: str | type | Sequence | None = None) -> Scenario:
    """A new scenario with dotted-key overrides, validated (``pin``: the keys it sets are pinned, as by --set;
    ``policy`` as in :func:`from_dict`); what they set is the user's (:func:`prunesim.io.settings.with_overrides`)."""
    from prunesim.io import settings

    return settings.with_overrides(scenario, overrides, pin=pin, policy=policy)


# -- the defaults table ---------------------------------------------------------
def nested_defaults() -> dict[str, Any]:
    """Every parameter, in its table, at the value a scenario file that omits it gets (None: unset)."""
    data = Scenario().to_dict(full=True)  # the [agent] table too: its unset keys take the profile's values
    data.update({name: dataclasses.asdict(cls()) for name, cls in policies.builtin_tables().items()})
    return {k: v for k, v in data.items() if k not in ("name", "description")}


def flat_defaults() -> dict[str, Any]:
    """Every single-valued parameter (dotted) and the value a scenario file that omits it gets."""
    return flatten(nested_defaults())


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of nested tables (a list is one value)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


_flatten = flatten  # the name plots/report.py reads


def defaults_table() -> tuple[list[str], list[list[str]]]:
    """The defaults against every shipped scenario: (header, rows); a cell is blank where it equals the default."""
    defaults = flat_defaults()
    shipped = {name: flatten(load(name).to_dict(full=True)) for name in sorted(shipped_scenarios())}
    header = ["key", "default", *shipped]
    rows = []
    for key, default in defaults.items():
        cells = [_show(values.get(key)) if values.get(key) != default else "" for values in shipped.values()]
        rows.append([key, _show(default), *cells])
    return header, rows


def _show(value: Any) -> str:
    """A value as ``prunesim defaults`` shows it: as TOML writes it, or ``unset`` (a preset or the policy gives
    it: no TOML value) and ``N item(s)`` for a list of tables."""
    if value is None:
        return "unset"
    if isinstance(value, list):
        return f"{len(value)} item(s)" if value else "[]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return f"{value:g}" if isinstance(value, float) else str(value)
