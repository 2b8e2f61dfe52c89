"""The shipped price table (``prices.toml``): reading, checking, and filling a scenario's ``[pricing]``.

Every entry must hold every key of :data:`ENTRY_KEYS`; a problem is one
:class:`~prunesim.errors.UserError` naming the file, the model and the key. A
scenario's ``[pricing]`` table names a model and may override any of its keys;
:func:`fill` completes the table from the entry before the scenario is built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import tomllib
from datetime import UTC, datetime
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
# The keys a provider's defaults hold: how it caches prompts (prices and windows are per model).
PROVIDER_KEYS = ("cache", "ttl", "min_tokens", "granularity", "breakpoints", "lookback", "reuse") + TEXT_KEYS
# genai-prices' names of the prices a Pricing holds.
LIBRARY_KEYS = {"input": "input_mtok", "output": "output_mtok", "cache_read": "cache_read_mtok",
                "cache_write_5m": "cache_write_mtok", "cache_write_1h": "cache_write_1h_mtok"}
# The day whose prices genai-prices answers with: fixed, so that a run's bill never changes with the clock
# (the day the shipped table was read).
PRICES_AT = datetime(2026, 11, 29, tzinfo=UTC)
LIBRARY = "genai-prices"


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
    return {name: check_entry(name, entry, where) for name, entry in _models(data, where, ("providers",)).items()}


def _models(data: dict, where: str, also: tuple[str, ...] = ()) -> dict[str, dict]:
    """A price file's ``[models.NAME]`` tables (``also``: the other tables it may hold), each a table."""
    models = data.get("models")
    unknown = sorted(set(data) - {"models", *also})
    if unknown:
        raise UserError(where, unknown[0], "unknown table (entries go under [models.NAME])")
    if not isinstance(models, dict) or not models:
        raise UserError(where, "models", "no [models.NAME] entries")
    for name, entry in models.items():
        if not isinstance(entry, dict):
            raise UserError(where, f"models.{name}", "must be a table")
    return models


def providers() -> dict[str, dict]:
    """The shipped table's ``[providers.NAME]``: how each provider caches prompts, for models it has no entry of."""
    return _shipped_providers()


@lru_cache(maxsize=1)
def _shipped_providers() -> dict[str, dict]:
    where = str(shipped_path())
    data = tomllib.loads(shipped_path().read_text(encoding="utf-8")).get("providers", {})
    out = {}
    for name, entry in data.items():
        missing = [k for k in PROVIDER_KEYS if k not in entry]
        if missing or set(entry) - set(PROVIDER_KEYS):
            raise UserError(where, f"providers.{name}", f"must hold exactly {', '.join(PROVIDER_KEYS)}")
        full = {**entry, "provider": name, "input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write_5m": 0.0,
                "cache_write_1h": 0.0, "window": 1}
        check_entry(name, full, where)
        out[name] = dict(entry)
    return out


def digest(path: Path) -> str:
    """The first 12 hex digits of a file's SHA-256: names the exact table or fit a value came from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def read_user_table(path: Path) -> dict[str, dict]:
    """A user's price file (``--prices``): ``[models.NAME]`` entries in the shipped table's format, each key
    optional (what it leaves out comes from the shipped table or genai-prices); every key given is checked."""
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(where, None, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(where, None, f"malformed TOML: {err}") from None
    except (ValueError, RecursionError):
        raise UserError(where, None, "malformed TOML: a value too long or nested too deeply to read") from None
    out = {}
    for name, entry in _models(data, where).items():
        # Checked as a full entry would be: the keys it gives over the opus entry's (any complete one will do).
        cache = entry.get("cache", "implicit")
        check_entry(name, {**_shipped()["claude-opus-4-5"], "cache": cache,
                           "ttl": entry.get("ttl", "5m" if cache == "explicit" else "10m"), **entry}, where)
        out[name] = dict(entry)
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


@dataclasses.dataclass(frozen=True)
class Priced:
    """One key of a model's entry: its value, its source (``user``, ``fitted``, ``default``) and where it was read."""

    value: object
    source: str
    where: str


