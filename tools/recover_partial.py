"""Write a lesson's recording from the partial save of a `gpu-lessons record` run that was cut short
after its last section (a timeout in the `--ncu` step, say), saying so in the provenance.

    python tools/recover_partial.py LESSON PARTIAL_DIR --like META --date ISO --command "..." --why "..."

PARTIAL_DIR holds `<lesson>.rows.csv` and `<lesson>.facts.json` as `record --partial` writes them
after every section. The GPU, clocks and software come from META, a recording made on the same
machine in the same session; the date, command and revision are the cut run's. The earlier
recording's ncu counters are kept, as `record` keeps them when it does not profile. The meta says
what happened in `recovered_from_partial`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_lessons import results  # noqa: E402
from gpu_lessons.results import Evidence, LessonResult  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lesson")
    parser.add_argument("partial", type=Path)
    parser.add_argument("--like", type=Path, required=True, help="a meta.json of the same machine")
    parser.add_argument("--date", required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--revision", required=True)
    parser.add_argument("--why", required=True)
    options = parser.parse_args(argv)
    rows = pd.read_csv(options.partial / f"{options.lesson}.rows.csv")
    saved = json.loads((options.partial / f"{options.lesson}.facts.json").read_text())
    meta = json.loads(options.like.read_text())
    meta.update(lesson=options.lesson, date=options.date, command=options.command,
                git_revision=options.revision, recovered_from_partial=options.why)
    earlier = results.read_result(options.lesson)
    used = {entry["source"] for entry in earlier.evidence.ncu.values()}
    evidence = Evidence(facts=saved["facts"], kernels=saved["kernels"], ncu=earlier.evidence.ncu,
                        sources={k: v for k, v in earlier.evidence.sources.items() if k in used})
    table = results.make_table(rows.to_dict("records"))
    for path in results.write_result(LessonResult(options.lesson, table, meta, evidence)):
        print(f"wrote {results.shown_path(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
