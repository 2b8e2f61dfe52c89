"""Regression tests: no command loses data, replaces what it must not, or shows a traceback.

One section per numbered finding of a hostile review of the command line; each test names its number.
Commands run in-process through ``prunesim.cli.main``, so an uncaught
exception fails the test instead of being printed.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shlex
import shutil
import stat
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import given, settings
from hypothesis import strategies as st
from prunesim.cli.commands import _common
from prunesim.errors import UserError
from prunesim.io import scenario_files
from prunesim.io.sweep_files import RUNS_FILE, SWEEP_FILE
from prunesim.io.transcripts import formats, tokens
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.keys import command_key, normalize_command
from prunesim.plots.io import read_sweep
from prunesim.studies import aggregate as agg_mod
from prunesim.studies import transcript_replay as tr

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAS_DEV_FULL = Path("/dev/full").exists()



def one_error_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prunesim: error:"), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


# -- shared inputs -------------------------------------------------------------------
def bad_transcripts(folder: Path) -> dict[str, Path]:
    """One file per trigger named in finding 2, each made from a project fixture."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}

    def put(name: str, text: str) -> None:
        (folder / name).write_text(text)
        made[name] = folder / name

    put("deep.json", "[" * 100_000 + "]" * 100_000)
    openai = json.loads((FIXTURES / "openai.json").read_text())
    bad = copy.deepcopy(openai)
    bad[2]["tool_calls"] = 5
    put("tool_calls5.json", json.dumps(bad))
    bad = copy.deepcopy(openai)
    bad[2]["tool_calls"][0]["function"] = "s"
    put("function_s.json", json.dumps(bad))
    mini = json.loads((FIXTURES / "mini.traj.json").read_text())
    mini["info"] = "x"
    mini.pop("trajectory_format", None)
    put("info_x.traj.json", json.dumps(mini))
    oh = json.loads((FIXTURES / "openhands.jsonl").read_text().splitlines()[0])
    for name, value in (("choices5", 5), ("message_s", [{"message": "s"}])):
        d = copy.deepcopy(oh)
        for ev in d["history"]:
            meta = ev.get("tool_call_metadata")
            if isinstance(meta, dict) and isinstance(meta.get("model_response"), dict):
                meta["model_response"]["choices"] = value
        put(f"oh_{name}.jsonl", json.dumps(d) + "\n")
    d = copy.deepcopy(oh)
    for ev in d["history"]:
        for choice in ev.get("tool_call_metadata", {}).get("model_response", {}).get("choices", []):
            for call in choice.get("message", {}).get("tool_calls", []):
                call["function"] = "s"
    put("oh_function_s.jsonl", json.dumps(d) + "\n")
    return made


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "s"
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
                       "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", out)
    assert code == 0, err
    assert cli("aggregate", out)[0] == 0
    return out


@pytest.fixture
def sweep_copy(sweep_dir, tmp_path) -> Path:
    dest = tmp_path / "s"
    shutil.copytree(sweep_dir, dest)
    return dest


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    assert cli("run", "oscillation-40", "--policy", "naive", "--seed", "3", "--out", out)[0] == 0
    return out


@pytest.fixture
def run_copy(run_dir, tmp_path) -> Path:
    dest = tmp_path / "r"
    shutil.copytree(run_dir, dest)
    return dest


def edit_lines(path: Path, fn) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(fn(lines)))


# -- 1. a rename replaces things it must not ---------------------------------------
def test_1_out_through_a_symlink_reaches_its_target_and_the_link_stays(tmp_path):
    target = tmp_path / "rows.csv"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    link = tmp_path / "o.csv"
    link.symlink_to(target)
    code, _, err = cli("replay-dir", FIXTURES, "--policies", "noop", "--out", link, "--skip-bad")
    assert code == 0 and "prunesim: error:" in err  # fixtures/bad holds bad files on purpose: they are skipped
    assert link.is_symlink() and target.read_text().startswith("transcript,format,policy")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # a replaced file keeps its mode
    dangling = tmp_path / "new.csv"
    dangling.symlink_to(tmp_path / "made.csv")
    assert cli("replay-dir", FIXTURES, "--policies", "noop", "--out", dangling, "--skip-bad")[0] == 0
    assert dangling.is_symlink() and stat.S_IMODE((tmp_path / "made.csv").stat().st_mode) == 0o666 & ~_umask()


def test_1_out_through_a_link_to_a_pipe_streams_into_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    link = tmp_path / "o.jsonl"
    link.symlink_to(fifo)
    try:
        code, _, err = cli("import", FIXTURES / "mini.traj.json", "--out", link)
        data = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert code == 0, err
    header = json.loads(data.decode().splitlines()[0])
    assert header["type"] == "header" and header["format"] == "mini-swe-agent" and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_1_a_figure_through_a_link(run_dir, tmp_path):
    target = tmp_path / "real.png"
    target.write_bytes(b"old")
    link = tmp_path / "fig.png"
    link.symlink_to(target)
    assert cli("plot", "ledger", run_dir, "--out", link)[0] == 0
    assert link.is_symlink() and target.read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full (Linux): a disk that is always full")
def test_1_dev_full_is_written_to_never_replaced(tmp_path):
    before = os.stat("/dev/full")
    code, _, err = cli("replay-dir", FIXTURES, "--policies", "noop", "--out", "/dev/full", "--skip-bad")
    assert code == 1 and "prunesim: error: --out: /dev/full: No space left on device" in err
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- 2. one bad transcript aborts a folder -----------------------------------------
def test_2_import_reports_each_bad_file_and_imports_the_rest(tmp_path):
    bad = bad_transcripts(tmp_path / "in")
    shutil.copy(FIXTURES / "mini.traj.json", tmp_path / "in")
    code, out, err = cli("import", tmp_path / "in", "--out", tmp_path / "wl", "--skip-bad")
    assert code == 0 and "Traceback" not in err  # some files went through: 0, the bad ones one line each
    failed = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
    # deep nesting, tool_calls 5, OpenHands choices 5 and "function": "s" on an OpenAI call are malformed;
    # "info": "x", [{"message": "s"}] and an OpenHands function "s" are optional fields, ignored
    assert {Path(line.split(": ")[2].split(":")[0]).name for line in failed} == {
        "deep.json", "tool_calls5.json", "function_s.json", "oh_choices5.jsonl"}
    assert "JSON nested too deeply" in err
    imported = sorted(p.name for p in (tmp_path / "wl").iterdir())
    # mini.traj.json is info_x's run (the field "info" is ignored), oh_message_s's is oh_function_s's: a run is
    # its content, counted once (docs/transcripts.md), and the import says so
    assert imported == ["info_x.workload.jsonl", "tiny__oh-1.workload.jsonl"]
    assert sum(line.endswith("(same content): counted once") for line in err.splitlines()) == 2
    assert len(bad) == 7


def test_2_replay_dir_and_fidelity_go_on_past_bad_files(tmp_path):
    bad_transcripts(tmp_path / "in")
    shutil.copy(FIXTURES / "mini.traj.json", tmp_path / "in")
    code, _, err = cli("replay-dir", tmp_path / "in", "--policies", "noop,naive", "--out", tmp_path / "ab.csv",
                       "--skip-bad")
    assert code == 0 and "Traceback" not in err
    rows = list(csv.DictReader(open(tmp_path / "ab.csv")))
    assert len(rows) == 2 * 2 and "4 file(s) failed" in err  # two distinct runs (see test_2_import_...)
    code, out, err = cli("fidelity", tmp_path / "in", "--json", "--skip-bad")
    assert code == 0 and "Traceback" not in err
    assert sum(line.startswith("prunesim: error:") for line in err.splitlines()) == 4
    assert json.loads(out)["transcripts"] >= 1


def test_2_every_malformed_type_swap_in_a_transcript_is_a_user_error():
    """Any field of the fixtures replaced by a value of another type: parsed, or one UserError."""
    docs = [("mini.traj.json", json.loads((FIXTURES / "mini.traj.json").read_text()), None),
            ("openai.json", json.loads((FIXTURES / "openai.json").read_text()), None),
            ("tiny.traj", json.loads((FIXTURES / "tiny.traj").read_text()), None),
            ("o.jsonl", json.loads((FIXTURES / "openhands.jsonl").read_text().splitlines()[0]), 1)]
    values = [5, "s", None, True, [], {}, [5], {"a": 1}, -1, 10**40, 1.5, [{"message": "s"}]]
    for name, doc, line in docs:
        for path in _paths(doc):
            for value in values:
                d = _set(copy.deepcopy(doc), path, copy.deepcopy(value))
                try:
                    formats.parse_document(d, Path(name), line)
                except UserError:
                    pass


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:4]):
            yield from _paths(v, (*prefix, i))


