"""Record the warp-primitive cases' outputs on this GPU, for the simulator's bit-for-bit test.

    python benchmarks/record_warp_primitives.py --out data/nvidia-h200/checks

writes DIR/warp_primitives.npz (one array per case of gpu_lessons.sim.warp_cases) and
DIR/warp_primitives.json (the GPU, driver, numba-cuda version, date, and each case's input
fingerprint, so a test can tell a stale recording from a simulator bug).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import gpu_lessons
from gpu_lessons.sim.warp_cases import CASES, fingerprints, run_cases

NPZ_NAME = "warp_primitives.npz"
JSON_NAME = "warp_primitives.json"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for the two files")
    parser.add_argument("--allow-simulator", action="store_true",
                        help="record even without a GPU (only to try the script out)")
    args = parser.parse_args(argv)
    if gpu_lessons.SIMULATED and not args.allow_simulator:
        print("No GPU: this records a GPU's outputs (use --allow-simulator to try it anyway).",
              file=sys.stderr)
        return 2

    outputs = run_cases()
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / NPZ_NAME, **outputs)
    facts = {
        "recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": gpu_lessons.device_info().as_dict(),
        "cases": {case.name: {"grid": case.grid, "block": case.block} for case in CASES},
        "fingerprints": fingerprints(),
    }
    (args.out / JSON_NAME).write_text(json.dumps(facts, indent=2) + "\n")
    print(f"{len(outputs)} cases on {facts['device']['name']} -> {args.out / NPZ_NAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
