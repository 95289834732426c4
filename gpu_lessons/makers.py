"""Who makes each committed file under ``data/<gpu>/``: exactly one command per file.

``MAKERS`` lists, for every file a recording may hold, the one command that re-makes it on a GPU.
Files whose maker was a probe (a one-off GPU script that answered a design question and was then
retired) stay with their provenance; ``answered`` says what they settled. ``tests/test_makers.py``
holds every committed data file to exactly one maker, and the README's table to ``markdown()``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from .lessons import EXPERIMENTS


@dataclass(frozen=True)
class Maker:
    command: str  # run on a GPU, from the repository root
    files: tuple[str, ...]  # patterns under data/<gpu>/
    what: str
    answered: str | None = None  # a retired probe: the question its data settled


def _evidence_recorded(name: str) -> bool:
    """Whether any GPU's recording of this lesson has an evidence file (one is written only when the run
    had facts, kernels or counters): the table lists only files that exist."""
    from .results import DEFAULT_DATA_ROOT

    return any(DEFAULT_DATA_ROOT.glob(f"*/{name}.evidence.json"))


def _lesson_maker(module) -> Maker:
    ncu = " [--ncu or --ncu-only]" if hasattr(module, "ncu_cases") else ""
    name = module.NAME
    evidence = (f"{name}.evidence.json",) if _evidence_recorded(name) else ()
    files = (f"{name}.csv", f"{name}.meta.json", *evidence)
    what = "the measured roof every lesson is drawn against" if name == "ceilings" else module.TITLE
    return Maker(f"gpu-lessons record {name}{ncu}", files, what)


RECORDERS = (
    Maker("python benchmarks/record_warp_primitives.py --out data/<gpu>/checks",
          ("checks/warp_primitives.npz", "checks/warp_primitives.json"),
          "warp primitives' outputs on the GPU: the simulator's shuffles and votes are held to them "
          "bit for bit"),
    Maker("python benchmarks/record_ncu_counters.py --out data/<gpu>/checks",
          ("checks/ncu_counters.csv", "checks/ncu_counters.json"),
          "Nsight Compute's request, sector and wavefront counts: the simulator's traffic counter is "
          "held to them"),
    Maker("python benchmarks/record_ptx_primitives.py --out data/<gpu>/checks",
          ("checks/ptx_primitives.npz", "checks/ptx_primitives.json"),
          "mma.sync, cvt.rna.tf32 and cp.async outputs on the GPU: the simulator's PTX semantics are held "
          "to them"),
    Maker("python benchmarks/record_occupancy_driver.py --out data/<gpu>/checks",
          ("checks/occupancy_driver.csv", "checks/occupancy_driver.json"),
          "the driver's resident blocks per SM for every kernel: the occupancy calculator is held to them"),
)

RETIRED_PROBES = (
    Maker("benchmarks/tensor_cores_gpu.py (retired; git history; gpu-lessons record tensor_cores re-makes "
          "what it measured)",
          ("probes/tensor_cores.csv", "probes/tensor_cores.meta.json",
           "probes/tensor_cores_ncu.csv", "probes/tensor_cores_ncu.meta.json"),
          "lesson 7's first GPU run: TF32 mma.sync and cp.async GEMMs against cuBLAS FP32 and TF32, with ncu "
          "counters (converted into tensor_cores.* by tools/convert_tensor_cores_probe.py)",
          answered="Numba's mma.sync TF32 GEMM reaches 2.2x cuBLAS SGEMM at 4096^3 (113.6 TFLOP/s); a "
                   "cp.async pipeline does not speed up lesson 6's SIMT kernel"),
    Maker("benchmarks/bench_spin_check.py (retired; git history)",
          ("probes/bench_spin_check.json", "probes/bench_spin_check.meta.json"),
          "how long the spin before each timed launch lasts, old and new",
          answered="cuda.nanosleep may end early and let numba's launch into a timing: bench.measure's spin "
                   "waits on %globaltimer"),
    Maker("benchmarks/gemm_probe.py (retired; git history)",
          ("probes/gemm_probe.csv", "probes/gemm_probe.meta.json", "probes/gemm_big_tiles.csv",
           "probes/gemm_big_tiles.meta.json", "probes/gemm_big_tiles_old_spin.csv",
           "probes/gemm_big_tiles_old_spin.meta.json"),
          "every GEMM candidate kernel checked and timed against cuBLAS",
          answered="which steps and tiles lesson 6 teaches (warp tiles and launch bounds did not pay; "
                   "128x256 tiles with 8x16 per thread did)"),
    Maker("benchmarks/littles_law_copy_probe.py (retired; git history)",
          ("probes/littles_law_copy_probe.csv", "probes/littles_law_copy_probe.meta.json"),
          "copies at 16 and 8 warps per SM: block sizes, a software-pipelined warp queue",
          answered="a copy within 3% of cupy.copyto at 8 warps/SM needs loads in flight across chunks "
                   "(lesson 2's copy_queue)"),
)


def makers() -> list[Maker]:
    return [*(_lesson_maker(module) for module in EXPERIMENTS.values()), *RECORDERS, *RETIRED_PROBES]


def claims(relative: str) -> list[Maker]:
    """The makers whose patterns match a path relative to a GPU folder (``checks/x.csv``)."""
    return [m for m in makers() if any(fnmatch.fnmatchcase(relative, p) for p in m.files)]


def committed_files(data: Path) -> list[tuple[str, str]]:
    """(gpu, path relative to its folder) for every file under data/<gpu>/ (README.md is not data)."""
    found = []
    for gpu in sorted(p for p in data.iterdir() if p.is_dir()):
        found += [(gpu.name, path.relative_to(gpu).as_posix()) for path in sorted(gpu.rglob("*"))
                  if path.is_file()]
    return found


def markdown() -> str:
    """The README's table: each file (pattern) under data/<gpu>/, the command that makes it, what it is."""
    rows = ["| file under `data/<gpu>/` | made by | what it holds |", "| --- | --- | --- |"]
    for maker in makers():
        files = "<br>".join(f"`{f}`" for f in maker.files)
        what = maker.what + (f"; answered: {maker.answered}" if maker.answered else "")
        rows.append(f"| {files} | `{maker.command}` | {what} |")
    return "\n".join(rows)