def _set(doc, path, value):
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


# -- 3. exact tokenizers crash on long text ----------------------------------------
needs_bpe = pytest.mark.skipif(not tokens.bpe_available(),
                               reason="needs bpe-openai: pip install '.[tokens]' (the test extra has it)")


@needs_bpe
@pytest.mark.parametrize("name", tokens.BPE_ENCODINGS)
def test_3_bpe_counts_any_length(name):
    count = tokens.get_counter(name)
    assert count("x" * 1_000_001) > 0  # over the encoder's character limit
    small = count("ab " * 10)  # "ab", " ab" nine times, a trailing " "
    assert count("ab " * 250_000) == small - 10 + 250_000  # 250,001 tokens: over the encoder's token limit


@needs_bpe
@pytest.mark.parametrize("name", tokens.BPE_ENCODINGS)
def test_3_pieces_cut_where_no_token_spans_the_cut(name):
    """Cut at word boundaries, the pieces' counts add up to the one-call count."""
    import bpe_openai

    encoding = bpe_openai.get_encoding(name)
    text = "\n".join([
        "def shorten(key: str) -> str:  # a comment, 1234567 and émigré",
        "    return f\"{key[:145]}..#{digest(key)}\"",
        "Found 630 test(s).\nCreating test database for alias 'default'...",
        "  indented   words\tand\ttabs, (parens) [brackets] {braces}; punctuation!?",
    ] * 40)
    for size in (64, 200, 1000):
        pieces = list(tokens.chunks(text, size))
        assert "".join(pieces) == text and all(len(p) <= size for p in pieces)
        whole = len(encoding.encode(text, disallowed_special=()))
        assert sum(len(encoding.encode(p, disallowed_special=())) for p in pieces) == whole


def test_3_pieces_without_boundaries_are_cut_at_the_size():
    assert [len(p) for p in tokens.chunks("x" * 70_000)] == [32_768, 32_768, 4_464]


# -- 4. a failed run destroys a good result -----------------------------------------
def test_4_a_run_with_nothing_to_show_keeps_the_existing_result(tmp_path):
    bad_transcripts(tmp_path / "bad")
    for name in ("info_x.traj.json", "oh_message_s.jsonl", "oh_function_s.jsonl"):
        (tmp_path / "bad" / name).unlink()  # leave only files that fail
    good = tmp_path / "ab.csv"
    assert cli("replay-dir", FIXTURES / "bad", "--policies", "noop", "--out", good)[0] == 2  # no file went through
    assert not good.exists()
    good.write_text("a good result\n")
    code, _, err = cli("replay-dir", tmp_path / "bad", "--policies", "noop", "--out", good)
    assert code == 2 and good.read_text() == "a good result\n" and "nothing written" in err
    (tmp_path / "w.jsonl").write_text("a good workload\n")
    assert cli("import", tmp_path / "bad" / "deep.json", "--out", tmp_path / "w.jsonl")[0] == 2
    assert (tmp_path / "w.jsonl").read_text() == "a good workload\n"
    assert cli("import", tmp_path / "bad", "--out", tmp_path / "folder")[0] == 2
    assert not (tmp_path / "folder").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ab.csv", "bad", "w.jsonl"]


# -- 5. stale derived files ----------------------------------------------------------
def test_5_an_aggregate_older_than_runs_csv_is_recomputed(sweep_copy, capsys):
    runs = sweep_copy / RUNS_FILE
    full = runs.read_text()
    lines = full.splitlines(keepends=True)
    runs.write_text("".join(lines[:4]))  # an interrupted sweep: 3 of 12 runs
    assert cli("aggregate", sweep_copy)[0] == 0
    old = read_sweep(sweep_copy).aggregate
    assert {r["n"] for r in old if r["metric"] == "passes"} <= {1, 2, 3}
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
                       "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", sweep_copy)  # resumed to the end
    assert code == 0, err
    assert runs.read_text() == full
    sweep = read_sweep(sweep_copy)
    assert "aggregate.csv is older than runs.csv; the figure is computed from runs.csv" in capsys.readouterr().err
    assert sweep.aggregate is None  # the stale file is not used: every run of runs.csv is
    from prunesim.plots.sweep import curves

    data, source = curves(sweep, "passes", "trigger")
    assert source.startswith("runs.csv") and {t[3] for series in data.values() for t in series.values()} == {3}
    code, _, err = cli("plot", "sweep", sweep_copy, "--metric", "passes", "--out", sweep_copy / "f.png")
    assert code == 0 and "computed from runs.csv" in err


def test_5_an_aggregate_that_disagrees_with_runs_csv_is_recomputed_whatever_its_time(sweep_copy, capsys):
    agg = sweep_copy / "aggregate.csv"
    edit_lines(agg, lambda lines: [lines[0]] + [line.replace(",3,", ",2,", 1) for line in lines[1:]])
    future = agg.stat().st_mtime + 3600
    os.utime(agg, (future, future))
    assert read_sweep(sweep_copy).aggregate is None
    assert "does not match runs.csv" in capsys.readouterr().err
    assert cli("aggregate", sweep_copy)[0] == 0
    as_written = [{k: round(v, 6) if isinstance(v, float) else v for k, v in r.items()}
                  for r in agg_mod.aggregate(sweep_copy)]
    assert read_sweep(sweep_copy).aggregate == as_written  # a fresh file is used as it is
    assert capsys.readouterr().err == ""


# -- 6. plots crash on a partial last line of runs.csv -------------------------------
def test_6_a_partial_last_line_is_ignored_by_every_reader_and_left_alone(tmp_path):
    out = tmp_path / "s"
    assert cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--grid", "budget=23000,24000",
               "--policies", "naive", "--seeds", "0:2", "--jobs", "1", "--quiet", "--out", out)[0] == 0
    runs = out / RUNS_FILE
    lines = runs.read_text().splitlines(keepends=True)
    runs.write_text("".join(lines[:-1]) + lines[-1][:25])  # a sweep killed mid-write
    before = runs.read_bytes()
    assert cli("aggregate", out)[0] == 0
    assert cli("plot", "sweep", out, "--metric", "passes", "--x", "trigger", "--out", tmp_path / "s.png")[0] == 0
    code, _, err = cli("plot", "phase", out, "--x", "trigger", "--y", "budget", "--metric", "passes",
                       "--out", tmp_path / "p.png")
    assert code == 0, err
    assert runs.read_bytes() == before
    rows = list(csv.reader(open(out / "aggregate.csv")))
    assert rows[0][:4] == ["policy", "trigger", "budget", "metric"]
    assert sorted(r[4] for r in rows[1:] if r[3] == "passes") == ["1", "2", "2", "2"]  # the cut run is not counted


# -- 7. partial output on error --------------------------------------------------------
def test_7_a_file_of_several_runs_into_one_file_writes_nothing(tmp_path):
    code, out, err = cli("import", FIXTURES / "openhands.jsonl", "--out", tmp_path / "one.jsonl")
    one_error_line(err, "holds several runs")
    assert code == 2 and not (tmp_path / "one.jsonl").exists() and list(tmp_path.iterdir()) == []


# -- 8. file-system errors on output (more in test_out_targets.py) ---------------------
@pytest.mark.parametrize("argv", [
    ["run", "oscillation-40", "--out", "{under}"],
    ["sweep", "oscillation-40", "--seeds", "0:2", "--jobs", "1", "--quiet", "--out", "{under}"],
    ["import", str(FIXTURES / "mini.traj.json"), "--out", "{under}/w.jsonl"],
    ["import", str(FIXTURES / "mini.traj.json"), "--out", "{under}"],
    ["replay-dir", str(FIXTURES), "--policies", "noop", "--out", "{under}/x.csv"],
    ["plot", "ledger", "{run}", "--out", "{under}/x.png"],
    ["replay", "oscillation", "--seeds", "0:2", "--plot", "{under}"],
])
def test_8_an_output_under_a_file_is_one_line_exit_2(argv, run_dir, tmp_path):
    (tmp_path / "afile").write_text("")
    argv = [a.format(under=tmp_path / "afile" / "sub", run=run_dir) for a in argv]
    code, _, err = cli(*argv)
    assert code == 2
    errors = [line for line in err.splitlines() if "afile" in line]
    assert len(errors) == 1 and errors[0].startswith("prunesim: error:") and "Traceback" not in err
    assert (tmp_path / "afile").read_text() == "" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_8_aggregate_into_an_unwritable_place_is_one_line(sweep_copy):
    (sweep_copy / "aggregate.csv").unlink()
    (sweep_copy / "aggregate.csv").mkdir()
    code, _, err = cli("aggregate", sweep_copy)
    one_error_line(err, "aggregate.csv", "is a folder")
    assert code == 2


