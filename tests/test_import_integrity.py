"""Imports never garble or drop a run: every importer, and every command that reads a folder of them.

* records written twice (the same uuids) are one session, read once, with a warning; the same uuid with
  other content is refused in one line;
* two sessions written into one file are two workloads, each the one its own file gives (nothing dropped);
* a run that another file (or line) already gave, whatever the names, is counted once and said so;
* calls stamped out of order are read in order, and the import says so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prunesim.io.transcripts import clock, formats
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.identity import Seen, digest
from prunesim.studies import cache_fidelity
from prunesim.studies.transcript_replay import iter_sources, one_workload

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SESSION = FIXTURES / "claude-code" / "session.jsonl"
SUBAGENT = FIXTURES / "claude-code" / "subagent.jsonl"
ROLLOUTS = [FIXTURES / "codex" / "rollout-0.34.jsonl", FIXTURES / "codex" / "rollout-later.jsonl"]
EXAMPLES = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _lines(path: Path) -> list[str]:
    """The file's complete records (the Claude Code fixture ends in a deliberately cut line)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            json.loads(line)
        except ValueError:
            continue
        out.append(line + "\n")
    return out


def _workloads(path: Path) -> list[wl.WorkloadData]:
    return [wl.from_transcript(t, "chars", "none") for t in formats.iter_transcripts(path)]


def _content(data: wl.WorkloadData) -> tuple:
    """What a replay reads of a workload: its parts and its header, less its name and file."""
    return digest(data), data.turns


# -- Claude Code: records written twice ----------------------------------------------------------------
@EXAMPLES
@given(data=st.data(), file=st.sampled_from([SESSION, SUBAGENT]))
def test_records_written_again_are_read_once_whatever_is_repeated(tmp_path, data, file):
    lines = _lines(file)
    original = tmp_path / "original.jsonl"
    original.write_text("".join(lines))
    repeated = data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=1, max_size=len(lines)))
    at = data.draw(st.sampled_from(["end", "after"]))
    out = list(lines)
    for i in repeated:  # each chosen record written once more: at the end, or right after itself
        out.insert(len(out) if at == "end" else out.index(lines[i]) + 1, lines[i])
    copy = tmp_path / "original-copy.jsonl"
    copy.write_text("".join(out))
    want = [_content(d) for d in _workloads(original)]
    got = _workloads(copy)
    assert [_content(d) for d in got] == want
    typed = {json.loads(lines[i]).get("type") for i in repeated}
    said = [w for t in formats.iter_transcripts(copy) for w in t.warnings if "repeat an earlier" in w]
    assert bool(said) == bool(typed & {"user", "assistant", "system"})  # snapshots and titles are never read


def test_a_session_appended_to_itself_imports_as_the_session(tmp_path):
    (tmp_path / "twice.jsonl").write_text("".join(_lines(SESSION)) * 2)
    (tmp_path / "once.jsonl").write_text("".join(_lines(SESSION)))
    code, out, err = cli("import", tmp_path / "twice.jsonl", "--out", tmp_path / "w" / "twice.workload.jsonl")
    assert code == 0, err
    assert err.count("record(s) repeat an earlier one (same uuid, same content") == 1
    assert [_content(d) for d in _workloads(tmp_path / "twice.jsonl")] == \
        [_content(d) for d in _workloads(tmp_path / "once.jsonl")]


def test_one_uuid_with_other_content_is_refused_in_one_line(tmp_path):
    lines = _lines(SESSION)
    i = next(n for n, line in enumerate(lines) if json.loads(line).get("type") == "assistant")
    record = json.loads(lines[i])
    record["message"]["content"] = [{"type": "text", "text": "another answer"}]
    path = tmp_path / "garbled.jsonl"
    path.write_text("".join(lines) + json.dumps(record) + "\n")
    code, out, err = cli("import", path, "--out", tmp_path / "w" / "g.workload.jsonl")
    assert code == 2 and not (tmp_path / "w").exists()
    assert err.splitlines() == [f"prunesim: error: {path}:{len(lines) + 1}: uuid: claude-code: repeats the uuid "
                                f"of line {i + 1} with other content (a garbled or merged file): keep one of the "
                                "two records"]


