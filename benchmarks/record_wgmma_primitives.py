"""Record the wgmma cases' outputs on this GPU (sm_90a), for the simulator's bit-for-bit test.

    GPU_LESSONS_GIT_REVISION=$(git rev-parse --short HEAD) \
        python benchmarks/record_wgmma_primitives.py --out data/nvidia-h200/checks

writes DIR/wgmma_primitives.npz (one array per case of gpu_lessons.sim.wgmma_cases: wgmma.mma_async
m64nNk8 TF32 for N = 8 to 256, descriptors without swizzle and with 128-, 64- and 32-byte swizzles,
two warpgroups, descriptors that misread their operands) and DIR/wgmma_primitives.json (GPU, driver,
numba-cuda, date, git revision, command, each case's launch and input fingerprint). Each case runs
twice: the file says whether the GPU gave the same bits both times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gpu_lessons  # noqa: E402
from gpu_lessons.sim.wgmma_cases import cases, fingerprints, run_cases  # noqa: E402

NPZ_NAME = "wgmma_primitives.npz"
JSON_NAME = "wgmma_primitives.json"


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
    again = run_cases()
    repeatable = {name: bool(np.array_equal(outputs[name].view(np.uint32), again[name].view(np.uint32)))
                  for name in outputs}
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / NPZ_NAME, **outputs)
    facts = {
        "what": "outputs of gpu_lessons.sim.wgmma_cases on this device (wgmma.mma_async m64nNk8 "
                "f32.tf32.tf32 from shared-memory descriptors, chained along K in one group)",
        "recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": gpu_lessons.device_info().as_dict(),
        "git_revision": os.environ.get("GPU_LESSONS_GIT_REVISION", "unknown"),
        "command": " ".join(["python", *sys.argv]),
        "repeatable": repeatable,
        "cases": {case.name: {"grid": case.grid, "block": case.block} for case in cases()},
        "fingerprints": fingerprints(),
    }
    (args.out / JSON_NAME).write_text(json.dumps(facts, indent=2) + "\n")
    print(f"{len(outputs)} cases on {facts['device']['name']} -> {args.out / NPZ_NAME}; "
          f"repeatable: {all(repeatable.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
