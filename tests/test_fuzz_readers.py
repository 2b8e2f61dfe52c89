"""Fuzzing every reader command with corrupted real output files.

Real files are made once (a run directory, a two-axis sweep with its
aggregate, an imported workload, the project's transcript fixtures). Each
example copies them, corrupts one file (truncated, a byte flipped, a line
deleted or duplicated, a JSON value replaced by one of another type) and hands
the copy to a command that reads it. Whatever the corruption:

* the command exits 0 with a correct result, or 2 with one line naming the problem;
* it never shows a traceback or calls the input a prunesim bug;
* it never changes an input file;
* it never leaves partial output: after exit 2 the output is absent (or, when it
  existed, unchanged).

Examples are derandomized and bounded, so the suite is deterministic and fast.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from prunesim.io.transcripts import workload as wl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FUZZ = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(FUZZ, max_examples=6)  # commands that draw a figure on success (a quarter second each)
# Lines a command may print on stderr besides its one error line: summaries and notes.
ALLOWED = ("replayed ", "fidelity read ", "prunesim: nothing written", "prunesim: note: ",
           "prunesim: warning: ")  # a warning is one line too (a cut last line of JSON lines, left out)



@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("originals")
    assert cli("run", "oscillation-40", "--policy", "naive", "--seed", "3", "--set", "turns=30",
               "--out", root / "run")[0] == 0
    assert cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--grid", "budget=23000,24000",
               "--policies", "naive", "--seeds", "0:3", "--set", "turns=30", "--jobs", "1", "--quiet",
               "--out", root / "sweep")[0] == 0
    assert cli("aggregate", root / "sweep", "--resamples", "200")[0] == 0
    (root / "wl").mkdir()
    assert cli("import", FIXTURES / "mini.traj.json", "--out", root / "wl" / "mini.workload.jsonl")[0] == 0
    (root / "tr").mkdir()
    for name in ("mini.traj.json", "openai.json", "openhands.jsonl", "tiny.traj"):
        shutil.copy(FIXTURES / name, root / "tr" / name)
    return root


# -- corruptions ------------------------------------------------------------------------
OTHER_TYPES = (5, -1, 1.5, "x", "", None, True, [], {}, [1, "a"], {"k": []}, 10**30)
CELLS = (b"abc", b"", b"inf", b"nan", b"-1", b"1e999", b"true", b"1.5", b'"', b"\x00", b"99999999999999999999")


def _nodes(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            yield from _nodes(v, (*path, i))


def _retype(data, doc):
    """``doc`` with one of its values replaced by a value of another type."""
    paths = list(_nodes(doc))
    path = data.draw(st.sampled_from(paths), label="path")
    old = doc
    for p in path:
        old = old[p]
    value = data.draw(st.sampled_from([v for v in OTHER_TYPES if type(v) is not type(old)]), label="value")
    if not path:
        return copy.deepcopy(value)
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = copy.deepcopy(value)
    return doc


def corrupt(data, raw: bytes, kind: str) -> bytes:
    """One corruption of a file's bytes; ``kind`` is "json", "jsonl" or "text"."""
    ways = ["truncate", "flip", "delete line", "duplicate line", "retype" if kind != "text" else "cell"]
    way = data.draw(st.sampled_from(ways), label="corruption")
    if way == "truncate":
        return raw[: data.draw(st.integers(0, max(0, len(raw) - 1)), label="at")]
    if way == "flip":
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        mask = data.draw(st.integers(1, 255), label="mask")
        return raw[:at] + bytes([raw[at] ^ mask]) + raw[at + 1:]
    lines = raw.splitlines(keepends=True)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    if way == "delete line":
        return b"".join(lines[:i] + lines[i + 1:])
    if way == "duplicate line":
        j = data.draw(st.integers(0, len(lines)), label="to")
        return b"".join(lines[:j] + [lines[i]] + lines[j:])
    if way == "cell":  # one CSV cell replaced, as a hand edit would
        cells = lines[i].rstrip(b"\n").split(b",")
        k = data.draw(st.integers(0, len(cells) - 1), label="cell")
        cells[k] = data.draw(st.sampled_from(CELLS), label="text")
        return b"".join(lines[:i] + [b",".join(cells) + b"\n"] + lines[i + 1:])
    if kind == "json":
        return json.dumps(_retype(data, json.loads(raw))).encode()
    lines[i] = json.dumps(_retype(data, json.loads(lines[i]))).encode() + b"\n"
    return b"".join(lines)


# -- the property -------------------------------------------------------------------------
def snapshot(folder: Path, skip: Path | None = None) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p != skip}


