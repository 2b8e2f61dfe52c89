"""Shared fixtures: scenarios and small runs."""

from __future__ import annotations

import pytest

from sim import scenario as scenario_mod


@pytest.fixture(scope="session")
def oscillation():
    return scenario_mod.load("oscillation-40")