def library_version() -> str | None:
    """The installed genai-prices version, or None without it (the shipped table alone then prices models)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("genai-prices")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=64)
def library_entry(model: str) -> dict[str, Priced]:
    """What genai-prices knows of a model (its bundled snapshot, offline): prices, provider, context window.

    A tiered price (a long-context tier) gives its base price here, and its tiers under ``tiers``."""
    found = _library_model(model)
    if found is None:
        return {}
    provider, info = found
    where = f"{LIBRARY} {library_version()}: {provider.id}/{info.id}"
    price = info.get_prices(PRICES_AT)
    out: dict[str, Priced] = {"provider": Priced(provider.id, "default", where)}
    tiers = {}
    for key, name in LIBRARY_KEYS.items():
        value = getattr(price, name, None)
        if value is None:
            continue
        if hasattr(value, "tiers"):  # TieredPrices: the base rate, and from which prompt size each tier applies
            tiers[key] = [[t.start, float(t.price)] for t in value.tiers]
            value = value.base
        out[key] = Priced(float(value), "default", f"{where} {name}")
    if info.context_window:
        out["window"] = Priced(int(info.context_window), "default", f"{where} context_window")
    if tiers:
        out["tiers"] = Priced(tiers, "default", f"{where} (long-context tiers)")
    return out


def _library_model(model: str):
    try:
        from genai_prices import data_snapshot
    except ImportError:  # not installed: the shipped table alone
        return None
    try:
        return data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None


def entry(model: str, user_table: dict[str, dict] | None = None, user_where: str = "") -> dict[str, Priced]:
    """Every key of a model's entry that some source gives, with where it came from (module docstring).

    ``user_table``: a user's price file (:func:`read_user_table`), read from ``user_where``. Keys no source
    gives are missing from the answer: :func:`missing` names them."""
    out: dict[str, Priced] = {}
    shipped = _shipped().get(model)
    table = shipped_path().name
    library = library_entry(model)
    for key, value in library.items():  # prices first from the library, kept current by its maintainers
        if key in PRICE_KEYS or key == "provider":
            out[key] = value
    if shipped is not None:  # the fallback for prices; the source of the cache and the prompt window
        for key in ENTRY_KEYS:
            if key not in out:
                fitted = key == "reuse" and shipped["cache"] == "implicit"  # fitted on recorded bills (cost.md)
                out[key] = Priced(shipped[key], "fitted" if fitted else "default", f"{table}: models.{model}.{key}")
    for key, value in library.items():  # the library's context window, where the table has no entry
        if key not in out and key != "tiers":
            out[key] = value
    provider = out["provider"].value if "provider" in out else None
    defaults = providers().get(provider) if isinstance(provider, str) else None
    if defaults is not None:
        for key in PROVIDER_KEYS:
            if key not in out:
                out[key] = Priced(defaults[key], "default", f"{table}: providers.{provider}.{key}")
    cache = out.get("cache")
    if cache is not None and cache.value != "explicit" and "input" in out:  # writes carry no premium
        for key in ("cache_write_5m", "cache_write_1h"):
            if key not in out:
                out[key] = Priced(out["input"].value, out["input"].source, f"= input ({cache.value} cache: no "
                                  f"write premium; {out['input'].where})")
    for key, value in ((user_table or {}).get(model) or {}).items():
        out[key] = Priced(value, "user", f"{user_where}: models.{model}.{key}")
    return out


def missing(found: dict[str, Priced]) -> list[str]:
    """The [pricing] keys an entry still lacks."""
    return [key for key in PRICED_KEYS if key not in found]


def known_models(user_table: dict[str, dict] | None = None) -> list[str]:
    return sorted({*_shipped(), *(user_table or {})})


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


def fill(data: dict, where: str, user_table: dict[str, dict] | None = None, user_where: str = "") -> dict:
    """A scenario dict whose ``pricing`` table holds every key, the missing ones from the model's entry
    (:func:`entry`). A model whose entry lacks keys the table does not give is refused once, naming them all."""
    pricing = data.get("pricing")
    if pricing is None:
        return data
    if not isinstance(pricing, dict):
        raise UserError(where, "pricing", "must be a table")
    model = pricing.get("model", Pricing.model)
    if not isinstance(model, str):
        raise UserError(where, "pricing.model", "must be a string")
    found = entry(model, user_table, user_where)
    needed = [key for key in missing(found) if key not in pricing]
    if needed:
        raise UserError(where, "pricing.model", unknown_model_problem(model, needed, user_table))
    filled = {key: found[key].value for key in PRICED_KEYS if key not in pricing}
    return {**data, "pricing": {**filled, **pricing, "model": model}}


def unknown_model_problem(model: str, needed: list[str], user_table: dict | None = None) -> str:
    """Why a model cannot be billed, with every key it still needs: one message, not one key at a time."""
    version = library_version()
    library = f"{LIBRARY} {version}" if version else f"{LIBRARY} (not installed)"
    known = ", ".join(known_models(user_table))
    return (f"{model!r} lacks {len(needed)} price key(s) that neither {library} nor prices.toml gives: "
            f"{', '.join(needed)}; give them in a price file (--prices FILE, [models.{model}]), in [pricing] or "
            f"with --set pricing.KEY=VALUE, or bill the run as a known model with --set pricing.model=NAME "
            f"(prices.toml: {known})")


def switch_model(base: dict, overrides: dict) -> dict:
    """Before ``overrides`` change ``pricing.model``: drop the base's pricing keys that came from the old model.

    What a user set (listed in ``[replay] pinned``, or set by these overrides) survives the switch; the rest is
    filled again from the new model's entry."""
    if "pricing.model" not in overrides or not isinstance(base.get("pricing"), dict):
        return base
    replay = base.get("replay") if isinstance(base.get("replay"), dict) else {}
    pinned = replay.get("pinned") if isinstance(replay.get("pinned"), list) else []
    kept = {k: v for k, v in base["pricing"].items()
            if k == "model" or f"pricing.{k}" in overrides or f"pricing.{k}" in pinned or k not in PRICED_KEYS}
    return {**base, "pricing": kept}
