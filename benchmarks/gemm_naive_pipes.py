"""Which math pipe throttles lesson 6's naive GEMM (a one-off probe; run on a GPU with ncu on the PATH).

    python benchmarks/gemm_naive_pipes.py --out DIR

Profiles lesson 6's ncu case ``naive`` (2048^3, one launch) with Nsight Compute's per-pipe counters
(instructions issued to, and cycles busy of, each pipe, as a share of its peak), those this ncu knows
(``ncu --query-metrics``), and writes DIR/probes/gemm_naive_pipes.csv (metric, value) and
DIR/probes/gemm_naive_pipes.meta.json (command, ncu's provenance).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PIPES = ("alu", "fma", "fmaheavy", "fmalite", "fp16", "uniform", "lsu", "xu", "adu", "cbu")
WANTED = ([f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_active" for p in PIPES]
          + [f"sm__pipe_{p}_cycles_active.avg.pct_of_peak_sustained_active" for p in PIPES]
          + ["smsp__issue_active.avg.pct_of_peak_sustained_active",
             "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"])


def known(metrics: list[str]) -> list[str]:
    """The metrics whose base name ``ncu --query-metrics`` lists."""
    listing = subprocess.run(["ncu", "--query-metrics"], capture_output=True, text=True).stdout
    bases = {line.split()[0] for line in listing.splitlines() if line.strip()}
    return [m for m in metrics if m.split(".")[0] in bases]


def launch(manifest: Path) -> int:
    import gpu_lessons  # noqa: F401 - the mode first
    from gpu_lessons import ncu
    from gpu_lessons.lessons import gemm

    cases = [case for case in gemm.ncu_cases() if case.name == "naive"]
    return ncu.launch_all(cases, manifest)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", nargs="?", choices=["launch"])
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    if options.command == "launch":
        return launch(options.manifest)
    import gpu_lessons  # noqa: F401
    from gpu_lessons import ncu

    metrics = known(WANTED)
    print("metrics:", metrics, file=sys.stderr)
    cases, sources = ncu.profile([__file__, "launch"], metrics, options.out / "work")
    values = cases["naive"]["metrics"]
    folder = options.out / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["metric,value"] + [f"{name},{values[name]}" for name in metrics if name in values]
    (folder / "gemm_naive_pipes.csv").write_text("\n".join(lines) + "\n")
    meta = {"command": "python benchmarks/gemm_naive_pipes.py --out DIR", "case": "naive 2048^3",
            "ncu": sources, "kernel": cases["naive"].get("kernel")}
    (folder / "gemm_naive_pipes.meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