# -- 9. values that pass validation but crash the engine ---------------------------------
@pytest.mark.parametrize("key, value, problem", [
    ("workload.output_stale_after", 0.5, "must be at least 1 (turns)"),
    ("workload.reasoning_stale_after", 0.99, "must be at least 1 (turns)"),
    ("decision.rationale_sigma", 1000, "must be from 0 to 10"),
])
def test_9_values_the_engine_cannot_run_are_refused_with_the_range(key, value, problem):
    code, _, err = cli("run", "oscillation-40", "--set", f"{key}={value}")
    assert code == 2
    one_error_line(err, key, problem)


@settings(max_examples=25)
@given(stale=st.floats(1.0, 1e6), other=st.floats(1.0, 1e6), sigma=st.floats(0.0, 10.0),
       policy=st.sampled_from(["naive", "tombstoned", "slack-gated"]))
def test_9_every_accepted_value_runs(stale, other, sigma, policy):
    sc = scenario_files.load("oscillation-40", {"workload.output_stale_after": stale,
                                                "workload.reasoning_stale_after": other,
                                                "decision.rationale_sigma": sigma, "turns": 30})
    from prunesim.runner import run_one

    assert run_one(sc, policy, 1, trace="none").summary["turns"] == 30


# -- 10. corrupt sweep folders ------------------------------------------------------------
def _json_edit(fn):
    def edit(folder: Path) -> None:
        path = folder / SWEEP_FILE
        data = json.loads(path.read_text())
        path.write_text(json.dumps(fn(data)))
    return edit


def _set_key(key, value):
    def fn(d):
        d[key] = value
        return d
    return fn


def _replace_dir(name):
    def edit(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).mkdir()
    return edit


CORRUPTIONS = {
    "sweep.json is []": (lambda f: (f / SWEEP_FILE).write_text("[]"), "expected a JSON object"),
    'sweep.json is "x"': (lambda f: (f / SWEEP_FILE).write_text('"x"'), "expected a JSON object"),
    "sweep.json is {}": (lambda f: (f / SWEEP_FILE).write_text("{}"), "scenario"),
    "grid is null": (_json_edit(_set_key("grid", None)), "grid"),
    "grid is an integer": (_json_edit(_set_key("grid", 5)), "grid"),
    "grid has an unknown axis": (_json_edit(_set_key("grid", {"bogus": [1, 2]})), "grid.bogus"),
    "runs.csv is not UTF-8": (lambda f: edit_lines(f / RUNS_FILE, lambda ls: ls) or _poke(f / RUNS_FILE, 300, 0xFF),
                              "not UTF-8"),
    "runs.csv is a folder": (_replace_dir(RUNS_FILE), "runs.csv"),
    "runs.csv is missing": (lambda f: (f / RUNS_FILE).unlink(), "runs.csv"),
    "an edited header": (lambda f: edit_lines(f / RUNS_FILE, lambda ls: [ls[0].replace("passes", "pases")] + ls[1:]),
                         "header does not match"),
}


def _poke(path: Path, offset: int, byte: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = byte
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name, command", [
    (name, command) for name in CORRUPTIONS for command in ("aggregate", "plot sweep", "sweep")
    if (name, command) != ("runs.csv is missing", "sweep")  # a sweep recreates it and runs its runs again
])
def test_10_a_corrupt_sweep_folder_is_one_line_exit_2(name, command, sweep_copy):
    edit, words = CORRUPTIONS[name]
    edit(sweep_copy)
    before = {p.name: (p.read_bytes() if p.is_file() else None) for p in sweep_copy.iterdir()}
    argv = {"aggregate": ["aggregate", sweep_copy],
            "plot sweep": ["plot", "sweep", sweep_copy, "--metric", "passes", "--out", sweep_copy.parent / "f.png"],
            "sweep": ["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
                      "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", sweep_copy]}[command]
    code, _, err = cli(*argv)
    assert code == 2
    one_error_line(err, words)
    after = {p.name: (p.read_bytes() if p.is_file() else None) for p in sweep_copy.iterdir()}
    assert after == before and not (sweep_copy.parent / "f.png").exists()


def test_10_a_lock_that_is_a_folder_is_one_line(sweep_copy):
    _replace_dir(".lock")(sweep_copy)
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
                       "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", sweep_copy)
    assert code == 2
    one_error_line(err, ".lock")


# -- 11. aggregate silently accepts bad rows --------------------------------------------
def _cell(line: str, col: int, value: str) -> str:
    cells = line.rstrip("\n").split(",")
    cells[col] = value
    return ",".join(cells) + "\n"


BAD_ROWS = {
    "a duplicated row": (lambda ls: ls + [ls[2]], "repeats the run on line 3"),
    "an unknown policy": (lambda ls: ls[:2] + [ls[2].replace(",naive,", ",magic,")] + ls[3:], "policy 'magic'"),
    "an off-grid value": (lambda ls: ls[:2] + [_cell(ls[2], 5, "20500")] + ls[3:], "not on the sweep's grid"),
    "a non-integer seed": (lambda ls: ls[:2] + [_cell(ls[2], 3, "1.5")] + ls[3:], "seed '1.5'"),
    "a seed not in the sweep": (lambda ls: ls[:2] + [_cell(ls[2], 3, "7")] + ls[3:], "seed '7'"),
    "a non-numeric cell": (lambda ls: ls[:2] + [_cell(ls[2], 20, "abc")] + ls[3:], "'abc' is not a number"),
    "a bad run_id": (lambda ls: ls[:2] + [_cell(ls[2], 0, "zz")] + ls[3:], "is not a run id"),
}


@pytest.mark.parametrize("name", list(BAD_ROWS))
def test_11_aggregate_refuses_rows_it_would_miscount(name, sweep_copy):
    fn, words = BAD_ROWS[name]
    edit_lines(sweep_copy / RUNS_FILE, fn)
    before = (sweep_copy / "aggregate.csv").read_bytes()
    code, _, err = cli("aggregate", sweep_copy)
    assert code == 2
    one_error_line(err, "runs.csv", "line", words)
    assert (sweep_copy / "aggregate.csv").read_bytes() == before


# -- 12. plot trace and plot ledger ---------------------------------------------------------
RUN_CORRUPTIONS = {
    "a binary trace": ("trace.csv", lambda p: p.write_bytes(b"\x00\x01binary\n"), "NUL byte"),
    "wrong columns": ("trace.csv", lambda p: edit_lines(p, lambda ls: [ls[0].replace("seq,", "sek,")] + ls[1:]),
                      "missing column(s) seq"),
    "a non-numeric cell": ("trace.csv", lambda p: edit_lines(p, lambda ls: ls[:3] + [_cell(ls[3], 8, "abc")] + ls[4:]),
                           "'abc' is not a number"),
    "metrics not an object": ("summary.json", lambda p: p.write_text(json.dumps(
        {**json.loads(p.read_text()), "metrics": [1]})), "metrics: must be an object"),
    "a seed that is text": ("summary.json", lambda p: p.write_text(json.dumps(
        {**json.loads(p.read_text()), "seed": "abc"})), "seed: must be an integer from 0 to 1,000,000,000,000"),
    "an empty trace": ("trace.csv", lambda p: edit_lines(p, lambda ls: ls[:1]), "no rows"),
    "not UTF-8": ("trace.csv", lambda p: _poke(p, 200, 0xFE), "not UTF-8"),
    # A budget of 1e308 drew an empty figure (exit 0, a matplotlib warning on stderr); -5 drew a wrong one.
    "a budget near the float limit": ("summary.json", lambda p: p.write_text(json.dumps(
        {**json.loads(p.read_text()), "budget": 1e308})), "budget: must be a whole number of tokens"),
    "a negative window": ("summary.json", lambda p: p.write_text(json.dumps(
        {**json.loads(p.read_text()), "window": -5})), "window: must be a whole number of tokens"),
}


