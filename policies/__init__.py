"""Prune policies and their registry: the one place a policy is named."""

from __future__ import annotations

from sim.errors import UserError

from .base import Policy
from .naive import NaivePolicy
from .noop import NoopPolicy
from .recency import RecencyPolicy
from .slack_gated import SlackGatedPolicy
from .tombstoned import GatedTombstonedPolicy, TombstonedPolicy

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


def get_policy(name: str, where: str = "--policy") -> type[Policy]:
    """The policy class registered as ``name``; a :class:`UserError` otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise UserError(where, None, f"unknown policy {name!r} (known: {known})") from None


__all__ = ["REGISTRY", "Policy", "get_policy"]
