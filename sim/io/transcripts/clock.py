"""When each recorded model call happened: the replay's clock.

A replay follows the recorded times where the format records them, so that a
pause in the real session (the user away, a long tool run) lets a prompt cache
expire as it did. What each format records (docs/transcripts.md):

=================  ===========================================================
``claude-code``    every record's ``timestamp`` (ISO 8601): a call's time is
                   that of its first assistant record
``codex``          every record's ``timestamp``: a call's time is that of its
                   ``token_count`` event
``mini-swe-agent`` ``extra.response.created`` (Unix seconds) of each call
``swe-agent``,     no time per model call: the replay's clock is the scenario's
``openhands``,     latency model, and the replay says so
``openai``
=================  ===========================================================

The workload header holds the times as ``call_times``: seconds after the
first call, one per call (``null`` where a call recorded none).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

TIMED_FORMATS = ("claude-code", "codex", "mini-swe-agent")


def seconds(value) -> float | None:
    """A recorded time as Unix seconds: an ISO 8601 string or a number; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value > 0 else None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:  # a runtime writes UTC; a stamp without a zone is read as UTC, not as local time
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def relative(times: dict[int, float], turns: int) -> list[float | None] | None:
    """Per call 1..turns, seconds after the first recorded call (ms resolution); None when no call has a time.

    A time earlier than an earlier call's (clocks are not always monotonic) is
    read as that earlier time: the replay's clock never runs backwards. The
    import says so (:func:`backwards_note`).
    """
    if not times:
        return None
    start = times[min(times)]
    out: list[float | None] = []
    latest = 0.0
    for k in range(1, turns + 1):
        t = times.get(k)
        if t is None:
            out.append(None)
            continue
        latest = max(latest, round(t - start, 3))  # a call stamped before the first one is read as at it
        out.append(latest)
    return out


def backwards_note(times: dict[int, float], turns: int, source: str) -> str | None:
    """The warning for the calls :func:`relative` moves forward, or None when the times never run backwards."""
    latest, moved, most = None, [], 0.0
    for k in range(1, turns + 1):
        t = times.get(k)
        if t is None:
            continue
        if latest is not None and t < latest:
            moved.append(k)
            most = max(most, latest - t)
        latest = t if latest is None else max(latest, t)
    if not moved:
        return None
    return (f"{source}: {len(moved)} model call(s) are stamped before a call made earlier (the first: call "
            f"{moved[0]}, the most by {most:,.3f} s); each is read as made at that earlier time, so the replay's "
            "clock never runs backwards")