@pytest.mark.parametrize("name", list(RUN_CORRUPTIONS))
def test_12_plot_trace_refuses_a_corrupt_run_in_one_line(name, run_copy, tmp_path):
    file, edit, words = RUN_CORRUPTIONS[name]
    edit(run_copy / file)
    code, _, err = cli("plot", "trace", run_copy, "--out", tmp_path / "t.png")
    assert code == 2
    one_error_line(err, file, words)
    assert not (tmp_path / "t.png").exists()


def test_12_plot_ledger_does_not_read_the_trace_it_does_not_use(run_copy, tmp_path):
    (run_copy / "trace.csv").write_bytes(b"\x00garbage")
    code, out, err = cli("plot", "ledger", run_copy, "--out", tmp_path / "l.png")
    assert code == 0, err
    assert (tmp_path / "l.png").read_bytes().startswith(b"\x89PNG")


def test_12_a_truncated_trace_plots_its_complete_rows(run_copy, tmp_path):
    with open(run_copy / "trace.csv", "r+b") as fh:
        fh.truncate(2000)
    assert cli("plot", "trace", run_copy, "--out", tmp_path / "t.png")[0] == 0


# -- 13. a malformed --scheduler -----------------------------------------------------------
@pytest.mark.parametrize("address", ["garbage", "tcp://", "foo://h:1", "tcp://h:notaport", "tcp://h:0", "h:70000"])
def test_13_a_malformed_scheduler_is_one_line(address, tmp_path):
    code, _, err = cli("sweep", "oscillation-40", "--seeds", "0:2", "--executor", "dask", "--scheduler", address,
                       "--out", tmp_path / "s")
    assert code == 2
    one_error_line(err, "--scheduler")
    assert not (tmp_path / "s").exists()


# -- 14. command normalization in linear time ------------------------------------------------
_WS = __import__("re").compile(r"\s+")
_TRAILING_COMMENT = __import__("re").compile(r"\s+#[^'\"\n]*$")


def shlex_reference(command: str) -> str:
    """The keys as they were made before: shlex, which is quadratic in a word's length."""
    text = command.replace("\\\r\n", " ").replace("\\\n", " ").replace("\r\n", "\n").strip()
    if not text:
        return ""
    try:
        lexer = shlex.shlex(text.replace("\n", " ;\n"), posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        return _WS.sub(" ", _TRAILING_COMMENT.sub("", text)).strip()
    out = [w if w and set(w) <= set(";&|()<>") else shlex.quote(w) for w in words]
    while out and out[-1] == ";":
        out.pop()
    return " ".join(out)


@settings(max_examples=400)
@given(st.text(alphabet=" \t\r\n#;&|()<>'\"\\abc=$.-/\x0b\xa0é", max_size=24))
def test_14_normalization_gives_the_keys_shlex_gave(command):
    assert normalize_command(command) == shlex_reference(command)


@pytest.mark.parametrize("command", [
    "cat  setup.py", "pytest -x # again", "echo 'a b' \"c d\"", "a && b || c; d | e > f < g", "git log\n\ngit diff",
    "echo $'x'", "python -c \"print('hi')\"", "ls \\\n -la", "echo 'unclosed", "sed -i 's/a/b/' f # it's", "x\\",
])
def test_14_examples_match_the_reference(command):
    assert normalize_command(command) == shlex_reference(command)


def test_14_a_megabyte_command_is_keyed_and_imported(tmp_path):
    body = "".join(f"line {i}: x = {{'k': \"v\"}}  # note\n" for i in range(30_000))
    command = "cat > f.py <<'EOF'\n" + body + "EOF"
    assert len(command) > 900_000  # took 12 s to key with shlex; 3 MB took 99 s (timed in benchmarks/)
    key = command_key(command)
    assert len(key) <= 160 and key.startswith("cat > f.py")
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "THOUGHT: write\n```bash\n" + command + "\n```"},
            {"role": "user", "content": "<returncode>0</returncode>"}]
    (tmp_path / "big.traj.json").write_text(json.dumps({"messages": msgs, "trajectory_format": "mini-swe-agent-1"}))
    assert cli("import", tmp_path / "big.traj.json", "--out", tmp_path / "big.jsonl")[0] == 0


# -- 15. unbounded memory ------------------------------------------------------------------
def test_15_a_recorded_run_bigger_than_the_machine_warns(monkeypatch, tmp_path):
    monkeypatch.setattr(_common, "machine_memory", lambda: 2**20)  # a 1 MB machine
    # A sweep that keeps each run's trace holds it in memory until the run is written.
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=22000", "--policies", "noop", "--seeds", "0:1",
                       "--set", "turns=2000", "--traces", "--jobs", "1", "--quiet", "--out", tmp_path / "s")
    assert code == 0 and "warning: turns=2,000 with the trace recorded needs about 6 MB" in err
    assert "this machine has 1 MB" in err
    # run --out streams its rows to the files: its memory does not grow with the run, nothing to warn of.
    code, _, err = cli("run", "oscillation-40", "--set", "turns=2000", "--policy", "noop", "--out", tmp_path / "r")
    assert code == 0 and err == ""


def test_15_a_run_without_out_records_no_trace(monkeypatch):
    seen = {}

    from prunesim.cli.commands import run as command

    real = command.run_one

    def spy(*args, **kwargs):
        seen["trace"] = kwargs.get("trace")
        return real(*args, **kwargs)

    monkeypatch.setattr(command, "run_one", spy)
    assert cli("run", "oscillation-40")[0] == 0
    assert seen["trace"] == "none"


def test_15_resamples_are_bounded_and_drawn_in_blocks(sweep_copy, monkeypatch):
    code, _, err = cli("aggregate", sweep_copy, "--resamples", "10000000")
    assert code == 2
    one_error_line(err, "--resamples", "from 1 to 1,000,000")
    whole = agg_mod.aggregate(sweep_copy, resamples=3000)
    monkeypatch.setattr(agg_mod, "BLOCK", 7)  # tiny blocks: the same stream, the same intervals
    assert agg_mod.aggregate(sweep_copy, resamples=3000) == whole


# -- 16. hand-edited workload files ---------------------------------------------------------
@pytest.fixture
def workload_file(tmp_path) -> Path:
    path = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", path)[0] == 0
    return path


def _edit_workload(path: Path, header=None, part=None) -> None:
    lines = path.read_text().splitlines()
    h, p = json.loads(lines[0]), json.loads(lines[2])
    if header:
        header(h)
    if part:
        part(p)
    lines[0], lines[2] = json.dumps(h), json.dumps(p)
    path.write_text("\n".join(lines) + "\n")


WORKLOAD_EDITS = {
    "a key that is a list": (None, lambda p: p.update(key=["a"]), "key: must be a string"),
    "prompt tokens of 10^400": (lambda h: h["prompt_tokens"].__setitem__(0, 10**400), None, "prompt_tokens[0]"),
    "a model that is an object": (lambda h: h.update(model={"a": 1}), None, "model: must be a string"),
    "a name that is a list": (lambda h: h.update(name=["x"]), None, "name: must be a string"),
    "prompt tokens that are booleans": (lambda h: h.update(prompt_tokens=[True] * h["turns"]), None,
                                        "prompt_tokens[0]"),
    "a version that is true": (lambda h: h.update(prunesim_workload=True), None, "unsupported version"),
    "tokens that are huge": (None, lambda p: p.update(tokens=10**13), "tokens: must be an integer"),
}


@pytest.mark.parametrize("name", list(WORKLOAD_EDITS))
@pytest.mark.parametrize("command", ["run", "fidelity", "replay-dir"])
def test_16_a_hand_edited_workload_is_one_line(name, command, workload_file):
    header, part, words = WORKLOAD_EDITS[name]
    _edit_workload(workload_file, header, part)
    argv = {"run": ["run", "--workload", workload_file, "--policy", "naive"],
            "fidelity": ["fidelity", workload_file],
            "replay-dir": ["replay-dir", workload_file.parent, "--policies", "noop"]}[command]
    code, _, err = cli(*argv)
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
    assert len(errors) == 1 and words in errors[0] and str(workload_file) in errors[0]


def test_16_a_truncated_workload_is_caught_by_its_part_count(workload_file):
    data = workload_file.read_bytes()
    workload_file.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 20])  # the last part cut short
    with pytest.raises(UserError, match=r"parts: header says \d+ but the file holds \d+ \(its last line is incomplete"):
        wl.read(workload_file)