def check(data, originals: Path, target: str, kind: str, argv, output: str, verify) -> None:
    """Corrupt ``target`` in a copy of the originals, run ``argv``, and check the property."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "in"
        top = target.split("/")[0]  # only the folder the command reads
        shutil.copytree(originals / top, tree / top)
        path = tree / target
        path.write_bytes(corrupt(data, path.read_bytes(), kind))
        out = tree / output if output.startswith(("sweep/", "run/")) else Path(tmp) / output
        existed = out.read_bytes() if out.is_file() else None
        before = snapshot(tree, skip=out)
        code, stdout, stderr = cli(*[a.format(tree=tree, out=out) for a in argv])
        event(f"exit {code}")
        assert "Traceback" not in stderr and "internal error" not in stderr, stderr
        assert code in (0, 2), (code, stderr)
        assert snapshot(tree, skip=out) == before, "an input file changed"
        errors = [line for line in stderr.splitlines() if line.startswith("prunesim: error:")]
        others = [line for line in stderr.splitlines() if line not in errors]
        assert all(line.startswith(ALLOWED) for line in others), stderr
        if code == 2:
            assert len(errors) == 1, stderr
            assert (out.read_bytes() if out.is_file() else None) == existed, "partial output after an error"
            if existed is None:
                assert not out.exists()
        else:
            assert not errors, stderr
            verify(tree, out, stdout)


def is_png(tree: Path, out: Path, stdout: str) -> None:
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def aggregate_counts_the_complete_rows(tree: Path, out: Path, stdout: str) -> None:
    """n in aggregate.csv is the number of complete rows per group in runs.csv, counted independently."""
    text = (tree / "sweep" / "runs.csv").read_text()
    complete = text[: text.rfind("\n") + 1] if "\n" in text else text + "\n"  # (a bare header lacks its end)
    rows = list(csv.DictReader(io.StringIO(complete)))
    meta = json.loads((tree / "sweep" / "sweep.json").read_text())
    runs = [(r["policy"], r["trigger"], r["budget"], r["seed"]) for r in rows]
    assert len(set(runs)) == len(runs) and len({r["run_id"] for r in rows}) == len(rows)  # nothing counted twice
    assert all(r["policy"] in meta["policies"] and int(r["seed"]) in meta["seeds"] for r in rows)
    assert all(int(r["trigger"]) in meta["grid"]["trigger"] and int(r["budget"]) in meta["grid"]["budget"]
               for r in rows)
    # an empty or nan cell is a metric the run did not report: not counted in n
    expected = Counter((r["policy"], r["trigger"], r["budget"]) for r in rows if r["passes"].lower() not in ("", "nan"))
    found = {(r["policy"], r["trigger"], r["budget"]): int(r["n"])
             for r in csv.DictReader(open(out)) if r["metric"] == "passes"}
    assert found == dict(expected)


def run_summary_written(tree: Path, out: Path, stdout: str) -> None:
    summary = json.loads((out / "summary.json").read_text())
    header = json.loads((tree / "wl" / "mini.workload.jsonl").read_text().splitlines()[0])
    assert summary["metrics"]["turns"] == header["turns"]


def fidelity_report(tree: Path, out: Path, stdout: str) -> None:
    report = json.loads(stdout)
    assert report["transcripts"] + report["skipped"] == 1


def replay_rows(tree: Path, out: Path, stdout: str) -> None:
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 2 * len({r["transcript"] for r in rows}) and {r["policy"] for r in rows} == {"noop", "naive"}


def imported_workload(tree: Path, out: Path, stdout: str) -> None:
    data = wl.read(out)
    assert data.header["parts"] == len(data.parts) and data.turns >= 1


def imported_folder(tree: Path, out: Path, stdout: str) -> None:
    for path in out.iterdir():
        data = wl.read(path)
        assert data.header["parts"] == len(data.parts)


# -- sweep readers -------------------------------------------------------------------------
SWEEP_PLOT = ["plot", "sweep", "{tree}/sweep", "--metric", "passes", "--x", "trigger", "--out", "{out}"]
SWEEP_PHASE = ["plot", "phase", "{tree}/sweep", "--x", "trigger", "--y", "budget", "--metric", "passes",
               "--out", "{out}"]


@FUZZ
@given(data=st.data())
def test_aggregate_with_a_corrupt_runs_csv(originals, data):
    check(data, originals, "sweep/runs.csv", "text", ["aggregate", "{tree}/sweep", "--resamples", "200"],
          "sweep/aggregate.csv", aggregate_counts_the_complete_rows)


@FUZZ
@given(data=st.data())
def test_aggregate_with_a_corrupt_sweep_json(originals, data):
    check(data, originals, "sweep/sweep.json", "json", ["aggregate", "{tree}/sweep", "--resamples", "200"],
          "sweep/aggregate.csv", aggregate_counts_the_complete_rows)


@pytest.mark.parametrize("target", ["sweep/runs.csv", "sweep/aggregate.csv"])  # sweep.json: as aggregate reads it
@FEW
@given(data=st.data())
def test_plot_sweep_with_a_corrupt_sweep(originals, data, target):
    check(data, originals, target, "json" if target.endswith(".json") else "text", SWEEP_PLOT, "f.png", is_png)


@pytest.mark.parametrize("target", ["sweep/runs.csv"])
@FEW
@given(data=st.data())
def test_plot_phase_with_a_corrupt_sweep(originals, data, target):
    check(data, originals, target, "json" if target.endswith(".json") else "text", SWEEP_PHASE, "f.png", is_png)


# -- run readers ----------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["run/trace.csv", "run/summary.json", "run/ledger.csv", "run/events.csv"])
@FEW
@given(data=st.data())
def test_plot_trace_with_a_corrupt_run(originals, data, target):
    check(data, originals, target, "json" if target.endswith(".json") else "text",
          ["plot", "trace", "{tree}/run", "--out", "{out}"], "t.png", is_png)


@pytest.mark.parametrize("target", ["run/ledger.csv", "run/trace.csv"])  # summary.json: as plot trace reads it
@FEW
@given(data=st.data())
def test_plot_ledger_with_a_corrupt_run(originals, data, target):
    check(data, originals, target, "json" if target.endswith(".json") else "text",
          ["plot", "ledger", "{tree}/run", "--out", "{out}"], "l.png", is_png)


# -- workload and transcript readers ---------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_run_with_a_corrupt_workload(originals, data):
    check(data, originals, "wl/mini.workload.jsonl", "jsonl",
          ["run", "--workload", "{tree}/wl/mini.workload.jsonl", "--policy", "naive", "--out", "{out}"],
          "rundir", run_summary_written)


@FUZZ
@given(data=st.data())
def test_fidelity_with_a_corrupt_workload(originals, data):
    check(data, originals, "wl/mini.workload.jsonl", "jsonl", ["fidelity", "{tree}/wl", "--json"],
          "none", lambda tree, out, stdout: fidelity_report(tree, out, stdout))


@FUZZ
@given(data=st.data())
def test_replay_dir_with_a_corrupt_workload(originals, data):
    check(data, originals, "wl/mini.workload.jsonl", "jsonl",
          ["replay-dir", "{tree}/wl", "--policies", "noop,naive", "--set", "trigger=100", "--out", "{out}"],
          "rows.csv", replay_rows)


@pytest.mark.parametrize("target", ["tr/mini.traj.json", "tr/openai.json", "tr/tiny.traj", "tr/openhands.jsonl"])
@FUZZ
@given(data=st.data())
def test_import_of_a_corrupt_transcript(originals, data, target):
    kind = "jsonl" if target.endswith(".jsonl") else "json"
    if target.endswith(".jsonl"):
        check(data, originals, target, kind, ["import", f"{{tree}}/{target}", "--out", "{out}"], "wl-out",
              imported_folder)
    else:
        check(data, originals, target, kind, ["import", f"{{tree}}/{target}", "--out", "{out}"], "one.jsonl",
              imported_workload)


@FUZZ
@given(data=st.data(), target=st.sampled_from(["tr/mini.traj.json", "tr/openai.json", "tr/openhands.jsonl"]))
def test_replay_dir_over_transcripts_with_one_corrupt(originals, data, target):
    """A folder with one corrupt file among good ones, with --skip-bad: one error line, and the others' rows."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "in"
        shutil.copytree(originals / "tr", tree)
        path = tree / Path(target).name
        path.write_bytes(corrupt(data, path.read_bytes(), "jsonl" if target.endswith(".jsonl") else "json"))
        before = snapshot(tree)
        code, _, err = cli("replay-dir", tree, "--policies", "noop", "--out", Path(tmp) / "rows.csv", "--skip-bad")
        assert "Traceback" not in err and "internal error" not in err, err
        assert snapshot(tree) == before
        errors = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
        rows = list(csv.DictReader(open(Path(tmp) / "rows.csv")))
        assert code == 0 and len(errors) <= 1  # the other files went through
        assert len(rows) >= 3  # the three other transcripts (and the good runs of openhands.jsonl)
