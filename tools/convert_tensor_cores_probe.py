"""One-off: lesson 7's first H200 run (a probe script's output) as the lesson's recording (run once).

    python tools/convert_tensor_cores_probe.py data/nvidia-h200

Lesson 7's kernels were first checked and timed on the H200 by ``benchmarks/tensor_cores_gpu.py``
(2026-12-01, git cd6770b; the script is in the git history), which wrote ``probes/tensor_cores.csv`` +
``.meta.json`` (timings, errors, the mma.sync ceiling, kernel resources) and, in a second command,
``probes/tensor_cores_ncu.csv`` + ``.meta.json`` (Nsight Compute at 2048^3). Those four files stay as
they are. This writes the same numbers as the lesson's recording, ``tensor_cores.csv`` /
``.meta.json`` / ``.evidence.json``, in the layout ``gpu-lessons record tensor_cores --ncu`` writes
(``gpu_lessons.results``), until that command is run on the GPU:

* table: one row per timed (variant, shape); ``size`` = M N K, ``bytes`` = 4 (MK + KN + MN), ``flops`` =
  2 MNK, ``runs`` = 25 (the run's ``bench.measure`` default, and the TF32 child's own count), median,
  min and max as timed. The ceiling's rows: ``size`` = threads launched, ``param`` = warps per SM,
  ``flops`` from the launch shape the script used (``peak_launch_shape``, checked against the TFLOP/s it
  printed), ``bytes`` = one float32 written per thread; their min and max were not kept by the run and
  are left empty.
* names: the lesson's. The run's "warp_tile 64x64 (4 warps)" is the lesson's ``warp_tile_64x64`` (the
  step was changed to that tile after the run); the run's "warp_tile_64x64" (a 128x256 block of 8 warps)
  is ``warp_tile_64x64 128x256``. Every other name is unchanged. The tile each name meant is kept in
  ``facts.tiles``, as the run recorded it.
* evidence: ``facts.errors`` (relative error against float64 of every timed result),
  ``facts.edge_shape_errors`` (the run's worst max|C - C64| / max|C64| per kernel on small awkward
  shapes), ``facts.tiles``; ``kernels`` (registers, static shared and local memory, and the run's SASS
  opcode counts -- of memory, barrier, MMA and FFMA instructions only, no listing); ``ncu``: the seven
  kernels profiled at 2048^3 (source "ncu cd6770b") and, because that pass missed cuBLAS (its kernel
  filter), cuBLAS SGEMM's counters at 2048^3 from lesson 6's recording (source "lesson 6 ncu 2cbd25c").
* meta: the run's device, clocks, versions, date, git revision and command; ``converted_from`` says from
  which files and by what; ``not_recorded`` lists what the run did not keep.

Nothing is re-timed and no number is made up: every value is the run's, checked here against the
figures the run printed (TFLOP/s, registers) before anything is written.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpu_lessons  # noqa: E402,F401 - chooses the mode before numba.cuda
from gpu_lessons.kernels import tensor_cores as tc  # noqa: E402
from gpu_lessons.lessons import tensor_cores as lesson  # noqa: E402
from gpu_lessons.results import LessonResult, make_table, read_result, write_result  # noqa: E402
from gpu_lessons.results.evidence import Evidence  # noqa: E402

RENAMED = {"warp_tile 64x64 (4 warps)": "warp_tile_64x64", "warp_tile_64x64": "warp_tile_64x64 128x256"}
TIMED_RUNS = 25  # bench.TIMED_RUNS at cd6770b: every measure() of the run used the default
NCU_ORDER = (lesson.LESSON6, *lesson.SIMT_PIPELINES, "warp_tile", "warp_tile cap128", "warp_tile_64x64")
NCU_SOURCE = "ncu cd6770b"
GEMM_NCU_SOURCE = "lesson 6 ncu 2cbd25c"
PROBE_FILES = ("probes/tensor_cores.csv", "probes/tensor_cores.meta.json", "probes/tensor_cores_ncu.csv",
               "probes/tensor_cores_ncu.meta.json")


def renamed(name: str) -> str:
    return RENAMED.get(name, name)


def number(text: str):
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() else value


def table_rows(probe: dict, csv_rows: list[dict]) -> list[dict]:
    if [(r["variant"], r["shape"]) for r in csv_rows] != [(r["variant"], r["shape"]) for r in probe["rows"]]:
        raise SystemExit("probes/tensor_cores.csv and the meta's rows differ: not one run")
    rows = []
    for row in probe["rows"]:
        m, n, k = lesson.SHAPES[row["shape"]]
        variant = renamed(row["variant"])
        record = {"lesson": lesson.NAME, "variant": variant,
                  "provider": "cublas" if variant.startswith("cublas") else "gpu_lessons",
                  "size": m * n * k, "param": math.nan, "bytes": 4 * (m * k + k * n + m * n),
                  "flops": 2 * m * n * k, "runs": TIMED_RUNS, "median_ms": row["median_ms"],
                  "min_ms": row["min_ms"], "max_ms": row["max_ms"]}
        if variant == "cublas tf32":
            runs = probe["cublas_tf32"][row["shape"]]["runs"]
            if runs != TIMED_RUNS:
                raise SystemExit(f"cuBLAS TF32 at {row['shape']}: {runs} runs, expected {TIMED_RUNS}")
        check_rate(record, row["tflops"], f"{row['variant']} {row['shape']}")
        rows.append(record)
    sms = probe["meta"]["device"]["sms"]
    for peak in probe["mma_peak"]:
        warps, chains = peak["warps_per_sm"], peak["chains"]
        blocks, per_block, iterations = lesson.peak_launch_shape(sms, warps, chains)
        threads = blocks * per_block * 32
        record = {"lesson": lesson.NAME, "variant": lesson.peak_name(chains), "provider": "gpu_lessons",
                  "size": threads, "param": float(warps), "bytes": 4 * threads,
                  "flops": tc.peak_flops(blocks, per_block, iterations, chains), "runs": TIMED_RUNS,
                  "median_ms": peak["median_ms"], "min_ms": math.nan, "max_ms": math.nan}
        check_rate(record, peak["tflops"], f"mma_peak {warps} warps/SM x {chains} chains")
        rows.append(record)
    return rows


def check_rate(record: dict, tflops: float, what: str) -> None:
    """The FLOPs filled in here over the run's median must give the TFLOP/s the run printed."""
    rate = record["flops"] / record["median_ms"] / 1e9
    if abs(rate - tflops) > 1e-9 * tflops:
        raise SystemExit(f"{what}: {rate} TFLOP/s from the filled-in FLOPs, the run printed {tflops}")