# -- 17. smaller surprises -----------------------------------------------------------------
def test_17_plot_out_with_another_suffix_is_refused_not_made_a_folder(run_dir, tmp_path):
    code, _, err = cli("plot", "ledger", run_dir, "--out", tmp_path / "x.jpg")
    one_error_line(err, ".jpg is not a figure format")
    assert code == 2 and not (tmp_path / "x.jpg").exists()


def test_17_a_trailing_slash_means_a_folder(run_dir, tmp_path):
    code, _, err = cli("replay-dir", FIXTURES / "bad", "--policies", "noop", "--out", f"{tmp_path / 'rows'}/")
    one_error_line(err, "names a folder")
    assert code == 2 and not (tmp_path / "rows").exists()
    assert cli("plot", "ledger", run_dir, "--out", f"{tmp_path / 'figs.v2'}/")[0] == 0
    assert (tmp_path / "figs.v2" / "ledger.png").is_file()
    assert cli("import", FIXTURES / "mini.traj.json", "--out", f"{tmp_path / 'w.jsonl'}/")[0] == 0
    assert (tmp_path / "w.jsonl" / "mini.workload.jsonl").is_file()


@pytest.mark.parametrize("command", [["run", "oscillation-40"], ["replay-dir", str(FIXTURES), "--policies", "noop"],
                                     ["sweep", "oscillation-40"], ["import", str(FIXTURES / "mini.traj.json")],
                                     ["plot", "ledger", "x"]])
def test_17_an_empty_out_is_refused(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(*command, "--out", "")
    one_error_line(err, "--out", "empty path")
    assert code == 2 and list(tmp_path.iterdir()) == []


def test_17_a_hidden_instance_id_does_not_make_a_hidden_workload(tmp_path):
    oh = json.loads((FIXTURES / "openhands.jsonl").read_text().splitlines()[0])
    oh["instance_id"] = ".hidden"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "runs.jsonl").write_text(json.dumps(oh) + "\n")
    assert cli("import", tmp_path / "in", "--out", tmp_path / "wl")[0] == 0
    assert [p.name for p in (tmp_path / "wl").iterdir()] == ["runs-1.workload.jsonl"]
    code, out, err = cli("replay-dir", tmp_path / "wl", "--policies", "noop")
    assert code == 0 and len(out.splitlines()) == 2


def test_17_a_complete_sweep_run_again_leaves_runs_csv_untouched(sweep_copy):
    runs = sweep_copy / RUNS_FILE
    before = os.stat(runs)
    code, out, _ = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
                       "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", sweep_copy)
    after = os.stat(runs)
    assert code == 0 and "0 run now, 12 already done" in out
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_17_a_header_only_runs_csv_without_a_line_end_resumes(sweep_copy):
    runs = sweep_copy / RUNS_FILE
    full = runs.read_bytes()
    runs.write_bytes(full[: full.index(b"\n")])  # the header, cut before its line end
    args = ("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,recency",
            "--seeds", "0:3", "--jobs", "1", "--quiet", "--out", sweep_copy)
    code, out, err = cli(*args)
    assert code == 0, err
    assert "12 run now" in out and runs.read_bytes() == full


def test_17_plot_seed_without_plot_is_refused():
    code, _, err = cli("replay", "oscillation", "--seeds", "0:2", "--plot-seed", "3")
    one_error_line(err, "--plot-seed", "only applies with --plot")
    assert code == 2


def test_17_folder_sources_with_a_bug_are_reported_as_bugs_not_bad_input(tmp_path, monkeypatch):
    """Per-file isolation keeps going past a bug too, but calls it one: exit 70 and a crash report."""
    real = tr.iter_workloads

    def broken(path, *args):
        if path.name == "openai.json":
            raise AttributeError("'str' object has no attribute 'get'")
        yield from real(path, *args)

    monkeypatch.setattr(tr, "iter_workloads", broken)
    (tmp_path / "in").mkdir()
    for name in ("openai.json", "mini.traj.json"):
        shutil.copy(FIXTURES / name, tmp_path / "in")
    code, _, err = cli("replay-dir", tmp_path / "in", "--policies", "noop", "--out", tmp_path / "rows.csv")
    assert code == 70 and not (tmp_path / "rows.csv").exists()  # a file missed: nothing written
    assert "internal error" in err and "openai.json" in err and "bug in prunesim" in err
    code, _, err = cli("replay-dir", tmp_path / "in", "--policies", "noop", "--out", tmp_path / "rows.csv",
                       "--skip-bad")
    assert code == 70 and "bug in prunesim" in err
    assert len(list(csv.reader(open(tmp_path / "rows.csv")))) == 2  # the good file's row


# -- the seams between reliability, long sessions and the first hour ------------------
def test_seam_a_full_disk_while_a_run_streams_is_exit_1_naming_the_out_folder(tmp_path, monkeypatch):
    """A full disk is the machine's failure (exit 1), named by the folder the user gave, not a staging name."""
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "r"
    code, _, err = cli("run", "oscillation-40", "--policy", "naive", "--set", "turns=10", "--out", out)
    one_error_line(err, "--out", str(out), "No space left on device")
    assert code == 1 and ".tmp" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def per_policy_sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pp") / "s"
    code, _, err = cli("sweep", "oscillation-40", "--set", "turns=15", "--grid", "trigger=20000,22000",
                       "--grid", "slack-gated:gate.lead=0,1000", "--policies", "naive,slack-gated",
                       "--seeds", "0:2", "--jobs", "1", "--quiet", "--out", out)
    assert code == 0, err
    return out


@pytest.mark.parametrize("x, y", [("slack-gated:gate.lead", "trigger"), ("trigger", "slack-gated:gate.lead")])
def test_seam_plot_phase_refuses_an_axis_the_policy_is_not_swept_along(per_policy_sweep, tmp_path, x, y):
    """naive's rows leave slack-gated:gate.lead blank: its phase diagram over that axis would be empty."""
    fig = tmp_path / "phase.png"
    code, _, err = cli("plot", "phase", per_policy_sweep, "--metric", "passes", "--policy", "naive",
                       "--x", x, "--y", y, "--out", fig)
    flag = "--x" if x.startswith("slack-gated:") else "--y"
    one_error_line(err, flag, "slack-gated:gate.lead", "swept for slack-gated only")
    assert code == 2 and not fig.exists()
    code, _, err = cli("plot", "phase", per_policy_sweep, "--metric", "passes", "--policy", "slack-gated",
                       "--x", x, "--y", y, "--out", fig)
    assert code == 0 and fig.stat().st_size > 0, err


_POLICY_HEAD = ("from prunesim.policies.base import Policy\n"
                "class P(Policy):\n    name = 'mine'\n    summary = 'a user policy'\n    model_driven = False\n")
BROKEN_POLICIES = {
    "raises_in_init": (_POLICY_HEAD + "    def __init__(self, *a):\n        raise RuntimeError('boom')\n"
                       "    def decide(self, view):\n        return []\n", "RuntimeError: boom"),
    "raises_in_decide": (_POLICY_HEAD + "    def decide(self, view):\n        raise ValueError('oops')\n",
                         "ValueError: oops"),
    "returns_a_number": (_POLICY_HEAD + "    def decide(self, view):\n        return 5\n", "not a list of actions"),
    "returns_a_non_action": (_POLICY_HEAD + "    def decide(self, view):\n        return ['evict it all']\n",
                             "which is not an action"),
    # a view is a named tuple: iterable, but not the actions (not "returned 1, which is not an action")
    "returns_its_view": (_POLICY_HEAD + "    def decide(self, view):\n        return view\n",
                         "returned the WindowView it was given from decide, not a list of actions"),
    # the view's spans are the window's own snapshot, shared with the engine: a policy cannot reorder them under it
    "reorders_its_view": (_POLICY_HEAD + "    def decide(self, view):\n        view.unpinned.reverse()\n"
                          "        return []\n", "AttributeError"),
    # the actions apply in order, and a set of them is ordered by hashes that change with PYTHONHASHSEED
    "returns_a_set": ("from prunesim.policies.base import Evict\n" + _POLICY_HEAD +
                      "    def decide(self, view):\n        ids = [s.id for s in view.unpinned if s.offerable]\n"
                      "        return {Evict((i,), reason=str(i)) for i in ids[:2]}\n",
                      "returned a set of actions from decide"),
    "no_decide": (_POLICY_HEAD, "does not implement decide"),
    "exits_on_import": ("import sys\nsys.exit(3)\n", "SystemExit"),
}


