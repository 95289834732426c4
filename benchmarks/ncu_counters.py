"""Nsight Compute counters for the coalescing and bank-conflict kernels, to check the tracer against.

On a machine with an NVIDIA GPU and ``ncu`` on the PATH:

    python benchmarks/ncu_counters.py record --out data/nvidia-h200

runs itself under ``ncu --clock-control none --csv --page raw --metrics ...`` (the ``launch``
subcommand: every case below launched exactly once, nothing else), maps each profiled launch to
its case in launch order (checking that the mangled kernel name contains the case's Python
function name and that grid and block agree), and writes

    DIR/ncu_counters.csv    case, kernel, grid, block, metric, value (one row per metric)
    DIR/ncu_counters.json   provenance: GPU, driver, numba-cuda, ncu version, date, command
    DIR/ncu_raw.csv         ncu's own output, for when something looks wrong

Without a GPU, ``record --dry-run`` runs the same cases through the simulator's tracer, dresses
the counts up as ncu's CSV and feeds them through the same parsing and writing (everything but the
ncu call). ``list`` prints the cases. tests/test_sim_trace.py compares the tracer with a recording.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import fnmatch
import io
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CSV_NAME, PROVENANCE_NAME, RAW_NAME = "ncu_counters.csv", "ncu_counters.json", "ncu_raw.csv"
CSV_FIELDS = ["case", "kernel", "grid", "block", "metric", "value"]

METRICS = [
    f"smsp__inst_executed_op_global_{op}.sum" for op in ("ld", "st")
] + [
    f"l1tex__t_{kind}_pipe_lsu_mem_global_op_{op}.sum"
    for kind in ("requests", "sectors")
    for op in ("ld", "st")
] + [
    f"smsp__inst_executed_op_shared_{op}.sum" for op in ("ld", "st")
] + [
    f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum" for op in ("ld", "st")
] + [
    f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum" for op in ("ld", "st")
]



def tracer_metric(name: str) -> str:
    """The tracer's name for a recorded metric: ``smsp__sass_inst_executed_*`` (what newer GPUs
    call the instruction counters, pass them with --metrics) counts the same instructions."""
    return name.replace("smsp__sass_inst_executed_", "smsp__inst_executed_")


# Small launches: the counters are exact at any size, and tests/test_sim_trace.py simulates every
# case with the same launch config (one Python thread per CUDA thread).
N = 1024  # elements of the 1-D cases: 4 blocks of 256 threads
FIELDS = 4
MATRIX = (64, 64)
TAIL = 1000  # 31 full warps and one of 8 lanes: how partial warps count
TAIL_MATRIX = (45, 70)  # partial tiles: warps with no active lane skip (or predicate off) the access


@dataclass(frozen=True)
class Case:
    """One kernel launch: the kernel (module and function name), its launch config, its inputs.

    ``make_args`` returns host arrays and scalars; ``expected`` the output NumPy predicts from them
    (a sanity check of the GPU run).
    """

    name: str
    module: str
    function: str
    grid: tuple
    block: tuple
    make_args: Callable[[], tuple]
    expected: Callable[[tuple], np.ndarray]

    @property
    def kernel(self):
        from importlib import import_module

        return getattr(import_module(f"gpu_lessons.kernels.{self.module}"), self.function)


def _random(*shape):
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


def _zeros(*shape):
    return np.zeros(shape, np.float32)


def _blocks(n: int, block: int = 256) -> tuple:
    return (-(-n // block), 1, 1)


def _strided(stride: int) -> Case:
    return Case(f"strided_copy/stride={stride}", "coalescing", "strided_copy_kernel", _blocks(N), (256, 1, 1),
                lambda: (_random(N * stride), _zeros(N), stride), lambda a: a[0][:: a[2]])


def _offset(offset: int, n: int = N, label: str = "") -> Case:
    return Case(f"offset_copy/offset={offset}{label}", "coalescing", "offset_copy_kernel", _blocks(n),
                (256, 1, 1),
                lambda: (_random(n + offset), _zeros(n), offset), lambda a: a[0][a[2]:])


def _shared(stride: int) -> Case:
    return Case(f"shared_stride/stride={stride}", "bank_conflicts", "shared_stride_kernel", _blocks(N),
                (256, 1, 1), lambda: (_random(N), _zeros(N), stride), lambda a: a[0])


def _transpose(kind: str, shape: tuple) -> Case:
    rows, cols = shape
    if kind == "naive":
        grid = (-(-cols // 32), -(-rows // 8), 1)
    else:
        grid = (-(-cols // 32), -(-rows // 32), 1)
    return Case(f"transpose_{kind}/{rows}x{cols}", "bank_conflicts", f"transpose_{kind}_kernel", grid,
                (32, 8, 1), lambda: (_random(rows, cols), _zeros(cols, rows)), lambda a: a[0].T)


CASES: list[Case] = [
    *(_strided(s) for s in (1, 2, 4, 8, 16, 32)),
    *(_offset(o) for o in range(9)),
    _offset(0, TAIL, label="/n=1000"),
    Case("aos_field/fields=4", "coalescing", "aos_field_kernel", _blocks(N), (256, 1, 1),
         lambda: (_random(N, FIELDS), _zeros(N), 1), lambda a: a[0][:, a[2]]),
    Case("soa_field/fields=4", "coalescing", "soa_field_kernel", _blocks(N), (256, 1, 1),
         lambda: (_random(FIELDS, N), _zeros(N), 1), lambda a: a[0][a[2]]),
    *(_shared(s) for s in (1, 2, 4, 8, 16, 32, 33)),
    *(_transpose(kind, MATRIX) for kind in ("naive", "tiled", "padded")),
    _transpose("padded", TAIL_MATRIX),
]

# (case, metric) -> (what the hardware reports given the tracer's count, why). Empty until a
# recording shows a difference; tests/test_sim_trace.py checks each entry holds exactly.
KNOWN_DIFFERENCES: dict[tuple[str, str], tuple[Callable[[int], int], str]] = {}


def select(patterns: list[str] | None) -> list[Case]:
    if not patterns:
        return list(CASES)
    chosen = [c for c in CASES if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
    if not chosen:
        raise SystemExit(f"no case matches {patterns}; `list` shows them")
    return chosen


def dims(value) -> str:
    return "(" + ", ".join(str(int(v)) for v in value) + ")"


def parse_dims(text: str) -> tuple:
    return tuple(int(v) for v in text.strip().strip("()[]").replace(" ", "").split(",") if v)


# -- the profiled process --------------------------------------------------------------------------


def launch_cases(cases: list[Case], manifest: Path) -> int:
    """Launch each case once on the GPU (this runs under ncu); write the launch order to ``manifest``."""
    os.environ["GPU_LESSONS_MODE"] = "gpu"
    from numba import cuda

    import gpu_lessons  # noqa: F401  (picks the mode before numba.cuda)
    from gpu_lessons.device import device_info

    launches, failures = [], []
    for case in cases:
        args = case.make_args()
        device_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel = case.kernel
        kernel[case.grid, case.block](*device_args)  # the one launch ncu profiles for this case
        cuda.synchronize()
        out = [a for a in device_args if hasattr(a, "copy_to_host")][-1].copy_to_host()
        if not np.array_equal(out, case.expected(args)):
            failures.append(case.name)
        launches.append({"case": case.name, "function": case.function, "grid": dims(case.grid),
                         "block": dims(case.block)})
        print(f"launched {case.name}", file=sys.stderr)
    manifest.write_text(json.dumps({"launches": launches, "device": device_info().as_dict(),
                                    "wrong_results": failures}, indent=1))
    if failures:
        print(f"WRONG RESULTS (counts still recorded): {failures}", file=sys.stderr)
    return 0


# -- parsing ncu's CSV -----------------------------------------------------------------------------


class RecordError(RuntimeError):
    """Something in the ncu run or its output is not what this script expects; the message says what."""


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` output: one dict per profiled launch, values as strings.

    Lines that are not CSV (``==PROF==`` messages, the application's output) are skipped; the
    units row after the header is dropped.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise RecordError("no CSV header (a line starting with \"ID\") in ncu's output")
    rows = list(csv.reader(line for line in lines[start:] if line.startswith('"')))
    header, records = rows[0], []
    for row in rows[1:]:
        record = dict(zip(header, row, strict=False))
        if record.get("ID", "").strip().isdigit():
            records.append(record)
    return records


def number(text: str) -> int | float:
    cleaned = text.replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise RecordError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


def kernel_name(record: dict) -> str:
    for column in ("Kernel Name", "Function Name", "Demangled Name", "Mangled Name"):
        if column in record:
            return record[column]
    raise RecordError(f"no kernel-name column in ncu's CSV; columns: {list(record)}")


def match_launches(records: list[dict], launches: list[dict], metrics: list[str]) -> list[dict]:
    """Pair profiled launches with cases in launch order; long-format rows for ncu_counters.csv."""
    if len(records) != len(launches):
        names = [kernel_name(r)[:80] for r in records]
        raise RecordError(f"ncu profiled {len(records)} launches but {len(launches)} cases were launched; "
                          f"profiled kernels: {names}")
    missing = [m for m in metrics if m not in records[0]] if records else []
    if missing:
        raise RecordError(f"ncu's CSV lacks metrics {missing}; is the metric name valid on this GPU? "
                          "(ncu --query-metrics lists them)")
    rows = []
    for position, (record, launch) in enumerate(zip(records, launches, strict=True)):
        name = kernel_name(record)
        if launch["function"] not in name:
            raise RecordError(f"launch {position}: expected kernel {launch['function']} for case "
                              f"{launch['case']}, ncu profiled {name[:120]}")
        for column, expected in (("Grid Size", launch["grid"]), ("Block Size", launch["block"])):
            if column in record and parse_dims(record[column]) != parse_dims(expected):
                raise RecordError(f"launch {position} ({launch['case']}): {column} {record[column]} "
                                  f"!= {expected}")
        for metric in metrics:
            rows.append({"case": launch["case"], "kernel": launch["function"], "grid": launch["grid"],
                         "block": launch["block"], "metric": metric, "value": number(record[metric])})
    return rows


def write_outputs(out: Path, rows: list[dict], provenance: dict, raw: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / CSV_NAME, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    (out / PROVENANCE_NAME).write_text(json.dumps(provenance, indent=1) + "\n")
    (out / RAW_NAME).write_text(raw)


def read_counters(path: Path) -> dict[str, dict]:
    """ncu_counters.csv -> {case: {"grid", "block", "kernel", "metrics": {metric: value}}}."""
    cases: dict[str, dict] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            entry = cases.setdefault(row["case"], {"kernel": row["kernel"], "grid": parse_dims(row["grid"]),
                                                   "block": parse_dims(row["block"]), "metrics": {}})
            entry["metrics"][row["metric"]] = number(row["value"])
    return cases


# -- record: under ncu, or dry ---------------------------------------------------------------------


def _ncu_version(ncu: str) -> str:
    try:
        result = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "unknown"


def _hint(stderr: str) -> str:
    if "ERR_NVGPUCTRPERM" in stderr:
        return ("hint: this user may not read GPU performance counters; run as root or allow it "
                "(NVreg_RestrictProfilingToAdminUsers=0)")
    if "metric" in stderr.lower() and ("not found" in stderr.lower() or "invalid" in stderr.lower()):
        return "hint: a metric name is not known to this ncu/GPU; `ncu --query-metrics` lists them"
    return ""


def record_with_ncu(cases: list[Case], out: Path, ncu: str, case_patterns: list[str] | None,
                    metrics: list[str]) -> None:
    ncu_path = shutil.which(ncu)
    if ncu_path is None:
        raise RecordError(f"{ncu!r} is not on the PATH (install Nsight Compute, or pass --ncu PATH)")
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "launches.json"
    manifest.unlink(missing_ok=True)
    command = [ncu_path, "--target-processes", "all", "--clock-control", "none", "--csv", "--page", "raw",
               "--print-units", "base", "--print-kernel-base", "mangled", "--metrics", ",".join(metrics),
               sys.executable, str(Path(__file__).resolve()), "launch", "--manifest", str(manifest)]
    for pattern in case_patterns or []:
        command += ["--case", pattern]
    print("running:", " ".join(command), file=sys.stderr)
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    (out / RAW_NAME).write_text(result.stdout)
    (out / "ncu_stderr.txt").write_text(result.stderr)
    if result.returncode != 0 or not manifest.exists():
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-25:])
        raise RecordError(f"ncu exited with status {result.returncode}"
                          f"{'' if manifest.exists() else ' and the profiled process wrote no manifest'}; "
                          f"last lines:\n{tail}\n{_hint(result.stderr)}\n(full output in {out})")
    launched = json.loads(manifest.read_text())
    rows = match_launches(parse_ncu_csv(result.stdout), launched["launches"], metrics)
    provenance = {
        "source": "ncu",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ncu": _ncu_version(ncu_path),
        "command": command,
        "device": launched["device"],
        "wrong_results": launched["wrong_results"],
        "host": platform.node(),
        "metrics": metrics,
    }
    write_outputs(out, rows, provenance, result.stdout)
    manifest.unlink(missing_ok=True)


def fake_ncu_csv(cases: list[Case], totals: list[dict]) -> str:
    """The tracer's counts in the shape of ``ncu --csv --page raw --print-units base`` output."""
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC", *METRICS]
    buffer = io.StringIO()
    buffer.write("==PROF== Connected to process 1 (python)\n")
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(["", "", "", "", "", "", "", "", "", "", "", *(["inst"] * len(METRICS))])
    for index, (case, counts) in enumerate(zip(cases, totals, strict=True)):
        module, function = case.module, case.function
        mangled = f"_ZN6cudapy11gpu_lessons7kernels{len(module)}{module}{len(function)}{function}E"
        writer.writerow([index, 1, "python", "localhost", mangled, 1, 7, dims(case.block), dims(case.grid),
                         0, "0.0", *(f"{counts[m]:,}" for m in METRICS)])
    buffer.write("==PROF== Disconnected from process 1\n")
    return buffer.getvalue()


