"""Importers: formats, content keys, repeats, workload files, bad input, determinism, the commands."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io.scenario_files import load
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.tokens import count_pieces
from prunesim.studies import transcript_replay as replay
from shared_traces import needs, traces_dir

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = sorted(p for p in FIXTURES.iterdir() if p.is_file())
BAD = sorted((FIXTURES / "bad").iterdir())




def one(path: Path) -> wl.WorkloadData:
    (data,) = list(replay.iter_workloads(path))
    return data


@pytest.mark.parametrize(
    "name, fmt, turns, repeats",
    [("mini.traj.json", "mini-swe-agent", 6, 2), ("tiny.traj", "swe-agent", 3, 1), ("openai.json", "openai", 4, 1)],
)
def test_formats_are_detected_and_parsed(name, fmt, turns, repeats):
    data = one(FIXTURES / name)
    assert (data.header["format"], data.turns, data.header["repeats"]) == (fmt, turns, repeats)


def test_openhands_gives_one_workload_per_line_with_prompt_tokens():
    runs = list(replay.iter_workloads(FIXTURES / "openhands.jsonl"))
    assert [r.name for r in runs] == ["tiny__oh-1", "tiny__oh-2"]
    assert runs[1].header["prompt_tokens"] == [100, 150, 200, 250]
    assert runs[1].header["model"] == "openai/gpt-5-codex"
    # ls / cat / ls / cat: the 3rd and 4th calls repeat the first two
    assert runs[1].header["repeats"] == 2


def test_mini_parts_are_split_into_reasoning_call_output_and_user():
    t = next(formats.iter_transcripts(FIXTURES / "mini.traj.json"))
    kinds = [(p.turn, p.kind) for p in t.parts[:5]]
    assert kinds == [(0, "system"), (0, "user"), (1, "reasoning"), (1, "tool_call"), (1, "tool_output")]
    assert t.parts[3].key == "cat count.py"
    # the format-error notice stays a user message of turn 3, not an observation
    assert (3, "user") in [(p.turn, p.kind) for p in t.parts]
    assert t.prompt_tokens == {1: 60, 2: 110, 3: 130, 4: 190, 5: 200, 6: 215}
    assert t.model == "google/gemini-3-pro-preview"


def test_openai_parallel_calls_are_matched_to_their_outputs():
    t = next(formats.iter_transcripts(FIXTURES / "openai.json"))
    outputs = [(p.key, p.text) for p in t.parts if p.kind == "tool_output"]
    assert outputs[1][1] == "x = 1" and "a.py" in outputs[1][0]
    assert outputs[2][1] == "assert x == 2" and "test_a.py" in outputs[2][0]
    assert outputs[0][0] == outputs[3][0] == "pytest -x"


def test_workload_parts_carry_tokens_and_keys_not_text():
    (data,) = replay.iter_workloads(FIXTURES / "mini.traj.json", calibration="none")
    text = wl.dumps(data)
    assert "count(n)" not in text  # no transcript text in a workload
    first = data.parts[0]
    assert first["kind"] == "system" and first.get("calibrated", first["tokens"]) == count_pieces(
        "You are a helpful assistant that runs one bash command per turn.")
    assert all("key" in p for p in data.parts if p["kind"] == "tool_output")
    assert data.header["calibration"] == "none"


def test_workload_file_round_trips(tmp_path):
    data = one(FIXTURES / "openai.json")
    wl.write(tmp_path / "w.jsonl", data)
    back = wl.read(tmp_path / "w.jsonl")
    assert back.header == data.header and back.parts == data.parts
    assert wl.is_workload_file(tmp_path / "w.jsonl")
    assert not wl.is_workload_file(FIXTURES / "openai.json")


@pytest.mark.parametrize(
    "content, problem",
    [
        ("", "empty workload file"),
        ('{"type": "part"}\n', "not a prunesim workload"),
        ('{"type":"header","prunesim_workload":1,"name":"x","format":"openai","tokenizer":"chars","turns":1}\n'
         '{"type":"part","turn":1,"kind":"banana","tokens":3}\n', "unknown part kind"),
        ('{"type":"header","prunesim_workload":1,"name":"x","format":"openai","tokenizer":"chars","turns":2}\n'
         '{"type":"part","turn":1,"kind":"reasoning","tokens":3}\n', "header says 2"),
    ],
)
def test_bad_workload_files_name_the_problem(tmp_path, content, problem):
    path = tmp_path / "w.jsonl"
    path.write_text(content)
    with pytest.raises(Exception) as err:
        wl.read(path)
    assert problem in str(err.value) and str(path) in str(err.value)


def test_import_reports_each_bad_file_on_one_line_and_imports_the_rest(tmp_path, capsys):
    code = main(["import", *map(str, BAD), str(FIXTURES / "openai.json"), "--out", str(tmp_path / "out"), "--skip-bad"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 0  # with --skip-bad: failures are reported and counted, exit 2 only when nothing went through
    assert f"{len(BAD)} file(s) failed" in captured.out
    assert len(err) == len(BAD)
    for path, line in zip(BAD, err, strict=True):
        assert line.startswith(f"prunesim: error: {path}") and "Traceback" not in line
    assert (tmp_path / "out" / "openai.workload.jsonl").exists()


def test_import_of_a_directory_where_a_file_is_expected(tmp_path, capsys):
    code = main(["run", "--workload", str(tmp_path), "--policy", "noop"])
    assert code == 2
    assert "is a directory" in capsys.readouterr().err


def test_import_is_byte_identical_and_names_outputs(tmp_path):
    for out in ("a", "b"):
        assert main(["import", str(FIXTURES), "--out", str(tmp_path / out), "--skip-bad"]) == 0  # bad/ is searched too
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["mini.workload.jsonl", "openai.workload.jsonl", "rollout-0.34.workload.jsonl",
                     "rollout-later.workload.jsonl", "session.workload.jsonl", "subagent.agent-a1b2c3.workload.jsonl",
                     "subagent.workload.jsonl", "tiny.workload.jsonl", "tiny__oh-1.workload.jsonl",
                     "tiny__oh-2.workload.jsonl"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_import_to_a_single_file_and_refusal_for_several(tmp_path, capsys):
    assert main(["import", str(FIXTURES / "mini.traj.json"), "--out", str(tmp_path / "m.jsonl")]) == 0
    assert wl.read(tmp_path / "m.jsonl").turns == 6
    assert main(["import", str(FIXTURES / "openhands.jsonl"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "several runs" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()  # not even the first run


def test_run_replays_a_workload_under_a_policy(tmp_path, capsys):
    main(["import", str(FIXTURES / "mini.traj.json"), "--out", str(tmp_path / "m.jsonl")])
    capsys.readouterr()
    # --agent none: the recording's own repeats (mini-swe-agent's profile adds the agent's re-runs)
    code = main(["run", "--workload", str(tmp_path / "m.jsonl"), "--policy", "recency", "--json",
                 "--set", "budget=60", "--set", "trigger=40", "--set", "recency.low_water_gap=0", "--agent", "none"])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    m = record["metrics"]
    assert record["scenario"] == "transcript" and m["turns"] == 6
    assert m["repeats"] == 2 and m["repeats_after_prune"] + m["repeats_in_window"] == 2


def test_pruning_turns_a_repeat_into_a_re_retrieval():
    data = one(FIXTURES / "mini.traj.json")
    base = load("transcript")
    _, kept = replay.replay(data, base, "noop")
    assert (kept["repeats_after_prune"], kept["repeats_in_window"]) == (0, 2)
    tight = load("transcript", {"budget": 60, "trigger": 40, "recency.low_water_gap": 0})
    _, pruned = replay.replay(data, tight, "recency")
    assert pruned["repeats_after_prune"] >= 1
    assert pruned["repeat_gap_max"] >= 1


def test_replay_dir_writes_one_row_per_transcript_and_policy(tmp_path, capsys):
    good = tmp_path / "in"
    good.mkdir()
    for p in GOOD:
        (good / p.name).write_bytes(p.read_bytes())
    out = tmp_path / "rows.csv"
    assert main(["replay-dir", str(good), "--policies", "noop,recency", "--out", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 5 * 2
    assert {"transcript", "format", "policy", "turns", "repeats", "repeats_after_prune", "passes",
            "peak_utilization"} <= set(rows[0])
    first = out.read_bytes()
    main(["replay-dir", str(good), "--policies", "noop,recency", "--out", str(out)])
    assert out.read_bytes() == first
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # the user's umask, as open() would give


def test_replay_dir_goes_on_past_a_bad_file(tmp_path, capsys):
    code = main(["replay-dir", str(FIXTURES), "--policies", "noop", "--out", str(tmp_path / "r.csv"), "--skip-bad"])
    assert code == 0
    assert len(list(csv.reader((tmp_path / "r.csv").open()))) == 1 + 10
    err = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("prunesim: error:") for line in err) == len(BAD)
    assert f"{len(BAD)} file(s) failed" in err[-1]


def test_replay_dir_exits_2_only_when_nothing_could_be_imported(tmp_path, capsys):
    (tmp_path / "r.csv").write_text("an earlier result\n")
    code = main(["replay-dir", str(FIXTURES / "bad"), "--policies", "noop", "--out", str(tmp_path / "r.csv")])
    assert code == 2
    assert (tmp_path / "r.csv").read_text() == "an earlier result\n"  # not replaced by an empty table
    assert sum(line.startswith("prunesim: error:") for line in capsys.readouterr().err.splitlines()) == len(BAD)


def test_replay_dir_rejects_an_unknown_policy(capsys):
    assert main(["replay-dir", str(FIXTURES), "--policies", "noop,nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


SAMPLES = {"psf__requests-1766": (25, 3), "django__django-14007": (32, 6), "django__django-15957": (49, 9)}


@needs("mini-swe-agent")
def test_sample_turns_and_repeats_match_the_readme():
    for path in sorted((traces_dir() / "mini-swe-agent").glob("*.traj.json")):
        data = one(path)
        assert (data.turns, data.header["repeats"]) == SAMPLES[data.name]


@needs()
def test_every_sample_imports():
    found = list(replay.iter_sources([traces_dir()]))
    assert not [d for _, d in found if isinstance(d, Exception)]
    assert {d.header["format"] for _, d in found} == {"mini-swe-agent", "swe-agent", "openhands", "claude-code",
                                                       "codex"}