def facts(probe: dict) -> dict:
    errors = [{"variant": renamed(r["variant"]), "shape": r["shape"], "relative_error": r["relative_error"]}
              for r in probe["rows"]]
    tiles = {renamed(name): k["tile"] for name, k in probe["kernels"].items() if "tile" in k}
    edges = {renamed(name): value for name, value in probe["small_shape_errors"].items()}
    return {"errors": errors, "edge_shape_errors": edges, "tiles": tiles}


def kernels(probe: dict) -> dict:
    out = {}
    for name, k in probe["kernels"].items():
        out[renamed(name)] = {"registers": k["registers"], "shared_bytes": k["static_shared_bytes"],
                              "local_bytes": k["local_bytes"], "sass": {"counts": k["sass_counts"]}}
    return out


def ncu_cases(folder: Path, probe_kernels: dict) -> tuple[dict, dict]:
    meta = json.loads((folder / "probes/tensor_cores_ncu.meta.json").read_text())
    text = (folder / "probes/tensor_cores_ncu.csv").read_text()
    lines = [line for line in text.splitlines() if line.startswith('"')]
    by_id: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        entry = by_id.setdefault(row["ID"], {"name": row["Kernel Name"], "block": row["Block Size"],
                                             "grid": row["Grid Size"], "metrics": {}, "units": {}})
        entry["metrics"][row["Metric Name"]] = number(row["Metric Value"])
        if row["Metric Unit"]:
            entry["units"][row["Metric Name"]] = row["Metric Unit"]
    if sorted(by_id, key=int) != [str(i) for i in range(len(NCU_ORDER))]:
        raise SystemExit(f"the ncu file profiled kernels {sorted(by_id)}, expected {len(NCU_ORDER)}")
    cases = {}
    for position, case in enumerate(NCU_ORDER):
        entry = by_id[str(position)]
        kernel = lesson.BY_NAME[case].ncu_kernel
        registers = entry["metrics"]["launch__registers_per_thread"]
        if not entry["name"].startswith(kernel) or registers != probe_kernels[case]["registers"]:
            raise SystemExit(f"ncu launch {position} ({entry['name'][:30]}, {registers} registers) is not "
                             f"{case} ({kernel}, {probe_kernels[case]['registers']} registers)")
        cases[case] = {"kernel": kernel, "source": NCU_SOURCE, "grid": tc_dims(entry["grid"]),
                       "block": tc_dims(entry["block"]), "metrics": entry["metrics"], "units": entry["units"]}
    source = {
        "what": meta["what"], "command": meta["command"], "gpu": meta["gpu"],
        "driver_version": meta["driver_version"], "numba_cuda": meta["numba_cuda"], "date": meta["date"],
        "git_revision": meta["git_revision"], "shape": [2048, 2048, 2048],
        "tool": "ncu (version not recorded by the run)", "file": "probes/tensor_cores_ncu.csv",
        "matched_by": "launch order, checked against each kernel's name and registers "
                      "(tools/convert_tensor_cores_probe.py)"}
    return cases, {NCU_SOURCE: source}


