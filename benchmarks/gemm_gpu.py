"""Lesson 6 on the GPU: the recording, and the evidence the simulator shows beside it.

    python benchmarks/gemm_gpu.py record OUT   # as `gpu-lessons record gemm --data OUT/data`, written
                                               # after each shape; then per kernel: registers, shared
                                               # and local memory, SASS summary and excerpts; errors
    python benchmarks/gemm_gpu.py ncu OUT [STEP ...]  # Nsight Compute counters of NCU_STEPS (or the
                                               # steps named) at 2048^3 (runs itself under ncu: the
                                               # `launch` subcommand)

Both write OUT/data/nvidia-h200/gemm_evidence.json (merged when it exists), with provenance.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
EVIDENCE = "gemm_evidence.json"
NCU_SHAPE = (2048, 2048, 2048)
# the steps whose counters the lesson's checklist quotes (the others are read in their SASS)
NCU_STEPS = ["naive_uncoalesced", "naive", "shared_tiled", "register_1d", "unrolled", "register_cap",
             "big_tile"]
NCU_METRICS = [
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
]
EXCERPTS = {"register_2d": 60, "register_2d_uint64": 60, "vector_loads": 60, "unrolled": 40,
            "register_cap": 40, "big_tile": 40}


def _one(value):
    return next(iter(value.values())) if isinstance(value, dict) else value


def _evidence_file(out: Path) -> Path:
    from gpu_lessons.device import device_info

    return out / "data" / device_info().slug / EVIDENCE


def _merge(out: Path, update: dict) -> Path:
    path = _evidence_file(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    evidence = json.loads(path.read_text()) if path.exists() else {}
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(evidence.get(key), dict):
            evidence[key].update(value)
        else:
            evidence[key] = value
    path.write_text(json.dumps(evidence, indent=1, default=str) + "\n")
    return path


def _kernel_facts(dispatcher) -> dict:
    from gpu_lessons import sass

    facts = {"registers": int(_one(dispatcher.get_regs_per_thread())),
             "shared_bytes": int(_one(dispatcher.get_shared_mem_per_block())),
             "local_bytes": int(_one(dispatcher.get_local_mem_per_thread()))}
    text = _one(dispatcher.inspect_sass())
    facts["sass"] = sass.summary(text)
    return facts, text


def record(out: Path, evidence_budget_s: float = 40.0) -> None:
    """What `gpu-lessons record gemm --data OUT/data` does (checks, then measure), except that the
    recording is rewritten after each shape (a run cut short keeps the shapes it finished); then
    the evidence, per kernel, for at most ``evidence_budget_s`` more (kernels already compiled:
    the resource report is cheap, nvdisasm about a second each)."""
    import time

    from gpu_lessons import results, sass
    from gpu_lessons.kernels import gemm_codegen as codegen
    from gpu_lessons.kernels import gemm_steps as steps
    from gpu_lessons.lessons import gemm as lesson
    from gpu_lessons.lessons.common import measurement_meta

    start = time.time()
    data = out / "data"
    checks = lesson.check()
    print(f"gemm: {int(checks['passed'].sum())}/{len(checks)} correctness checks passed", flush=True)
    if not checks["passed"].all():
        raise SystemExit(checks[~checks["passed"]].to_string())
    meta = measurement_meta(lesson.NAME, live=False)
    meta["command"] = ("python benchmarks/gemm_gpu.py record (lesson.check + lesson.measure, "
                       "as gpu-lessons record gemm)")

    def write(table):
        path = results.write_recording(table, meta, lesson.NAME, root=data)
        print(f"{time.time() - start:.0f}s: recorded {len(table)} rows: {path}", flush=True)

    lesson.measure(show_progress=False, after_shape=write)
    evidence_deadline_s = time.time() - start + evidence_budget_s
    errors = lesson.LAST_ERRORS
    _merge(out, {"meta": meta, "errors": errors.to_dict(orient="records") if errors is not None else []})
    kernels, excerpts = {}, {}
    for step in steps.STEPS:
        for vector in (True, False) if step.tile is not None else (True,):
            if time.time() - start > evidence_deadline_s:
                break
            name = step.name if vector else f"{step.name} (4-byte loads)"
            tile = step.tile if vector or step.tile is None else step.tile.scalar()
            if tile is not None and tile not in codegen._BUILT:
                continue  # not run in this recording
            facts, text = _kernel_facts(step.dispatchers(vector))
            kernels[name] = facts
            if vector and step.name in EXCERPTS:
                loop = sass.hot_loop(text)
                excerpts[step.name] = [f"/*{a:04x}*/ {op} {rest}".rstrip() for a, op, rest in
                                       loop[: EXCERPTS[step.name]]]
    for name, tile in lesson.TUNE.items():
        if tile in codegen._BUILT and time.time() - start < evidence_deadline_s:
            kernels[name] = _kernel_facts(codegen.build(tile))[0]
    path = _merge(out, {"kernels": kernels, "sass_excerpts": excerpts})
    print(f"{time.time() - start:.0f}s: evidence for {len(kernels)} kernels: {path}", flush=True)


def launch(names: list[str]) -> None:
    """Run under ncu: each named step once at NCU_SHAPE, then cuBLAS."""
    import numpy as np

    from gpu_lessons.kernels import gemm_steps as steps  # gpu_lessons first: it picks the mode

    cuda = steps.cuda

    m, n, k = NCU_SHAPE
    rng = np.random.default_rng(1)
    a = cuda.to_device(rng.standard_normal((m, k), dtype=np.float32))
    b = cuda.to_device(rng.standard_normal((k, n), dtype=np.float32))
    c = cuda.device_array((m, n), np.float32)
    for name in names:
        steps.step(name).launch(a, b, c)
        cuda.synchronize()
    import cupy as cp

    ca, cb = cp.asarray(a), cp.asarray(b)
    cp.matmul(ca, cb)
    cp.cuda.runtime.deviceSynchronize()


def ncu(out: Path, names: list[str]) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from ncu_counters import kernel_name, number, parse_ncu_csv

    tool = shutil.which("ncu")
    if tool is None:
        raise SystemExit("ncu is not on the PATH")
    command = [tool, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
               "--metrics", ",".join(NCU_METRICS),
               sys.executable, str(Path(__file__).resolve()), "launch", *names]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    (out / "gemm_ncu_raw.csv").write_text(result.stdout)
    (out / "gemm_ncu_stderr.txt").write_text(result.stderr[-20000:])
    records = parse_ncu_csv(result.stdout)
    labels = names + ["cublas sgemm"]
    counters = {}
    for label, record in zip(labels, records, strict=False):
        counters[label] = {"kernel": kernel_name(record)[:160]}
        for metric in NCU_METRICS:
            if metric in record:
                try:
                    counters[label][metric] = number(record[metric])
                except Exception:  # noqa: BLE001 - ncu prints n/a for some metrics
                    counters[label][metric] = record[metric]
    from gpu_lessons.lessons.common import git_revision

    provenance = {"source": "ncu", "shape": NCU_SHAPE, "git_revision": git_revision(),
                  "command": " ".join(command[:-2 - len(names)]), "steps": names,
                  "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "profiled_launches": len(records), "expected_launches": len(labels)}
    path = _merge(out, {"ncu": counters, "ncu_meta": provenance})
    print(f"ncu: {len(records)} launches profiled; {path}")
    for label, values in counters.items():
        print(label, {k.split("__")[1][:40]: v for k, v in values.items() if k != "kernel"})


PROBE_NAMES = {  # benchmarks/gemm_probe.py's names -> the lesson's
    "naive_uncoalesced": "naive_uncoalesced", "naive": "naive", "tiled16": "shared_tiled",
    "register_1d": "register_1d", "register_2d": "register_2d", "register_2d_uint64": "register_2d_uint64",
    "vec_rolled": "vector_loads", "vec_unrolled": "unrolled", "conflict_free": "conflict_free",
    "double_buffer": "double_buffer", "register_cap": "register_cap", "warp_tile": "warp_tile (probe)",
    "launch_bounds": "launch_bounds (probe)", "scalar_cap_db": "register_cap (4-byte loads)",
    "tune_128x128x16": "tile 128x128x16 8x8", "tune_128x64x8_8x4": "tile 128x64x8 8x4",
    "tune_64x64x8_4x4": "tile 64x64x8 4x4",
}


def assemble(recording: Path, probe: Path, ncu_run: Path, target: Path, probe_meta: dict) -> None:
    """One evidence file from three H200 runs: the recording's (meta, errors, kernels), the probe's
    resource reports and SASS (for kernels the recording did not inspect), an ncu run's counters."""
    import gzip

    from gpu_lessons import sass

    evidence = json.loads(recording.read_text()) if recording.exists() else {}
    recorded = evidence.get("kernels", {})
    kernels = {name: {**facts, "from": "the recording's run"} for name, facts in recorded.items()}
    excerpts = dict(evidence.get("sass_excerpts", {}))
    resources = json.loads((probe / "resources.json").read_text())
    for probe_name, name in PROBE_NAMES.items():
        info = resources.get(probe_name)
        if info is None or name in kernels:
            continue
        text = gzip.open(probe / "sass" / f"{probe_name}.sass.gz", "rt").read()
        kernels[name] = {"registers": info["regs_per_thread"], "shared_bytes": info["shared_mem_per_block"],
                         "local_bytes": info["local_mem_per_thread"], "sass": sass.summary(text),
                         "from": f"probe {probe_meta['git_revision']}"}
        if name in EXCERPTS and name not in excerpts:
            excerpts[name] = [f"/*{a:04x}*/ {op} {rest}".rstrip() for a, op, rest in
                              sass.hot_loop(text)[: EXCERPTS[name]]]
    # ncu: the recording's own run (``ncu OUT STEP ...`` merged into it) wins; the earlier ncu run
    # fills the steps it did not profile, under its own provenance (ncu_meta_earlier)
    counters = json.loads(ncu_run.read_text())
    own, own_meta = evidence.get("ncu", {}), evidence.get("ncu_meta")
    ncu = {label: {**values, "run": own_meta["git_revision"]} for label, values in own.items()}
    earlier = {label: {**values, "run": counters["ncu_meta"]["git_revision"]}
               for label, values in counters["ncu"].items() if label not in ncu}
    ncu.update(earlier)
    evidence.update({"kernels": kernels, "sass_excerpts": excerpts, "probe_meta": probe_meta, "ncu": ncu})
    if own_meta is None:
        evidence["ncu_meta"] = counters["ncu_meta"]
    elif earlier:
        evidence["ncu_meta_earlier"] = {**counters["ncu_meta"], "steps": list(earlier)}
    target.write_text(json.dumps(evidence, indent=1, default=str) + "\n")
    print(f"{target}: {len(kernels)} kernels, {len(excerpts)} SASS excerpts, ncu for {len(ncu)} "
          f"({len(earlier)} from the earlier run)")


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["help"]
    if command == "record":
        record(Path(rest[0]))
    elif command == "ncu":
        names = rest[1:] or NCU_STEPS
        for name in names:
            if name not in NCU_STEPS:
                raise SystemExit(f"ncu: {name!r} is not one of {NCU_STEPS}")
        ncu(Path(rest[0]), names)
    elif command == "launch":
        launch(rest or NCU_STEPS)
    elif command == "assemble":  # RECORDING_EVIDENCE PROBE_DIR EARLIER_NCU_EVIDENCE TARGET
        recording, probe, ncu_run, target = map(Path, rest)
        meta = json.loads((REPO / "data" / "nvidia-h200" / "gemm_probe.meta.json").read_text())
        assemble(recording, probe, ncu_run, target, {**meta, "source": "benchmarks/gemm_probe.py"})
    else:
        print(__doc__)
