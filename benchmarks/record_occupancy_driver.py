"""The occupancy calculator against the driver, for every compiled kernel of the package (run on a GPU).

    GPU_LESSONS_MODE=gpu python benchmarks/record_occupancy_driver.py --out DIR [pytest args...]

Runs the kernel tests in GPU mode in this process (which compiles the package's kernels; their result
is the GPU-mode test run), then, for every compiled kernel and a sweep of block sizes and dynamic
shared-memory sizes (edges included: partial warps, one allocation unit past a boundary, past the
plain and the opt-in per-block limits), asks the driver (cuOccupancyMaxActiveBlocksPerMultiprocessor)
and gpu_lessons.occupancy twice: first with the kernel's dynamic shared-memory limit at a plain
kernel's value (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 48 KiB - static: what a kernel has
until it opts in; set explicitly, since the tests may have opted some kernels in), against
occupancy(..., opt_in=False); then with the attribute raised to the GPU's opt-in maximum, against
occupancy(..., opt_in=True). Writes DIR/occupancy_driver.csv (one row per case, both answers) and
DIR/occupancy_driver.json (the SM limits and a summary); tests/test_occupancy_driver.py holds the
recorded table to the calculator, both ways, on the simulator.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import pkgutil
import re
import sys
import time
from pathlib import Path

BLOCKS = (1, 32, 48, 64, 96, 128, 160, 192, 224, 256, 288, 320, 384, 448, 512, 544, 640, 672, 768, 800,
          896, 992, 1024)


def shared_sizes(limits, static: int) -> list[int]:
    """Dynamic shared bytes to ask about: both per-block limits (plain and opt-in) and one byte past
    each, where two blocks stop fitting, and a few in between."""
    plain, optin = limits.shared_per_block - static, limits.shared_per_block_optin - static
    two = limits.shared_per_sm // 2 // limits.shared_allocation_unit * limits.shared_allocation_unit
    sizes = {0, 1, 1000, 8192, 48 * 1024 - 1024 - static, plain, plain + 1, 65543, 100_000,
             two - limits.reserved_shared_per_block - static,
             two - limits.reserved_shared_per_block - static + 1,
             optin, optin + 1}
    return sorted(s for s in sizes if s >= 0)


def short_signature(signature) -> str:
    """(Array(float32, 1, 'C', False, aligned=True), int64) -> (float32[1d], int64)."""
    return re.sub(r"Array\((\w+), (\d+), '\w+'[^)]*\)", r"\1[\2d]", str(signature))


def dispatchers():
    """Every numba kernel in gpu_lessons' kernel and exercise modules, with its overloads (device
    functions are no launch: they have no occupancy of their own)."""
    from numba.cuda.dispatcher import CUDADispatcher

    import gpu_lessons.exercises
    import gpu_lessons.kernels
    from gpu_lessons.kernels import littles_law

    found = {}
    for package in (gpu_lessons.kernels, gpu_lessons.exercises):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, value in vars(module).items():
                if isinstance(value, CUDADispatcher) and not value.targetoptions.get("device"):
                    found[f"{info.name}.{name}"] = value
    for name, kernel in littles_law.GENERATED.items():
        found[f"littles_law.{name}"] = kernel
    return found


WAYS = {False: "", True: "_opt_in"}  # opt_in -> suffix of the CSV columns


def agrees(mine: str, driver: str) -> bool:
    """The calculator's refusal (over the opt-in limit: no kernel may ask that much) matches the
    driver's 0 or error."""
    return mine == driver or (mine == "refused" and (driver == "0" or driver.startswith("error")))


