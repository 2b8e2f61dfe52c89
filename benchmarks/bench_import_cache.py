"""Reading a folder of transcripts with the import cache empty, then full (a benchmark, not a test).

    python benchmarks/bench_import_cache.py                      # ../shared/traces/claude-code-dev
    python benchmarks/bench_import_cache.py PATH [PATH ...]

Each read is a fresh process that walks every workload of the folder the way
leaderboard, recommend and replay-dir read them (``iter_sources``), with a
cache folder of its own: first with the cache off, then into the empty cache
(imported and kept), then from it. Printed per folder: runs read, CPU seconds
of each read (user + system), and whether the three gave the same workloads
(a digest of each run's records, warnings included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import hashlib, json, pickle, resource, sys
from pathlib import Path
from prunesim.studies.transcript_replay import iter_sources

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

start = cpu()
h = hashlib.sha256()
runs = 0
for path, data in iter_sources([Path(sys.argv[1])]):
    runs += 1
    h.update(str(path).encode())
    h.update(repr(data).encode() if isinstance(data, Exception) else
             json.dumps([data.header, data.parts, data.warnings, data.content], sort_keys=True, default=str).encode())
print(json.dumps({"runs": runs, "cpu_s": cpu() - start, "digest": h.hexdigest()}))
"""


def read(folder: Path, cache: str, off: bool) -> dict:
    env = {**os.environ, "PRUNESIM_CACHE_DIR": cache}
    env.pop("PRUNESIM_NO_CACHE", None)
    if off:
        env["PRUNESIM_NO_CACHE"] = "1"
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True, check=True,
                          env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, metavar="PATH",
                    help="folders of transcripts (default: ../shared/traces/claude-code-dev)")
    args = ap.parse_args()
    folders = args.folders or [ROOT.parent / "shared" / "traces" / "claude-code-dev"]
    for folder in folders:
        with tempfile.TemporaryDirectory(prefix="prunesim-cache-") as cache:
            off, cold, warm = (read(folder, cache, off=True), read(folder, cache, off=False),
                               read(folder, cache, off=False))
        same = off["digest"] == cold["digest"] == warm["digest"]
        print(f"{folder.name}: {off['runs']} runs; CPU s: cache off {off['cpu_s']:.2f}, empty cache (imported and "
              f"kept) {cold['cpu_s']:.2f}, full cache {warm['cpu_s']:.2f}; workloads "
              f"{'the same' if same else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
