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


def count(value) -> int | None:
    """A recorded token count: a non-negative integer, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 10**12:
        return None
    return value


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _clean(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if v is not None}


def from_openai(usage) -> dict:
    """Chat-completions usage (``prompt_tokens``, ``prompt_tokens_details.cached_tokens``, ...)."""
    u = _dict(usage)
    prompt = count(u.get("prompt_tokens"))
    details = _dict(u.get("prompt_tokens_details"))
    cached = count(details.get("cached_tokens"))
    written = count(details.get("cache_write_tokens"))
    out = _dict(u.get("completion_tokens_details"))
    cost = u.get("cost")
    fields = {
        "prompt_tokens": prompt,
        "cache_read_tokens": cached,
        "cache_write_tokens": written,
        "input_tokens": prompt - (cached or 0) - (written or 0)
        if prompt is not None and (cached or 0) + (written or 0) <= prompt else None,
        "output_tokens": count(u.get("completion_tokens")),
        "reasoning_tokens": count(out.get("reasoning_tokens")),
        "cost_usd": float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool)
        and math.isfinite(cost) and cost >= 0 else None,
    }
    return _clean(fields)


def from_anthropic(usage) -> dict:
    """Messages-API usage: prompt = input + cache reads + cache writes."""
    u = _dict(usage)
    uncached = count(u.get("input_tokens"))
    read = count(u.get("cache_read_input_tokens"))
    written = count(u.get("cache_creation_input_tokens"))
    split = _dict(u.get("cache_creation"))
    fields = {
        "prompt_tokens": uncached + (read or 0) + (written or 0) if uncached is not None else None,
        "input_tokens": uncached,
        "cache_read_tokens": read,
        "cache_write_tokens": written,
        "cache_write_5m_tokens": count(split.get("ephemeral_5m_input_tokens")),
        "cache_write_1h_tokens": count(split.get("ephemeral_1h_input_tokens")),
        "output_tokens": count(u.get("output_tokens")),
    }
    return _clean(fields)


def from_codex(usage) -> dict:
    """Codex CLI ``last_token_usage``: ``input_tokens`` already includes ``cached_input_tokens``."""
    u = _dict(usage)
    prompt = count(u.get("input_tokens"))
    cached = count(u.get("cached_input_tokens"))
    fields = {
        "prompt_tokens": prompt,
        "cache_read_tokens": cached,
        "input_tokens": prompt - cached if prompt is not None and cached is not None and cached <= prompt else None,
        "output_tokens": count(u.get("output_tokens")),
        "reasoning_tokens": count(u.get("reasoning_output_tokens")),
    }
    return _clean(fields)
