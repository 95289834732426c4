"""Nsight Compute counters for the coalescing and bank-conflict kernels, to check the tracer against.

On a machine with an NVIDIA GPU and ``ncu`` on the PATH:

    python benchmarks/record_ncu_counters.py --out data/nvidia-h200/checks

runs ``ncu`` over this script's ``launch`` subcommand (every case below launched exactly once,
nothing else; ``gpu_lessons.ncu`` pairs each profiled launch with its case and checks the kernel
name), and writes

    DIR/ncu_counters.csv    case, kernel, grid, block, metric, value (one row per metric)
    DIR/ncu_counters.json   provenance: GPU, driver, numba-cuda, ncu version, date, command, revision

``--dry-run`` needs no GPU: the same cases through the simulator's tracer, dressed up as ncu's CSV
and fed through the same parsing and matching. ``list`` prints the cases.
tests/test_sim_trace.py compares the tracer with the recording.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # gpu_lessons, when run as a script from anywhere

from gpu_lessons import ncu  # noqa: E402  (after the path: this file runs as a script)

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


def ncu_case(case: Case) -> ncu.Case:
    """The case as one profiled launch: its kernel on device copies of its inputs, checked after."""
    from numba import cuda

    args = case.make_args()
    device_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    out = [a for a in device_args if hasattr(a, "copy_to_host")][-1]
    return ncu.Case(case.name, case.function, lambda: case.kernel[case.grid, case.block](*device_args),
                    check=lambda: np.array_equal(out.copy_to_host(), case.expected(args)))


def launch_cases(cases: list[Case], manifest: Path) -> int:
    """Launch each case once on the GPU (this runs under ncu); the launch order goes to ``manifest``."""
    import gpu_lessons

    if gpu_lessons.SIMULATED:
        raise SystemExit("launch: needs a GPU (this runs under ncu)")
    return ncu.launch_all([ncu_case(case) for case in cases], manifest)


# -- the recording: rows of the CSV -----------------------------------------------------------------


def rows_of(counters: dict) -> list[dict]:
    """ncu.match_launches' cases as the CSV's long rows."""
    return [{"case": case, "kernel": entry["kernel"], "grid": dims(entry.get("grid", ())),
             "block": dims(entry.get("block", ())), "metric": metric, "value": value}
            for case, entry in counters.items() for metric, value in entry["metrics"].items()]


def write_outputs(out: Path, rows: list[dict], provenance: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / CSV_NAME, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    (out / PROVENANCE_NAME).write_text(json.dumps(provenance, indent=1) + "\n")


def read_counters(path: Path) -> dict[str, dict]:
    """ncu_counters.csv -> {case: {"grid", "block", "kernel", "metrics": {metric: value}}}."""
    cases: dict[str, dict] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            entry = cases.setdefault(row["case"], {"kernel": row["kernel"], "grid": parse_dims(row["grid"]),
                                                   "block": parse_dims(row["block"]), "metrics": {}})
            entry["metrics"][row["metric"]] = ncu.number(row["value"])
    return cases


def _launches(cases: list[Case]) -> list[dict]:
    return [{"case": c.name, "kernel": c.function, "grid": list(c.grid), "block": list(c.block)}
            for c in cases]


def record_with_ncu(cases: list[Case], out: Path, ncu_command: str, patterns: list[str] | None,
                    metrics: list[str]) -> None:
    launcher = [str(Path(__file__).resolve()), "launch", *(f"--case={p}" for p in patterns or [])]
    counters, sources = ncu.profile(launcher, metrics, out, ncu=ncu_command)
    provenance = {"source": "ncu", **sources["ncu"], "metrics": metrics}
    write_outputs(out, rows_of(counters), provenance)


def trace_case(case: Case) -> dict:
    """The tracer's totals for one case (simulator mode)."""
    from gpu_lessons.sim.trace import trace

    return trace(case.kernel, case.grid, case.block, *case.make_args()).totals


def record_dry(cases: list[Case], out: Path, force: bool) -> None:
    existing = out / PROVENANCE_NAME
    if existing.exists() and json.loads(existing.read_text()).get("source") == "ncu" and not force:
        raise ncu.NcuError(f"{out} holds a real ncu recording; a dry run will not overwrite it (--force)")
    if "gpu_lessons" not in sys.modules:  # a fresh process needs no GPU for a dry run
        os.environ.setdefault("GPU_LESSONS_MODE", "sim")
    totals = []
    for case in cases:
        totals.append(trace_case(case))
        print(f"traced {case.name}", file=sys.stderr)
    raw = ncu.fake_ncu_csv(_launches(cases), METRICS, totals)
    counters = ncu.match_launches(ncu.parse_ncu_csv(raw), _launches(cases), METRICS, "dry-run")
    provenance = {"source": "dry-run: the simulator's tracer, no ncu", "metrics": METRICS}
    write_outputs(out, rows_of(counters), provenance)
    (out / RAW_NAME).write_text(raw)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    launch = commands.add_parser("launch", help="(run under ncu) launch each case once")
    launch.add_argument("--manifest", type=Path, required=True)
    launch.add_argument("--case", action="append", help="only cases matching this glob (repeatable)")
    commands.add_parser("list", help="print the cases")
    parser.add_argument("--out", type=Path, help="folder for ncu_counters.csv/.json")
    parser.add_argument("--dry-run", action="store_true", help="no GPU, no ncu: the simulator's tracer")
    parser.add_argument("--ncu", default="ncu", help="the ncu executable (default: ncu on the PATH)")
    parser.add_argument("--force", action="store_true", help="let a dry run overwrite a real recording")
    parser.add_argument("--case", action="append", help="only cases matching this glob (repeatable)")
    parser.add_argument("--metrics", default=",".join(METRICS),
                        help="comma-separated ncu metrics (default: the tracer's; on GPUs that lack "
                             "smsp__inst_executed_op_*, use smsp__sass_inst_executed_op_*)")
    options = parser.parse_args(argv)
    try:
        if options.command == "list":
            for case in CASES:
                print(f"{case.name:<36} {case.function:<24} grid={dims(case.grid)} block={dims(case.block)}")
            return 0
        cases = select(options.case)
        if options.command == "launch":
            return launch_cases(cases, options.manifest)
        if options.out is None:
            parser.error("--out is required to record")
        if options.dry_run:
            record_dry(cases, options.out, options.force)
        else:
            metrics = [m.strip() for m in options.metrics.split(",") if m.strip()]
            record_with_ncu(cases, options.out, options.ncu, options.case, metrics)
    except ncu.NcuError as error:
        print(f"record_ncu_counters: FAILED: {error}", file=sys.stderr)
        return 1
    print(f"wrote {options.out / CSV_NAME} ({len(cases)} cases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