def compare(out: Path, verbose: bool = True, about: dict | None = None) -> int:
    """Driver vs calculator for every compiled kernel, without and with the opt-in; writes the table
    and summary (with ``about``: provenance); returns the disagreements (both ways together)."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import binding, driver

    from gpu_lessons import occupancy as occ
    from gpu_lessons.checks import InputError

    out.mkdir(parents=True, exist_ok=True)
    limits = occ.sm_limits()
    ctx = cuda.current_context()
    attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    rows, skipped, found, plain_before = [], [], {}, 0
    for name, kernel in dispatchers().items():
        if not kernel.overloads:
            skipped.append(name)
            continue
        for signature, overload in kernel.overloads.items():
            cufunc = overload._codelibrary.get_cufunc()
            regs, static = int(overload.regs_per_thread), int(overload.shared_mem_per_block)
            local, most = int(overload.local_mem_per_thread), int(overload.max_threads_per_block)
            base = {"kernel": name, "signature": short_signature(signature), "registers": regs,
                    "static_shared": static, "local_bytes": local, "max_threads": most}
            try:  # the limit the kernel had when the comparison began (the tests may have raised it)
                before = int(driver.cuKernelGetAttribute(attribute, cufunc.handle, cufunc.device.id))
            except Exception as error:  # noqa: BLE001 - a record of what was there, not needed
                before = f"error {type(error).__name__}"
            found[f"{name} {base['signature']}"] = before
            if before == limits.shared_per_block - static:
                plain_before += 1
            cases = {(block, dynamic): dict(base, block=block, dynamic_shared=dynamic)
                     for block in BLOCKS for dynamic in shared_sizes(limits, static)}
            for opt_in, suffix in WAYS.items():
                limit = (limits.shared_per_block_optin if opt_in else limits.shared_per_block) - static
                driver.cuKernelSetAttribute(attribute, limit, cufunc.handle, cufunc.device.id)
                for (block, dynamic), row in cases.items():
                    try:
                        got = ctx.get_active_blocks_per_multiprocessor(cufunc, block, dynamic)
                        got = str(int(got[1] if isinstance(got, tuple) else got))
                    except Exception as error:  # noqa: BLE001 - the driver's refusal is an answer too
                        got = f"error {type(error).__name__}"
                    try:
                        calc = occ.occupancy(block, regs, static + dynamic, limits, opt_in=opt_in)
                        mine, limiter = str(calc.blocks_per_sm), calc.limiter
                    except InputError as error:
                        mine, limiter = "refused", str(error).split(":")[0][:60]
                    row.update({f"driver{suffix}": got, f"calculator{suffix}": mine,
                                f"limiter{suffix}": limiter, f"agree{suffix}": agrees(mine, got)})
            rows += cases.values()
    with open(out / "occupancy_driver.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    bad = {suffix: [r for r in rows if not r[f"agree{suffix}"]] for suffix in WAYS.values()}
    statics = {f"{r['kernel']} {r['signature']}": r["static_shared"] for r in rows}
    summary = {"sm_limits": limits.as_dict(), **(about or {}), "cases": len(rows),
               "disagreements": len(bad[""]), "disagreements_opt_in": len(bad["_opt_in"]),
               "kernels": len(statics), "not_compiled": skipped,
               # each kernel's dynamic limit before the comparison set it: 48 KiB - static unless opted in
               "dynamic_limit_before_plain": plain_before,
               "dynamic_limit_before_other": {key: value for key, value in found.items()
                                              if value != limits.shared_per_block - statics[key]}}
    (out / "occupancy_driver.json").write_text(json.dumps(summary, indent=2) + "\n")
    if verbose:
        print(json.dumps({k: v for k, v in summary.items() if k != "sm_limits"}))
        for suffix, wrong in bad.items():
            for r in wrong[:15]:
                print(f"DISAGREE{suffix or ' (plain)'}", r)
    return len(bad[""]) + len(bad["_opt_in"])


class Deadline:
    """A pytest plugin: no test starts after ``seconds`` (the comparison still runs, on the kernels
    compiled so far)."""

    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.time() + seconds
        self.stopped = False

    def pytest_runtest_teardown(self, item):
        if self.end is not None and time.time() > self.end:
            item.session.shouldstop = "the test time budget is spent"
            self.stopped = True


def provenance(status: int, stopped: bool, pytest_args: list[str]) -> dict:
    """Where and when: the GPU, versions, date, git revision (GPU_LESSONS_GIT_REVISION on a copy
    without .git), and how the GPU-mode test run that compiled the kernels ended."""
    from datetime import datetime, timezone

    from gpu_lessons.device import device_info

    info = device_info()
    return {"gpu": info.name, "driver": info.driver, "cuda_runtime": info.cuda_runtime,
            "numba_cuda": info.numba_cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "git_revision": os.environ.get("GPU_LESSONS_GIT_REVISION", "unknown"),
            "tests": {"args": pytest_args, "exit_status": status, "stopped_by_budget": stopped}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--test-budget", type=float, default=None,
                        help="seconds after which no further test starts")
    args, pytest_args = parser.parse_known_args()
    import pytest

    started = time.time()
    deadline = Deadline(args.test_budget)
    status = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *pytest_args], plugins=[deadline])
    print(f"pytest (GPU mode) exit status {int(status)} in {time.time() - started:.1f}s"
          + (" (stopped: test budget spent)" if deadline.stopped else ""))
    return 1 if compare(Path(args.out), about=provenance(int(status), deadline.stopped, pytest_args)) else 0


if __name__ == "__main__":
    sys.exit(main())
