"""The README and the pages it sends readers to stay true: examples run and print what they show."""

import contextlib
import io
import re
from pathlib import Path

import pytest
from prunesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# The Python examples of the README and of docs/api.md, where the README sends readers for more.
EXAMPLES = README + (ROOT / "docs" / "api.md").read_text()
METRICS_PAGE = (ROOT / "docs" / "metrics.md").read_text()


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = next(b.strip() for b in blocks("sh") if "pytest" in b)
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_the_main_job_command_is_the_oscillation_replay():
    first = blocks("sh")[0].strip()
    assert first.endswith("prunesim replay oscillation") and "pip install ." in first


def test_metrics_table_is_the_generated_one(capsys):
    main(["metrics", "--markdown"])
    generated = capsys.readouterr().out.strip()
    table = METRICS_PAGE.split("<!-- metrics:begin -->")[1].split("<!-- metrics:end -->")[0].strip()
    assert table == generated


@pytest.mark.parametrize("index", range(len(re.findall(r"```python\n.*?```\n\n```text\n", EXAMPLES, flags=re.S))))
def test_python_examples_print_what_the_docs_show(index):
    code, expected = re.findall(r"```python\n(.*?)```\n\n```text\n(.*?)```", EXAMPLES, flags=re.S)[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == expected


def test_replay_excerpt_matches_the_real_replay(capsys):
    excerpt = next(b for b in blocks("text") if b.startswith("replay oscillation"))
    main(["replay", "oscillation"])
    printed = capsys.readouterr().out.splitlines()
    for line in excerpt.splitlines():
        if line.strip() != "...":
            assert line in printed
