"""Prune policies and their registry: the one place a policy is named.

A policy with presets (the configurations a source ships) is registered once as
itself, reading its table's ``preset`` key, and once per preset as
``<name>:<preset>`` (for example ``clear-tool-uses:langchain``).
"""

from __future__ import annotations

from prunesim.errors import UserError
from prunesim.policies.base import Policy, preset_variant
from prunesim.policies.clear_tool_uses import ClearToolUsesPolicy
from prunesim.policies.llm_summary import LlmSummaryPolicy
from prunesim.policies.memory_pressure import MemoryPressurePolicy
from prunesim.policies.naive import NaivePolicy
from prunesim.policies.noop import NoopPolicy
from prunesim.policies.observation_masking import ObservationMaskingPolicy
from prunesim.policies.recency import RecencyPolicy
from prunesim.policies.slack_gated import SlackGatedPolicy
from prunesim.policies.tombstoned import GatedTombstonedPolicy, TombstonedPolicy

_CLASSES: tuple[type[Policy], ...] = (
    NoopPolicy,
    RecencyPolicy,
    NaivePolicy,
    SlackGatedPolicy,
    TombstonedPolicy,
    GatedTombstonedPolicy,
    ClearToolUsesPolicy,
    ObservationMaskingPolicy,
    LlmSummaryPolicy,
    MemoryPressurePolicy,
)

REGISTRY: dict[str, type[Policy]] = {}
for _cls in _CLASSES:
    REGISTRY[_cls.name] = _cls
    for _preset in _cls.presets:
        REGISTRY[f"{_cls.name}:{_preset}"] = preset_variant(_cls, _preset)

ALL = "all"


def tables() -> dict[str, type]:
    """Every parameter table the registered policies declare, by name."""
    out: dict[str, type] = {}
    for cls in REGISTRY.values():
        for name, table in cls.tables.items():
            if out.setdefault(name, table) is not table:
                raise TypeError(f"policy {cls.name!r} declares table [{name}] differently from another policy")
    return out


def get_policy(name: str, where: str = "--policy") -> type[Policy]:
    """The policy class registered as ``name``; a :class:`UserError` otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise UserError(where, None, f"unknown policy {name!r} (known: {known})") from None


def every_policy() -> list[str]:
    """What ``--policies all`` means: every registered policy, each preset on its own; a policy with presets
    is listed through them (by itself it is one of them, under its table's default preset)."""
    return [name for name, cls in REGISTRY.items() if not (cls.presets and cls.preset is None)]


def parse_names(text: str, where: str = "--policies") -> list[str]:
    """A comma-separated list of policy names (``all`` for :func:`every_policy`), each checked."""
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise UserError(where, text, "expected a comma-separated list of policy names")
    out: list[str] = []
    for name in names:
        for one in every_policy() if name == ALL else [name]:
            get_policy(one, where)
            if one in out:
                raise UserError(where, text, f"a policy is given twice ({one!r})")
            out.append(one)
    return out


__all__ = ["ALL", "REGISTRY", "Policy", "every_policy", "get_policy", "parse_names", "tables"]
