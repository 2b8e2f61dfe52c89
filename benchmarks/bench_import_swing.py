"""Claude Code import time against session length, prompt counts steady or swinging (a benchmark, not a test).

Writes synthetic Claude Code sessions of N calls (each a tool call and its
result), then imports each in this process (parse, size, assemble: what
``prunesim import`` does) and prints the time per call. ``steady``: each
call's recorded prompt grows by what the file shows. ``swing``: it drops by
far more than the file shows, then recovers, call after call, so that every
other call reconciles a removal of the oldest tool outputs and every other an
injection. Removal used to rescan every live part each time (3.8 s steady
against 39.9 s swinging at 30,000 calls); linear time means the time per call
stays flat as N doubles, whatever the prompts do.

Times are also given as ratios to a bare SimPy loop of N timeouts measured in
the same run, so that figures from machines of different speeds compare.

    python benchmarks/bench_import_swing.py [--calls 2500,5000,10000,20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import simpy
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl

OUTPUT = "line of output\n" * 40  # each tool result: a few hundred tokens


def session(calls: int, swing: bool) -> str:
    """A session of ``calls`` calls; ``swing`` makes the recorded prompt drop and recover at every other call."""
    lines, parent, prompt = [], None, 5000
    for k in range(calls):
        user = {"type": "user", "uuid": f"u{k}", "parentUuid": parent, "isSidechain": False, "sessionId": "bench",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k - 1}",
                                                         "content": OUTPUT}] if k else "start"}}
        prompt += 300
        shown = prompt - 30_000 if swing and k % 2 and prompt > 40_000 else prompt
        assistant = {"type": "assistant", "uuid": f"a{k}", "parentUuid": f"u{k}", "isSidechain": False,
                     "sessionId": "bench",
                     "message": {"id": f"m{k}", "model": "claude-demo-1", "role": "assistant",
                                 "content": [{"type": "tool_use", "id": f"t{k}", "name": "Bash",
                                              "input": {"command": f"cat file{k % 97}.py"}}],
                                 "usage": {"input_tokens": shown, "output_tokens": 20}}}
        lines += [json.dumps(user), json.dumps(assistant)]
        parent = f"a{k}"
    return "\n".join(lines) + "\n"


def import_seconds(path: Path) -> float:
    started = time.perf_counter()
    for t in formats.iter_transcripts(path):
        wl.from_transcript(t, "chars", "auto")
    return time.perf_counter() - started


def simpy_seconds(n: int) -> float:
    env = simpy.Environment()

    def loop():
        for _ in range(n):
            yield env.timeout(1)

    env.process(loop())
    started = time.perf_counter()
    env.run()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", default="2500,5000,10000,20000", help="session lengths, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="imports per session (the median is shown)")
    args = ap.parse_args()
    sizes = [int(n) for n in args.calls.split(",")]
    print(f"{'calls':>7} {'prompts':>8} {'seconds':>8} {'us/call':>8} {'x simpy loop':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            bare = statistics.median(simpy_seconds(n) for _ in range(args.repeat))
            for swing in (False, True):
                path = Path(tmp) / f"s{n}-{swing}.jsonl"
                path.write_text(session(n, swing))
                took = statistics.median(import_seconds(path) for _ in range(args.repeat))
                print(f"{n:>7} {'swing' if swing else 'steady':>8} {took:>8.2f} {took / n * 1e6:>8.0f} "
                      f"{took / bare:>13.0f}")


if __name__ == "__main__":
    main()