@pytest.mark.parametrize("name", list(BROKEN_POLICIES))
def test_seam_a_broken_policy_file_is_bad_input_not_a_prunesim_bug(name, tmp_path, monkeypatch):
    """A user's policy that raises or answers nonsense is one line naming it, exit 2, no crash report."""
    text, problem = BROKEN_POLICIES[name]
    crashes = tmp_path / "crashes"
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(crashes))
    file = tmp_path / f"{name}.py"
    file.write_text(text)
    spec = f"{file}:P"
    out = tmp_path / "run"
    code, _, err = cli("run", "oscillation-40", "--policy", spec, "--set", "turns=10", "--out", out)
    one_error_line(err, "--policy", spec, problem)
    assert code == 2 and not out.exists()
    if name not in ("no_decide", "exits_on_import"):  # those are refused when loaded, before any folder command
        rows, folder = tmp_path / "rows.csv", tmp_path / "in"
        folder.mkdir()
        for fixture in ("openai.json", "mini.traj.json"):
            shutil.copy(FIXTURES / fixture, folder)
        code, _, err = cli("replay-dir", folder, "--policies", spec, "--out", rows)
        assert code == 2 and not rows.exists(), err
        errors = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
        assert "Traceback" not in err and len(errors) == 2 and all(problem in line for line in errors), err
        sweep = tmp_path / "sweep"
        code, _, err = cli("sweep", "oscillation-40", "--set", "turns=10", "--grid", "trigger=20000,21000",
                           "--policies", spec, "--seeds", "0:2", "--jobs", "1", "--quiet", "--out", sweep)
        assert code == 2 and problem in err and "Traceback" not in err
        assert not sweep.exists()  # a sweep that failed before its first row leaves no folder behind
    assert not crashes.exists() or list(crashes.iterdir()) == []


def test_seam_a_bug_in_a_built_in_policy_is_still_a_crash_report(tmp_path, monkeypatch):
    """The attribution to a user's policy must not hide prunesim's own bugs."""
    from prunesim.policies.naive import NaivePolicy

    def broken(self, view):
        raise KeyError("spans")

    monkeypatch.setattr(NaivePolicy, "decide", broken)
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(tmp_path / "crashes"))
    code, _, err = cli("run", "oscillation-40", "--policy", "naive", "--set", "turns=10")
    assert code == 70 and "bug in prunesim" in err
    assert len(list((tmp_path / "crashes").iterdir())) == 1


def test_seam_an_aggregate_of_per_policy_axes_is_read_back_by_plot_sweep(per_policy_sweep, tmp_path, capsys):
    """aggregate.csv leaves a per-policy axis blank in other policies' rows, as runs.csv does: it is fresh."""
    sweep = tmp_path / "s"
    shutil.copytree(per_policy_sweep, sweep)
    assert cli("aggregate", sweep)[0] == 0
    rows = list(csv.DictReader(open(sweep / "aggregate.csv")))
    assert {r["slack-gated:gate.lead"] for r in rows if r["policy"] == "naive"} == {""}
    for x in ("trigger", "slack-gated:gate.lead"):
        code, _, err = cli("plot", "sweep", sweep, "--metric", "passes", "--x", x, "--out", tmp_path / "f.png")
        assert code == 0 and err == "", err  # no note: the aggregate was used, not recomputed
    edit_lines(sweep / "aggregate.csv", lambda lines: [lines[0], lines[1].replace("naive,20000,,", "naive,20000,0,")]
               + lines[2:])
    code, _, err = cli("plot", "sweep", sweep, "--metric", "passes", "--x", "trigger", "--out", tmp_path / "g.png")
    assert code == 0 and "is unreadable" in err and "set in a naive row" in err


@pytest.mark.parametrize("ylim", ["1e308:1.7e308", "0:1e16", "-1e300:0"])
def test_seam_a_ylim_beyond_any_window_is_one_line_not_a_crash(ylim, run_dir, tmp_path):
    """Matplotlib's tick locator overflows near the float limit: such a --ylim is refused, not plotted."""
    fig = tmp_path / "t.png"
    code, _, err = cli("plot", "trace", run_dir, f"--ylim={ylim}", "--out", fig)
    one_error_line(err, "--ylim", "out of range")
    assert code == 2 and not fig.exists()
    code, _, err = cli("plot", "trace", run_dir, "--ylim=-1e15:1e15", "--out", fig)
    assert code == 0 and fig.exists(), err


# -- 18. an output under a regular file, said the same way by every writing command --------
UNDER_A_FILE = [
    ("--out", ["run", "oscillation-40", "--set", "turns=10", "--out", "{under}"]),
    ("--out", ["sweep", "oscillation-40", "--seeds", "0:1", "--set", "turns=10", "--jobs", "1", "--quiet",
               "--out", "{under}"]),
    ("--out", ["compare", "oscillation-40", "--seeds", "0:1", "--set", "turns=10", "--out", "{under}"]),
    ("--out", ["compare", "oscillation-40", "--seeds", "0:1", "--set", "turns=10", "--out", "{under}/x.csv"]),
    ("--out", ["calibrate", "oscillation-40", "--targets", "seed-000", "--params", "workload.tool_output.mean",
               "--seeds", "0:1", "--out", "{under}"]),
    ("--out", ["leaderboard", str(FIXTURES / "mini.traj.json"), "--policies", "noop", "--out", "{under}"]),
    ("--out", ["replay-dir", str(FIXTURES / "mini.traj.json"), "--policies", "noop", "--out", "{under}"]),
    ("--out", ["import", str(FIXTURES / "mini.traj.json"), "--out", "{under}"]),
    ("--plot", ["replay", "oscillation", "--seeds", "0:1", "--plot", "{under}"]),
    ("--out", ["plot", "ledger", "{run}", "--out", "{under}"]),
    ("--out", ["plot", "ledger", "{run}", "--out", "{under}/x.png"]),
    ("--fit-out", ["fidelity", str(FIXTURES / "mini.traj.json"), "--fit-out", "{under}"]),
]


@pytest.mark.parametrize("flag, argv", UNDER_A_FILE, ids=[" ".join(a[:1] + a[-2:-1]) + f"-{i}"
                                                          for i, (_, a) in enumerate(UNDER_A_FILE)])
