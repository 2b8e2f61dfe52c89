"""Token counters and content keys."""

from __future__ import annotations

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io.transcripts import tokens
from prunesim.io.transcripts.keys import MAX_KEY, command_key, normalize_command, tool_key


def test_default_counter_splits_like_a_byte_pair_encoder():
    count = tokens.get_counter()
    assert count is tokens.count_pieces
    assert count("") == 0
    assert count("hello") == 1  # a short word
    assert count("internationalization") == 4  # 20 letters: one token per six
    assert count("1234567") == 3  # digits by three
    assert count("a, b") == 3  # a | , | b: the single space joins the word after it
    assert count("x\n        y") == 5  # x | nine blanks by four (3) | y
    assert count("héllo wörld") == 2  # letters beyond ASCII are letters


def test_chars_counter_is_chars_over_3_3():
    count = tokens.get_counter("chars")
    assert count("") == 0
    assert count("a") == 1
    assert count("x" * 33) == 10
    assert count("x" * 34) == 11


def test_unknown_tokenizer_is_a_user_error():
    with pytest.raises(UserError, match="unknown tokenizer"):
        tokens.get_counter("gpt-9")


def test_unknown_tokenizer_on_the_command_line(tmp_path, capsys):
    assert main(["import", "x.json", "--out", str(tmp_path), "--tokenizer", "gpt-9"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.skipif(not tokens.bpe_available(),
                    reason="needs bpe-openai: pip install '.[tokens]' (the test extra has it)")
def test_bpe_counts_are_exact_and_offline():
    count = tokens.get_counter("o200k_base")
    assert count("") == 0
    assert count("hello world") == 2
    assert count("<|endoftext|>") > 1  # special tokens in transcripts are plain text
    assert tokens.get_counter("cl100k_base")("hello world") == 2


@pytest.mark.parametrize(
    "a, b",
    [
        ("cat foo.py", "cat   foo.py"),
        ("cat foo.py", "cat 'foo.py'"),
        ("cat foo.py", 'cat "foo.py"  # look again'),
        ("pytest -x", "pytest -x\n"),
        ("cd /r && pytest -x", "cd /r&&pytest  -x"),
        ("ls -la", "ls \\\n  -la"),
    ],
)
def test_equivalent_commands_share_a_key(a, b):
    assert command_key(a) == command_key(b)


@pytest.mark.parametrize(
    "a, b",
    [("cat foo.py", "cat bar.py"), ("echo 'a # b'", "echo a"), ("pytest -x", "pytest"), ("ls\nls -la", "ls ls -la")],
)
def test_different_commands_keep_different_keys(a, b):
    assert command_key(a) != command_key(b)


def test_unparseable_commands_fall_back_to_whitespace_rules():
    assert normalize_command("echo 'unbalanced   # note") == normalize_command("echo   'unbalanced")


def test_long_keys_are_shortened_but_stay_distinct():
    a, b = "python -c " + "x" * 500, "python -c " + "x" * 499 + "y"
    assert len(command_key(a)) <= MAX_KEY and command_key(a) != command_key(b)


def test_structured_tool_keys_ignore_free_text():
    assert tool_key("bash", '{"command": "ls  -l"}') == "ls -l"
    view = {"command": "view", "path": "/a.py", "thought": "look"}
    assert tool_key("editor", view) == tool_key("editor", {**view, "thought": "look again"})
    assert tool_key("editor", view) != tool_key("editor", {**view, "path": "/b.py"})
