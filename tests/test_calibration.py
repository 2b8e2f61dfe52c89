"""Calibrated sizes: raw features, the assembly of what each prompt held, the fit, images, long texts."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from prunesim.io.transcripts import assemble as asm
from prunesim.io.transcripts import calibration as cal
from prunesim.io.transcripts import images, tokens
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.formats import Part, Transcript
from prunesim.studies import transcript_replay as replay

TOKENIZERS = [t for t in tokens.NAMES if t not in tokens.BPE_ENCODINGS or tokens.bpe_available()]


# -- what each prompt held ------------------------------------------------------------------
def layout(kinds, turns, prompt, dropped=None, hidden=None, reconcile=True, compactions=()):
    n = len(kinds)
    return asm.Layout(list(kinds), np.array(turns), np.array(dropped or [0] * n), np.array(hidden or [False] * n),
                      np.array(prompt, float), len(prompt), reconcile, list(compactions))


def test_the_hidden_system_part_is_sized_at_the_first_counted_call():
    lay = layout(["system", "user", "tool_output"], [0, 0, 1], [np.nan, 1000, 1100], hidden=[True, False, False])
    out = asm.assemble(lay, np.array([0.0, 100.0, 90.0]))
    assert out.hidden_tokens == 810 and out.hidden_at == 2  # call 1 has no count: sized at call 2
    assert out.context.tolist() == [100.0, 1000.0, 1000.0]
    assert out.anchored.tolist() == [False, True, False]


def test_an_unseen_injection_becomes_hidden_content_and_the_error_carried_before_stays():
    # Call 3's count jumps by 5,000 while only 100 tokens arrived: a skill's prompt, say. A compaction
    # before call 4 then leaves the hidden system part and a 200-token summary.
    lay = layout(["system", "user", "tool_output", "tool_output", "summary"], [0, 0, 1, 2, 3],
                 [1000, 1120, 6230, 1150], dropped=[0, 4, 4, 4, 0], hidden=[True, False, False, False, False],
                 compactions=[4])
    out = asm.assemble(lay, np.array([0.0, 50.0, 100.0, 100.0, 200.0]))
    assert out.injections == [(3, 5010.0, 4)]  # dropped at the next compaction, like what it came with
    error_before = out.context[1] - 1120
    assert out.context[2] - 6230 == error_before  # not reset to the API's count
    assert out.context[3] == 1150
    assert out.anchored.tolist() == [True, False, True, False]


def test_content_restored_after_a_compaction_is_found_however_much_the_compaction_dropped():
    # 30,000 tokens of conversation, then a compaction leaves the hidden system part and a summary. The
    # runtime re-reads files into the first prompt after it, unseen: 6,000 tokens, less than a quarter of
    # what the compaction dropped, so only the level after it can show them, not the growth across it.
    kinds = ["system", *["tool_output"] * 4, "summary", "tool_output", "summary"]
    turns = [0, 1, 2, 3, 4, 4, 5, 6]
    dropped = [0, 5, 5, 5, 5, 7, 7, 0]
    api = [1000, 11_000, 21_300, 31_000, 1000 + 500 + 6000, 1000 + 500 + 6000 + 2000, 1000 + 400]
    lay = layout(kinds, turns, api, dropped, [True] + [False] * 7, compactions=[5, 7])
    sizes = np.array([0.0, 10_000, 10_000, 10_000, 10_000, 500, 2000, 400])
    out = asm.assemble(lay, sizes)
    assert out.injections == [(5, 6000.0, 7)]  # dropped at the next compaction, like what it came with
    assert out.anchored.tolist() == [True, False, False, False, True, False, False]
    assert out.context[5] == api[5] and out.context[6] == api[6]  # the calls after it: exact again
    assert out.context[2] == 21_000 and not out.anchored[2]  # a 300-token miss before it is carried, not fixed
    # The call after the compaction has no count: the next counted call compares levels instead.
    uncounted = [*api[:4], np.nan, *api[5:]]
    out = asm.assemble(layout(kinds, turns, uncounted, dropped, [True] + [False] * 7, compactions=[5, 7]), sizes)
    assert out.injections == [(6, 6000.0, 7)] and out.context[5] == api[5]
    # In linear mode (the fit) the same calls are anchored and every other call's row is its context.
    phi = np.stack([0.25 * sizes, 0.5 * sizes], axis=1)
    theta = np.array([2.0, 1.0])
    out = asm.assemble(lay, phi @ theta, phi, np.zeros(len(sizes)))
    assert out.injections == [(5, 6000.0, 7)]
    counted = [k for k in range(len(api)) if not out.anchored[k]]
    assert [a @ theta + c for a, c, _ in out.rows] == pytest.approx(out.context[counted].tolist())
    # A compaction that brings back nothing unseen (the summary is all there is) is not anchored: within
    # the tolerance of what arrived, the level after it is a prediction like any other.
    api[4:] = [1000 + 700, 1000 + 700 + 2000, 1000 + 400]
    out = asm.assemble(layout(kinds, turns, api, dropped, [True] + [False] * 7, compactions=[5, 7]), sizes)
    assert not out.injections and not out.removals and not out.anchored[4]
    assert out.context[4] == 1500


def claude_session(path: Path, restored: int) -> None:
    """A hand-made Claude Code session: four calls of 10,000 tokens of growth each, a /compact, then two
    calls whose prompts hold the system part, the summary and ``restored`` tokens the file never shows."""
    records, parent = [], None

    def add(kind: str, content, prompt: int | None = None, **extra) -> None:
        nonlocal parent
        uuid = f"r{len(records)}"
        rec = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "isSidechain": False,
               "timestamp": f"2026-01-01T00:{len(records):02d}:00Z", **extra}
        if kind == "assistant":
            usage = {"input_tokens": prompt, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                     "output_tokens": 5}
            rec["message"] = {"id": f"msg_{uuid}", "model": "claude-opus-4-5", "role": "assistant",
                              "content": content, "usage": usage}
        elif kind == "user":
            rec["message"] = {"role": "user", "content": content}
        records.append(rec)
        parent = uuid

    add("user", "start")
    for k in range(4):
        add("assistant", [{"type": "text", "text": "reading"}], 3000 + 10_000 * k)
        add("user", "go on " + "lorem ipsum dolor sit amet " * 1500)
    add("system", None, subtype="compact_boundary", compactMetadata={"trigger": "manual", "preTokens": 43_000})
    add("user", "Summary of the conversation so far.", isCompactSummary=True, isVisibleInTranscriptOnly=True)
    add("assistant", [{"type": "text", "text": "continuing"}], 3000 + 20 + restored)
    add("user", "thanks")
    add("assistant", [{"type": "text", "text": "done"}], 3000 + 40 + restored)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_an_imported_claude_session_keeps_what_its_runtime_restored_after_a_compaction(tmp_path):
    path = tmp_path / "restored.jsonl"
    claude_session(path, restored=6000)
    (data,) = replay.iter_workloads(path)
    events = data.header["events"]
    assert [e["event"] for e in events if e["turn"] == 5] == ["compaction", "injected"]
    injected = next(e["tokens"] for e in events if e["event"] == "injected" and e["turn"] == 5)
    assert abs(injected - 6000) < 100  # the restored files, less what our sizes of the summary miss
    assert data.header["anchored_calls"] == [1, 5]
    api = data.header["prompt_tokens"]
    assert abs(wl.context_before_calls(data)[5] - api[5]) / api[5] < 0.01  # the call after it is predicted
    claude_session(path, restored=0)
    (data,) = replay.iter_workloads(path)
    assert data.header["anchored_calls"] == [1] and all(e["event"] != "injected" for e in data.header["events"])


def test_an_unseen_removal_drops_the_oldest_tool_outputs():
    lay = layout(["system", "tool_output", "tool_output", "tool_output", "user"], [0, 1, 1, 1, 2],
                 [500, 3500, 3520, 520], hidden=[True, False, False, False, False])
    out = asm.assemble(lay, np.array([0.0, 1000.0, 1000.0, 1000.0, 20.0]))
    (k, parts, removed), = out.removals
    assert (k, parts, removed) == (4, [1, 2, 3], 3000.0)
    assert out.context[3] == 520.0


def test_slow_drift_of_the_estimate_never_triggers_reconciliation():
    # Our sizes run 10% low on every call for 60 calls: the error grows, nothing is anchored.
    n = 60
    api = 1000 + 1100 * np.arange(n)
    lay = layout(["system", *["tool_output"] * n], [0, *range(1, n + 1)], api.tolist(), hidden=[True] + [False] * n)
    out = asm.assemble(lay, np.array([0.0] + [1000.0] * n))
    assert out.anchored.sum() == 1 and not out.injections and not out.removals
    assert out.context[-1] < api[-1] * 0.95


def test_linear_mode_gives_the_same_context_as_numbers():
    rng = np.random.default_rng(5)
    n = 40
    kinds = ["system", "user"] + ["tool_output"] * (n - 2)
    turns = [0, 0] + list(range(1, n - 1))
    prompt = (2000 + np.cumsum(rng.integers(50, 400, n - 1))).astype(float)
    prompt[10] += 6000  # an injection
    prompt[11:] += 6000
    lay = layout(kinds, turns, prompt.tolist(), hidden=[True] + [False] * (n - 1))
    phi = rng.uniform(0, 50, (n, 3))
    phi[0] = 0
    const = rng.uniform(0, 20, n)
    const[0] = 0
    theta = np.array([1.2, 0.7, 2.0])
    out = asm.assemble(lay, phi @ theta + const, phi, const)
    counted = [k for k in range(len(prompt)) if not out.anchored[k]]
    assert len(out.rows) == len(counted) and out.injections
    for (a, c, _), k in zip(out.rows, counted, strict=True):
        assert a @ theta + c == pytest.approx(out.context[k])


# -- fitting ------------------------------------------------------------------------------------
def test_nnls_matches_the_unconstrained_answer_when_it_is_positive_and_clips_otherwise():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(80, 4))
    x = np.array([1.0, 2.0, 0.5, 3.0])
    assert cal.nnls(A, A @ x) == pytest.approx(x)
    y = A @ np.array([1.0, -2.0, 0.5, 3.0])
    got = cal.nnls(A, y)
    assert (got >= 0).all() and got[1] == 0
    # the KKT conditions: no free direction improves the fit
    grad = A.T @ (y - A @ got)
    assert (grad[got == 0] <= 1e-8).all() and np.abs(grad[got > 0]).max() < 1e-8


def synthetic(name: str, rng, weights: dict[str, float], frames: dict[str, float], calls: int = 40) -> cal.Sized:
    """A transcript whose API counts follow known per-kind scales and frames exactly."""
    t = Transcript(name, "openai", name, model="synthetic-1")
    t.parts.append(Part(0, "user", "x " * int(rng.integers(200, 400))))
    for k in range(1, calls + 1):
        t.parts.append(Part(k, "reasoning", "think " * int(rng.integers(5, 60))))
        t.parts.append(Part(k, "tool_call", "run --flag " * int(rng.integers(2, 20))))
        t.parts.append(Part(k, "tool_output", "out 12 " * int(rng.integers(10, 400))))
        if k % 4 == 0:
            t.parts.append(Part(k, "user", "please go on " * int(rng.integers(1, 30))))
    s = cal.sized(t, "chars")
    total = 0.0
    prompt = []
    sizes = [weights.get(kind, weights["user"]) * s.feats[i, 0] + frames.get(kind, 0.0)
             for i, kind in enumerate(s.layout.kind)]
    for k in range(1, calls + 1):
        total = sum(size for size, turn in zip(sizes, s.layout.turn, strict=True) if turn < k)
        prompt.append(round(total))
    t.prompt_tokens = {k: p for k, p in enumerate(prompt, 1)}
    return cal.sized(t, "chars")


def test_the_fit_recovers_known_scales_and_frames_on_unseen_transcripts():
    rng = np.random.default_rng(11)
    weights = {"user": 1.1, "reasoning": 0.9, "tool_call": 1.3, "tool_output": 0.8}
    frames = {"reasoning": 4.0, "tool_call": 12.0, "tool_output": 7.0, "user": 3.0}
    train = [synthetic(f"t{i}", rng, weights, frames) for i in range(6)]
    fitted = cal.fit(lambda: iter(train), "chars")
    for kind in weights:
        assert fitted.weights[kind][0] == pytest.approx(weights[kind], rel=0.02)
    # Every call brings one part of each of three kinds: only their frames' sum can be told apart.
    per_call = ("reasoning", "tool_call", "tool_output")
    assert sum(fitted.frames[k] for k in per_call) == pytest.approx(sum(frames[k] for k in per_call), abs=1.5)
    assert fitted.frames["user"] == pytest.approx(frames["user"], abs=1.5)
    unseen = synthetic("u", rng, weights, frames)
    out = asm.assemble(unseen.layout, np.rint(unseen.sizes(fitted)))
    P = unseen.layout.prompt
    assert np.max(np.abs(out.context - P) / P) < 0.01


def compacted(name: str, rng, weights: dict[str, float], calls: int = 40, at: int = 24) -> cal.Sized:
    """A Claude Code session with known per-kind scales, a hidden system part and one compaction, after
    which the runtime brings back a few thousand tokens the file never shows (files it re-reads)."""
    t = Transcript(name, "claude-code", name, model="synthetic-1")
    t.parts += [Part(0, "system", "", hidden=True), Part(0, "user", "x " * int(rng.integers(200, 400)))]
    for k in range(1, calls + 1):
        if k == at - 1:
            t.parts.append(Part(k, "summary", "what happened so far " * int(rng.integers(20, 60))))
            continue
        t.parts.append(Part(k, "reasoning", "think " * int(rng.integers(5, 60))))
        t.parts.append(Part(k, "tool_call", "run --flag " * int(rng.integers(2, 20))))
        t.parts.append(Part(k, "tool_output", "out 12 " * int(rng.integers(10, 400))))
    for p in t.parts:
        if p.turn < at - 1 and not p.hidden:
            p.dropped_at = at
    t.events.append({"event": "compaction", "turn": at, "trigger": "manual"})
    s = cal.sized(t, "chars")
    sizes = np.array([weights.get(kind, weights["user"]) * s.feats[i, 0] for i, kind in enumerate(s.layout.kind)])
    restored = float(rng.integers(3000, 6000))
    live = lambda k: (s.layout.turn < k) & ((s.layout.dropped_at == 0) | (s.layout.dropped_at > k))  # noqa: E731
    t.prompt_tokens = {k: round(2500 + sizes[live(k)].sum() + (restored if k >= at else 0.0))
                       for k in range(1, calls + 1)}
    return cal.sized(t, "chars")


def test_the_fit_is_not_misled_by_what_a_runtime_restores_after_a_compaction():
    rng = np.random.default_rng(3)
    weights = {"user": 1.1, "reasoning": 0.9, "tool_call": 1.3, "tool_output": 0.8}
    train = [compacted(f"t{i}", rng, weights) for i in range(6)]
    fitted = cal.fit(lambda: iter(train), "chars")
    for kind in ("reasoning", "tool_call", "tool_output"):  # 12 user and summary parts: too few for a scale
        assert fitted.weights[kind][0] == pytest.approx(weights[kind], rel=0.02), kind
    unseen = compacted("u", rng, weights)
    out = asm.assemble(unseen.layout, np.rint(unseen.sizes(fitted)))
    assert out.anchored.tolist() == [k in (1, 24) for k in range(1, 41)]  # the hidden part, the restoration
    P = unseen.layout.prompt
    assert np.max(np.abs(out.context - P) / P) < 0.01


def test_profiles_are_chosen_by_model_then_by_format():
    assert cal.choose("claude-opus-4-5-20251101", "claude-code", "pieces").name == "claude"
    assert cal.choose("google/gemini-3-pro-preview", "openai", "pieces").name == "gemini"
    assert cal.choose("", "codex", "o200k_base" if tokens.bpe_available() else "chars").name == "gpt"
    assert cal.choose("unknown-model", "openhands", "pieces") is None
    assert cal.choose("claude-x", "claude-code", "pieces", "none") is None


def test_shipped_profiles_cover_every_tokenizer_and_kind():
    for profile in cal.load_profiles():
        assert set(profile.by_tokenizer) == set(tokens.NAMES)
        for name in tokens.NAMES:
            c = profile.calibration(name)
            assert set(c.weights) == set(cal.KINDS) and all(min(w) >= 0 for w in c.weights.values())
            assert all(f >= 0 for f in c.frames.values())


# -- raw counts -----------------------------------------------------------------------------------
def test_piece_features_count_their_classes():
    assert tokens.piece_features("") == (0,) * 9
    # newlines, blanks in runs, digit runs, digits, words, letters, letters past 8, other letters, symbols
    assert tokens.piece_features("Hi  there_friend 1234\n\nextraordinary é!") == (2, 2, 1, 4, 4, 26, 5, 1, 2)


def test_long_texts_are_encoded_in_chunks_that_cover_them_exactly():
    text = ("word " * 30000 + "\n") * 3 + "x" * 90000
    pieces = list(tokens.chunks(text))
    assert "".join(pieces) == text and max(map(len, pieces)) <= tokens.BPE_CHUNK_CHARS
    # where there is a word boundary, the cut is at one: before a space that starts a word, or after a newline
    assert all(q.startswith(" ") or p.endswith("\n") for p, q in zip(pieces[:-3], pieces[1:-2], strict=True))


@pytest.mark.skipif(not tokens.bpe_available(),
                    reason="needs bpe-openai: pip install '.[tokens]' (the test extra has it)")
def test_exact_counts_never_raise_on_long_inputs_and_stay_exact_below_the_limit():
    count = tokens.get_counter("o200k_base")
    assert count("a " * 600_000) > 0  # 1.2 million characters: the encoder alone refuses it
    assert count("\U0001F600" * 300_000) > 0
    import bpe_openai

    text = "def f(x):\n    return x + 1\n" * 2000
    exact = len(bpe_openai.get_encoding("o200k_base").encode(text, disallowed_special=()))
    assert count(text) == exact


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_a_3mb_single_message_transcript_imports_with_every_tokenizer(tmp_path, tokenizer):
    lines = [f"{i:06d} src/module_{i % 97}.py: assert value == {i * 7} # checked" for i in range(56_000)]
    output = "\n".join(lines)
    assert len(output) > 3_000_000
    transcript = [
        {"role": "user", "content": "Run the test suite."},
        {"role": "assistant", "content": "", "usage": {"prompt_tokens": 12},
         "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": json.dumps({"command": "pytest"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(transcript))
    (data,) = replay.iter_workloads(path, tokenizer)
    (out,) = [p for p in data.parts if p["kind"] == "tool_output"]
    assert len(output) / 12 < out["tokens"] < len(output)  # a plausible count: far from 0, below one per char


# -- images -----------------------------------------------------------------------------------------
def _png(w: int, h: int) -> str:
    chunk = b"IHDR" + struct.pack(">II", w, h) + b"\x08\x02\x00\x00\x00"
    raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return base64.b64encode(raw).decode()


def test_image_sizes_are_read_from_their_headers():
    assert images.size_of(_png(640, 480)) == (640, 480)
    gif = base64.b64encode(b"GIF89a" + struct.pack("<HH", 33, 17) + b"\x00" * 8).decode()
    assert images.size_of(gif) == (33, 17)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    jpeg += b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 300, 500) + b"\x00" * 10
    assert images.size_of(base64.b64encode(jpeg).decode()) == (500, 300)
    webp = b"RIFF" + b"\x00" * 4 + b"WEBPVP8X" + b"\x00" * 8 + (799).to_bytes(3, "little") + (599).to_bytes(3, "little")
    assert images.size_of(base64.b64encode(webp).decode()) == (800, 600)
    assert images.size_of("bm90IGFuIGltYWdl") is None and images.size_of(None) is None


def test_image_tokens_follow_the_documented_rules():
    assert images.anthropic_tokens(1000, 1000) == 1334  # 1000 x 1000 / 750
    assert images.anthropic_tokens(200, 200) == 54
    assert images.anthropic_tokens(4000, 4000) <= 1600  # scaled into 1568 px and 1.15 megapixels first
    assert images.openai_tokens(1024, 1024) == 765  # 768 x 768: four tiles
    assert images.openai_tokens(2048, 4096) == 1105  # 768 x 1536: six tiles


def test_an_unreadable_image_is_skipped_with_a_warning(tmp_path):
    rec = {"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "isSidechain": False,
           "message": {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                                                   {"type": "text", "text": "what is this"}]}}
    call = {"type": "assistant", "uuid": "a", "parentUuid": "u", "sessionId": "s", "isSidechain": False,
            "timestamp": "2026-01-01T00:00:00Z", "message": {"id": "m", "role": "assistant", "model": "claude-x",
                        "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 50, "output_tokens": 2}}}
    path = tmp_path / "img.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(call) + "\n")
    (data,) = replay.iter_workloads(Path(path))
    assert any("image whose size cannot be read" in w for w in data.warnings)
