"""Peak memory of `prunesim replay-dir` over ~100 MB of transcripts (a benchmark, not a test).

Synthesises a folder of transcripts in a temporary directory by copying the
shared samples (or, without them, the project's own fixtures) with a varied
instance id, plus one large OpenHands JSON-lines file of many runs, then runs
`python -m prunesim replay-dir` in a child process and reports its peak RSS.

    python benchmarks/bench_replay_dir.py [--mb 100] [--policies noop,recency]
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
        return docs, sorted(traces.glob("openhands/*.jsonl"))
    fx = ROOT / "tests" / "fixtures"
    return [fx / "mini.traj.json", fx / "tiny.traj", fx / "openai.json"], [fx / "openhands.jsonl"]


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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prunesim-bench-") as tmp:
        folder = Path(tmp) / "transcripts"
        folder.mkdir()
        size = synthesise(folder, args.mb)
        files = sum(1 for _ in folder.iterdir())
        out = Path(tmp) / "rows.csv"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "prunesim", "replay-dir", str(folder), "--policies", args.policies,
             "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True,
        )
        elapsed = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
        rows = sum(1 for _ in out.open()) - 1 if out.exists() else 0
        print(f"input {size / 1e6:.1f} MB in {files} files; policies {args.policies}")
        print(f"replay-dir exit {proc.returncode}, {rows} rows, {elapsed:.1f} s, peak RSS {peak_mb:.0f} MB")
        if proc.returncode:
            print(proc.stderr[-2000:], file=sys.stderr)
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