# -- sessions written into one file ---------------------------------------------------------------------
def _renamed(lines: list[str], tag: str) -> list[str]:
    """The same session under other uuids and another session id (another session, as far as ids go)."""
    out = []
    for line in lines:
        record = json.loads(line)
        for key in ("uuid", "parentUuid", "logicalParentUuid", "sessionId", "leafUuid"):
            if isinstance(record.get(key), str):
                record[key] = f"{tag}-{record[key]}"
        out.append(json.dumps(record) + "\n")
    return out


def test_two_claude_code_sessions_in_one_file_are_two_workloads_none_dropped(tmp_path):
    first, second = _lines(SESSION), _renamed(_lines(SUBAGENT), "other")
    (tmp_path / "a.jsonl").write_text("".join(first))
    (tmp_path / "b.jsonl").write_text("".join(second))
    both = tmp_path / "both.jsonl"
    both.write_text("".join(first + second))
    alone = [_content(d) for d in _workloads(tmp_path / "a.jsonl") + _workloads(tmp_path / "b.jsonl")]
    joined = _workloads(both)
    assert sorted(_content(d) for d in joined) == sorted(alone)
    names = [d.name for d in joined]
    assert names[:2] == ["both.session-1", "both.session-2"], names
    notes = [w for t in formats.iter_transcripts(both) for w in t.warnings if "conversations" in w]
    assert notes == [f"{both}: holds 2 conversations, each with its own first record (lines 2, {len(first) + 1}: "
                     "sessions written into one file?); imported apart as both.session-1 to both.session-2"]


def test_one_session_with_compactions_and_edited_branches_stays_one(tmp_path):
    """A compaction's boundary links back by logicalParentUuid, an edited message leaves a branch: one session."""
    path = tmp_path / "s.jsonl"
    path.write_text("".join(_lines(SESSION)))
    (main, *_) = formats.iter_transcripts(path)
    assert main.name == "s" and not any("conversations" in w for w in main.warnings)


def test_codex_rollouts_written_into_one_file(tmp_path):
    a, b = (path.read_text() for path in ROLLOUTS)
    twice, both = tmp_path / "twice.jsonl", tmp_path / "both.jsonl"
    twice.write_text(a + a)
    both.write_text(a + b)
    once = [_content(d) for d in _workloads(ROLLOUTS[0])]
    got = _workloads(twice)
    assert [_content(d) for d in got] == once
    assert any("is written again from line" in w for t in formats.iter_transcripts(twice) for w in t.warnings)
    apart = sorted(_content(d) for p in ROLLOUTS for d in _workloads(p))
    assert sorted(_content(d) for d in _workloads(both)) == apart


# -- a run counted once, whatever file it came from ------------------------------------------------------
@EXAMPLES
@given(copies=st.integers(1, 3), names=st.lists(st.sampled_from(["=a", "b b", "-c", "d"]), min_size=3,
                                                  max_size=3, unique=True))
def test_copies_of_a_run_are_counted_once_and_said_so(tmp_path, copies, names):
    folder = tmp_path / f"f{copies}{''.join(names)}"
    folder.mkdir()
    shutil.copy(ROLLOUTS[1], folder / "original.jsonl")
    for name in names[:copies]:
        shutil.copy(ROLLOUTS[1], folder / f"{name}.jsonl")
    said: list[str] = []
    got = [d for _, d in iter_sources([folder], "chars", "none", seen=Seen(said.append))]
    assert len(got) == 1 and len(said) == copies
    assert all(line.endswith("(same content): counted once") for line in said)


