"""The shipped price table (``prices.toml``): reading, checking, and filling a scenario's ``[pricing]``.

Every entry must hold every key of :data:`ENTRY_KEYS`; a problem is one
:class:`~prunesim.errors.UserError` naming the file, the model and the key. A
scenario's ``[pricing]`` table names a model and may override any of its keys;
:func:`fill` completes the table from the entry before the scenario is built.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from functools import lru_cache
from importlib import resources
from pathlib import Path

from prunesim.errors import UserError
from prunesim.model.scenario import CACHE_BEHAVIOURS, TTLS, Pricing, duration_s

# The keys a scenario's Pricing takes from an entry (everything but the model's name).
PRICED_KEYS = tuple(f.name for f in dataclasses.fields(Pricing) if f.name != "model")
PRICE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
INT_KEYS = ("min_tokens", "granularity", "breakpoints", "lookback", "window")
TEXT_KEYS = ("source", "read", "notes")
# ``window``: the model's documented context window (prompt tokens), the window of a replay of a recording
# that does not record its own. Not a [pricing] key: the replay sets the scenario's window from it.
ENTRY_KEYS = PRICED_KEYS + ("window",) + TEXT_KEYS


def shipped_path() -> Path:
    return Path(str(resources.files("prunesim.io").joinpath("prices.toml")))


def load(path: Path | None = None) -> dict[str, dict]:
    """Model name -> checked entry. Without ``path``, the shipped table (read once)."""
    if path is None:
        return _shipped()
    return _load(Path(path))


@lru_cache(maxsize=1)
def _shipped() -> dict[str, dict]:
    return _load(shipped_path())


def _load(path: Path) -> dict[str, dict]:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(where, None, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(where, None, f"malformed TOML: {err}") from None
    models = data.get("models")
    unknown = sorted(set(data) - {"models"})
    if unknown:
        raise UserError(where, unknown[0], "unknown table (entries go under [models.NAME])")
    if not isinstance(models, dict) or not models:
        raise UserError(where, "models", "no [models.NAME] entries")
    out = {}
    for name, entry in models.items():
        if not isinstance(entry, dict):
            raise UserError(where, f"models.{name}", "must be a table")
        out[name] = check_entry(name, entry, where)
    return out


def check_entry(name: str, entry: dict, where: str) -> dict:
    """One entry, checked: every key present, of the right type and range."""
    for key in entry:
        if key not in ENTRY_KEYS:
            raise UserError(where, f"model {name!r}: {key}", f"unknown key (known: {', '.join(ENTRY_KEYS)})")
    for key in ENTRY_KEYS:
        if key not in entry:
            raise UserError(where, f"model {name!r}: {key}", "missing")
    for key in PRICE_KEYS + ("reuse",):
        _number(entry[key], name, key, where)
    for key in INT_KEYS:
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UserError(where, f"model {name!r}: {key}", f"must be a non-negative integer (got {value!r})")
    for key in ("granularity", "breakpoints", "window"):
        if entry[key] < 1:
            raise UserError(where, f"model {name!r}: {key}", f"must be at least 1 (got {entry[key]})")
    if not 0 <= entry["reuse"] <= 1:
        raise UserError(where, f"model {name!r}: reuse", f"must be between 0 and 1 (got {entry['reuse']})")
    if entry["cache"] not in CACHE_BEHAVIOURS:
        raise UserError(where, f"model {name!r}: cache",
                        f"unknown cache behaviour {entry['cache']!r} (known: {', '.join(CACHE_BEHAVIOURS)})")
    if duration_s(entry["ttl"]) is None or (entry["cache"] == "explicit" and entry["ttl"] not in TTLS):
        allowed = " or ".join(TTLS) if entry["cache"] == "explicit" else "a duration such as 5m, 1h or 600s"
        raise UserError(where, f"model {name!r}: ttl", f"must be {allowed} (got {entry['ttl']!r})")
    for key in ("provider",) + TEXT_KEYS:
        if not isinstance(entry[key], str) or (key != "notes" and not entry[key].strip()):
            raise UserError(where, f"model {name!r}: {key}", "must be a non-empty string")
    return dict(entry)


def _number(value, name: str, key: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UserError(where, f"model {name!r}: {key}", f"must be a number (got {value!r})")
    if value < 0:
        raise UserError(where, f"model {name!r}: {key}", f"must not be negative (got {value})")


# The model a format's runtime runs when its files do not name one (Codex 0.34 rollouts record none).
ASSUMED_MODELS = {"codex": "gpt-5-codex"}


def known_name(raw: str) -> str:
    """A provider's model string as this table names it: no router prefix (``google/``), no date suffix."""
    name = raw.strip().rsplit("/", 1)[-1]
    return re.sub(r"-\d{8}$", "", name)


def entry_values(entry: dict) -> dict:
    """The keys of an entry that a scenario's Pricing holds."""
    return {key: entry[key] for key in PRICED_KEYS}


def pricing(model: str, **overrides) -> Pricing:
    """A checked Pricing for a model of the shipped table, with any key overridden (for code that builds
    scenarios directly: ``Pricing(model=...)`` alone would keep the default model's prices)."""
    data = fill({"pricing": {"model": model, **overrides}}, "pricing()")["pricing"]
    p = Pricing(**data)
    p.check("pricing", "pricing()")
    return p


def fill(data: dict, where: str, table: dict[str, dict] | None = None) -> dict:
    """A scenario dict whose ``pricing`` table holds every key, the missing ones from the model's entry.

    A model not in the table is allowed only when the scenario gives every key itself.
    """
    pricing = data.get("pricing")
    if pricing is None:
        return data
    if not isinstance(pricing, dict):
        raise UserError(where, "pricing", "must be a table")
    table = load() if table is None else table
    model = pricing.get("model", Pricing.model)
    if not isinstance(model, str):
        raise UserError(where, "pricing.model", "must be a string")
    missing = [key for key in PRICED_KEYS if key not in pricing]
    if model not in table:
        if missing:
            raise UserError(where, "pricing.model", f"unknown model {model!r} (known: {', '.join(sorted(table))}; "
                                                    f"or give every key of [pricing], {missing[0]} is missing)")
        return data
    entry = table[model]
    return {**data, "pricing": {**{k: entry[k] for k in missing}, **pricing, "model": model}}


def switch_model(base: dict, overrides: dict) -> dict:
    """Before ``overrides`` change ``pricing.model``: drop the base's pricing keys that are the old model's own.

    What a user set on purpose survives the switch; what came from the old
    entry is filled again from the new one.
    """
    if "pricing.model" not in overrides or not isinstance(base.get("pricing"), dict):
        return base
    old = base["pricing"]
    table = load()
    entry = table.get(old.get("model", Pricing.model))
    if entry is None:
        return base
    kept = {k: v for k, v in old.items()
            if k == "model" or f"pricing.{k}" in overrides or k not in PRICED_KEYS or v != entry[k]}
    return {**base, "pricing": kept}
