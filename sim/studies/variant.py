"""A variant of a replay: a policy and the parameter overrides it runs with."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Variant:
    """One way of running the scenario: a policy and parameter overrides."""

    label: str
    policy: str
    overrides: dict = field(default_factory=dict)
