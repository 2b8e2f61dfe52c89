"""Provenance outside the window: an append-only, hash-chained edit log, and tombstones.

A policy that edits its own window is safe only if the record of its edits is
not itself editable by it. The :class:`EditLog` lives outside the window and is
owned by the engine: it is appended to, never rewritten. Each :class:`Record`
carries the hash of the record before it, so that editing, deleting or
reordering any record breaks the chain and :meth:`EditLog.verify` says where.
The log's *anchor* (its length and head hash) is kept apart from the records;
checking against an anchor also catches a log cut at its tail.

A :class:`Tombstone` is the small marker an evicted span leaves in the window:
the content's hash, the turn and the reason, and the number of the log record
that holds the rest. Policies get read-only views (:class:`EditLogView`); they
never append.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

GENESIS = "0" * 64  # the "previous hash" of the first record


class SelfEditRefused(Exception):
    """A plan that would edit what must not be edited.

    Raised by a policy's guard (``authorize``) for a plan whose candidates overlap
    the plan's own rationale, a tombstone, an edit-log record or a span tagged
    ``constraint``. The engine catches it, applies nothing of the plan, and
    records the refusal (an events.csv row, a log record and a summary counter).
    """

    def __init__(self, reason: str, span_ids: Sequence[int] = ()):
        self.reason = reason
        self.span_ids = tuple(span_ids)
        super().__init__(f"self-edit refused ({reason}): spans {list(self.span_ids)}")


def content_hash(*parts: object) -> str:
    """A stable hash of what a span holds (the simulator has no text: its identity stands in)."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest(body: dict, prev: str) -> str:
    payload = json.dumps({"body": body, "prev": prev}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Record:
    """One entry of the edit log. ``body`` is plain JSON data; ``seq`` counts from 1."""

    seq: int
    body: dict
    prev: str
    hash: str

    @property
    def kind(self) -> str:
        return self.body.get("kind", "")

    def as_dict(self) -> dict:
        return {"seq": self.seq, "prev": self.prev, "hash": self.hash, **self.body}


@dataclass(frozen=True, slots=True)
class Verification:
    """What :meth:`EditLog.verify` found: ``ok``, and where and why the chain breaks."""

    ok: bool
    records: int
    bad_seq: int = 0  # position (1-based) of the first bad record; 0 when ok
    problem: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True, slots=True)
class Anchor:
    """The log's length and head hash, kept apart from the records (a supervisor's copy)."""

    length: int
    head: str


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What an evicted span leaves behind: enough to know the work was done, and why."""

    evicted_id: int
    key: str
    kind: str
    tokens: int
    content_hash: str
    turn: int
    reason: str
    record_seq: int


class EditLog:
    """An append-only, hash-chained list of records."""

    def __init__(self) -> None:
        self._records: list[Record] = []

    # -- writing (the engine only) -------------------------------------------
    def append(self, kind: str, **fields) -> Record:
        body = {"kind": kind, **fields}
        json.dumps(body)  # fail early on anything that is not plain data
        prev = self._records[-1].hash if self._records else GENESIS
        seq = len(self._records) + 1
        record = Record(seq, body, prev, _digest({"seq": seq, **body}, prev))
        self._records.append(record)
        return record

    # -- reading -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records)

    @property
    def records(self) -> tuple[Record, ...]:
        return tuple(self._records)

    @property
    def head(self) -> str:
        return self._records[-1].hash if self._records else GENESIS

    def anchor(self) -> Anchor:
        return Anchor(len(self._records), self.head)

    def view(self) -> EditLogView:
        return EditLogView(self)

    def verify(self, anchor: Anchor | None = None) -> Verification:
        return verify_records(self._records, anchor)


def verify_records(records: Sequence[Record], anchor: Anchor | None = None) -> Verification:
    """Check the chain: numbering, links and hashes; then, if given, the anchor.

    An edited record fails its hash; a deleted or reordered one breaks the
    numbering and the link to its predecessor; a cut tail leaves a valid chain
    that no longer matches the anchor.
    """
    prev = GENESIS
    for i, r in enumerate(records, start=1):
        if r.seq != i:
            return Verification(False, len(records), i, f"record {i} is numbered {r.seq} (deleted or reordered)")
        if r.prev != prev:
            return Verification(False, len(records), i, f"record {i} does not link to record {i - 1}")
        if _digest({"seq": r.seq, **r.body}, r.prev) != r.hash:
            return Verification(False, len(records), i, f"record {i} does not match its hash (edited)")
        prev = r.hash
    if anchor is not None:
        if anchor.length != len(records):
            return Verification(False, len(records), min(anchor.length, len(records)) + 1,
                                f"the log holds {len(records)} records, the anchor says {anchor.length}")
        if anchor.head != prev:
            return Verification(False, len(records), len(records), "the head hash does not match the anchor")
    return Verification(True, len(records))


@dataclass(frozen=True)
class EditLogView:
    """Read-only access to a log: records, and evictions by content key."""

    _log: EditLog = field(repr=False)

    def __len__(self) -> int:
        return len(self._log)

    @property
    def records(self) -> tuple[Record, ...]:
        return self._log.records

    def evictions(self, key: str | None = None) -> list[Record]:
        return [r for r in self._log if r.kind == "evict" and (key is None or r.body.get("key") == key)]

    def verify(self) -> Verification:
        return self._log.verify()
