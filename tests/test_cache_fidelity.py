"""Cache and cost fidelity against recorded bills: readers, fitting, out-of-sample judgement, the command."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io import prices
from prunesim.studies import cache_fidelity as cf
from shared_traces import TRACES, needs

G = 2048  # gemini-3-pro-preview's granularity and minimum in prices.toml
GEMINI = prices.load()["gemini-3-pro-preview"]


def implicit_cached(prompts, reuse):
    """What the model predicts for an append-only run: a share of the previous prompt in whole blocks."""
    out, prev = [], 0
    for p in prompts:
        blocks = min(prev, p) // G * G
        out.append(round(reuse * blocks) if blocks >= G else 0)
        prev = p
    return out


def write_mini(path: Path, prompts, cached, outputs=None, with_cost=True, gap_s=3):
    outputs = outputs or [100] * len(prompts)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for k, (p, c, o) in enumerate(zip(prompts, cached, outputs, strict=True)):
        usage = {"prompt_tokens": p, "completion_tokens": o, "prompt_tokens_details": {"cached_tokens": c}}
        if with_cost:
            usage["cost"] = ((p - c) * GEMINI["input"] + c * GEMINI["cache_read"] + o * GEMINI["output"]) / 1e6
        response = {"model": "google/gemini-3-pro-preview", "created": 1_700_000_000 + gap_s * k, "usage": usage}
        messages.append({"role": "assistant", "content": "x", "extra": {"response": response}})
        messages.append({"role": "user", "content": "<returncode>0</returncode><output></output>"})
    path.write_text(json.dumps({"messages": messages}))


def make_folder(folder: Path, reuses, n_calls=30, seed=0):
    folder.mkdir(parents=True, exist_ok=True)
    for i, reuse in enumerate(reuses):
        prompts = [1500 + 700 * k + 37 * ((k * (i + 3 + seed)) % 11) for k in range(n_calls)]
        write_mini(folder / f"run{i}.traj.json", prompts, implicit_cached(prompts, reuse))


def test_fitting_recovers_the_reuse_that_made_the_bills(tmp_path):
    make_folder(tmp_path / "d", [0.8] * 5)
    rep = cf.report(tmp_path / "d")
    assert rep["fitted"]["gemini-3-pro-preview"]["reuse"] == pytest.approx(0.8, abs=1e-3)
    assert rep["cache_p90_error"] < 1e-3 and rep["cost_p90_error"] < 1e-3
    assert rep["runs"] == 5 and rep["validation"] == "leave-one-out"


def test_leave_one_out_judges_each_run_with_a_fit_that_did_not_see_it(tmp_path):
    make_folder(tmp_path / "d", [1.0, 1.0, 1.0, 0.5])
    rows = {r["transcript"]: r for r in cf.report(tmp_path / "d")["per_run"]}
    # The odd run is predicted with reuse 1.0, fitted on the other three: twice what it read.
    assert rows["run3"]["cache_error"] == pytest.approx(1.0, abs=2e-3)
    # Each of the others is predicted with a fit that includes the odd run, so it is off too.
    assert rows["run0"]["cache_error"] > 0.05


def test_fit_on_another_folder(tmp_path):
    make_folder(tmp_path / "a", [0.8] * 4, seed=1)
    make_folder(tmp_path / "b", [0.8] * 3, seed=2)
    make_folder(tmp_path / "c", [0.6] * 3, seed=3)
    assert cf.report(tmp_path / "b", fit_on=tmp_path / "a")["cache_p90_error"] < 1e-3
    rep = cf.report(tmp_path / "c", fit_on=tmp_path / "a")
    assert rep["validation"].startswith("fit on")
    assert rep["cache_median_error"] == pytest.approx(0.8 / 0.6 - 1, abs=2e-3)


def test_a_run_without_recorded_cost_is_judged_against_its_tokens_at_list_prices(tmp_path):
    folder = tmp_path / "d"
    make_folder(folder, [0.9] * 3)
    prompts = [2000 + 900 * k for k in range(20)]
    write_mini(folder / "nocost.traj.json", prompts, implicit_cached(prompts, 0.9), with_cost=False)
    rows = {r["transcript"]: r for r in cf.report(folder)["per_run"]}
    assert rows["nocost"]["cost_source"] == "recorded tokens at list prices"
    assert rows["run0"]["cost_source"] == "recorded"
    assert rows["nocost"]["cost_error"] < 2e-3


def test_a_lone_run_cannot_be_cross_validated(tmp_path):
    make_folder(tmp_path / "d", [0.9])
    rep = cf.report(tmp_path / "d")
    assert rep["runs"] == 0 and "nothing to fit on" in rep["skipped"][0]


# -- Claude Code and Codex files --------------------------------------------------------------
def stamp(seconds: float) -> str:
    t = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return t.isoformat().replace("+00:00", "Z")


def write_claude(path: Path, prompts, times, compact_before=None):
    """Explicit caching as the API bills it: read what the previous call cached if it is live, write the rest."""
    lines, prev, last = [], 0, None
    for k, (p, t) in enumerate(zip(prompts, times, strict=True)):
        if k == compact_before:
            lines.append({"type": "system", "subtype": "compact_boundary", "timestamp": stamp(t)})
            prev = 0
        live = last is not None and t - last <= 300
        read = min(prev, p) if live else 0
        usage = {"input_tokens": 0, "cache_read_input_tokens": read, "cache_creation_input_tokens": p - read,
                 "cache_creation": {"ephemeral_5m_input_tokens": p - read, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": 50}
        for block in range(2):  # one record per content block, sharing the message id
            lines.append({"type": "assistant", "timestamp": stamp(t + block), "isSidechain": False,
                          "message": {"id": f"msg_{k}", "model": "claude-opus-4-5-20251101", "usage": usage}})
        lines.append({"type": "user", "timestamp": stamp(t + 2), "message": {"role": "user", "content": "ok"}})
        prev, last = p, t
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_claude_code_sessions_ttl_and_compaction_are_predicted_exactly(tmp_path):
    folder = tmp_path / "cc"
    folder.mkdir()
    prompts = [20_000 + 1500 * k for k in range(12)]
    times = [10 * k for k in range(6)] + [400 + 10 * k for k in range(6)]  # a 6-minute pause: the cache expired
    write_claude(folder / "a__1.jsonl", prompts, times)
    write_claude(folder / "a__2.jsonl", [p + 500 for p in prompts], [5 * k for k in range(12)], compact_before=7)
    runs, failed = cf.collect(folder)
    assert not failed and [len(r.calls) for r in runs] == [12, 12] and runs[0].model == "claude-opus-4-5"
    assert runs[1].calls[7].reset
    rep = cf.report(folder)
    assert rep["fitted"]["claude-opus-4-5"]["reuse"] == 1.0  # explicit caches: nothing fitted
    assert rep["cache_p90_error"] == 0 and rep["cost_p90_error"] < 1e-9
    assert rep["per_run"][0]["cost_source"] == "recorded tokens at list prices"


def write_claude_reads(path: Path, prompts, reads, times, compact_before):
    """A session billed with the given reads (the rest written), a compaction before call ``compact_before``."""
    lines = []
    for k, (p, read, t) in enumerate(zip(prompts, reads, times, strict=True)):
        if k == compact_before:
            lines.append({"type": "system", "subtype": "compact_boundary", "timestamp": stamp(t - 1)})
        usage = {"input_tokens": 0, "cache_read_input_tokens": read, "cache_creation_input_tokens": p - read,
                 "output_tokens": 50}
        lines.append({"type": "assistant", "timestamp": stamp(t), "isSidechain": False,
                      "message": {"id": f"msg_{k}", "model": "claude-opus-4-5-20251101", "usage": usage}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("pause, after", [(100, 6_000), (400, 0)])
def test_a_compaction_keeps_the_system_prefix_a_cache_break_showed(tmp_path, pause, after):
    # Call 3 reads only 6,000 of the previous 12,000 tokens within the TTL: the runtime changed its prompt
    # after its system part, whose mark stands there. The compaction before call 5 keeps that part: call 5
    # reads it while it is live (100 s after call 4), and nothing once it expired (400 s).
    prompts = [10_000, 12_000, 14_000, 16_000, 9_000, 10_000]
    reads = [0, 10_000, 6_000, 14_000, after, 9_000]
    times = [0, 10, 20, 30, 30 + pause, 40 + pause]
    path = tmp_path / "s__1.jsonl"
    write_claude_reads(path, prompts, reads, times, compact_before=4)
    run = next(cf.read_runs(path))
    assert run.calls[4].reset and run.system_prefix() == 6_000
    rows = cf.predict(run, prices.pricing("claude-opus-4-5"))
    assert list(rows[:, 6]) == reads
    bare = cf.predict(run, prices.pricing("claude-opus-4-5"), recorded=False)  # no recorded breaks: no mark
    assert bare[4, 6] == 0


def test_without_a_break_inside_the_first_prompt_there_is_no_system_prefix(tmp_path):
    path = tmp_path / "s__2.jsonl"
    write_claude_reads(path, [10_000, 12_000, 8_000], [0, 10_000, 0], [0, 10, 20], compact_before=2)
    run = next(cf.read_runs(path))
    assert run.system_prefix() is None and list(cf.predict(run, prices.pricing("claude-opus-4-5"))[:, 6]) == [
        0, 10_000, 0]


def test_codex_rollouts_count_a_repeated_token_event_once(tmp_path):
    folder = tmp_path / "codex"
    folder.mkdir()
    for name in ("r1", "r2"):
        lines = [{"type": "session_meta", "timestamp": stamp(0), "payload": {"id": name}}]
        total = 0
        for k in range(10):
            prompt = 3000 + 800 * k + int(name[1])  # two sessions, not one copied: their content differs
            total += prompt
            info = {"total_token_usage": {"input_tokens": total},
                    "last_token_usage": {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 9}}
            event = {"type": "event_msg", "timestamp": stamp(5 * k), "payload": {"type": "token_count", "info": info}}
            lines += [event, event]  # the CLI reports some calls twice
        (folder / f"rollout-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    runs, _ = cf.collect(folder)
    assert [len(r.calls) for r in runs] == [10, 10]
    assert runs[0].model == cf.CODEX_DEFAULT_MODEL and not runs[0].model_recorded


def test_broken_files_are_reported_not_fatal(tmp_path):
    make_folder(tmp_path / "d", [0.9] * 2)
    (tmp_path / "d" / "broken.traj.json").write_text("{not json")
    (tmp_path / "d" / "broken.jsonl").write_text('{"type": "user"}\n{oops\n{"type": "user"}\n')
    (tmp_path / "d" / "being-written.jsonl").write_text('{"type": "user"}\n{"type": "assis')  # no error
    (tmp_path / "d" / "bad-time.jsonl").write_text(json.dumps({
        "type": "assistant", "timestamp": "yesterday",
        "message": {"id": "m", "model": "claude-opus-4-5", "usage": {"cache_read_input_tokens": 1}}}) + "\n")
    (tmp_path / "d" / "binary.traj.json").write_bytes(b"\xff\xfe\x00\x01")
    (tmp_path / "d" / "other.jsonl").write_text('{"instance_id": "x", "history": []}\n')  # records no usage
    runs, failed = cf.collect(tmp_path / "d")
    assert len(runs) == 2 and len(failed) == 4
    assert all("\n" not in line for line in failed)
    assert any("broken.jsonl:2" in line for line in failed) and any("bad-time" in line for line in failed)


# -- the command --------------------------------------------------------------------------------
def test_fidelity_json_has_the_cache_and_cost_keys(tmp_path, capsys):
    make_folder(tmp_path / "d", [0.85] * 3)
    assert main(["fidelity", str(tmp_path / "d"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    for key in ("cache_median_error", "cache_p90_error", "cost_median_error", "cost_p90_error"):
        assert isinstance(rep[key], float) and 0 <= rep[key] < 0.01
    assert rep["cache"]["fitted"]["gemini-3-pro-preview"]["reuse"] == pytest.approx(0.85, abs=1e-3)
    assert "median_error" in rep  # the prompt-count fidelity is still there


@pytest.mark.parametrize("args, text", [
    (["--fit-on", "{tmp}/missing"], "--fit-on"),
    (["--fit-on", "{tmp}/empty"], "records cached tokens"),
])
def test_fidelity_bad_fit_on_is_one_line(tmp_path, capsys, args, text):
    make_folder(tmp_path / "d", [0.85] * 2)
    (tmp_path / "empty").mkdir()
    code = main(["fidelity", str(tmp_path / "d")] + [a.format(tmp=tmp_path) for a in args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and text in err and err.count("\n") == 0


# -- the real recorded bills (skipped without the traces) ------------------------------------------
@needs("mini-swe-agent-dev")
def test_dev_folder_leave_one_out():
    rep = cf.report(TRACES / "mini-swe-agent-dev")
    assert rep["runs"] == 42 and not rep["skipped"] and not rep["failed"]
    fitted = rep["fitted"]["gemini-3-pro-preview"]
    assert 0 < fitted["reuse"] < 1 and 0 < fitted["baseline_factor"] < 1
    for key in ("cache_median_error", "cache_p90_error", "cost_median_error", "cost_p90_error"):
        assert 0 < rep[key] < 1 and 0 < rep["baseline"][key] < 1
    # The shipped entry's reuse is this fit over the whole dev folder.
    assert GEMINI["reuse"] == pytest.approx(fitted["reuse"], abs=5e-4)


@needs("claude-code-dev")
def test_claude_code_calls_split_into_what_they_were_billed():
    runs, failed = cf.collect(TRACES / "claude-code-dev")
    assert not failed and len(runs) == 23 and sum(len(r.calls) for r in runs) == 1816
    pricing = cf._pricing_for("claude-opus-4-5", prices.load())
    for run in runs[:5]:
        rows = cf.predict(run, pricing)
        prompts = [c.prompt for c in run.calls]
        assert list(rows[:, 6] + rows[:, 7] + rows[:, 8]) == prompts


def test_fit_on_a_folder_of_broken_transcripts_names_the_broken_file(tmp_path, capsys):
    make_folder(tmp_path / "runs", [0.8] * 2)
    broken = tmp_path / "fit"
    broken.mkdir()
    (broken / "cut.traj.json").write_text('{"messages": [{"role": "user", "cont')  # cut short
    assert main(["fidelity", str(tmp_path / "runs"), "--fit-on", str(broken), "--folds", "0"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"prunesim: error: --fit-on: {broken}: holds no transcript that records cached tokens")
    assert f"{broken / 'cut.traj.json'}: malformed JSON" in err


def test_an_interrupted_fidelity_writes_no_fit_out(tmp_path, capsys, monkeypatch):
    make_folder(tmp_path / "runs", [0.8] * 3)
    out = tmp_path / "fit.json"

    def interrupted(*args, **kwargs):  # Ctrl-C while the bills are judged, after the calibration was fitted
        raise KeyboardInterrupt

    monkeypatch.setattr(cf, "report", interrupted)
    assert main(["fidelity", str(tmp_path / "runs"), "--folds", "0", "--fit-out", str(out)]) == 130
    assert not out.exists() and capsys.readouterr().err.splitlines()[-1] == "prunesim: interrupted"
