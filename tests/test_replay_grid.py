"""replay-dir --grid: every transcript replayed at every grid point, validated before anything is written."""

import csv

import pytest
from prunesim.cli import main
from prunesim.io.transcripts.workload import write
from runtime_fixtures import workload

AXIS = "clear-tool-uses:clear_tool_uses.clear_at_least"


def rows_of(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def folder(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, data in (("a", workload(12)), ("b", workload(8, output=lambda t: 400 * t))):
        data.header["name"] = name
        write(runs / f"{name}.jsonl", data)
    return runs


def replay_grid(folder, out, *grid, policies="noop,clear-tool-uses"):
    args = ["replay-dir", str(folder), "--policies", policies, "--set", "clear_tool_uses.trigger=3000"]
    for g in grid:
        args += ["--grid", g]
    return main(args + ["--out", str(out)])


def test_each_transcript_is_replayed_at_each_point_of_its_policy(folder, tmp_path):
    out = tmp_path / "r.csv"
    assert replay_grid(folder, out, f"{AXIS}=0,2000,6000") == 0
    rows = rows_of(out)
    header = next(csv.reader(out.open()))
    assert header[:4] == ["transcript", "format", "policy", AXIS]  # the axis right after the identity columns
    assert len(rows) == 2 * (1 + 3)  # per transcript: noop once, clear-tool-uses at three points
    by = {(r["transcript"], r["policy"], r[AXIS]): r for r in rows}
    assert by[("a", "noop", "")]["clearings"] == "0"
    clearings = [int(by[("a", "clear-tool-uses", v)]["clearings"]) for v in ("0", "2000", "6000")]
    invalidations = [int(by[("a", "clear-tool-uses", v)]["cache_invalidations"]) for v in ("0", "2000", "6000")]
    # Clearing at least more each time: fewer clearings, never more, and they really differ here.
    assert clearings == sorted(clearings, reverse=True) and clearings[0] > clearings[-1] > 0
    assert invalidations[0] >= invalidations[-1]
    # The same rows as replaying each point on its own with --set.
    single = tmp_path / "one.csv"
    assert main(["replay-dir", str(folder), "--policies", "clear-tool-uses", "--set", "clear_tool_uses.trigger=3000",
                 "--set", "clear_tool_uses.clear_at_least=2000", "--out", str(single)]) == 0
    alone = {r["transcript"]: r for r in rows_of(single)}
    for name in ("a", "b"):
        grid_row = by[(name, "clear-tool-uses", "2000")]
        assert {k: v for k, v in grid_row.items() if k != AXIS} == alone[name]


def test_one_transcript_file_can_be_swept_and_the_output_is_byte_identical(folder, tmp_path):
    out = tmp_path / "r.csv"
    assert replay_grid(folder / "a.jsonl", out, f"{AXIS}=0:4000:2000") == 0
    assert [r[AXIS] for r in rows_of(out)] == ["", "0", "2000", "4000"]
    first = out.read_bytes()
    assert replay_grid(folder / "a.jsonl", out, f"{AXIS}=0:4000:2000") == 0
    assert out.read_bytes() == first


def test_an_absolute_trigger_on_the_grid_switches_off_sizing_to_the_transcript(folder, tmp_path):
    out = tmp_path / "r.csv"
    assert main(["replay-dir", str(folder), "--policies", "recency",
                 "--grid", "trigger=4000,6000", "--out", str(out)]) == 0
    rows = rows_of(out)
    assert sorted({(r["trigger"], r["acting_trigger"]) for r in rows}) == [("4000", "4000"), ("6000", "6000")]


def test_a_grid_budget_names_the_run_budget_summary_budget(folder, tmp_path):
    out = tmp_path / "r.csv"
    assert main(["replay-dir", str(folder), "--policies", "noop", "--set", "trigger=3000",
                 "--grid", "budget=8000,9000", "--out", str(out)]) == 0
    rows = rows_of(out)
    assert [(r["budget"], r["summary.budget"]) for r in rows if r["transcript"] == "a"] == [
        ("8000", "8000"), ("9000", "9000")]


@pytest.mark.parametrize(("grid", "message"), [
    ("turns=5,6", "--grid: turns: cannot be swept here: a replay runs the transcript's own turns"),
    ("seed=1,2", "--grid: seed: cannot be swept here: use --seed"),
    ("clear_tool_uses.nope=1,2", "unknown scenario parameter"),
    ("naive:trigger=1,2", "names the policy 'naive', which is not swept"),
    (f"{AXIS}=-1,2", "clear_tool_uses.clear_at_least"),
    ("clear_tool_uses.clear_at_least", "expected NAME=VALUES"),
])
def test_a_bad_grid_is_one_line_and_nothing_is_written(folder, tmp_path, capsys, grid, message):
    out = tmp_path / "r.csv"
    out.write_text("an earlier result\n")
    assert replay_grid(folder, out, grid) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out.read_text() == "an earlier result\n"


def test_a_missing_path_is_one_line(tmp_path, capsys):
    assert main(["replay-dir", str(tmp_path / "nope"), "--policies", "noop"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_runtime_policy_that_clears_is_not_reported_as_idle(folder, tmp_path, capsys):
    assert replay_grid(folder, tmp_path / "r.csv", f"{AXIS}=0", policies="clear-tool-uses") == 0
    assert "never acted" not in capsys.readouterr().err
