"""What lesson 4 records on a GPU besides its timings: Nsight Compute counters, resources, SASS.

    python benchmarks/bank_conflicts_gpu.py record --out DIR

runs itself under ``ncu --clock-control none`` (the ``launch`` subcommand launches every case of
``gpu_lessons.lessons.bank_conflicts.ncu_cases()`` once), and writes DIR/bank_conflicts_gpu.json:

    provenance   GPU, driver, numba-cuda, ncu version, date
    ncu          one row per case and metric: shared/global requests, wavefronts, bank conflicts,
                 and the occupancy limits ncu reports for the launch
    resources    per kernel: registers per thread, static shared memory per block, local memory
    sass         per kernel: counts of the memory opcodes, and the shared/global memory lines

The lesson shows these on the simulator with this provenance; tests/test_lessons_bank_conflicts.py
checks the tracer's counts against the recorded ncu counts.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTPUT = "bank_conflicts_gpu.json"
COUNTERS = [
    *(f"smsp__inst_executed_op_shared_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum" for op in ("ld", "st")),
    *(f"smsp__inst_executed_op_global_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum" for op in ("ld", "st")),
]
# Collected through ncu's LaunchStats and Occupancy sections (they are not --query-metrics names);
# kept from the raw page when present.
SECTIONS = ["LaunchStats", "Occupancy"]
OCCUPANCY_PREFIXES = ("launch__", "sm__maximum_warps_per_active_cycle_pct")
OPCODES = re.compile(r"\b(LDS|STS|LDG|STG|LD|ST|BAR)(\.[A-Z0-9.]+)?\b")


def _ncu_counters():
    spec = importlib.util.spec_from_file_location("ncu_counters", REPO / "benchmarks" / "ncu_counters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _dims(value) -> str:
    value = tuple(value) + (1,) * (3 - len(value))
    return "(" + ", ".join(str(int(v)) for v in value) + ")"


def sass_summary(sass: str) -> dict:
    """Opcode counts of the memory instructions, and those lines (without addresses/encodings)."""
    lines = []
    counts: Counter = Counter()
    for line in sass.splitlines():
        text = re.sub(r"/\*.*?\*/", "", line).strip().rstrip(";").strip()
        match = OPCODES.search(text)
        if match and not text.startswith("."):
            counts[match.group(0)] += 1
            lines.append(text)
    return {"opcodes": dict(sorted(counts.items())), "lines": lines[:80]}


def _one(value):
    """A dispatcher with one specialization answers a value; with several, a dict by signature."""
    if isinstance(value, dict):
        values = list(value.values())
        return values[0] if len(values) == 1 else {str(key): v for key, v in value.items()}
    return value


def launch(manifest: Path) -> int:
    """Launch each case once (ncu profiles these), then read resources and SASS (no launches)."""
    os.environ["GPU_LESSONS_MODE"] = "gpu"
    import numpy as np
    from numba import cuda

    from gpu_lessons.device import device_info
    from gpu_lessons.lessons import bank_conflicts as lesson

    launches, kernels, wrong = [], {}, []
    for case in lesson.ncu_cases():
        args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case["args"]]
        case["kernel"][case["grid"], case["block"]](*args)
        cuda.synchronize()
        result = [a for a in args if hasattr(a, "copy_to_host")][-1].copy_to_host()
        if not np.array_equal(result.reshape(-1), np.asarray(case["expected"]).reshape(-1)):
            wrong.append(case["name"])
        function = case["kernel"].py_func.__name__
        launches.append({"case": case["name"], "function": function, "grid": _dims(case["grid"]),
                         "block": _dims(case["block"])})
        kernels[function] = case["kernel"]
    resources, sass = {}, {}
    for function, kernel in kernels.items():
        resources[function] = {"registers_per_thread": _one(kernel.get_regs_per_thread()),
                               "shared_bytes_per_block": _one(kernel.get_shared_mem_per_block()),
                               "local_bytes_per_thread": _one(kernel.get_local_mem_per_thread())}
        try:
            text = _one(kernel.inspect_sass())
            sass[function] = sass_summary(text)
            (manifest.parent / "sass").mkdir(exist_ok=True)
            (manifest.parent / "sass" / f"{function}.sass").write_text(text)
        except Exception as error:  # noqa: BLE001 - nvdisasm missing: record why
            sass[function] = {"error": str(error)}
    manifest.write_text(json.dumps({"launches": launches, "device": device_info().as_dict(),
                                    "wrong_results": wrong, "resources": resources, "sass": sass}, indent=1))
    print(f"launched {len(launches)} cases; wrong results: {wrong or 'none'}", file=sys.stderr)
    return 0


def record(out: Path, ncu: str) -> int:
    nc = _ncu_counters()
    ncu_path = shutil.which(ncu)
    if ncu_path is None:
        print(f"{ncu!r} is not on the PATH", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    metrics = COUNTERS
    manifest = out / "launches.json"
    base = [ncu_path, "--target-processes", "all", "--clock-control", "none", "--csv", "--page", "raw",
            "--print-units", "base", "--print-kernel-base", "mangled", "--metrics", ",".join(metrics)]
    launch_command = [sys.executable, str(Path(__file__).resolve()), "launch", "--manifest", str(manifest)]
    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    attempts = [("with sections " + ", ".join(SECTIONS), [*base, *sections, *launch_command]),
                ("counters only", [*base, *launch_command])]
    for label, command in attempts:  # an unknown section fails the whole run: then try without
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        if result.returncode == 0 and manifest.exists():
            break
        print(f"ncu failed ({result.returncode}), {label}:\n" + "\n".join(result.stderr.splitlines()[-30:]),
              file=sys.stderr)
    (out / "bank_conflicts_ncu_raw.csv").write_text(result.stdout)
    (out / "bank_conflicts_ncu_stderr.txt").write_text(result.stderr)
    if result.returncode != 0 or not manifest.exists():
        return 1
    launched = json.loads(manifest.read_text())
    records = nc.parse_ncu_csv(result.stdout)
    rows = nc.match_launches(records, launched["launches"], metrics)
    for record, case in zip(records, launched["launches"], strict=True):
        for column, value in record.items():
            if column.startswith(OCCUPANCY_PREFIXES):
                try:
                    number = nc.number(value)
                except nc.RecordError:
                    continue
                rows.append({"case": case["case"], "kernel": case["function"], "grid": case["grid"],
                             "block": case["block"], "metric": column, "value": number})
    provenance = {"source": "ncu", "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "ncu": nc._ncu_version(ncu_path), "device": launched["device"],
        "git_revision": os.environ.get("GPU_LESSONS_GIT_REVISION", "unknown"), "metrics": metrics,
        "wrong_results": launched["wrong_results"]}
    payload = {"provenance": provenance, "ncu": rows, "resources": launched["resources"],
               "sass": launched["sass"]}
    (out / OUTPUT).write_text(json.dumps(payload, indent=1) + "\n")
    manifest.unlink()
    print(f"wrote {out / OUTPUT}: {len(rows)} counter rows", file=sys.stderr)
    return 0


def record_dry(out: Path) -> int:
    """No GPU: the tracer's counts in place of ncu's (for trying the lesson's readers); marked as such."""
    os.environ["GPU_LESSONS_MODE"] = "sim"
    from gpu_lessons.device import device_info
    from gpu_lessons.lessons import bank_conflicts as lesson
    from gpu_lessons.sim.trace import trace

    rows, resources = [], {}
    for case in lesson.ncu_cases():
        totals = trace(case["kernel"], case["grid"], case["block"], *case["args"]).totals
        function = case["kernel"].py_func.__name__
        for metric in COUNTERS:
            rows.append({"case": case["name"], "kernel": function, "grid": _dims(case["grid"]),
                         "block": _dims(case["block"]), "metric": metric, "value": totals[metric]})
        resources[function] = {"registers_per_thread": None, "shared_bytes_per_block": None,
                               "local_bytes_per_thread": None}
    provenance = {"source": "dry-run: the simulator's tracer, no ncu", "date_utc": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), "ncu": "no ncu (dry run)",
        "device": device_info().as_dict(), "metrics": COUNTERS, "wrong_results": []}
    out.mkdir(parents=True, exist_ok=True)
    payload = {"provenance": provenance, "ncu": rows, "resources": resources, "sass": {}}
    (out / OUTPUT).write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {out / OUTPUT} (dry run)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--ncu", default="ncu")
    rec.add_argument("--dry-run", action="store_true", help="no GPU: the tracer's counts, marked as such")
    run = commands.add_parser("launch")
    run.add_argument("--manifest", type=Path, required=True)
    options = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    if options.command == "launch":
        return launch(options.manifest)
    if options.dry_run:
        return record_dry(options.out)
    return record(options.out, options.ncu)


if __name__ == "__main__":
    sys.exit(main())
