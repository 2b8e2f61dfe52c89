"""Examples in docstrings run, and print what they show."""

import doctest

import pytest

import sim.api
import sim.grid
import sim.sweep


@pytest.mark.parametrize("module", [sim.api, sim.grid, sim.sweep])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
