"""Refit the shipped reaction of a replayed agent (sim/model/reaction.json) on the Claude Code dev sessions.

    python scripts/fit_reaction.py [SESSIONS] [--out FILE]

Fits ``[reaction] probability`` on the removals the runtime recorded in
``claude-code-dev`` (its compactions and the old tool outputs it cleared) and
prints the leave-one-session-out check: for each recorded compaction, the
re-reads predicted by a fit of the other sessions against those the agent made
(sim/studies/reaction.py, docs/transcripts.md); and the same compactions asked
of the agent model's lookback needs (docs/agent.md).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from prunesim.studies import reaction
from prunesim.studies.transcript_replay import expand, iter_workloads

FOLDER = "claude-code-dev"
OUT = Path(__file__).resolve().parents[1] / "sim" / "model" / "reaction.json"


def main() -> None:
    traces = Path(os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", type=Path, nargs="?", default=traces / FOLDER,
                        help=f"the folder of sessions to fit on (default: the shared traces' {FOLDER})")
    parser.add_argument("--out", type=Path, default=OUT, help="the fit file to write")
    args = parser.parse_args()
    per_session: dict = {}
    for path in expand([args.sessions]):
        for data in iter_workloads(path):
            eps, held = per_session.setdefault(data.name, ([], []))
            eps.extend(reaction.episodes(data))
            held.extend(reaction.held_touches(data))
    fitted = reaction.fit(per_session)
    all_eps = [e for eps, _ in per_session.values() for e in eps]
    by_cause = {cause: reaction.fit({k: ([e for e in eps if e.cause == cause], held)
                                     for k, (eps, held) in per_session.items()}).as_dict()
                for cause in ("compaction", "drop")}
    folds = reaction.cross_validate(per_session)
    out = {**fitted.as_dict(), "fitted_on": f"{len(per_session)} sessions of {args.sessions.name}",
           "sessions": sorted(per_session), "by_cause": by_cause, "timing": reaction.gaps(all_eps),
           "leave_one_session_out": {"compactions": folds, "totals": reaction.totals(folds)}}
    print(json.dumps({k: v for k, v in out.items() if k not in ("sessions", "leave_one_session_out")}, indent=1))
    for row in folds:
        print(f"  {row['transcript'][-36:]} call {row['call']:>3}: needs {row['needs']:>2}  predicted "
              f"{row['predicted']:6.2f}  open loop {row['predicted_open_loop']:6.2f}  observed {row['observed']}")
    print("totals", json.dumps(out["leave_one_session_out"]["totals"]))
    # The agent model's lookback needs asked the same compactions, with profiles set on other scaffolds' outcomes
    # (printed, not fitted: Claude Code's own profile has no lookback needs; docs/agent.md).
    for name, look in reaction.lookback_report(all_eps).items():
        print(f"lookback needs of {name} ({look['source']}): re-reads predicted {look['predicted']:.2f}, observed "
              f"{look['observed']}, mean absolute error per compaction {look['mean_abs_error']:.2f}")
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