def test_18_an_output_under_a_file_names_the_flag_the_path_and_the_file(flag, argv, run_dir, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    argv = [a.format(under=afile / "sub", run=run_dir) for a in argv]
    typed = argv[argv.index(flag) + 1]
    code, _, err = cli(*argv)
    assert code == 2
    assert err.splitlines() == [f"prunesim: error: {flag}: {typed}: {afile} is a file, not a folder"], err
    assert afile.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("command, study", [("compare", "prunesim.cli.commands.compare.compare"),
                                            ("calibrate", "prunesim.cli.commands.calibrate.calibrate")])
def test_18_compare_and_calibrate_refuse_an_unwritable_out_before_simulating(command, study, tmp_path,
                                                                             monkeypatch):
    def must_not_run(*a, **k):
        raise AssertionError("simulated before checking --out")

    monkeypatch.setattr(study, must_not_run)
    (tmp_path / "afile").write_text("")
    extra = ["--targets", "seed-000", "--params", "workload.tool_output.mean"] if command == "calibrate" else []
    code, _, err = cli(command, "oscillation-40", "--seeds", "0:1", *extra, "--out", tmp_path / "afile" / "x.csv")
    one_error_line(err, "--out", "is a file, not a folder")
    assert code == 2
    code, _, err = cli(command, "oscillation-40", "--seeds", "0:1", *extra, "--out", f"{tmp_path}/new/")
    one_error_line(err, "--out", "names a folder")
    assert code == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


# -- 19. a scenario file that is no regular file -----------------------------------------
def _scenario_that_extends(tmp_path: Path, base: Path) -> Path:
    scenario = tmp_path / "mine.toml"
    scenario.write_text(f'extends = "{base}"\nturns = 5\n')
    return scenario


def _special_bases(tmp_path: Path) -> list[tuple[Path, str]]:
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    loop = tmp_path / "loop.toml"
    loop.symlink_to(tmp_path / "loop2.toml")
    (tmp_path / "loop2.toml").symlink_to(loop)
    bases = [(Path("/dev/null"), "not a regular file (a character device)"),
             (folder, "is a directory, not a scenario file"),
             (loop, "cannot read: Too many levels of symbolic links")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.toml")
        bases.append((tmp_path / "pipe.toml",
                      "not a regular file (a named pipe: save what it carries to a file first)"))
    return bases


def test_19_extends_names_what_the_base_really_is(tmp_path):
    for base, problem in _special_bases(tmp_path):
        scenario = _scenario_that_extends(tmp_path, base)
        code, out, err = cli("run", scenario)
        assert code == 2 and out == ""
        assert err.splitlines() == [f"prunesim: error: {scenario}: extends: '{base}': {problem}"], err


def test_19_a_scenario_path_that_is_no_regular_file_is_refused_before_reading(tmp_path):
    """A device never ends and a pipe may never start: reading either would hang or fill the memory."""
    for base, problem in _special_bases(tmp_path):
        if stat.S_ISFIFO(os.lstat(base).st_mode):
            continue  # before the fix this would block the test run forever; extends covers the pipe
        code, out, err = cli("run", base, "--set", "turns=5")
        assert code == 2 and out == ""
        assert err.splitlines() == [f"prunesim: error: {base}: {problem}"], err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="needs a user other than root (root reads any file)")
def test_19_an_unreadable_base_says_permission_denied(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text("turns = 5\n")
    base.chmod(0)
    scenario = _scenario_that_extends(tmp_path, base)
    code, _, err = cli("run", scenario)
    assert code == 2
    assert err.splitlines() == [f"prunesim: error: {scenario}: extends: '{base}': cannot read: Permission denied"]


# -- 20. a recorded bill with an impossible value ------------------------------------------
BAD_USAGE = {  # name: (edit of the first call's usage, the words the error must hold)
    "neg_prompt": (lambda u: u.update(prompt_tokens=-5), "usage prompt_tokens is -5"),
    "float_prompt": (lambda u: u.update(prompt_tokens=60.5), "usage prompt_tokens is 60.5"),
    "text_prompt": (lambda u: u.update(prompt_tokens="60"), "usage prompt_tokens is '60'"),
    "bool_completion": (lambda u: u.update(completion_tokens=True), "usage completion_tokens is True"),
    "neg_completion": (lambda u: u.update(completion_tokens=-1), "usage completion_tokens is -1"),
    "neg_cached": (lambda u: u.update(prompt_tokens_details={"cached_tokens": -1}),
                   "usage prompt_tokens_details.cached_tokens is -1"),
    "cached_over_prompt": (lambda u: u.update(prompt_tokens_details={"cached_tokens": 61}),
                           "usage prompt_tokens_details.cached_tokens (61) exceeds prompt_tokens (60)"),
    "neg_cost": (lambda u: u.update(cost=-0.01), "usage cost is -0.01"),
    "bool_cost": (lambda u: u.update(cost=False), "usage cost is False"),
}


def bad_bills(folder: Path) -> None:
    """The project's mini-swe-agent fixture: two good copies and one bad copy per entry of BAD_USAGE."""
    folder.mkdir()
    good = json.loads((FIXTURES / "mini.traj.json").read_text())
    for m in good["messages"]:  # a bill the cache study can judge: a priced model, cached tokens and a cost
        if m["role"] == "assistant":
            m["extra"]["response"]["model"] = "gemini-3-pro-preview"
            m["extra"]["response"]["usage"].update(prompt_tokens_details={"cached_tokens": 0}, cost=0.001)
    (folder / "good.traj.json").write_text(json.dumps(good))
    other = copy.deepcopy(good)  # leave-one-out needs another run to fit on: another (a copy is the same run)
    other["messages"][0]["content"] += " Once more."
    for m in other["messages"]:  # and another bill: the cache study reads the calls
        if m["role"] == "assistant":
            m["extra"]["response"]["usage"]["completion_tokens"] += 1
    (folder / "good2.traj.json").write_text(json.dumps(other))
    for name, (edit, _) in BAD_USAGE.items():
        bad = copy.deepcopy(good)
        edit(bad["messages"][2]["extra"]["response"]["usage"])
        (folder / f"{name}.traj.json").write_text(json.dumps(bad))


def _errors_by_file(err: str) -> dict[str, str]:
    lines = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
    by_file = {Path(line.split(": ")[2]).name.removesuffix(".traj.json"): line for line in lines}
    assert len(by_file) == len(lines), err  # each file once
    return by_file


@pytest.mark.parametrize("command", ["fidelity", "import", "replay-dir"])
def test_20_a_bill_with_an_impossible_value_is_that_file_on_one_line(command, tmp_path):
    bad_bills(tmp_path / "in")
    argv = {"fidelity": ["fidelity", tmp_path / "in", "--json"],
            "import": ["import", tmp_path / "in", "--out", f"{tmp_path}/wl/"],
            "replay-dir": ["replay-dir", tmp_path / "in", "--policies", "noop", "--out", tmp_path / "rd.csv"]}
    code, out, err = cli(*argv[command], "--skip-bad")
    assert code == 0 and "Traceback" not in err
    by_file = _errors_by_file(err)
    assert set(by_file) == set(BAD_USAGE)
    for name, (_, words) in BAD_USAGE.items():
        assert f"mini-swe-agent: message 2: {words}" in by_file[name], by_file[name]
    if command == "fidelity":  # the good file went through both halves of the study
        report = json.loads(out)
        assert report["transcripts"] == 2 and report["cache"]["runs"] == 2
    elif command == "import":
        assert sorted(p.name for p in (tmp_path / "wl").iterdir()) == ["good.workload.jsonl", "good2.workload.jsonl"]
    else:
        assert sorted(r["transcript"] for r in csv.DictReader(open(tmp_path / "rd.csv"))) == ["good", "good2"]


def test_20_claude_code_and_codex_bills_are_checked_the_same_way(tmp_path):
    out, tmp_path = tmp_path / "wl", tmp_path / "in"  # the workloads go beside the folder read, never into it
    tmp_path.mkdir()
    session = (FIXTURES / "claude-code" / "session.jsonl").read_text().splitlines()
    record = json.loads(session[3])
    record["message"]["usage"]["input_tokens"] = -3
    (tmp_path / "cc.jsonl").write_text("\n".join([*session[:3], json.dumps(record), *session[4:]]) + "\n")
    rollout = (FIXTURES / "codex" / "rollout-0.34.jsonl").read_text().splitlines()
    record = json.loads(rollout[10])
    record["payload"]["info"]["last_token_usage"]["cached_input_tokens"] = 4000
    (tmp_path / "rollout-x.jsonl").write_text("\n".join([*rollout[:10], json.dumps(record), *rollout[11:]]) + "\n")
    for command in (["import", tmp_path, "--out", f"{out}/"], ["fidelity", tmp_path]):
        code, _, err = cli(*command)
        assert code == 2 and "Traceback" not in err  # no file went through
        lines = sorted(line for line in err.splitlines() if line.startswith("prunesim: error:"))
        assert lines == [f"prunesim: error: {tmp_path / 'cc.jsonl'}:4: claude-code: usage input_tokens is -3: "
                         "expected a non-negative integer",
                         f"prunesim: error: {tmp_path / 'rollout-x.jsonl'}:11: codex: usage cached_input_tokens "
                         "(4000) exceeds input_tokens (3150)"], err


# -- 21. a stopped sweep ends its workers ----------------------------------------------------
def _batch_that_blocks_or_waits(scenario, policy, items, traces_dir, engine="simpy"):
    """In a worker: the "slow" batch notes its pid and would run for a long while; the other returns once the
    slow one is running, so that the sweep is stopped with a batch in flight."""
    import time

    folder = Path(traces_dir)
    if policy == "slow":
        (folder / "slow.pid").write_text(str(os.getpid()))
        time.sleep(30)  # ended long before this by the fix; without it the sweep waits for it
        (folder / "slow.finished").write_text("")
        return []
    while not (folder / "slow.pid").exists():
        time.sleep(0.01)
    return []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (Linux, macOS): the forked pool is what is tested")
def test_21_a_sweep_stopped_mid_batch_ends_its_workers_instead_of_waiting(tmp_path, monkeypatch):
    from prunesim.studies import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "run_batch", _batch_that_blocks_or_waits)
    lock = os.open(os.devnull, os.O_RDONLY)
    try:
        results = sweep_mod._local_results([(None, "slow", [], "simpy"), (None, "fast", [], "simpy")], 2, str(tmp_path),
                                            lock)
        assert next(results) == []  # the fast batch: the slow one is running now
        results.close()  # what SIGTERM or Ctrl-C does to the loop that reads the results
    finally:
        os.close(lock)
    pid = int((tmp_path / "slow.pid").read_text())
    with pytest.raises(ProcessLookupError):  # ended and reaped by the time the sweep's loop is left
        os.kill(pid, 0)
    assert not (tmp_path / "slow.finished").exists()  # ended mid-batch, not waited for


# -- 22. inputs that are devices or pipes, outputs that are loops of links -------------------
@pytest.mark.parametrize("argv", [
    ["import", "/dev/null", "--out", "{tmp}/w.jsonl"],
    ["replay-dir", "/dev/null", "--policies", "noop"],
    ["fidelity", "/dev/null"],
    ["fidelity", str(FIXTURES / "mini.traj.json"), "--fit-on", "/dev/null"],
])
def test_22_a_transcript_path_that_is_a_device_is_refused_unread(argv, tmp_path):
    code, out, err = cli(*[a.format(tmp=tmp_path) for a in argv])
    assert code == 2 and list(tmp_path.iterdir()) == []
    assert err == "prunesim: error: /dev/null: not a regular file (a character device); give a transcript or a folder\n"


def test_22_targets_calibration_and_result_files_that_are_devices_are_named_as_such(run_dir, sweep_dir, tmp_path):
    code, _, err = cli("calibrate", "oscillation-40", "--targets", "/dev/null", "--params",
                       "workload.tool_output.mean", "--seeds", "0:1", "--out", tmp_path / "c.toml")
    assert code == 2 and err == "prunesim: error: /dev/null: not a regular file (a character device)\n"
    code, _, err = cli("replay-dir", FIXTURES / "mini.traj.json", "--policies", "noop", "--calibration", "/dev/null")
    assert code == 2 and err == "prunesim: error: --calibration: /dev/null: not a regular file (a character device)\n"
    run = tmp_path / "r"
    shutil.copytree(run_dir, run)
    (run / "trace.csv").unlink()
    (run / "trace.csv").symlink_to("/dev/null")
    code, _, err = cli("plot", "trace", run, "--out", tmp_path / "t.png")
    assert code == 2 and err == f"prunesim: error: {run}: trace.csv: not a regular file (a character device)\n"
    sweep = tmp_path / "s"
    shutil.copytree(sweep_dir, sweep)
    (sweep / RUNS_FILE).unlink()
    (sweep / RUNS_FILE).symlink_to("/dev/null")
    for argv in (["aggregate", sweep], ["plot", "sweep", sweep, "--metric", "passes", "--x", "trigger"]):
        code, _, err = cli(*argv)
        assert code == 2
        assert err == f"prunesim: error: {sweep / RUNS_FILE}: not a regular file (a character device), " \
                      f"not the sweep's {RUNS_FILE}\n"


@pytest.mark.parametrize("argv", [
    ["import", str(FIXTURES / "mini.traj.json"), "--out", "{loop}"],
    ["replay-dir", str(FIXTURES / "mini.traj.json"), "--policies", "noop", "--out", "{loop}"],
    ["compare", "oscillation-40", "--seeds", "0:1", "--out", "{loop}"],
    ["run", "oscillation-40", "--out", "{loop}"],
    ["plot", "ledger", "{run}", "--out", "{loop}"],
])
def test_22_an_out_that_is_a_loop_of_links_names_the_flag(argv, run_dir, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    code, _, err = cli(*[a.format(loop=loop, run=run_dir) for a in argv])
    assert code == 2
    assert err == f"prunesim: error: --out: {loop}: Too many levels of symbolic links\n"


# -- 23. huge numbers in flags ----------------------------------------------------------------
def test_23_a_seed_range_of_billions_is_refused_before_any_run(monkeypatch, tmp_path):
    def must_not_run(*a, **k):
        raise AssertionError("ran before checking --seeds")

    monkeypatch.setattr("prunesim.cli.commands.compare.compare", must_not_run)
    code, _, err = cli("compare", "oscillation-40", "--seeds", "0:1000000000000")
    assert code == 2
    assert err == ("prunesim: error: --seeds: 0:1000000000000: 1,000,000,000,000 seeds; at most 1,000,000 in one "
                   "command\n")
    code, _, err = cli("sweep", "oscillation-40", "--seeds", "7:1000008", "--out", tmp_path / "s")
    one_error_line(err, "--seeds", "1,000,001 seeds")
    assert code == 2 and not (tmp_path / "s").exists()
    assert _common.parse_seeds("7:1000007") == list(range(7, 1000007))  # the limit itself is accepted


# -- 24. names with control characters ----------------------------------------------------------
def test_24_a_newline_in_a_file_name_is_shown_escaped_on_the_one_line(tmp_path):
    scenario = tmp_path / "bad\nname.toml"
    scenario.write_text('turns = "x"\n')
    code, _, err = cli("run", scenario)
    assert code == 2
    assert err == f"prunesim: error: {tmp_path}/bad\\nname.toml: turns: must be an integer, got a string 'x'\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a\tb.traj.json").write_text("{")
    shutil.copy(FIXTURES / "mini.traj.json", tmp_path / "in")
    code, _, err = cli("import", tmp_path / "in", "--out", f"{tmp_path}/wl/", "--skip-bad")
    assert code == 0
    assert [line for line in err.splitlines() if line.startswith("prunesim: error:")] == [
        f"prunesim: error: {tmp_path}/in/a\\tb.traj.json: malformed JSON at line 1, column 2: the text ends "
        "before the JSON value does (a truncated file?)"]


# -- 25. scenario files nested or chained past Python's stack -------------------------------------
def test_25_a_scenario_nested_too_deeply_is_one_line_not_a_crash(tmp_path):
    scenario = tmp_path / "deep.toml"
    scenario.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = cli("run", scenario)
    assert code == 2 and err == f"prunesim: error: {scenario}: malformed TOML: nested too deeply to read\n"


def test_25_an_extends_chain_longer_than_the_limit_is_one_line_and_the_limit_itself_runs(tmp_path):
    n = scenario_files.MAX_EXTENDS + 1  # files extending another; the last one extends nothing
    for i in range(n + 1):
        (tmp_path / f"s{i}.toml").write_text(f'extends = "s{i + 1}.toml"\n' if i < n else "turns = 5\n")
    code, _, err = cli("run", tmp_path / "s0.toml")
    assert code == 2
    assert err == (f"prunesim: error: {tmp_path / f's{n - 1}.toml'}: extends: a chain of more than "
                   f"{scenario_files.MAX_EXTENDS} scenario files\n")
    code, out, err = cli("run", tmp_path / "s1.toml")  # exactly MAX_EXTENDS links
    assert code == 0 and err == "", err


# -- 26. an output that is the command's own input -------------------------------------------------
def test_26_an_out_that_is_an_input_is_refused_and_the_input_kept(tmp_path):
    session = tmp_path / "s.jsonl"
    shutil.copy(FIXTURES / "claude-code" / "session.jsonl", session)
    folder = tmp_path / "in"
    folder.mkdir()
    mini = folder / "m.traj.json"
    shutil.copy(FIXTURES / "mini.traj.json", mini)
    link = tmp_path / "link.csv"
    link.symlink_to(mini)
    scenario = tmp_path / "my.toml"
    scenario.write_text('extends = "oscillation-40"\nturns = 10\n')
    before = {p: p.read_bytes() for p in (session, mini, scenario)}
    cases = [
        (["import", session, "--out", session], "--out", session, session),
        (["replay-dir", mini, "--policies", "noop", "--out", link], "--out", link, mini),
        (["replay-dir", folder, "--policies", "noop", "--out", mini], "--out", mini, mini),
        (["compare", scenario, "--seeds", "0:1", "--out", scenario], "--out", scenario, scenario),
        (["fidelity", folder, "--fit-out", mini], "--fit-out", mini, mini),
    ]
    for argv, flag, out, source in cases:
        code, _, err = cli(*argv)
        assert code == 2
        assert err == f"prunesim: error: {flag}: {out}: is an input of this command ({source}); give another file\n"
    assert {p: p.read_bytes() for p in before} == before and link.is_symlink()


def test_26_aggregate_never_writes_through_a_link_onto_runs_csv(sweep_copy):
    runs = (sweep_copy / RUNS_FILE).read_bytes()
    (sweep_copy / "aggregate.csv").unlink()
    (sweep_copy / "aggregate.csv").symlink_to(RUNS_FILE)
    code, _, err = cli("aggregate", sweep_copy)
    assert code == 2 and err == (f"prunesim: error: {sweep_copy / 'aggregate.csv'}: is an input of this command "
                                 f"({sweep_copy / RUNS_FILE}); give another file\n")
    assert (sweep_copy / RUNS_FILE).read_bytes() == runs
