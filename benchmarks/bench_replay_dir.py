"""Peak memory of `prunesim replay-dir` (or `fidelity`) over ~100 MB of transcripts (a benchmark, not a test).

Synthesises a folder of transcripts in a temporary directory by copying the
shared samples (mini-swe-agent, SWE-agent, Claude Code sessions, Codex
rollouts; without them, the project's own fixtures) with a varied instance id,
plus one large OpenHands JSON-lines file of many runs, then runs the command
in a child process and reports its peak RSS. `--mb` twice as large should give
the same peak: both commands stream.

    python benchmarks/bench_replay_dir.py [--mb 100] [--policies noop,recency] [--command fidelity]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sources() -> tuple[list[Path], list[Path]]:
    traces = Path(os.environ.get("PRUNESIM_TRACES", ROOT.parent / "shared" / "traces"))
    if traces.is_dir():
        docs = sorted(traces.glob("mini-swe-agent/*.traj.json")) + sorted(traces.glob("swe-agent/*.traj"))
        docs += sorted(traces.glob("claude-code-dev/*.jsonl"))[:4] + sorted(traces.glob("codex/*.jsonl"))[:1]
        return docs, sorted(traces.glob("openhands/*.jsonl"))
    fx = ROOT / "tests" / "fixtures"
    docs = [fx / "mini.traj.json", fx / "tiny.traj", fx / "openai.json", fx / "claude-code" / "session.jsonl",
            fx / "codex" / "rollout-0.34.jsonl"]
    return docs, [fx / "openhands.jsonl"]


def synthesise(folder: Path, mb: float) -> int:
    docs, jsonl = sources()
    target = int(mb * 1e6)
    written = 0
    # a quarter as one big JSON-lines file (read line by line), the rest as single-run files
    big = folder / "openhands-big.jsonl"
    lines = [line for p in jsonl for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    with big.open("w", encoding="utf-8") as fh:
        i = 0
        while written < target // 4:
            run = json.loads(lines[i % len(lines)])
            run["instance_id"] = f"{run.get('instance_id', 'run')}-v{i}"
            text = json.dumps(run) + "\n"
            fh.write(text)
            written += len(text)
            i += 1
    i = 0
    while written < target:
        src = docs[i % len(docs)]
        data = src.read_bytes()
        (folder / f"copy{i:05d}-{src.name}").write_bytes(data)
        written += len(data)
        i += 1
    return written


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--policies", default="noop,recency")
    ap.add_argument("--command", choices=("replay-dir", "fidelity"), default="replay-dir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prunesim-bench-") as tmp:
        folder = Path(tmp) / "transcripts"
        folder.mkdir()
        size = synthesise(folder, args.mb)
        files = sum(1 for _ in folder.iterdir())
        out = Path(tmp) / "rows.csv"
        start = time.perf_counter()
        if args.command == "replay-dir":
            command = ["replay-dir", str(folder), "--policies", args.policies, "--out", str(out)]
        else:
            command = ["fidelity", str(folder), "--json"]
        proc = subprocess.run([sys.executable, "-m", "prunesim", *command], cwd=ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
        if args.command == "replay-dir":
            what = f"{sum(1 for _ in out.open()) - 1 if out.exists() else 0} rows"
        else:
            what = f"{json.loads(proc.stdout)['transcripts']} transcripts" if proc.returncode == 0 else "no report"
        print(f"input {size / 1e6:.1f} MB in {files} files; {args.command}")
        print(f"{args.command} exit {proc.returncode}, {what}, {elapsed:.1f} s, peak RSS {peak_mb:.0f} MB")
        if proc.returncode:
            print(proc.stderr[-2000:], file=sys.stderr)
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
