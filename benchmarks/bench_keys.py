"""Import time of a transcript holding one very long shell command (a benchmark, not a test).

Writes a mini-swe-agent transcript whose one action is an N-megabyte command,
then imports it with ``python -m sim import`` in a child process and prints the
wall time. Shapes: ``heredoc`` (``cat > f.py <<'EOF'`` and Python source,
repeated) and ``quoted`` (``python -c '...'``: the same source as one quoted
word, quotes taken out). Keying a long word used to be quadratic in its length
(shlex builds a word one character at a time): 12 s for 1 MB, 99 s for 3 MB.

    python benchmarks/bench_keys.py [--mb 3] [--shape heredoc|quoted] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def transcript(mb: float, shape: str = "heredoc") -> dict:
    source = "".join(p.read_text() for p in sorted((ROOT / "sim").rglob("*.py"))).replace("`", "")  # no fences
    if shape == "quoted":
        source = source.replace("'", "")
    size = int(mb * 1_000_000)
    body = (source * (size // len(source) + 1))[:size]
    command = "cat > f.py <<'EOF'\n" + body + "\nEOF" if shape == "heredoc" else "python -c '" + body + "'"
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Write the file."},
        {"role": "assistant", "content": "THOUGHT: write it in one go.\n```bash\n" + command + "\n```"},
        {"role": "user", "content": "<returncode>0</returncode><output></output>"},
    ]
    return {"messages": messages, "trajectory_format": "mini-swe-agent-1"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=3.0, help="size of the command in megabytes (default 3)")
    ap.add_argument("--shape", choices=("heredoc", "quoted"), default="heredoc", help="the command's shape")
    ap.add_argument("--keep", type=Path, help="write the transcript here and exit (to time the import yourself)")
    args = ap.parse_args()
    if args.keep:
        args.keep.write_text(json.dumps(transcript(args.mb, args.shape)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.traj.json"
        path.write_text(json.dumps(transcript(args.mb, args.shape)))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sim", "import", str(path), "--out", str(Path(tmp) / "w.jsonl")],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"import of a {args.mb:g} MB {args.shape} command: {time.perf_counter() - started:.2f} s "
              "(wall, start-up included)")


if __name__ == "__main__":
    main()
