"""Per-call usage as the providers record it, under one set of names.

Every imported model call may carry a usage record (the workload header's
``usage`` list, docs/transcripts.md). Fields a format does not record are left
out, never guessed:

==========================  ==================================================
``prompt_tokens``           everything the call read: uncached + cache reads + cache writes
``input_tokens``            prompt tokens neither read from nor written to the cache
``cache_read_tokens``       prompt tokens read from the provider's prompt cache
``cache_write_tokens``      prompt tokens written to the cache (Anthropic's cache creation)
``cache_write_5m_tokens``   of those, written with a 5-minute lifetime
``cache_write_1h_tokens``   of those, written with a 1-hour lifetime
``output_tokens``           tokens the call wrote, reasoning included
``reasoning_tokens``        of those, reasoning (billed; whether later prompts keep it depends on the API)
``cost_usd``                the cost the runtime recorded for the call
==========================  ==================================================
"""

from __future__ import annotations

import math

FIELDS = ("prompt_tokens", "input_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_5m_tokens",
          "cache_write_1h_tokens", "output_tokens", "reasoning_tokens", "cost_usd")


MAX_COUNT = 10**12  # tokens in one call: far beyond any context window; more is a corrupt record


class BadUsage(ValueError):
    """A usage field recorded with a value no provider writes (negative, fractional, a boolean, a string)."""


def count(value) -> int | None:
    """A token count where any value may appear (a hint, not a bill): a non-negative integer, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > MAX_COUNT:
        return None
    return value


def recorded_count(record: dict, key: str, prefix: str = "") -> int | None:
    """``record[key]`` as a billed token count: None when absent or null; any other non-count is refused.

    A bill with a negative or fractional count is corrupt, and silently leaving
    the field out would change what the run is judged on.
    """
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadUsage(f"usage {prefix}{key} is {_shown(value)}: expected a non-negative integer")
    if value > MAX_COUNT:
        raise BadUsage(f"usage {prefix}{key} is {value}: more tokens than any call reads ({MAX_COUNT:.0e})")
    return value


def recorded_cost(record: dict, key: str) -> float | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BadUsage(f"usage {key} is {_shown(value)}: expected a non-negative number of dollars")
    return float(value)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _part_of(part: int | None, part_name: str, whole: int | None, whole_name: str) -> None:
    if part is not None and whole is not None and part > whole:
        raise BadUsage(f"usage {part_name} ({part}) exceeds {whole_name} ({whole})")


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _clean(fields: dict) -> dict:
    """The recorded fields; a count derived from several (a prompt of input plus cache reads and writes) is held
    to the same bound as a recorded one, so that a workload import writes is one ``run --workload`` reads."""
    for key, value in fields.items():
        if isinstance(value, int) and value > MAX_COUNT:
            raise BadUsage(f"usage {key} adds up to {value}: more tokens than any call reads ({MAX_COUNT:.0e})")
    return {k: v for k, v in fields.items() if v is not None}


def from_openai(usage) -> dict:
    """Chat-completions usage (``prompt_tokens``, ``prompt_tokens_details.cached_tokens``, ...).

    Raises :class:`BadUsage` for a field recorded with an impossible value.
    """
    u = _dict(usage)
    prompt = recorded_count(u, "prompt_tokens")
    details = _dict(u.get("prompt_tokens_details"))
    cached = recorded_count(details, "cached_tokens", "prompt_tokens_details.")
    written = recorded_count(details, "cache_write_tokens", "prompt_tokens_details.")
    _part_of(cached, "prompt_tokens_details.cached_tokens", prompt, "prompt_tokens")
    if cached is not None and written is not None:
        _part_of(cached + written, "cached_tokens + cache_write_tokens", prompt, "prompt_tokens")
    out = _dict(u.get("completion_tokens_details"))
    fields = {
        "prompt_tokens": prompt,
        "cache_read_tokens": cached,
        "cache_write_tokens": written,
        "input_tokens": prompt - (cached or 0) - (written or 0) if prompt is not None else None,
        "output_tokens": recorded_count(u, "completion_tokens"),
        "reasoning_tokens": recorded_count(out, "reasoning_tokens", "completion_tokens_details."),
        "cost_usd": recorded_cost(u, "cost"),
    }
    return _clean(fields)


def from_anthropic(usage) -> dict:
    """Messages-API usage: prompt = input + cache reads + cache writes. Raises :class:`BadUsage` as above."""
    u = _dict(usage)
    uncached = recorded_count(u, "input_tokens")
    read = recorded_count(u, "cache_read_input_tokens")
    written = recorded_count(u, "cache_creation_input_tokens")
    split = _dict(u.get("cache_creation"))
    fields = {
        "prompt_tokens": uncached + (read or 0) + (written or 0) if uncached is not None else None,
        "input_tokens": uncached,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "cache_write_5m_tokens": recorded_count(split, "ephemeral_5m_input_tokens", "cache_creation."),
        "cache_write_1h_tokens": recorded_count(split, "ephemeral_1h_input_tokens", "cache_creation."),
        "output_tokens": recorded_count(u, "output_tokens"),
    }
    return _clean(fields)


def from_codex(usage) -> dict:
    """Codex CLI ``last_token_usage``: ``input_tokens`` already includes ``cached_input_tokens``.

    Raises :class:`BadUsage` as above.
    """
    u = _dict(usage)
    prompt = recorded_count(u, "input_tokens")
    cached = recorded_count(u, "cached_input_tokens")
    _part_of(cached, "cached_input_tokens", prompt, "input_tokens")
    fields = {
        "prompt_tokens": prompt,
        "cache_read_tokens": cached,
        "input_tokens": prompt - cached if prompt is not None and cached is not None else None,
        "output_tokens": recorded_count(u, "output_tokens"),
        "reasoning_tokens": recorded_count(u, "reasoning_output_tokens"),
    }
    return _clean(fields)
