"""Nsight Compute counters for recordings: launch each case once under ``ncu``, match, keep.

A lesson that records counters declares ``NCU_METRICS`` and ``ncu_cases()`` (a list of ``Case``:
a name, the kernel's Python function name, and a ``launch()`` that makes exactly one kernel launch).
``gpu-lessons record <lesson> --ncu`` calls ``profile``: it runs ``ncu --csv --page raw`` over a fresh
process that launches every case once (``python -m gpu_lessons.ncu_launch <lesson>``), pairs the
profiled launches with the cases in launch order (checking each kernel name), and returns the
evidence block: per case, the kernel, grid, block and metrics, with the run's provenance as a source.

Without a GPU, ``fake_ncu_csv`` dresses counts (the simulator tracer's) up as ncu's output, so the
parsing and matching are tested in CI.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from numba import cuda

from .device import device_info
from .provenance import git_revision

NCU_FLAGS = ("--target-processes", "all", "--clock-control", "none", "--csv", "--page", "raw",
             "--print-units", "base", "--print-kernel-base", "mangled")


class NcuError(RuntimeError):
    """The ncu run or its output is not what a recording needs; the message says what."""


@dataclass(frozen=True)
class Case:
    """One profiled launch: ``launch()`` makes exactly one launch of the kernel named ``kernel``."""

    name: str
    kernel: str  # the kernel's Python function name: it must appear in the name ncu reports
    launch: Callable[[], None]
    check: Callable[[], bool] | None = None  # after the launch: was the result right?


# ---------------------------------------------------------------------------------------------
# The profiled process


def launch_all(cases: list[Case], manifest: Path) -> int:
    """Launch each case once (this runs under ncu) and write the launch order to ``manifest``."""
    launches, wrong = [], []
    for case in cases:
        case.launch()
        cuda.synchronize()
        if case.check is not None and not case.check():
            wrong.append(case.name)
        launches.append({"case": case.name, "kernel": case.kernel})
        print(f"launched {case.name}", file=sys.stderr)
    manifest.write_text(json.dumps({"launches": launches, "device": device_info().as_dict(),
                                    "wrong_results": wrong}, indent=1))
    if wrong:
        print(f"WRONG RESULTS: {wrong}", file=sys.stderr)
    return 1 if wrong else 0


# ---------------------------------------------------------------------------------------------
# Parsing ncu's CSV


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` output: one dict per profiled launch, values as text.

    Lines that are not CSV (``==PROF==`` messages, the application's output) are skipped; the units
    row after the header is dropped.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise NcuError('no CSV header (a line starting with "ID") in ncu\'s output')
    rows = list(csv.reader(line for line in lines[start:] if line.startswith('"')))
    header = rows[0]
    records = [dict(zip(header, row, strict=False)) for row in rows[1:]]
    return [record for record in records if record.get("ID", "").strip().isdigit()]


def number(text: str) -> int | float:
    cleaned = text.replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise NcuError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


def dims(text: str) -> list[int]:
    """'(256, 1, 1)' -> [256, 1, 1]."""
    return [int(v) for v in text.strip().strip("()[]").replace(" ", "").split(",") if v]


def kernel_name(record: dict) -> str:
    for column in ("Kernel Name", "Function Name", "Demangled Name", "Mangled Name"):
        if column in record:
            return record[column]
    raise NcuError(f"no kernel-name column in ncu's CSV; columns: {list(record)}")


def match_launches(records: list[dict], launches: list[dict], metrics: list[str], source: str) -> dict:
    """Pair profiled launches with cases in launch order: {case: {kernel, grid, block, metrics, source}}."""
    if len(records) != len(launches):
        names = [kernel_name(r)[:80] for r in records]
        raise NcuError(f"ncu profiled {len(records)} launches but {len(launches)} cases were launched; "
                       f"profiled kernels: {names}")
    missing = [m for m in metrics if records and m not in records[0]]
    if missing:
        raise NcuError(f"ncu's CSV lacks metrics {missing}; is the name valid on this GPU? "
                       "(ncu --query-metrics lists them)")
    cases = {}
    for position, (record, launch) in enumerate(zip(records, launches, strict=True)):
        name = kernel_name(record)
        if launch["kernel"] not in name:
            raise NcuError(f"launch {position}: expected kernel {launch['kernel']} for case "
                           f"{launch['case']}, ncu profiled {name[:120]}")
        entry = {"kernel": launch["kernel"], "source": source,
                 "metrics": {metric: number(record[metric]) for metric in metrics}}
        for column, key in (("Grid Size", "grid"), ("Block Size", "block")):
            if column in record:
                entry[key] = dims(record[column])
        cases[launch["case"]] = entry
    return cases


# ---------------------------------------------------------------------------------------------
# Running ncu


def _version(ncu: str) -> str:
    try:
        done = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "unknown"


def _hint(stderr: str) -> str:
    if "ERR_NVGPUCTRPERM" in stderr:
        return "hint: this user may not read GPU performance counters; run as root or allow it"
    if "metric" in stderr.lower() and ("not found" in stderr.lower() or "invalid" in stderr.lower()):
        return "hint: a metric name is not known to this ncu/GPU; `ncu --query-metrics` lists them"
    return ""


def profile(launcher: list[str], metrics: list[str], workdir: Path, source: str = "ncu",
            ncu: str = "ncu") -> tuple[dict, dict]:
    """Run ``ncu`` over ``python <launcher> --manifest M``; returns (ncu cases, {source: provenance}).

    ``launcher``: the arguments after ``python`` that launch every case once (``launcher(lesson)``,
    or a recorder script's ``launch``). ncu's raw output is kept in ``workdir``.
    """
    ncu_path = shutil.which(ncu)
    if ncu_path is None:
        raise NcuError(f"{ncu!r} is not on the PATH (install Nsight Compute)")
    workdir.mkdir(parents=True, exist_ok=True)
    manifest = workdir / "launches.json"
    manifest.unlink(missing_ok=True)
    command = [ncu_path, *NCU_FLAGS, "--metrics", ",".join(metrics), sys.executable, *launcher,
               "--manifest", str(manifest)]
    print("running:", " ".join(command), file=sys.stderr)
    done = subprocess.run(command, capture_output=True, text=True)
    (workdir / "ncu_raw.csv").write_text(done.stdout)
    (workdir / "ncu_stderr.txt").write_text(done.stderr)
    if done.returncode != 0 or not manifest.exists():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-25:])
        raise NcuError(f"ncu exited with status {done.returncode}"
                       f"{'' if manifest.exists() else ' and the profiled process wrote no manifest'}; "
                       f"last lines:\n{tail}\n{_hint(done.stderr)}\n(full output in {workdir})")
    launched = json.loads(manifest.read_text())
    cases = match_launches(parse_ncu_csv(done.stdout), launched["launches"], metrics, source)
    provenance = {
        "tool": _version(ncu_path), "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_revision": git_revision(), "command": " ".join(["ncu", *NCU_FLAGS, "--metrics", "...",
                                                            "python", *launcher]),
        "gpu": launched["device"].get("name"),
        **{key: launched["device"].get(key) for key in ("driver", "numba_cuda")},
    }
    return cases, {source: provenance}


def fake_ncu_csv(launches: list[dict], metrics: list[str], values: list[dict]) -> str:
    """Counts in the shape of ``ncu --csv --page raw --print-units base`` output (for dry runs)."""
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC", *metrics]
    buffer = io.StringIO()
    buffer.write("==PROF== Connected to process 1 (python)\n")
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(["", "", "", "", "", "", "", "", "", "", "", *(["inst"] * len(metrics))])
    for index, (launch, counts) in enumerate(zip(launches, values, strict=True)):
        function = launch["kernel"]
        mangled = f"_ZN6cudapy11gpu_lessons{len(function)}{function}E"
        grid, block = launch.get("grid", [1, 1, 1]), launch.get("block", [1, 1, 1])
        writer.writerow([index, 1, "python", "localhost", mangled, 1, 7,
                         "(" + ", ".join(map(str, block)) + ")", "(" + ", ".join(map(str, grid)) + ")",
                         0, "0.0", *(f"{counts[m]:,}" for m in metrics)])
    buffer.write("==PROF== Disconnected from process 1\n")
    return buffer.getvalue()


LAUNCHER = "gpu_lessons.ncu_launch"  # the profiled process's module (it imports the lessons; this does not)


def launcher(lesson: str, cases: list[str] | None = None) -> list[str]:
    """The arguments after ``python`` that launch a lesson's ncu cases once (``cases``: only these)."""
    return ["-m", LAUNCHER, lesson, *(f"--case={name}" for name in cases or ())]