def test_a_jsonl_line_written_twice_is_one_run(tmp_path):
    lines = (FIXTURES / "openhands.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(lines + lines[:1]))
    said: list[str] = []
    got = [d for _, d in iter_sources([path], "chars", "none", seen=Seen(said.append))]
    assert len(got) == len(lines)
    assert said == [f"{path}:{len(lines) + 1}: the same run as {path}:1 (same content): counted once"]


def test_run_workload_reads_a_repeated_run_once(tmp_path):
    lines = (FIXTURES / "openhands.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "one.jsonl"
    path.write_text(lines[0] * 2)
    data = one_workload(path)
    assert data.turns > 0 and any("counted once" in w for w in data.warnings)


def test_a_leaderboard_counts_a_copied_transcript_once(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(ROLLOUTS[1], folder / "a.jsonl")
    shutil.copy(ROLLOUTS[1], folder / "copy of a.jsonl")
    code, out, err = cli("leaderboard", folder, "--policies", "noop", "--tokenizer", "chars", "--out", tmp_path / "lb")
    assert code == 0, err
    meta = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert meta["units"] == 1
    assert meta["repeats"] == [f"{folder / 'copy of a.jsonl'}: the same run as {folder / 'a.jsonl'} (same content): "
                               "counted once"]
    assert f"prunesim: warning: {meta['repeats'][0]}" in err.splitlines()


def test_a_file_that_fails_is_forgotten_so_its_copy_still_counts():
    seen = Seen()
    data = _workloads(ROLLOUTS[1])[0]
    data.path = "first.jsonl"
    assert not seen.is_repeat(data)
    seen.forget("first.jsonl")
    data.path = "second.jsonl"
    assert not seen.is_repeat(data) and seen.is_repeat(data)


def test_the_cache_study_counts_a_copied_rollout_once(tmp_path):
    shutil.copy(ROLLOUTS[0], tmp_path / "a.jsonl")
    (tmp_path / "b.jsonl").write_text(ROLLOUTS[0].read_text() * 2)  # a copy, and written twice over
    runs, failed = cache_fidelity.collect(tmp_path)
    alone, _ = cache_fidelity.collect(ROLLOUTS[0])
    assert failed == [] and len(runs) == 1 and runs[0].calls == alone[0].calls


# -- the clock -------------------------------------------------------------------------------------------
@EXAMPLES
@given(times=st.lists(st.floats(1e9, 1e9 + 1e5), min_size=1, max_size=12))
def test_calls_stamped_out_of_order_are_read_in_order_and_said_so(times):
    stamps = {k: t for k, t in enumerate(times, 1)}
    relative = clock.relative(stamps, len(times))
    assert relative == sorted(relative)  # the replay's clock never runs backwards
    note = clock.backwards_note(stamps, len(times), "s.jsonl")
    backwards = [k for k in range(2, len(times) + 1) if times[k - 1] < max(times[: k - 1])]
    assert (note is None) == (not backwards)
    if note:
        assert note.startswith(f"s.jsonl: {len(backwards)} model call(s) are stamped before a call made earlier "
                               f"(the first: call {backwards[0]}")


def test_an_import_with_a_call_stamped_too_early_warns(tmp_path):
    lines = [json.loads(line) for line in _lines(SUBAGENT)]
    calls = [r for r in lines if r.get("type") == "assistant" and not r.get("isSidechain")]
    calls[-1]["timestamp"] = "2001-01-01T00:00:00Z"
    path = tmp_path / "early.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, out, err = cli("import", path, "--out", tmp_path / "w/")
    assert code == 0 and "model call(s) are stamped before a call made earlier" in err


def test_two_runs_alike_in_every_size_but_not_in_text_are_two(tmp_path):
    """Identity is the content: a prompt with other words of the same size is another run."""
    lines = _lines(SESSION)
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "user")
    for name, word in (("a", "Count"), ("b", "Tally")):
        record = json.loads(lines[first])
        record["message"]["content"] = record["message"]["content"].replace("Count", word)
        (tmp_path / f"{name}.jsonl").write_text("".join([*lines[:first], json.dumps(record) + "\n",
                                                         *lines[first + 1:]]))
    said: list[str] = []
    got = [d for _, d in iter_sources([tmp_path], "chars", "none", seen=Seen(said.append))]
    assert [d.name for d in got] == ["a", "b"] and said == []
    assert [d.parts for d in got][0] == [d.parts for d in got][1]  # what a replay reads is the same


def test_two_workload_files_written_into_one_are_one_line(tmp_path):
    assert cli("import", ROLLOUTS[1], "--out", tmp_path / "w" / "a.workload.jsonl")[0] == 0
    text = (tmp_path / "w" / "a.workload.jsonl").read_text()
    both = tmp_path / "both.workload.jsonl"
    both.write_text(text + text)
    code, _, err = cli("run", "--workload", both, "--policy", "noop")
    line = text.count("\n") + 1
    assert code == 2 and err.splitlines() == [f"prunesim: error: {both}:{line}: a second header: two workloads "
                                              "written into one file (a workload file holds one; import or replay "
                                              "them as files of their own)"]
