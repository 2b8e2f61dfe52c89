"""Claude Code and Codex records of every shape: the parsers read each field with the type they need.

Properties over generated sessions: any record with lists or objects where strings are expected, values
nested deep, parents never written or sidechains written out of order imports or fails in one line
naming the file; the main conversation of a session does not depend on where its subagents' records sit.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prunesim.errors import UserError
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SIM = Path(__file__).resolve().parents[1] / "sim"
FILES = [FIXTURES / "claude-code" / "session.jsonl", FIXTURES / "claude-code" / "subagent.jsonl",
         FIXTURES / "codex" / "rollout-0.34.jsonl", FIXTURES / "codex" / "rollout-later.jsonl"]


def _records(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # the fixture's deliberately truncated last line
    return out


def _paths(value, prefix=()):
    """Every place in a record: (key, key, ...) down to each value."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _paths(inner, (*prefix, i))


def _put(record, path, value):
    node = record
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _import(path: Path) -> None:
    """What `import` does with a file: parse it, size it as a workload."""
    for t in formats.iter_transcripts(path):
        wl.from_transcript(t, "chars", "none")


def _nested(depth: int, inner) -> object:
    for _ in range(depth):
        inner = [inner]
    return inner


CONFUSED = st.one_of(
    st.just([]), st.just({}), st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                                         st.integers(), max_size=2),
    st.integers(min_value=-(10**20), max_value=10**20), st.none(), st.booleans(), st.floats(allow_nan=False),
    st.text(max_size=5), st.integers(min_value=50, max_value=400).map(lambda d: _nested(d, "x")),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(FILES), value=CONFUSED)
def test_a_field_of_any_type_anywhere_imports_or_fails_in_one_line(tmp_path, data, which, value):
    records = _records(which)
    index = data.draw(st.integers(0, len(records) - 1))
    record = copy.deepcopy(records[index])
    path = data.draw(st.sampled_from(list(_paths(record))))
    _put(record, path, value)
    records[index] = record
    target = tmp_path / which.name
    target.write_text("".join(json.dumps(r) + "\n" for r in records))
    try:
        _import(target)
    except UserError as err:
        assert str(err).startswith(str(target)), str(err)


# -- a session written as Claude Code writes it -----------------------------------------------------------
STAMP = "2026-01-10T10:00:00.000Z"  # Claude Code times every record; the replay's clock reads it


def _user(uuid, parent, text, sidechain=False, **extra):
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": sidechain, "sessionId": "s",
            "timestamp": STAMP, "message": {"role": "user", "content": text}, **extra}


def _assistant(uuid, parent, mid, sidechain=False, prompt=1000):
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": sidechain, "sessionId": "s",
            "timestamp": STAMP, "message": {"id": mid, "model": "claude-demo-1", "role": "assistant",
                        "content": [{"type": "text", "text": f"step {mid}"}],
                        "usage": {"input_tokens": prompt, "output_tokens": 5}}}


def _main(calls: int) -> list[dict]:
    out, parent = [], None
    for k in range(calls):
        out.append(_user(f"u{k}", parent, f"go on {k}"))
        out.append(_assistant(f"a{k}", f"u{k}", f"msg{k}", prompt=1000 + 100 * k))
        parent = f"a{k}"
    return out


def _subagent(name: str, calls: int) -> list[dict]:
    out, parent = [], None
    for k in range(calls):
        out.append(_user(f"{name}-u{k}", parent, f"sub {k}", sidechain=True, agentId=name))
        out.append(_assistant(f"{name}-a{k}", f"{name}-u{k}", f"{name}-msg{k}", sidechain=True))
        parent = f"{name}-a{k}"
    return out


def _write(tmp_path, records, name="session.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_an_unwritten_parent_after_earlier_sidechain_records_keeps_the_whole_conversation(tmp_path):
    records = _subagent("agentA", 2) + _main(7)
    records[4 + 6]["parentUuid"] = "never-written"  # the 4th call's user record links to a record not in the file
    (main, agent) = formats.iter_transcripts(_write(tmp_path, records))
    assert main.turns == 7 and agent.turns == 2


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), calls=st.integers(1, 8), agents=st.integers(0, 3))
def test_the_main_conversation_does_not_depend_on_where_subagent_records_sit(tmp_path, data, calls, agents):
    main = _main(calls)
    if data.draw(st.booleans()):  # a parent Claude Code never wrote
        index = data.draw(st.integers(0, len(main) - 1))
        main[index]["parentUuid"] = "never-written"
    side = [r for n in range(agents) for r in _subagent(f"agent{n}", data.draw(st.integers(1, 3)))]
    # The subagents' records anywhere among the main ones, each subagent's own order kept or not.
    if data.draw(st.booleans()):
        side = data.draw(st.permutations(side))
    slots = sorted(data.draw(st.lists(st.integers(0, len(main)), min_size=len(side), max_size=len(side))))
    records, at = [], 0
    for slot, record in zip(slots, side, strict=True):
        records += main[at:slot]
        at = max(at, slot)
        records.append(record)
    records += main[at:]
    path = _write(tmp_path, records)
    (alone,) = formats.iter_transcripts(_write(tmp_path, main, "alone.jsonl"))
    first = next(formats.iter_transcripts(path))
    assert first.turns == alone.turns == calls
    assert [(p.turn, p.kind, p.text) for p in first.parts] == [(p.turn, p.kind, p.text) for p in alone.parts]


