"""Typed reads of a session record's fields: the one place the Claude Code and Codex parsers look into a record.

A runtime's session file is JSON that another program wrote; any field may be
absent, null, or of another type than the format documents (a list where an id
should be, an object where text should be, a number where a flag should be).
Every field a parser reads is asked for here with the type the parser needs,
so no such record can reach a set, a dict key or a string operation:

* :func:`text`: a string, else ``""``;
* :func:`ident`: an id that pairs records (``uuid``, ``tool_use_id``,
  ``call_id``, ``message.id``): a string, else ``None``. Only a string pairs;
* :func:`obj`: an object, else ``{}``; :func:`items`: a list, else ``[]``;
  :func:`objects`: the objects of a list, anything else in it passed over;
* :func:`flag`: JSON ``true`` only;
* :func:`raw`: a value kept as JSON (tool arguments), any type;
* :func:`required`: a field the parser cannot go on without; absent or of
  another type it is one :class:`UserError` naming the line and the field.

``record`` is itself checked: a parser may pass whatever a list held.
"""

from __future__ import annotations

from typing import Any

from prunesim.errors import UserError

_KINDS = {str: "a string", dict: "an object", list: "a list"}


def text(record: Any, key: str) -> str:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, str) else ""


def ident(record: Any, key: str) -> str | None:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def obj(record: Any, key: str) -> dict:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


def items(record: Any, key: str) -> list:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, list) else []


def objects(record: Any, key: str) -> list[dict]:
    return [item for item in items(record, key) if isinstance(item, dict)]


def flag(record: Any, key: str) -> bool:
    return isinstance(record, dict) and record.get(key) is True


def raw(record: Any, key: str, default: Any = None) -> Any:
    """A value kept as it is (written back out as JSON, keyed by :mod:`.keys`): any JSON type."""
    return record.get(key, default) if isinstance(record, dict) else default


def has(record: Any, key: str) -> bool:
    return isinstance(record, dict) and key in record


def required(record: Any, key: str, kind: type | tuple[type, ...], at: str, what: str, name: str | None = None):
    """``record[key]`` when it is of ``kind``; else one line naming ``at`` and the field (``name``, or ``key``)."""
    value = record.get(key) if isinstance(record, dict) else None
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    expected = " or ".join(_KINDS.get(k, k.__name__) for k in kinds)
    raise UserError(at, name or key, f"missing or not {expected} in {what}")
