"""Prune policies and their registry: the one place a policy is named."""

from __future__ import annotations

from sim.errors import UserError

from .base import Policy
from .naive import NaivePolicy
from .noop import NoopPolicy
from .recency import RecencyPolicy
from .tombstoned import GatedTombstonedPolicy, TombstonedPolicy

REGISTRY: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        NoopPolicy,
        RecencyPolicy,
        NaivePolicy,
        TombstonedPolicy,
    )
}
# Composed policies are registered once their planner is: the composition looks the
# planner up by name when it is built, so it works with whatever class holds that name.
for _composed in (GatedTombstonedPolicy,):
    if _composed.planner in REGISTRY:
        REGISTRY[_composed.name] = _composed


def get_policy(name: str, where: str = "--policy") -> type[Policy]:
    """The policy class registered as ``name``; a :class:`UserError` otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise UserError(where, None, f"unknown policy {name!r} (known: {known})") from None


__all__ = ["REGISTRY", "Policy", "get_policy"]
