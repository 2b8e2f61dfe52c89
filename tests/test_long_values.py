"""A value of any length a user types is named in a short error line: its ends and its length, once.

A 400-digit ``--set`` value printed whole made a line of 500 characters, and a sweep's grid point printed it
twice (the point, then the key's complaint).
"""

from __future__ import annotations

import re
import string

from cli_capture import cli
from hypothesis import given
from hypothesis import strategies as st
from prunesim.errors import LONG_NUMBER, LONG_WORD, UserError, shortened
from prunesim.io.scenario_files import flat_defaults, resolve_path

NUMERIC_KEYS = sorted(k for k, v in flat_defaults().items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                      and k != "seed")
LINE_MAX = 260  # the longest a refusal of one long value may be, the scenario's path aside: the key, the problem
SCENARIO_PATH = str(resolve_path("oscillation-40"))  # as long as the install's folder makes it (site-packages in CI)


def beside_the_path(line: str) -> int:
    """The length of an error line without the scenario's path, which is the user's install and not the value."""
    return len(line.replace(SCENARIO_PATH, ""))

huge_numbers = st.builds(lambda sign, digits: sign + digits, st.sampled_from(["", "-"]),
                         st.text("0123456789", min_size=LONG_NUMBER + 1, max_size=3000).map(lambda d: "9" + d))
long_words = st.text(string.ascii_letters + "_-./", min_size=LONG_WORD + 1, max_size=5000)


def test_every_numeric_key_is_tried():
    assert {"trigger", "budget", "window", "turns", "pricing.output"} <= set(NUMERIC_KEYS)


@given(key=st.sampled_from(NUMERIC_KEYS), value=st.one_of(huge_numbers, huge_numbers.map(lambda n: n + ".5"),
                                                           long_words))
def test_set_names_a_huge_value_in_one_short_line(key, value):
    code, out, err = cli("run", "oscillation-40", "--set", f"{key}={value}")
    lines = err.splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err[:400]
    assert beside_the_path(lines[0]) <= LINE_MAX and value not in lines[0], lines[0][:400]
    assert not re.search(rf"\d{{{LONG_NUMBER + 1}}}", lines[0]), lines[0]  # as its ends and length, or a float


@given(value=huge_numbers)
def test_a_grid_point_names_its_huge_value_once(value, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "s"
    code, _, err = cli("sweep", "oscillation-40", "--grid", f"trigger={value}", "--policies", "noop",
                       "--seeds", "0:1", "--out", out)
    assert code == 2 and not out.exists()
    assert err.count("digits)") == 1 and beside_the_path(err) <= LINE_MAX, err


words = st.text(string.ascii_letters + string.punctuation + " ", max_size=60)  # short, no long number


@given(head=words, value=st.one_of(huge_numbers, long_words), tail=words)
def test_shortened_keeps_short_words_and_names_a_long_one_by_its_ends_and_length(head, value, tail):
    line = f"{head} {value} {tail}"
    short = shortened(line)
    assert value not in short and len(short) < len(line)
    if value.lstrip("-").isdigit():
        assert value[-2:] in short and f"({len(value.lstrip('-')):,} digits)" in short
    assert shortened(f"{head} {tail}") == f"{head} {tail}"


def test_an_error_made_anywhere_is_shortened():
    err = UserError("--set", "trigger", f"{'7' * 400} is out of range")
    assert str(err) == "--set: trigger: 777777...77 (400 digits) is out of range"
