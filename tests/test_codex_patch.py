"""Codex edits made by running apply_patch in a shell call are edits of the files they patch (resources.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import resources
from prunesim.studies.transcript_replay import iter_workloads, replay

PATCH = "*** Begin Patch\n*** Update File: pkg/mod.py\n@@\n-    return 1\n+    return 2\n*** End Patch"
MOVE = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** Add File: c.py\n+z\n*** End Patch"


@pytest.mark.parametrize("command, uses", [
    (["apply_patch", PATCH], ("file:pkg/mod.py",)),
    (["applypatch", PATCH], ("file:pkg/mod.py",)),
    (["bash", "-lc", f"apply_patch <<'PATCH'\n{PATCH}\nPATCH"], ("file:pkg/mod.py",)),
    (["/bin/zsh", "-c", f'apply_patch << "EOF"\n{PATCH}\nEOF\n'], ("file:pkg/mod.py",)),
    (["bash", "-lc", f"cd sub && apply_patch <<EOF\n{PATCH}\nEOF"], ("file:sub/pkg/mod.py",)),
    # A heredoc left open: bash reads it to the end of the script, and the patch is applied all the same.
    (["bash", "-lc", f"apply_patch << 'PATCH'\n{PATCH}"], ("file:pkg/mod.py",)),
    (["bash", "-lc", f"apply_patch <<EOF\n{PATCH}\nEOF\npytest -q"], ("file:pkg/mod.py",)),
    (["bash", "-lc", f"apply_patch <<EOF\n{MOVE}\nEOF"], ("file:a.py", "file:b.py", "file:c.py")),
])
def test_a_shell_call_that_runs_apply_patch_uses_the_files_it_patches(command, uses):
    touched = resources.touches("codex", "shell", json.dumps({"command": command}), "k", resources.NeedState())
    assert touched == resources.Touches((), uses)


def test_exec_command_runs_its_cmd_string_as_a_script():
    text = json.dumps({"cmd": f"apply_patch <<'EOF'\n{PATCH}\nEOF"})
    assert resources.touches("codex", "exec_command", text, "k", resources.NeedState()).uses == ("file:pkg/mod.py",)


@pytest.mark.parametrize("command", [
    ["apply_patch", "no patch here"],  # not a patch: Codex refuses it, nothing is edited
    ["bash", "-lc", f"cat <<EOF\n{PATCH}\nEOF"],  # another command reads the heredoc
    ["bash", "-lc", f"my_apply_patch <<EOF\n{PATCH}\nEOF"],
    ["python", "-c", f"apply_patch <<EOF\n{PATCH}\nEOF"],  # not a shell
    ["bash", "-lc", "sed -n 1,80p pkg/mod.py"],
    [1, 2],
])
def test_anything_else_is_a_command(command):
    touched = resources.touches("codex", "shell", json.dumps({"command": command}), "k", resources.NeedState())
    assert touched.uses == () and resources.codex_patch(command) is None


def _rollout(tmp_path: Path) -> Path:
    """A Codex rollout: read pkg/mod.py (a long output), three small commands, then patch the file in a shell call."""
    stamp = "2026-01-01T00:00:{:02d}Z"
    lines = [{"type": "session_meta", "payload": {"id": "patch-test", "cli_version": "0.34.0"}},
             {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text", "text": "Fix pkg/mod.py."}]}}]
    steps = [(["bash", "-lc", "sed -n 1,400p pkg/mod.py"], "def f():\n    return 1\n" * 600)]
    steps += [(["bash", "-lc", f"ls dir{i}"], f"file{i}.txt") for i in range(3)]
    steps += [(["bash", "-lc", f"apply_patch <<'PATCH'\n{PATCH}\nPATCH"],
               "Success. Updated the following files:\nM pkg/mod.py")]
    prompt = 3000
    for i, (command, output) in enumerate(steps, 1):
        usage = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 40, "reasoning_output_tokens": 0,
                 "total_tokens": prompt + 40}
        lines.append({"type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": usage, "total_token_usage": usage, "model_context_window": 272000}}})
        lines.append({"type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                           "arguments": json.dumps({"command": command}),
                                                           "call_id": f"call_{i}"}})
        lines.append({"type": "response_item", "payload": {"type": "function_call_output", "call_id": f"call_{i}",
                                                           "output": json.dumps({"output": output})}})
        prompt += 40 + len(output) // 3
    path = tmp_path / "rollout-patch.jsonl"
    path.write_text("".join(json.dumps({"timestamp": stamp.format(i), **rec}) + "\n" for i, rec in enumerate(lines)))
    return path


def test_a_patch_of_a_file_whose_read_was_cleared_fetches_it_again_on_codex(tmp_path):
    (data,) = iter_workloads(_rollout(tmp_path))
    calls = [p for p in data.parts if p["kind"] == "tool_call"]
    assert "file:pkg/mod.py" in calls[0]["fetches"] and calls[-1]["uses"] == ["file:pkg/mod.py"]
    scenario = sc.load("transcript", {"clear_tool_uses.trigger": 1000, "clear_tool_uses.keep": 1})
    closed, _ = replay(data, scenario, "clear-tool-uses", 0)
    (row,) = [e for e in closed.events if e.event == "refetch"]
    assert row.detail["resource"] == "file:pkg/mod.py" and row.turn == len(calls)
    open_loop, _ = replay(data, sc.load("transcript", {"clear_tool_uses.trigger": 1000, "clear_tool_uses.keep": 1,
                                                       "reaction.mode": "none"}), "clear-tool-uses", 0)
    assert open_loop.summary["refetches"] == 0
    kept, _ = replay(data, scenario, "noop", 0)  # nothing removed: nothing to fetch again
    assert kept.summary["refetches"] == 0
