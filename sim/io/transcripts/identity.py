"""A run's identity is its content, not its file name.

A copied session file, a JSON-lines line written twice or a workload imported
from a transcript that sits beside it in the same folder is one run, whatever
the files are called. Every command that reads a folder of transcripts (and
``run --workload``) keeps one :class:`Seen`: a run whose content it has met
already is left out, and the command says so in one line, so that it is
counted once (a leaderboard's ``n``, its medians and its dollars; fidelity's
folds; replay-dir's rows).

The content of a run imported from a transcript is what the transcript holds:
every part's text, kind, turn and recorded size, and the recorded usage,
times and events (:func:`of_transcript`), less its name and file. A workload
file holds no text: its content is its parts and header, less name and file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable

NOT_CONTENT = ("name", "source")  # header fields that name the file, not what the run did


def of_transcript(t) -> str:
    """The SHA-256 of what a :class:`~prunesim.io.transcripts.parts.Transcript` holds, less its name and file."""
    h = hashlib.sha256()
    recorded = {"format": t.format, "model": t.model, "prompt_tokens": t.prompt_tokens, "usage": t.usage,
                "kept_output": t.kept_output, "call_times": t.call_times, "events": t.events,
                "context_window": t.context_window}
    h.update(json.dumps(recorded, sort_keys=True, default=str).encode("utf-8"))
    encode = json.JSONEncoder(default=str).encode
    for part in t.parts:
        h.update(b"\n")
        h.update(encode(dataclasses.astuple(part)).encode("utf-8"))
    return h.hexdigest()


def digest(data) -> str:
    """The content of a workload (:class:`~prunesim.io.transcripts.workload.WorkloadData`): its transcript's
    (:func:`of_transcript`, kept as ``data.content`` by the import), else that of its parts and header."""
    if getattr(data, "content", ""):
        return data.content
    h = hashlib.sha256()
    header = {k: v for k, v in data.header.items() if k not in NOT_CONTENT}
    h.update(json.dumps(header, sort_keys=True, default=str).encode("utf-8"))
    encode = json.JSONEncoder(sort_keys=True, default=str).encode
    for part in data.parts:
        h.update(b"\n")
        h.update(encode(part).encode("utf-8"))
    return h.hexdigest()


def label(data) -> str:
    """Where a run was read: its file, and the run within it when the file holds several (``:LINE``, ``#session-2``)."""
    path = str(getattr(data, "path", "") or "")
    source = str(data.header.get("source") or "")
    base = os.path.basename(path)
    if path and source.startswith(base) and len(source) > len(base):
        return path + source[len(base):]
    return path or source or str(data.header.get("name", "?"))


class Seen:
    """The runs one command has read, by content. ``on_repeat`` is told, in one line, of each run met again."""

    def __init__(self, on_repeat: Callable[[str], None] | None = None) -> None:
        self.first: dict[str, str] = {}  # digest -> where the run was first read
        self.files: dict[str, list[str]] = {}  # file -> digests first read from it
        self.repeats: list[str] = []  # the lines said
        self.on_repeat = on_repeat

    def is_repeat(self, data) -> bool:
        """Whether ``data`` repeats a run read before (said through ``on_repeat``); else it is noted as read."""
        key = digest(data)
        first = self.first.get(key)
        if first is None:
            self.first[key] = label(data)
            self.files.setdefault(str(getattr(data, "path", "") or ""), []).append(key)
            return False
        line = f"{label(data)}: the same run as {first} (same content): counted once"
        self.repeats.append(line)
        if self.on_repeat is not None:
            self.on_repeat(line)
        return True

    def forget(self, path) -> None:
        """Forget the runs first read from ``path``: the file failed, and nothing of it is counted."""
        for key in self.files.pop(str(path), []):
            self.first.pop(key, None)
