"""A metric's definition: its name, unit and meaning, written once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    definition: str


def mean(total: float, n: int) -> float:
    """``total / n`` rounded for the record; 0 when there is nothing to average."""
    return round(total / n, 3) if n else 0.0
