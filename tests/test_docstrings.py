"""Examples in docstrings run, and print what they show."""

import doctest

import pytest
from prunesim import api
from prunesim.studies import grid, sweep


@pytest.mark.parametrize("module", [api, grid, sweep])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
