"""Prune policies and their registry: the one place a policy is named."""

from __future__ import annotations

from prunesim.errors import UserError
from prunesim.policies.base import Policy
from prunesim.policies.naive import NaivePolicy
from prunesim.policies.noop import NoopPolicy
from prunesim.policies.recency import RecencyPolicy
from prunesim.policies.slack_gated import SlackGatedPolicy
from prunesim.policies.tombstoned import GatedTombstonedPolicy, TombstonedPolicy

REGISTRY: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        NoopPolicy,
        RecencyPolicy,
        NaivePolicy,
        SlackGatedPolicy,
        TombstonedPolicy,
        GatedTombstonedPolicy,
    )
}


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


__all__ = ["REGISTRY", "Policy", "get_policy", "tables"]
