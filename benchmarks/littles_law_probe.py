"""Lesson 2's measure(), section by section, each timed and allowed to fail alone (run on a GPU).

    GPU_LESSONS_MODE=gpu python benchmarks/littles_law_probe.py OUT

Writes OUT/rows.csv (the tidy rows of the sections that ran), OUT/facts.json (resources, SASS
counts and excerpts, occupancy calculator vs driver) and, when every section ran, a recording under
OUT/data (as ``gpu-lessons record littles_law --data OUT/data`` would); prints a summary last.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd


def main(out: Path) -> int:
    started = time.time()
    from numba import cuda

    from gpu_lessons import device_info, occupancy, results
    from gpu_lessons.lessons import common
    from gpu_lessons.lessons import littles_law as lesson

    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).parent))
    from occupancy_driver import compare

    print(f"imports {time.time() - started:.1f}s")
    checks = lesson.check()
    print(f"checks {int(checks['passed'].sum())}/{len(checks)} passed; {time.time() - started:.1f}s")
    if not checks["passed"].all():
        print(checks[~checks["passed"]].to_string())
    limits = occupancy.sm_limits()
    lesson._FACTS.clear()
    lesson._FACTS["sm_limits"] = limits.as_dict()
    print(limits)
    sms = device_info().sms
    rng = np.random.default_rng(2026)
    x = cuda.to_device(rng.standard_normal(lesson.COPY_ELEMENTS, dtype=np.float32))
    o = cuda.device_array_like(x)
    rows, failed = [], []
    sections = [("latency", lambda: lesson._latency_rows()),
                ("copies", lambda: lesson._copy_rows(x, o, limits)),
                ("pressure", lambda: lesson._pressure_rows(x, o, limits)),
                ("persistent", lambda: lesson._persistent_rows(x, o, limits, sms)),
                ("cupy", lambda: lesson._cupy_rows(x)),
                ("fma", lambda: lesson._fma_rows(limits, sms))]
    for name, section in sections:
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
        (out / "facts.json").write_text(json.dumps(lesson.recorded_facts(), indent=1, default=str) + "\n")
        try:  # after every section: a run cut short still brings the comparison back
            compare(out, verbose=False)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
    facts = lesson.recorded_facts()
    facts["occupancy_disagreements"] = sum(r["calculator"] != r["driver"] for r in facts.get("occupancy", []))
    (out / "facts.json").write_text(json.dumps(facts, indent=1, default=str) + "\n")
    table = results.make_table(rows)
    meta = common.measurement_meta(lesson.NAME, live=False)
    if not failed:
        print("recorded:", results.write_recording(table, meta, lesson.NAME, root=out / "data"))
    summary(table, meta, facts)
    t0 = time.time()
    try:  # the calculator against the driver for every kernel compiled so far (and lesson 1's)
        from gpu_lessons.lessons import ceilings, roofline

        roofline.check()
        ceilings.check()
        compare(out)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    print(f"driver comparison {time.time() - t0:.1f}s")
    print(f"total {time.time() - started:.1f}s; failed sections: {failed or 'none'}")
    return 1 if failed else 0


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
