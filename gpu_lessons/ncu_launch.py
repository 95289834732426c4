"""The process Nsight Compute profiles: ``python -m gpu_lessons.ncu_launch LESSON --manifest PATH
[--case NAME ...]`` launches each of the lesson's ncu cases once (``ncu.launch_all``).

Apart from ``gpu_lessons.ncu`` because it imports the lessons, and every lesson imports ``ncu.Case``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import lessons
from .ncu import launch_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_lessons.ncu_launch")
    parser.add_argument("lesson")
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--case", action="append", default=[], help="launch only this case (repeatable)")
    options = parser.parse_args(argv)
    module = lessons.get(options.lesson, include_ceilings=True)
    cases = module.ncu_cases()
    if options.case:
        unknown = sorted(set(options.case) - {case.name for case in cases})
        if unknown:
            parser.error(f"{options.lesson} has no ncu case {', '.join(map(repr, unknown))}")
        cases = [case for case in cases if case.name in options.case]
    return launch_all(cases, options.manifest)


if __name__ == "__main__":
    sys.exit(main())