def trace_case(case: Case) -> dict:
    """The tracer's totals for one case (simulator mode)."""
    from gpu_lessons.sim.trace import trace

    return trace(case.kernel, case.grid, case.block, *case.make_args()).totals


def record_dry(cases: list[Case], out: Path, force: bool) -> None:
    existing = out / PROVENANCE_NAME
    if existing.exists() and json.loads(existing.read_text()).get("source") == "ncu" and not force:
        raise RecordError(f"{out} holds a real ncu recording; a dry run will not overwrite it (--force)")
    if "gpu_lessons" not in sys.modules:  # a fresh process needs no GPU for a dry run
        os.environ.setdefault("GPU_LESSONS_MODE", "sim")
    import gpu_lessons  # noqa: F401  (already imported, e.g. by pytest: the tracer works in either mode)

    totals = []
    for case in cases:
        totals.append(trace_case(case))
        print(f"traced {case.name}", file=sys.stderr)
    raw = fake_ncu_csv(cases, totals)
    launches = [{"case": c.name, "function": c.function, "grid": dims(c.grid), "block": dims(c.block)}
                for c in cases]
    rows = match_launches(parse_ncu_csv(raw), launches, METRICS)
    provenance = {
        "source": "dry-run: the simulator's tracer, no ncu",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "numba_cuda": _version("numba-cuda"),
        "metrics": METRICS,
    }
    write_outputs(out, rows, provenance, raw)


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    record = commands.add_parser("record", help="profile every case with ncu (or --dry-run: the tracer)")
    record.add_argument("--out", type=Path, required=True, help="folder for ncu_counters.csv/.json")
    record.add_argument("--dry-run", action="store_true", help="no GPU, no ncu: the simulator's tracer")
    record.add_argument("--ncu", default="ncu", help="the ncu executable (default: ncu on the PATH)")
    record.add_argument("--force", action="store_true", help="let a dry run overwrite a real recording")
    record.add_argument("--metrics", default=",".join(METRICS),
                        help="comma-separated ncu metrics (default: the tracer's; on GPUs that lack "
                             "smsp__inst_executed_op_*, use smsp__sass_inst_executed_op_*)")
    launch = commands.add_parser("launch", help="(run by record, under ncu) launch each case once")
    launch.add_argument("--manifest", type=Path, required=True)
    commands.add_parser("list", help="print the cases")
    for sub in (record, launch):
        sub.add_argument("--case", action="append", help="only cases matching this glob (repeatable)")
    options = parser.parse_args(argv)

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # gpu_lessons, when run as a script
    try:
        if options.command == "list":
            for case in CASES:
                print(f"{case.name:<36} {case.function:<24} grid={dims(case.grid)} block={dims(case.block)}")
            return 0
        cases = select(options.case)
        if options.command == "launch":
            return launch_cases(cases, options.manifest)
        if options.dry_run:
            record_dry(cases, options.out, options.force)
        else:
            metrics = [m.strip() for m in options.metrics.split(",") if m.strip()]
            record_with_ncu(cases, options.out, options.ncu, options.case, metrics)
    except RecordError as error:
        print(f"ncu_counters: FAILED: {error}", file=sys.stderr)
        return 1
    print(f"wrote {options.out / CSV_NAME} ({len(cases)} cases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