def test_an_interrupted_subagent_with_no_reply_is_skipped_with_a_warning(tmp_path):
    records = _main(3) + [_user("lost-u0", None, "do a task", sidechain=True, agentId="lost")]
    path = _write(tmp_path, records)
    out = tmp_path / "out"
    code, _, err = cli("import", path, "--out", out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["session.workload.jsonl"]
    assert f"{path}: session.jsonl#agent-lost: no model call (interrupted before the first reply?); skipped" in err


@pytest.mark.parametrize("field", ["type", "uuid", "message.id", "tool_use_id"])
@pytest.mark.parametrize("value", [[1], {"a": 1}])
def test_a_claude_id_or_type_that_is_a_list_or_an_object_is_one_line(tmp_path, field, value):
    records = _main(2)
    records[2]["message"]["content"] = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]
    records[3]["message"]["content"] = [{"type": "tool_result", "tool_use_id": "t1", "content": "a b"}]
    target = {"type": records[1], "uuid": records[1], "message.id": records[1]["message"],
              "tool_use_id": records[3]["message"]["content"][0]}[field]
    target[field.rpartition(".")[2]] = value
    path = _write(tmp_path, records)
    out = tmp_path / "out"
    code, _, err = cli("import", path, "--out", out)
    assert "internal error" not in err and "Traceback" not in err
    if field in ("type", "uuid"):  # without them the record cannot be placed
        assert code == 2 and err.splitlines()[0] == (f"prunesim: error: {path}:2: {field}: missing or not a string "
                                                     f"in a {'Claude Code' if field == 'type' else 'assistant'} "
                                                     "record")
    else:  # an id that is not a string pairs nothing: the call or result stands alone
        assert code == 0, err


@pytest.mark.parametrize("field", ["type", "payload.type", "payload.call_id"])
def test_a_codex_type_or_id_that_is_a_list_is_one_line(tmp_path, field):
    records = _records(FIXTURES / "codex" / "rollout-0.34.jsonl")
    index = next(i for i, r in enumerate(records) if r["payload"].get("type") == "function_call_output")
    node = records[index] if field == "type" else records[index]["payload"]
    node[field.rpartition(".")[2]] = ["x"]
    path = _write(tmp_path, records, "rollout.jsonl")
    code, _, err = cli("import", path, "--out", tmp_path / "out")
    assert "internal error" not in err and "Traceback" not in err
    assert (code, err.splitlines()[0] if code else "") == {
        "type": (2, f"prunesim: error: {path}:{index + 1}: type: missing or not a string in a Codex record"),
        "payload.type": (2, f"prunesim: error: {path}:{index + 1}: payload.type: missing or not a string in a "
                            "response item"),
        "payload.call_id": (0, ""),
    }[field]


def test_a_value_nested_100000_deep_in_a_session_is_one_line(tmp_path):
    records = _main(2)
    records[1]["message"]["content"] = [{"type": "tool_use", "id": "t", "name": "Edit", "input": {"x": "@"}}]
    line = json.dumps(records[1]).replace('"@"', "[" * 100_000 + '"deep"' + "]" * 100_000)
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([json.dumps(records[0]), line, *map(json.dumps, records[2:])]) + "\n")
    code, _, err = cli("import", path, "--out", tmp_path / "out")
    assert code == 2 and err.splitlines()[0] == f"prunesim: error: {path}:2: JSON nested too deeply to read"


# -- the parsers' own layout ------------------------------------------------------------------------------
def _source(name: str) -> ast.Module:
    return ast.parse((SIM / "io" / "transcripts" / name).read_text())


@pytest.mark.parametrize("name", ["claude_code.py", "codex.py"])
def test_the_session_parsers_read_record_fields_only_through_the_typed_layer(name):
    """No ``record.get(...)``: every field comes through prunesim.io.transcripts.fields (the records' own dicts
    built by the parser, like its usage tables, are named here)."""
    own = {"root_of", "by_uuid", "t.usage", "fields", "have", "meta", "t.usage.get(k, {})"}
    for node in ast.walk(_source(name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            assert ast.unparse(node.func.value) in own, f"{name}:{node.lineno}: {ast.unparse(node)}"


@pytest.mark.parametrize("name", ["claude_code.py", "codex.py"])
def test_no_import_circle_between_the_formats_and_their_parsers(name):
    imported = {n.module for n in ast.walk(_source(name)) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(_source(name)) if isinstance(n, ast.Import) for a in n.names}
    assert "prunesim.io.transcripts.formats" not in imported
    assert not any(isinstance(n, ast.ImportFrom) and n.col_offset for n in ast.walk(_source("formats.py")))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(FILES))
def test_records_in_any_order_or_with_some_missing_import_or_fail_in_one_line(tmp_path, data, which):
    """Calls, results, usage and compactions written out of order, or lost: never a crash."""
    records = data.draw(st.permutations(_records(which)))
    kept = [r for r in records if data.draw(st.booleans()) or r.get("type") in ("session_meta", "user")]
    target = tmp_path / which.name
    target.write_text("".join(json.dumps(r) + "\n" for r in kept or records))
    try:
        _import(target)
    except UserError as err:
        assert str(err).startswith(str(target)), str(err)
