"""Lesson 2 on a GPU in one process: the recording, the driver comparison, the GPU-mode tests.

    GPU_LESSONS_MODE=gpu python benchmarks/littles_law_probe.py OUT

1. ``gpu-lessons record littles_law --data OUT/data`` (in this process); if it fails, the lesson's
   measure() section by section, each timed and allowed to fail alone (OUT/rows.csv);
2. OUT/facts.json: resources, SASS counts and excerpts, occupancy calculator vs driver;
3. the calculator against the driver for every kernel compiled (benchmarks/occupancy_driver.py),
   after the kernel tests ran here in GPU mode (which compiles the other lessons' kernels).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd


def record(out: Path) -> bool:
    """``gpu-lessons record littles_law --data OUT/data`` in this process (so its compiled kernels
    stay for the driver comparison); True when it wrote the recording."""
    from gpu_lessons import cli

    argv = ["record", "littles_law", "--data", str(out / "data"), "--no-progress"]
    saved, sys.argv = sys.argv, ["gpu-lessons", *argv]  # the meta's command is the real one
    try:
        return cli.main(argv) == 0
    except Exception:  # noqa: BLE001 - fall back to the sections one by one, to learn what failed
        traceback.print_exc()
        return False
    finally:
        sys.argv = saved


def sections(out: Path) -> None:
    """The lesson's measure(), section by section, each timed and allowed to fail alone."""
    from numba import cuda

    from gpu_lessons import device_info, occupancy, results
    from gpu_lessons.lessons import common
    from gpu_lessons.lessons import littles_law as lesson

    limits = occupancy.sm_limits()
    lesson._FACTS.clear()
    lesson._FACTS["sm_limits"] = limits.as_dict()
    sms = device_info().sms
    rng = np.random.default_rng(2026)
    x = cuda.to_device(rng.standard_normal(lesson.COPY_ELEMENTS, dtype=np.float32))
    o = cuda.device_array_like(x)
    rows, failed = [], []
    steps = [("latency", lambda: lesson._latency_rows()),
             ("copies", lambda: lesson._copy_rows(x, o, limits)),
             ("pressure", lambda: lesson._pressure_rows(x, o, limits)),
             ("persistent", lambda: lesson._persistent_rows(x, o, limits, sms)),
             ("cupy", lambda: lesson._cupy_rows(x)),
             ("fma", lambda: lesson._fma_rows(limits, sms))]
    for name, section in steps:
        t0 = time.time()
        try:
            got = section()
            rows += got
            print(f"section {name}: {len(got)} rows in {time.time() - t0:.1f}s")
        except Exception:  # noqa: BLE001 - a probe reports every failure and goes on
            failed.append(name)
            print(f"section {name} FAILED after {time.time() - t0:.1f}s")
            traceback.print_exc()
        pd.DataFrame(rows).to_csv(out / "rows.csv", index=False)
    table = results.make_table(rows)
    summary(table, common.measurement_meta(lesson.NAME, live=False), lesson.recorded_facts())
    print(f"failed sections: {failed or 'none'}")


def main(out: Path) -> int:
    started = time.time()
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).parent))
    from occupancy_driver import compare

    from gpu_lessons import results
    from gpu_lessons.lessons import littles_law as lesson

    ok = record(out)
    print(f"record: {'ok' if ok else 'FAILED'} after {time.time() - started:.1f}s")
    facts = lesson.recorded_facts()
    (out / "facts.json").write_text(json.dumps(facts, indent=1, default=str) + "\n")
    if ok:
        recording = results.read_recording(lesson.NAME, root=out / "data")
        summary(recording.table, recording.meta, recording.meta.get("facts", {}))
    else:
        sections(out)
    t0 = time.time()
    try:  # the calculator against the driver for every kernel compiled so far, lesson 1's and the tests'
        from gpu_lessons.lessons import ceilings, roofline

        roofline.check()
        ceilings.check()
        compare(out, verbose=False)
        import pytest

        tests = ["tests/test_occupancy.py", "tests/test_occupancy_driver.py",
                 "tests/test_kernels_littles_law.py", "tests/test_kernels_coalescing.py",
                 "tests/test_kernels_bank_conflicts.py",
                 "tests/test_kernels_gemm_tiled.py", "tests/test_kernels_roofline.py"]
        status = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests])
        print(f"pytest (GPU mode) exit status {int(status)} after {time.time() - t0:.1f}s")
        compare(out)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    print(f"driver comparison and GPU tests {time.time() - t0:.1f}s; total {time.time() - started:.1f}s")
    return 0 if ok else 1


def summary(table, meta, facts) -> None:
    from gpu_lessons.lessons import littles_law as lesson

    pd.set_option("display.width", 200)
    try:
        print(lesson.latencies(table, meta).round(2).to_string())
        cupy = table[table["variant"] == "cupy copy"]["gbps"].max()
        points = lesson.memory_points(table, meta)
        points["vs_cupy"] = points["gbps"] / cupy
        print(points.drop(columns=["max_registers"]).round(3).to_string())
        fma = lesson.fma_points(table, meta)
        for column in ("fraction_of_peak", "predicted_fraction"):
            print(column)
            print(fma.pivot(index="chains", columns="warps_per_sm", values=column).round(3).to_string())
        per = table[table["variant"].str.startswith("copy_persistent")][["variant", "param", "gbps"]].copy()
        per["vs_cupy"] = per["gbps"] / cupy
        print(per.round(3).to_string())
        print(f"cupy copy {cupy:.0f} GB/s")
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    for name, res in facts.get("kernels", {}).items():
        print(name, {k: v for k, v in res.items() if k != "sass"}, res.get("sass"))
    print("occupancy disagreements (lesson kernels):", facts.get("occupancy_disagreements"))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
