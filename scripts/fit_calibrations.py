"""Refit the shipped calibration profiles (sim/io/transcripts/calibrations.json) on the dev transcripts.

    python scripts/fit_calibrations.py [--traces ../shared/traces]

Each profile is fitted on every transcript of its dev folder, for every
tokenizer (bpe-openai must be installed for the exact ones). The figures to
quote are the cross-validated ones of ``prunesim fidelity DIR``, never the fit
on the folder it was fitted on (docs/transcripts.md).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from prunesim.io.transcripts import tokens
from prunesim.studies.fidelity import Study
from prunesim.studies.transcript_replay import expand

PROFILES = [  # name, model substrings, formats, dev folder
    ("gemini", ["gemini"], ["mini-swe-agent"], "mini-swe-agent-dev"),
    ("claude", ["claude"], ["claude-code"], "claude-code-dev"),
    ("gpt", ["gpt", "codex"], ["codex"], "codex"),
]
OUT = Path(__file__).resolve().parents[1] / "sim" / "io" / "transcripts" / "calibrations.json"


def main() -> None:
    default = os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path(default))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    profiles = []
    for name, models, formats, folder in PROFILES:
        files = expand([args.traces / folder])
        by_tokenizer = {}
        for tokenizer in tokens.NAMES:
            with Study(tokenizer, calibration="none", folds=0) as study:
                study.run(files)
                (fitted,) = study.fit_all()
            by_tokenizer[tokenizer] = fitted.by_tokenizer[tokenizer]
            print(f"{name} {tokenizer}: {json.dumps(by_tokenizer[tokenizer])}")
        profiles.append({"name": name, "models": models, "formats": formats,
                         "fitted_on": f"{len(files)} transcripts of traces/{folder}", "tokenizers": by_tokenizer})
    text = json.dumps({"prunesim_calibration": 1, "profiles": profiles}, indent=1, sort_keys=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