def tc_dims(text: str) -> list[int]:
    return [int(v) for v in text.strip().strip("()").replace(" ", "").split(",") if v]


def cublas_from_lesson6(root: Path) -> tuple[dict, dict]:
    """cuBLAS SGEMM's counters at 2048^3 from lesson 6's recording, with that run's provenance."""
    gemm = read_result("gemm", gpu="nvidia-h200", root=root)
    case = dict(gemm.evidence.ncu_case("cublas sgemm"))
    origin = gemm.evidence.source(case["source"])
    if origin.get("shape") != [2048, 2048, 2048]:
        raise SystemExit(f"lesson 6's cuBLAS counters are not at 2048^3: {origin.get('shape')}")
    case["source"] = GEMM_NCU_SOURCE
    source = {**origin, "note": "copied from data/nvidia-h200/gemm.evidence.json (lesson 6's recording, "
              f"its source '{gemm.evidence.ncu_case('cublas sgemm')['source']}'): the tensor-core run's "
              "own ncu pass launched cuBLAS SGEMM first, but its kernel filter (regex:gemm|sgemm|cutlass) "
              "let it through unprofiled; same GPU, same shape, same library call (CuPy a @ b, TF32 off)"}
    return case, {GEMM_NCU_SOURCE: source}


def meta(probe: dict) -> dict:
    run = probe["meta"]
    device = dict(run["device"])
    out = {"gpu": device.pop("name"), **device, "lesson": lesson.NAME, "date": run["date"],
           "command": run["command"], "git_revision": run["git_revision"], **run["clocks"],
           "cupy": run["cupy"]}
    out["converted_from"] = {
        "files": [f"data/nvidia-h200/{name}" for name in PROBE_FILES],
        "by": "python tools/convert_tensor_cores_probe.py data/nvidia-h200 (one-off; nothing re-timed)",
        "run": run["what"],
        "run_seconds": {"parallel_compile": run["compile_seconds_parallel"],
                        "load_and_check": run["load_and_check_seconds"], "total": run["total_seconds"]},
        "renamed": RENAMED,
        "note": "this recording holds the numbers of lesson 7's first GPU run, in the layout of "
                "`gpu-lessons record tensor_cores --ncu`, which replaces it when it is run on the GPU",
    }
    out["not_recorded"] = [
        "min_ms and max_ms of the mma_peak rows (the run kept their median only): left empty",
        "SASS listings: the run kept opcode counts of memory, barrier, MMA and FFMA instructions only "
        "(kernels.*.sass.counts), no summary, no lines",
        "resources of the ceiling's kernels (mma_peak)",
        "cuBLAS SGEMM's counters in the run's own ncu pass: taken from lesson 6's recording (evidence "
        f"source '{GEMM_NCU_SOURCE}')",
        "dram__bytes_read.sum and lts__t_sector_hit_rate.pct (not in the run's ncu metrics)",
        "ncu counters of mma_global, mma_shared and mma_async (not profiled by the run)",
        "power_limit_w (the run did not ask NVML for it)",
        "the edge-shape check's share of the error bound: edge_shape_errors holds the run's own measure, "
        "max|C - C64| / max|C64| per kernel",
    ]
    return out


def main(folder: Path) -> None:
    probe = json.loads((folder / "probes/tensor_cores.meta.json").read_text())
    with open(folder / "probes/tensor_cores.csv", newline="") as handle:
        csv_rows = list(csv.DictReader(handle))
    table = make_table(table_rows(probe, csv_rows))
    probe_kernels = kernels(probe)
    cases, sources = ncu_cases(folder, probe_kernels)
    cublas, cublas_source = cublas_from_lesson6(folder.parent)
    cases = {"cublas sgemm": cublas, **cases}
    evidence = Evidence(facts=facts(probe), kernels=probe_kernels, ncu=cases,
                        sources={**sources, **cublas_source})
    result = LessonResult(lesson=lesson.NAME, table=table, meta=meta(probe), evidence=evidence)
    for path in write_result(result, root=folder.parent):
        print(f"wrote {path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
