"""What the first call after each recorded Claude Code compaction read from the cache, and why.

    python scripts/compaction_reads.py [SESSIONS]   (default: the shared traces' claude-code-dev)

Claude Code summarizes the conversation in a model call of its own that the
session file does not record, then writes a ``compact_boundary`` record; a
manual compaction also records the ``/compact`` command, when that call began.
The hypothesis checked: the summarizer sends the session's system prompt and
tools, so it reads and refreshes their cache entry, and the first call after
the boundary finds it live even when the last recorded call lies more than the
5-minute TTL back.

Per compaction: the Claude Code version, when the command and the last
recorded call came (seconds before the boundary), when the first call after it
came and what it read; the session's *system prefix* (``Run.system_prefix``:
the read its cache breaks within the TTL stop at most often, short of its first
prompt: the runtime's mark after the system prompt and tools) and its
*long-pause read* (what its calls
after pauses longer than the TTL read most often, compactions aside). The
verdict: a first call within the TTL of the last recorded call cannot tell
(the entry is live either way), nor can one past the TTL of the summarizer's
call (the command, or the boundary when none is recorded: expired either way);
between the two, a read of the system prefix supports the hypothesis, any
other read contradicts it.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np
from prunesim.io import prices
from prunesim.io.transcripts.workload import BREAK_WITHIN_S
from prunesim.studies import cache_fidelity as cf

MODEL = "claude-opus-4-5"
TTL_S = 300.0
SAME = 64  # tokens: reads this close are the same prefix (a mark moves by a few tokens between versions of a part)


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def compactions(path: Path) -> list[dict]:
    """The session's compactions in order: boundary time, the /compact command's time (or None), version, trigger.

    The command's record follows the boundary's in the file, stamped with the
    time the command was given, before the boundary.
    """
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                out.append({"at": _time(r["timestamp"]), "command": None, "version": r.get("version"),
                            "trigger": (r.get("compactMetadata") or {}).get("trigger")})
                continue
            content = r["message"].get("content") if isinstance(r.get("message"), dict) else None
            if (out and out[-1]["command"] is None and r.get("type") == "user" and isinstance(content, str)
                    and "<command-name>/compact</command-name>" in content and _time(r["timestamp"]) <= out[-1]["at"]):
                out[-1]["command"] = _time(r["timestamp"])
    return out


def long_pause_read(run: cf.Run) -> int | None:
    """What the session's calls after pauses longer than the TTL read most often (the longest of equals),
    compactions aside; None when none read anything."""
    reads = Counter(c.cached for prev, c in zip(run.calls, run.calls[1:], strict=False)
                    if not c.reset and c.time_s - prev.time_s > TTL_S and c.cached > 0)
    return max(reads, key=lambda read: (reads[read], read)) if reads else None


def main() -> int:
    traces = Path(os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sessions", type=Path, nargs="?", default=traces / "claude-code-dev")
    args = ap.parse_args()
    assert BREAK_WITHIN_S <= TTL_S
    tally = Counter()
    paused = []  # reads of the calls after pauses longer than the TTL, compactions aside, in every session
    bills = 0.0
    price = prices.pricing(MODEL)
    for path in sorted(args.sessions.glob("*.jsonl")):
        run = next(iter(cf.read_runs(path)), None)
        if not isinstance(run, cf.Run):
            continue
        bills += cf.reference_cost(run, price)
        paused += [c.cached for prev, c in zip(run.calls, run.calls[1:], strict=False)
                   if not c.reset and c.time_s - prev.time_s > TTL_S]
        found = compactions(path)
        if not found:
            continue
        system, long_pause = run.system_prefix(), long_pause_read(run)
        resets = [k for k, c in enumerate(run.calls) if c.reset]
        at = [k for k, read in sorted(run.recorded_events()[1].items()) if read == system]
        print(f"{run.name[-12:]}: system prefix {system} (read at the cache breaks of call(s) "
              f"{', '.join(map(str, at))}), long-pause read {long_pause}")
        for event, k in zip(found, resets, strict=True):
            first, last = run.calls[k], run.calls[k - 1]
            pause = first.time_s - last.time_s
            began = event["command"] if event["command"] is not None else event["at"]  # the summarizer's call
            command = f"{event['at'] - event['command']:.0f} s" if event["command"] is not None else "none recorded"
            if pause <= TTL_S:
                kind, why = "cannot tell", "within the TTL of the last recorded call: live either way"
            elif first.time_s - began > TTL_S:
                kind, why = "cannot tell", "past the TTL of the summarizer's call too: expired either way"
            elif system is not None and abs(first.cached - system) <= SAME:
                kind, why = "supports", "the system prefix was live"
            else:
                same = long_pause is not None and abs(first.cached - long_pause) <= SAME
                also = " = the long-pause read" if same else ""
                kind, why = "contradicts", f"read {first.cached:,}{also}, not the system prefix {system:,}"
            tally[kind] += 1
            print(f"  call {k + 1} (Claude Code {event['version']}, {event['trigger']}): command {command} and last "
                  f"call {event['at'] - last.time_s:.0f} s before the boundary; the call "
                  f"{first.time_s - event['at']:.0f} s after it, {pause:.0f} s after the last call, read "
                  f"{first.cached:,}: {kind} ({why})")
    print(f"{sum(tally.values())} compactions: " + ", ".join(f"{n} {v}" for v, n in sorted(tally.items())))
    read = [x for x in paused if x > 0]
    worth = sum(read) * (price.cache_write_5m - price.cache_read) / 1e6
    print(f"calls after a pause longer than the TTL, compactions aside: {len(paused)}; {len(read)} read a prefix "
          f"(median {int(np.median(read)):,} tokens), worth ${worth:.2f} at {MODEL}'s write-minus-read price "
          f"({100 * worth / bills:.1f}% of the sessions' bills)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
