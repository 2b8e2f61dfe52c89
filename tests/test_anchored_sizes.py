"""Anchored sizes: a hand-made Claude Code session whose noop replay sends exactly the recorded prompts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import workload as wl
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies.transcript_replay import iter_workloads, replay

HIDDEN = 3000  # the system prompt and tools Claude Code never writes down
CALLS = 6
DROP_AT = 4  # this call's recorded prompt shrinks while nothing left the file's prompt: it cannot be anchored
PARTIAL = 6  # this call's records hold only the stream's opening output count
OUTPUT = 90  # the final output count of the other calls


def _record(uuid: str, parent: str | None, kind: str, message: dict, second: int) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/work/demo",
            "sessionId": "anchor-test", "version": "2.1.0", "uuid": uuid, "type": kind,
            "timestamp": f"2026-01-01T00:00:{second:02d}Z", "message": message}


def session(path: Path, prompts: list[int] | None, reads: dict[int, int] | None = None) -> Path:
    """A session of CALLS calls, each a note and a ``cat`` whose output is a file of ``12 * k`` lines."""
    records, parent = [], None
    records.append(_record("u-0", None, "user", {"role": "user", "content": "Read the modules one by one."}, 0))
    parent = "u-0"
    for k in range(1, CALLS + 1):
        usage = {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "output_tokens": 1}
        if prompts:
            read = (reads or {}).get(k, prompts[k - 1] - usage["input_tokens"])
            usage["cache_read_input_tokens"] = read
            usage["cache_creation_input_tokens"] = prompts[k - 1] - usage["input_tokens"] - read
        blocks = [{"type": "text", "text": f"Now module {k}, to see how it counts."},
                  {"type": "tool_use", "id": f"tu-{k}", "name": "Bash", "input": {"command": f"cat mod{k}.py"}}]
        for b, block in enumerate(blocks):
            last = b == len(blocks) - 1
            counted = dict(usage, output_tokens=OUTPUT if last and k != PARTIAL else 1)
            message = {"model": "claude-opus-4-5-20251101", "id": f"msg_{k}", "type": "message",
                       "role": "assistant", "content": [block]}
            if prompts:
                message["usage"] = counted
            records.append(_record(f"a-{k}-{b}", parent, "assistant", message, 2 * k))
            parent = f"a-{k}-{b}"
        lines = "".join(f"def f{k}_{i}(x):\n    return x + {i}\n" for i in range(12 * k))
        result = {"role": "user", "content": [{"tool_use_id": f"tu-{k}", "type": "tool_result", "content": lines}]}
        records.append(_record(f"r-{k}", parent, "user", result, 2 * k + 1))
        parent = f"r-{k}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def recorded_session(tmp_path: Path, reads: dict[int, int] | None = None) -> tuple[wl.WorkloadData, list[int]]:
    """The session with prompt counts 20% above what its parts weigh calibrated, but call DROP_AT's 300 below
    the call before it."""
    (bare,) = iter_workloads(session(tmp_path / "bare.jsonl", None))
    assert not any("calibrated" in p for p in bare.parts)  # no counts: nothing anchored, the calibrated sizes
    visible = wl.context_before_calls(bare)
    prompts = [HIDDEN + visible[0]]
    for k in range(2, CALLS + 1):
        grown = round(1.2 * (visible[k - 1] - visible[k - 2]))
        prompts.append(prompts[-1] - 300 if k == DROP_AT else prompts[-1] + grown)
    (data,) = iter_workloads(session(tmp_path / "anchor-test.jsonl", prompts, reads))
    return data, prompts


def test_anchored_sizes_reproduce_every_recorded_prompt_but_the_one_that_falls_back(tmp_path):
    data, prompts = recorded_session(tmp_path)
    assert data.header["anchor_fallbacks"] == [DROP_AT]
    assert data.header["anchored_steps"] == CALLS - 1
    context = wl.context_before_calls(data)
    for k in range(1, CALLS + 1):
        if k < DROP_AT:
            assert context[k - 1] == prompts[k - 1], k
    # The call that fell back keeps the calibrated sizes of what arrived for it. Its error is carried on (the
    # next step grows as the recording grew) until a step whose parts can take it back within MAX_SCALE does:
    # call 5's parts would have to shrink below a quarter of their size, call 6's need not.
    offset = context[DROP_AT - 1] - prompts[DROP_AT - 1]
    assert offset > 300
    assert [c - p for c, p in zip(context[DROP_AT - 1:], prompts[DROP_AT - 1:], strict=True)] == [offset, offset, 0]
    step = [p for p in data.parts if p["turn"] == DROP_AT - 1]
    assert step and all("calibrated" not in p for p in step)
    # An anchored step shares the recorded growth in proportion to the calibrated sizes.
    grown = [p for p in data.parts if p["turn"] == 1 and p["kind"] == "tool_output"]
    assert grown and all(p["tokens"] > p["calibrated"] for p in grown)
    # The size model is still there: calibrated sizes reproduce nothing exactly.
    calibrated = wl.context_before_calls(wl.sized_as(data, "calibrated"))
    assert calibrated[1] != prompts[1]


def test_a_shrink_whose_cache_read_stops_inside_the_hidden_part_cuts_the_hidden_part(tmp_path):
    data, prompts = recorded_session(tmp_path, reads={DROP_AT: 1000})  # the prompt changed 1,000 tokens in
    assert data.header["anchor_fallbacks"] == []
    assert wl.context_before_calls(data) == prompts  # every recorded prompt, the shrink included
    hidden = [p for p in data.parts if p.get("hidden")]
    kept, cut = hidden
    assert cut["dropped_at"] == DROP_AT and kept["tokens"] + cut["tokens"] == kept["calibrated"] == HIDDEN
    assert kept["tokens"] >= 1000  # what the call still read stays
    assert {"event": "removed", "turn": DROP_AT, "tokens": cut["tokens"], "parts": 0, "hidden": True} in \
        data.header["events"]
    # The calibrated sizes keep the hidden part whole: the size model knows nothing of the cut.
    assert [p["tokens"] for p in wl.sized_as(data, "calibrated").parts if p.get("hidden")] == [HIDDEN, 0]


def test_the_noop_replay_sends_the_recorded_prompts_and_bills_the_recorded_outputs(tmp_path):
    data, prompts = recorded_session(tmp_path)
    base = sc.load("transcript")
    result, _ = replay(data, base, "noop")
    calls = np.asarray(result.calls)
    sent = calls[:, CALL_COLUMNS.index("prompt_tokens")].astype(int).tolist()
    assert sent == wl.context_before_calls(data)
    assert sent[:DROP_AT - 1] == prompts[:DROP_AT - 1]
    outputs = calls[:, CALL_COLUMNS.index("output_tokens")].astype(int).tolist()
    # The recorded final count where the file holds one; a partial one (1 token) is not billed as such, but at
    # what the call wrote, calibrated.
    assert data.header["outputs"][PARTIAL - 1] is None
    wrote = sum(p.get("calibrated", p["tokens"]) for p in data.parts
                if p["turn"] == PARTIAL and p["kind"] in ("reasoning", "tool_call"))
    assert outputs == [OUTPUT] * (PARTIAL - 1) + [wrote] + [OUTPUT] * (CALLS - PARTIAL)
    # With calibrated sizes, the size model bills both sides.
    cal_result, _ = replay(data, sc.replace(base, {"replay.sizes": "calibrated"}), "noop")
    cal_calls = np.asarray(cal_result.calls)
    assert cal_calls[:, CALL_COLUMNS.index("prompt_tokens")].astype(int).tolist() == \
        wl.context_before_calls(wl.sized_as(data, "calibrated")) != sent
    assert OUTPUT not in cal_calls[:, CALL_COLUMNS.index("output_tokens")].astype(int).tolist()


def test_a_policy_clearing_an_anchored_output_frees_its_anchored_size(tmp_path):
    data, _ = recorded_session(tmp_path)
    first = next(p for p in data.parts if p["kind"] == "tool_output")
    assert first["tokens"] != first["calibrated"]
    base = sc.replace(sc.load("transcript"), {"clear_tool_uses.trigger": 10, "clear_tool_uses.keep": 1})
    result, _ = replay(data, base, "clear-tool-uses", trace="all")
    t = result.recorder.trace
    rows = list(zip(t["event"], t["kind"], t["span_id"], t["delta"], strict=True))
    appended = {sid: delta for event, kind, sid, delta in rows if event == "append" and kind == "tool_output"}
    first_id = next(iter(appended))
    assert appended[first_id] == first["tokens"]  # the span holds the anchored size
    freed = -sum(delta for event, _, sid, delta in rows if event == "cleared" and sid == first_id)
    assert freed == first["tokens"]  # clearing takes out the anchored size, not the calibrated one


def test_anchored_workload_files_round_trip_and_bad_anchor_fields_are_one_line(tmp_path, capsys):
    data, _ = recorded_session(tmp_path)
    wl.write(tmp_path / "w.jsonl", data)
    back = wl.read(tmp_path / "w.jsonl")
    assert back.header == data.header and back.parts == data.parts
    lines = (tmp_path / "w.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["outputs"] = header["outputs"][:-1]
    (tmp_path / "bad.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert main(["run", "--workload", str(tmp_path / "bad.jsonl"), "--policy", "noop",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outputs" in err and "bad.jsonl" in err
    assert not (tmp_path / "out").exists()
    assert main(["run", "--workload", str(tmp_path / "w.jsonl"), "--policy", "noop", "--set", "replay.sizes=exact",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "replay.sizes" in err
