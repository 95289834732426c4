"""Lesson 7: past FP32 SIMT -- asynchronous copies (cp.async) and TF32 tensor cores (mma.sync) from Numba.

The experiment (``SECTIONS``; ``gpu-lessons record tensor_cores --ncu`` re-makes every file of it):

``gemm <shape>``  at 2048^3, 4096^3, 8192^3 and 4095x4097x1023: cuBLAS SGEMM (CuPy, TF32 off) and
    every kernel of ``VARIANTS`` timed on the same inputs -- the TF32 GEMM steps (one ``mma.sync``
    per warp from global memory -> shared tiles -> a cp.async pipeline -> 64x32 and 64x64 warp
    tiles), a visible search around the warp tile (depth, register cap, block order, no ``cvt.rna``,
    a 128x256 block), and lesson 6's FP32 SIMT kernel with and without a cp.async pipeline. Outputs
    are poisoned before timing and checked after; every result's error against float64 (16 sampled
    rows) goes to ``facts["errors"]`` and must stay within its precision's bound.
``edge shapes``   every kernel on shapes no tile divides, K = 1 and K = 0 (``facts["edge_shape_errors"]``).
``cublas tf32``   cuBLAS with TF32 (``CUPY_TF32=1``), on the same inputs. CuPy reads that variable when it
    first multiplies, so this runs in a child process started with it set (``cublas_tf32_child``); the
    child's rows and errors join this run's table and facts.
``mma ceiling``   independent ``mma.sync`` chains on registers only, at 4 to 64 warps per SM.
``kernels``       registers, shared and local memory and SASS of every kernel (``facts["tiles"]``: the
    tile each variant name meant in this run).

Inputs: per shape, a NumPy generator seeded with (``runner.SEED``, M, N, K), so that the child process
draws the same matrices. The big generated kernels compile in worker processes first (``prepare``,
``kernels.generated.compile_in_parallel``): serially they would take minutes.

Sizes are keyed by M*N*K in the table's ``size`` column (``SHAPES``); the ceiling's rows by threads,
with warps per SM as ``param``.

What a GPU cannot run is left out (``NEEDS``, ``left_out()``, ``gpu_lessons.gates``): before sm_80 every
``mma.sync`` and ``cp.async`` kernel and cuBLAS TF32 (a T4 runs cuBLAS SGEMM and lesson 6's kernel);
on sm_86/sm_89 the tiles over 99 KiB of shared memory a block (``warp_tile 4 stages``,
``warp_tile_64x64 128x256``); ceiling points over the GPU's warps per SM. ``check()``, the run and the
notebook (``load()``, ``mma_demo()``) say so in one line; the sections time the rest and keep what they
left out in ``facts["left_out"]``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numba import cuda, typeof

from .. import SIMULATED, gates
from ..bench import input_sets_needed
from ..device import device_info
from ..kernels import gemm_codegen, gemm_steps, generated, tc_codegen
from ..kernels import tensor_cores as tc
from ..kernels.util import poison
from ..ncu import Case
from ..occupancy import occupancy, recorded_limits, sm_limits
from ..plots import charts
from ..plots import tensor_cores as figs
from ..results import LessonResult, RecordingError
from ..scoreboard import Comparison
from ..sim.ptx import a_fragment, b_fragment, c_fragment, tf32_rna, tf32_truncate
from .runner import SEED, Run, Section, check_row, cupy_or_none

NAME = "tensor_cores"
TITLE = "Past FP32 SIMT: asynchronous copies and TF32 tensor cores"
NOTEBOOK = "07_tensor_cores.ipynb"
SUMMARY = ("TF32 mma.sync from Numba: the fragment layout, TF32's error, the mma.sync ceiling, a GEMM "
           "from one MMA per warp to 64x64 warp tiles beside cuBLAS FP32 and TF32; cp.async pipelines, "
           "and why one did not speed up lesson 6's FP32 kernel")

SHAPES: dict[str, tuple[int, int, int]] = {  # name: (M, N, K)
    "2048^3": (2048, 2048, 2048),
    "4096^3": (4096, 4096, 4096),
    "8192^3": (8192, 8192, 8192),
    "4095x4097x1023": (4095, 4097, 1023),
}
AWKWARD = "4095x4097x1023"
SQUARES = ("2048^3", "4096^3", "8192^3")
SMALL_STEPS = ("2048^3", "4096^3", AWKWARD)  # the slow early steps: not at 8192^3
SIMT_SHAPES = ("2048^3", "4096^3")
SAMPLE_ROWS = 16  # rows of C checked against float64 per result

TF32_UNIT = 2.0**-11  # unit roundoff of TF32's 10 fraction bits, rounding to nearest
FP32_UNIT = 2.0**-24
# Relative (Frobenius) error against float64 a result must stay under, by precision: FP32 lands near
# 1e-6 at these K, TF32 rounded near 3e-4, TF32 cut (no cvt.rna) near 8e-4.
ERROR_LIMITS = {"fp32": 1e-5, "tf32": 6e-4, "tf32 cut": 1.5e-3}


def size_of(shape: str) -> int:
    m, n, k = SHAPES[shape]
    return m * n * k


SHAPE_OF_SIZE = {size_of(name): name for name in SHAPES}


# ----------------------------------------------------------------------------- the kernels


@dataclass(frozen=True)
class Variant:
    """One kernel the lesson times: its name in the table, its kind, its tile and where it runs.

    ``kind``: "global" (``tensor_cores.mma_global``), "tc" (a ``tc_codegen.TcTile``) or "simt"
    (a ``gemm_codegen.Tile``, lesson 6's generator)."""

    name: str
    kind: str
    tile: object | None
    shapes: tuple[str, ...]
    what: str

    @property
    def precision(self) -> str:
        if self.kind == "simt":
            return "fp32"
        return "tf32" if self.tile is None or self.tile.round_inputs else "tf32 cut"

    @property
    def ncu_kernel(self) -> str:
        """The kernel's Python name, as Nsight Compute reports it."""
        return {"global": "mma_global", "tc": "tc_gemm_generated", "simt": "gemm_generated"}[self.kind]

    def launch(self, a, b, c) -> None:
        """C = A @ B on device arrays (its 4-byte twin where the shape needs it)."""
        if self.kind == "global":
            tc.mma_global_launch(a, b, c)
        elif self.kind == "tc":
            tc_codegen.launch(self.tile, a, b, c)
        else:
            gemm_codegen.launch(self.tile, a, b, c)

    @property
    def needs(self) -> gates.Needs:
        """What the kernel needs of the GPU (``gpu_lessons.gates``): sm_80 for mma.sync and cp.async,
        and its tile's shared memory."""
        if self.kind == "global":
            return tc.MMA_NEEDS
        return tc.tile_needs(self.tile) if self.kind == "tc" else gemm_codegen.needs(self.tile)

    def build(self, twin: bool = False):
        """The compiled kernel (``twin``: its 4-byte-copy twin, used where rows are not 16-byte aligned)."""
        if self.kind == "global":
            return tc.mma_global
        tile = self.tile.scalar() if twin else self.tile
        return (tc_codegen if self.kind == "tc" else gemm_codegen).build(tile)


def _step(name: str, shapes: tuple[str, ...]) -> Variant:
    step = tc.step(name)
    return Variant(name, "global" if step.tile is None else "tc", step.tile, shapes, step.change)


def simt_pipeline_tile(stages: int) -> gemm_codegen.Tile:
    """Lesson 6's fastest kernel (128x256 tiles, 8x16 per thread) with an N-stage cp.async pipeline in
    place of its register double buffer."""
    return gemm_codegen.Tile(bn=256, tn=16, max_registers=None, double_buffer=False, stages=stages)


STEP_NAMES = tuple(s.name for s in tc.STEPS)
PIPELINE_DEPTHS = (2, 3, 4)
LESSON6 = "simt big_tile (lesson 6)"
VARIANTS: tuple[Variant, ...] = (
    _step("mma_global", SMALL_STEPS),
    _step("mma_shared", SMALL_STEPS),
    _step("mma_async", SMALL_STEPS),
    _step("warp_tile", tuple(SHAPES)),
    _step("warp_tile_64x64", SQUARES),
    # a visible search around the 64x32 warp tile: one change each
    Variant("warp_tile 4 stages", "tc", tc.TcTile(stages=4), SQUARES, "4 stages: 3 tiles in flight"),
    Variant("warp_tile bk16 4 stages", "tc", tc.TcTile(bk=16, stages=4), SQUARES,
            "16-deep tiles, 4 stages: the same bytes in flight as 32-deep x 3"),
    Variant("warp_tile cap128", "tc", tc.TcTile(max_registers=128), SQUARES,
            "at most 128 registers: 2 blocks per SM instead of 1 (spills)"),
    Variant("warp_tile grouped 8", "tc", tc.TcTile(group_m=8), ("4096^3", "8192^3"),
            "blocks ordered in groups of 8 tile rows (L2 reuse)"),
    Variant("warp_tile unrounded", "tc", tc.TcTile(round_inputs=False), ("4096^3",),
            "no cvt.rna: the tensor cores cut A and B to TF32"),
    Variant("warp_tile_64x64 128x256", "tc", tc.TcTile(bn=256, wn=64), SQUARES,
            "8 warps of 64x64 in a 128x256 block"),
    Variant(LESSON6, "simt", gemm_steps.BIG_TILE, SIMT_SHAPES,
            "lesson 6's FP32 kernel: 128x256 tiles, 8x16 per thread, register double buffer"),
    *(Variant(f"simt cp.async {s} stages", "simt", simt_pipeline_tile(s), SIMT_SHAPES,
              f"lesson 6's kernel with a {s}-stage cp.async pipeline") for s in PIPELINE_DEPTHS),
)
BY_NAME = {v.name: v for v in VARIANTS}
SIMT_PIPELINES = tuple(f"simt cp.async {s} stages" for s in PIPELINE_DEPTHS)
TF32_GEMMS = tuple(v.name for v in VARIANTS if v.precision == "tf32")  # rounded to TF32, as cuBLAS

# The ceiling: (warps per SM, independent MMA chains per warp)
PEAK_CONFIGS = ((4, 8), (8, 8), (16, 8), (32, 8), (64, 8), (8, 4), (8, 16))


def peak_name(chains: int) -> str:
    return f"mma_peak {chains} chains"


PEAKS = tuple(dict.fromkeys(peak_name(chains) for _, chains in PEAK_CONFIGS))


def peak_launch_shape(sms: int, warps_per_sm: int, chains: int) -> tuple[int, int, int]:
    """(blocks, warps per block, iterations) of one ceiling measurement: up to 16 warps a block, and
    enough iterations that a launch takes about 2 ms."""
    warps_per_block = min(warps_per_sm, 16)
    iterations = max(200, 2_000_000 // (warps_per_sm * chains))
    return sms * warps_per_sm // warps_per_block, warps_per_block, iterations


# ----------------------------------------------------------------------------- what a GPU can run

# Every kernel the lesson runs, by name, with what it needs of the GPU (gpu_lessons.gates)
ROUND_PART = "round_tf32 (rounded once)"
NEEDS: dict[str, gates.Needs] = {
    "mma_demo": tc.MMA_NEEDS,
    **{v.name: v.needs for v in VARIANTS},
    **{name: tc.MMA_NEEDS for name in PEAKS},
    ROUND_PART: gates.Needs(cc=tc.SM80, why="cvt.rna.tf32"),  # the "rounded once" section's rounding
    # cuBLAS with CUPY_TF32=1: TF32 tensor cores (sm_80 on); before them it computes FP32, which the
    # section would report as "TF32 was off"
    "cublas tf32": gates.Needs(cc=tc.SM80, why="TF32 tensor cores"),
}


def left_out(limits=None) -> dict[str, str]:
    """The lesson's kernels this GPU cannot run: {name: why} (empty on an sm_80+ GPU with the shared
    memory of every tile; on the simulator, as the target ``GPU_LESSONS_DEVICE`` names)."""
    return gates.left_out(NEEDS, limits)


def load() -> LessonResult:
    """The lesson's result for the notebook: measured live on a GPU that runs every kernel of it; on one
    that cannot run some (``left_out``), or on the simulator, the recording -- one line says why."""
    from . import load as load_lesson

    gated = left_out()
    gates.say(NAME, gated)
    if SIMULATED or not gated:
        return load_lesson(NAME)
    result = load_lesson(NAME, live=False)
    print(f"{NAME}: this GPU cannot run every kernel of the lesson: showing the recording {result.source} "
          f"({result.gpu}); 'gpu-lessons run {NAME}' measures what it can run")
    return result


def mma_demo(a, b, c=None):
    """``kernels.tensor_cores.mma_demo`` on a GPU with mma.sync; elsewhere None, after one line why."""
    why = gates.missing(tc.MMA_NEEDS)
    if why:
        print(f"mma_demo: left out on this GPU: it {why}")
        return None
    return tc.mma_demo(a, b, c)


def runnable(variants=VARIANTS) -> tuple[Variant, ...]:
    """The variants this GPU can run."""
    gated = left_out()
    return tuple(v for v in variants if v.name not in gated)


# ----------------------------------------------------------------------------- scoreboard


def _versus(title: str, shape: str, reference: str, ours: tuple[str, ...] = TF32_GEMMS) -> Comparison:
    return Comparison(
        title=title, lesson=NAME, metric="gflops", reference=reference, ours=ours, size=size_of(shape)
    )


COMPARISONS = [
    _versus("TF32 mma.sync GEMM 4096^3 vs FP32 SGEMM", "4096^3", "cublas sgemm"),
    _versus("TF32 mma.sync GEMM 2048^3 vs FP32 SGEMM", "2048^3", "cublas sgemm"),
    _versus("TF32 mma.sync GEMM 8192^3 vs FP32 SGEMM", "8192^3", "cublas sgemm"),
    _versus("TF32 mma.sync GEMM 4096^3 vs cuBLAS TF32 (CUPY_TF32=1)", "4096^3", "cublas tf32"),
    _versus("FP32 SIMT GEMM with a cp.async pipeline 4096^3", "4096^3", "cublas sgemm", SIMT_PIPELINES),
    _versus("FP32 SIMT GEMM with a cp.async pipeline 2048^3", "2048^3", "cublas sgemm", SIMT_PIPELINES),
    # The ceiling of any mma.sync kernel against the library's TF32 GEMM (sizes count different things:
    # each side at its largest, as the ceilings' "FP32 FMA rate vs SGEMM")
    Comparison(
        title="mma.sync TF32 ceiling (registers only) vs cuBLAS TF32",
        lesson=NAME,
        metric="gflops",
        reference="cublas tf32",
        ours=PEAKS,
    ),
]


# ----------------------------------------------------------------------------- compiling


def compile_jobs() -> list[tuple[str, object]]:
    """(kind, tile) of every generated kernel the lesson compiles: each variant's, and the 4-byte twin
    of those timed at the awkward shape."""
    jobs = []
    for variant in runnable():  # a kernel this GPU cannot run is not compiled (ptxas would refuse it)
        if variant.kind == "global":
            continue
        jobs.append((variant.kind, variant.tile))
        if AWKWARD in variant.shapes:
            jobs.append((variant.kind, variant.tile.scalar()))
    return jobs


def _compile_arguments():
    x = cuda.device_array(8, np.float32)
    return (x, x, x, np.uint64(1), np.uint64(1), np.uint64(1))


def compile_worker(indices: list[int]) -> int:
    """A compile worker's work (``generated.compile_in_parallel``): build and compile these jobs (on the
    simulator, which compiles nothing, build them: their source files are written all the same)."""
    jobs = compile_jobs()
    arguments = None if SIMULATED else tuple(typeof(a) for a in _compile_arguments())
    for index in indices:
        kind, tile = jobs[index]
        kernel = (tc_codegen if kind == "tc" else gemm_codegen).build(tile)
        if arguments is not None:
            kernel.compile(arguments)
    return 0


_PREPARED: dict = {}  # a compile cache, as tc_codegen's: {"seconds": how long the parallel compile took}


def prepare() -> float | None:
    """On a GPU, compile every generated kernel of the lesson in parallel worker processes (once per
    process); returns the seconds it took (None on the simulator, which compiles nothing)."""
    if SIMULATED:
        return None
    if "seconds" not in _PREPARED:
        _PREPARED["seconds"] = generated.compile_in_parallel(__name__, "compile_worker", len(compile_jobs()))
    return _PREPARED["seconds"]


# ----------------------------------------------------------------------------- inputs and errors


def inputs(shape: str, sets: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``sets`` pairs (A, B) of standard normal float32, the same in every process (seeded by the shape)."""
    m, n, k = SHAPES[shape]
    rng = np.random.default_rng([SEED, m, n, k])
    return [
        (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))
        for _ in range(sets)
    ]


def input_sets(shape: str) -> int:
    m, n, k = SHAPES[shape]
    return input_sets_needed(4 * (m * k + k * n + m * n), int(device_info().l2_mib * 2**20), most=16)


def sample_rows(m: int) -> np.ndarray:
    """The rows of C checked against float64 (the first GPU run's choice, kept)."""
    return np.sort(np.random.default_rng(0).choice(m, min(m, SAMPLE_ROWS), replace=False))


def relative_error(c_rows: np.ndarray, reference: np.ndarray) -> float:
    """||C - C64|| / ||C64|| (Frobenius) over the sampled rows."""
    norm = np.linalg.norm(reference)
    difference = np.linalg.norm(c_rows.astype(np.float64) - reference)
    return float(difference / norm) if norm else float(difference)


def error_bound(a: np.ndarray, b: np.ndarray, precision: str) -> np.ndarray:
    """Elementwise bound on |C - A B|: for TF32, the operands' conversion (2u, u = 2^-11 rounded, 2^-10
    cut) plus float32 sums over K (K 2^-23, the tensor cores cut each step's sum); for FP32, K u with
    u = 2^-24 (lesson 6's bound). Both times |A||B|."""
    k = a.shape[1]
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    if precision == "fp32":
        return k * FP32_UNIT * scale
    unit = TF32_UNIT if precision == "tf32" else 2 * TF32_UNIT
    return (2 * unit + k * 2.0**-23) * scale


def share_of_bound(c: np.ndarray, a: np.ndarray, b: np.ndarray, precision: str) -> float:
    """The worst element's |C - A B| as a share of ``error_bound`` (<= 1: within it). K = 0: C must be 0."""
    reference = a.astype(np.float64) @ b.astype(np.float64)
    difference = np.abs(c.astype(np.float64) - reference)
    if not np.isfinite(c).all():
        return float("inf")
    bound = error_bound(a, b, precision)
    exact = bound == 0
    if np.any(difference[exact] > 0):
        return float("inf")
    return float(np.max(difference[~exact] / bound[~exact], initial=0.0))


# ----------------------------------------------------------------------------- the sections


def _poisoned(outputs) -> None:
    for out in outputs:
        poison(out)


def _all_written(name: str, shape: str, outputs) -> None:
    for out in outputs:
        if np.isnan(out.copy_to_host()).any():
            raise AssertionError(f"{name} at {shape} left outputs unwritten (the NaN poison remains)")


def _error_row(name: str, shape: str, precision: str, c, rows: np.ndarray, reference: np.ndarray) -> dict:
    """The sampled rows of C (device) against float64; raises past the precision's limit."""
    c_rows = np.stack([c[int(r)].copy_to_host() for r in rows])
    error = relative_error(c_rows, reference)
    if not error < ERROR_LIMITS[precision]:
        raise AssertionError(
            f"{name} at {shape}: relative error {error:.2e} against float64, over the "
            f"{precision} limit {ERROR_LIMITS[precision]:.0e}"
        )
    return {"variant": name, "shape": shape, "relative_error": error}


def _gemm_at(run: Run, shape: str) -> None:
    """cuBLAS SGEMM and every variant timed at one shape, on the same inputs."""
    seconds = run.shared("compiled", prepare)
    if seconds is not None:
        run.facts["parallel_compile_seconds"] = seconds
    m, n, k = SHAPES[shape]
    sets = input_sets(shape)
    pairs = inputs(shape, sets)
    rows = sample_rows(m)
    reference = pairs[0][0][rows].astype(np.float64) @ pairs[0][1].astype(np.float64)
    da = [cuda.to_device(a) for a, _ in pairs]
    db = [cuda.to_device(b) for _, b in pairs]
    dc = [cuda.device_array((m, n), np.float32) for _ in range(sets)]
    common = {
        "size": m * n * k,
        "bytes_moved": 4 * (m * k + k * n + m * n),
        "flops": 2 * m * n * k,
        "input_sets": sets,
    }
    errors = run.facts.setdefault("errors", [])
    cp = cupy_or_none()
    if cp is not None:  # what a user would call: a @ b, TF32 off (CuPy's default)
        ca, cb, cc = ([cp.asarray(x) for x in xs] for xs in (da, db, dc))
        _poisoned(dc)
        run.time("cublas sgemm", lambda s: cp.matmul(ca[s], cb[s], out=cc[s]), provider="cublas", **common)
        _all_written("cublas sgemm", shape, dc)
        errors.append(_error_row("cublas sgemm", shape, "fp32", dc[0], rows, reference))
    gated = left_out()
    for variant in VARIANTS:
        if shape not in variant.shapes:
            continue
        if variant.name in gated:
            run.leave_out(variant.name, gated[variant.name])
            continue
        _poisoned(dc)
        run.time(variant.name, lambda s, v=variant: v.launch(da[s], db[s], dc[s]), **common)
        _all_written(variant.name, shape, dc)
        errors.append(_error_row(variant.name, shape, variant.precision, dc[0], rows, reference))


def _gemm_section(shape: str) -> Section:
    return Section(f"gemm {shape}", lambda run: _gemm_at(run, shape))


EDGE_SHAPES = ((36, 20, 44), (132, 96, 260), (4, 0, 8), (200, 1000, 136))  # (M, K, N); K, N multiples of 4
EDGE_SHAPES_UNALIGNED = ((37, 13, 45), (33, 1, 70), (5, 0, 7))  # the 4-byte twins


def _edge_errors(launchers: list[tuple[str, str, Callable, tuple]]) -> list[dict]:
    """Each (name, precision, launch(a, b) -> C, shapes) on its shapes: the worst element's share of the
    error bound, and max|C - C64| / max|C64| (the first GPU run's measure; for K = 0, max|C|)."""
    rng = np.random.default_rng(7)
    out = []
    for name, precision, launch, shapes in launchers:
        for m, k, n in shapes:
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            c = launch(a, b)
            reference = a.astype(np.float64) @ b.astype(np.float64)
            scale = max(float(np.abs(reference).max(initial=0.0)), 1e-30) if k else 1.0
            largest = (
                float(np.abs(c - reference).max(initial=0.0)) / scale if np.isfinite(c).all() else np.inf
            )
            out.append(
                {
                    "variant": name,
                    "shape": f"{m}x{k} @ {k}x{n}",
                    "max_error": largest,
                    "share_of_bound": share_of_bound(c, a, b, precision),
                }
            )
    return out


def _device_launcher(variant: Variant) -> Callable:
    def launch(a, b):
        c = cuda.device_array((a.shape[0], b.shape[1]), np.float32)
        poison(c)
        if c.size:
            variant.launch(cuda.to_device(a), cuda.to_device(b), c)
        return c.copy_to_host()

    return launch


def _lesson_launchers() -> list[tuple[str, str, Callable, tuple]]:
    """The lesson's own kernels, for checks on a GPU (4-byte twins where the timings use them)."""
    return [
        (
            v.name,
            v.precision,
            _device_launcher(v),
            EDGE_SHAPES + (EDGE_SHAPES_UNALIGNED if AWKWARD in v.shapes or v.kind == "global" else ()),
        )
        for v in runnable()
    ]


def _edge_shapes(run: Run) -> None:
    """Every kernel on shapes no tile divides, K = 1 and K = 0: per kernel, the worst max|C - C64| /
    max|C64| (``edge_shape_errors``) and the worst element's share of its error bound."""
    run.shared("compiled", prepare)
    launchers = _lesson_launchers()
    if not launchers:
        return
    found = pd.DataFrame(_edge_errors(launchers))
    worst = found.groupby("variant", sort=False)[["max_error", "share_of_bound"]].max()
    run.facts["edge_shape_errors"] = worst["max_error"].to_dict()
    run.facts["edge_shape_share_of_bound"] = worst["share_of_bound"].to_dict()
    bad = found[~(found["share_of_bound"] <= 1)]
    if len(bad):
        raise AssertionError(
            "outside the error bound: "
            + ", ".join(f"{r.variant} at {r.shape} ({r.share_of_bound:.2f})" for r in bad.itertuples())
        )


# The child that times cuBLAS with TF32: CUPY_TF32 is in its environment from the start.
_TF32_CHILD = (
    "import sys; from gpu_lessons.lessons import tensor_cores; "
    "sys.exit(tensor_cores.cublas_tf32_child(sys.argv[1]))"
)


def _cublas_tf32(run: Run) -> None:
    """cuBLAS TF32 on the same inputs, timed in a child process (see the module doc); its rows and
    errors join this run."""
    if cupy_or_none() is None:
        return  # no CuPy, no reference rows (as every lesson)
    gated = left_out()
    if "cublas tf32" in gated:
        run.leave_out("cublas tf32", gated["cublas tf32"])
        return
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "cublas_tf32.json"
        done = subprocess.run(
            [sys.executable, "-c", _TF32_CHILD, str(out)],
            capture_output=True,
            text=True,
            env={**os.environ, "CUPY_TF32": "1"},
            cwd=generated.REPOSITORY,
            timeout=600,
        )
        if done.returncode != 0 or not out.exists():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-12:])
            raise RuntimeError(f"the cuBLAS TF32 child process failed (status {done.returncode}):\n{tail}")
        child = json.loads(out.read_text())
    run.rows.extend(child["rows"])
    run.facts.setdefault("errors", []).extend(child["errors"])


def cublas_tf32_child(out_path: str) -> int:
    """Child process of the ``cublas tf32`` section (``CUPY_TF32=1`` set before it started): time
    ``a @ b`` at every shape on the lesson's inputs, check that TF32 was on (error near 3e-4, not 1e-6),
    write {"rows", "errors"} as JSON to ``out_path``."""
    if os.environ.get("CUPY_TF32") != "1":
        raise RuntimeError("cublas_tf32_child needs CUPY_TF32=1 in its environment from the start")
    cp = cupy_or_none()
    run = Run(NAME)
    errors = []
    for shape, (m, n, k) in SHAPES.items():
        sets = input_sets(shape)
        pairs = inputs(shape, sets)
        rows = sample_rows(m)
        reference = pairs[0][0][rows].astype(np.float64) @ pairs[0][1].astype(np.float64)
        a = [cp.asarray(x) for x, _ in pairs]
        b = [cp.asarray(y) for _, y in pairs]
        c = [cp.full((m, n), cp.nan, cp.float32) for _ in range(sets)]
        run.time(
            "cublas tf32",
            lambda s, a=a, b=b, c=c: cp.matmul(a[s], b[s], out=c[s]),
            provider="cublas",
            size=m * n * k,
            bytes_moved=4 * (m * k + k * n + m * n),
            flops=2 * m * n * k,
            input_sets=sets,
        )
        if any(bool(cp.isnan(x).any()) for x in c):
            raise AssertionError(f"cuBLAS TF32 at {shape} left outputs unwritten")
        error = relative_error(cp.asnumpy(c[0][cp.asarray(rows)]), reference)
        if not 1e-5 < error < ERROR_LIMITS["tf32"]:
            raise AssertionError(
                f"cuBLAS with CUPY_TF32=1 at {shape}: relative error {error:.2e}; TF32 lands "
                "near 3e-4 (1e-6 means TF32 was off)"
            )
        errors.append({"variant": "cublas tf32", "shape": shape, "relative_error": error})
        del a, b, c
        cp.get_default_memory_pool().free_all_blocks()
    Path(out_path).write_text(json.dumps({"rows": run.rows, "errors": errors}))
    return 0


def mma_peak_reference(chains: int, iterations: int) -> np.ndarray:
    """What ``tensor_cores.peak_kernel(chains)`` writes for lanes 0..31 after ``iterations`` MMAs per chain:
    chain q starts at q and adds A B each iteration (A, B built from x = 1 + lane 2^-7, y = 1 - lane 2^-8,
    exact in TF32); each lane sums its four elements of every chain (float64 here)."""
    lanes = np.arange(32)
    x, y = 1 + lanes * 2.0**-7, 1 - lanes * 2.0**-8
    a, b = np.zeros((16, 8)), np.zeros((8, 8))
    for lane in lanes:
        for (row, col), value in zip(a_fragment(lane), (x[lane], y[lane], x[lane], y[lane]), strict=True):
            a[row, col] = value
        for (row, col), value in zip(b_fragment(lane), (y[lane], x[lane]), strict=True):
            b[row, col] = value
    product = a @ b
    own = np.array([sum(product[row, col] for row, col in c_fragment(lane)) for lane in lanes])
    return 4 * sum(range(chains)) + chains * iterations * own


def _mma_ceiling(run: Run) -> None:
    """Independent MMA chains on registers: the most mma.sync can do, at several warps per SM."""
    sms = device_info().sms
    expected = {}
    gated = left_out()
    warps_here = sm_limits().max_warps_per_sm
    for warps_per_sm, chains in PEAK_CONFIGS:
        name = peak_name(chains)
        if name in gated:
            run.leave_out(name, gated[name])
            continue
        if warps_per_sm > warps_here:  # 64 warps per SM on sm_80/sm_90; 48 on sm_86/sm_89
            run.leave_out(f"{name} at {warps_per_sm} warps/SM", f"this GPU holds {warps_here} warps per SM")
            continue
        blocks, per_block, iterations = peak_launch_shape(sms, warps_per_sm, chains)
        threads = blocks * per_block * 32
        out = cuda.device_array(threads, np.float32)
        poison(out)
        kernel = tc.peak_kernel(chains)[blocks, 32 * per_block]
        count = np.int64(iterations)
        run.time(
            peak_name(chains),
            lambda _, f=kernel, o=out, i=count: f(o, i),
            size=threads,
            param=warps_per_sm,
            bytes_moved=4 * threads,
            flops=tc.peak_flops(blocks, per_block, iterations, chains),
        )
        if (chains, iterations) not in expected:
            expected[chains, iterations] = mma_peak_reference(chains, iterations)
        got = out.copy_to_host()[:32].astype(np.float64)
        if not np.allclose(got, expected[chains, iterations], rtol=2e-2):
            raise AssertionError(
                f"mma_peak {chains} chains: lane sums differ from A B x iterations by more "
                "than 2% (the running sums are float32, cut toward zero at every MMA)"
            )


SASS_PATTERN = r"\b(HMMA|LDGSTS|LDGDEPBAR|DEPBAR|BAR|LDS|STS|LDG|LDL|STL)\b"


def _kernels(run: Run) -> None:
    """Registers, shared and local memory, and SASS of every kernel the lesson times."""
    run.shared("compiled", prepare)
    arguments = _compile_arguments()
    gated = left_out()
    for variant in runnable():
        run.kernel(variant.name, variant.build(), arguments, SASS_PATTERN)
    out = cuda.device_array(32, np.float32)
    for chains in dict.fromkeys(chains for _, chains in PEAK_CONFIGS):
        if peak_name(chains) in gated:
            continue
        run.kernel(peak_name(chains), tc.peak_kernel(chains), (out, np.int64(1)), SASS_PATTERN)
    run.facts["tiles"] = {v.name: repr(v.tile) for v in VARIANTS if v.tile is not None}


# Rounding once, beforehand (issue 27, item 15): ``cvt.rna`` in the kernel converts every fragment on
# every load; rounding A and B once and giving them to the kernel without it should keep the rounded
# accuracy at the unrounded speed. Timed in its own section (``record tensor_cores --section "rounded
# once" --merge``), with the two kernels it sits between re-timed beside it under their own names.
ONCE_SHAPE = "4096^3"
ONCE_TILE = tc.TcTile(round_inputs=False)  # warp_tile's tile without cvt.rna
ONCE_VARIANTS = {  # name: (what, precision)
    "once: warp_tile": ("warp_tile as in the steps: cvt.rna on every fragment load", "tf32"),
    "once: warp_tile unrounded": ("no cvt.rna: the tensor cores cut A and B", "tf32 cut"),
    "once: prerounded inputs": ("no cvt.rna, on A and B rounded to TF32 beforehand (rounding not timed)",
                                "tf32"),
    "once: round A, B + prerounded": ("round_tf32 of A and B, then the kernel without cvt.rna, timed "
                                      "together", "tf32"),
}


def _rounded_once(run: Run) -> None:
    """warp_tile with cvt.rna, without it, and without it on inputs rounded once (the rounding timed apart
    and with the GEMM) at ``ONCE_SHAPE``, on the same inputs; errors in ``facts["rounded_once_errors"]``."""
    gated = left_out()
    cannot = [gated[name] for name in ("warp_tile", "warp_tile unrounded", ROUND_PART) if name in gated]
    if cannot:  # the section's kernels: these two and the rounding
        for name in ONCE_VARIANTS:
            run.leave_out(name, cannot[0])
        return
    run.shared("compiled", prepare)
    m, n, k = SHAPES[ONCE_SHAPE]
    sets = input_sets(ONCE_SHAPE)
    pairs = inputs(ONCE_SHAPE, sets)
    rows = sample_rows(m)
    reference = pairs[0][0][rows].astype(np.float64) @ pairs[0][1].astype(np.float64)
    da = [cuda.to_device(a) for a, _ in pairs]
    db = [cuda.to_device(b) for _, b in pairs]
    ra = [cuda.device_array_like(a) for a in da]
    rb = [cuda.device_array_like(b) for b in db]
    dc = [cuda.device_array((m, n), np.float32) for _ in range(sets)]
    for s in range(sets):
        tc.round_tf32(da[s], ra[s])
        tc.round_tf32(db[s], rb[s])
    common = {"size": m * n * k, "bytes_moved": 4 * (m * k + k * n + m * n), "flops": 2 * m * n * k,
              "input_sets": sets}

    def rounded_then_gemm(s):
        tc.round_tf32(da[s], ra[s])
        tc.round_tf32(db[s], rb[s])
        tc_codegen.launch(ONCE_TILE, ra[s], rb[s], dc[s])

    launches = {
        "once: warp_tile": lambda s: tc_codegen.launch(tc.WARP_TILE, da[s], db[s], dc[s]),
        "once: warp_tile unrounded": lambda s: tc_codegen.launch(ONCE_TILE, da[s], db[s], dc[s]),
        "once: prerounded inputs": lambda s: tc_codegen.launch(ONCE_TILE, ra[s], rb[s], dc[s]),
        "once: round A, B + prerounded": rounded_then_gemm,
    }
    errors = run.facts.setdefault("rounded_once_errors", [])
    for name, launch in launches.items():
        _poisoned(dc)
        run.time(name, launch, **common)
        _all_written(name, ONCE_SHAPE, dc)
        errors.append(_error_row(name, ONCE_SHAPE, ONCE_VARIANTS[name][1], dc[0], rows, reference))


SECTIONS = (
    *(_gemm_section(shape) for shape in SHAPES),
    Section("edge shapes", _edge_shapes),
    Section("cublas tf32", _cublas_tf32),
    Section("mma ceiling", _mma_ceiling),
    Section("kernels", _kernels),
    Section("rounded once", _rounded_once),
)


# ----------------------------------------------------------------------------- Nsight Compute

NCU_SHAPE = "2048^3"
ROOF_SHAPE = "4096^3"  # the roofline's shape: the tiled TF32 kernels profiled there too (L2 and DRAM bytes)
ROOF_NCU_KERNELS = ("mma_shared", "mma_async", "warp_tile", "warp_tile_64x64")
ROOF_NCU_CASES = tuple(f"{name} {ROOF_SHAPE}" for name in ROOF_NCU_KERNELS)
NCU_CASES = (
    "cublas sgemm",
    "mma_global",
    "mma_shared",
    "mma_async",
    "warp_tile",
    "warp_tile cap128",
    "warp_tile_64x64",
    LESSON6,
    *SIMT_PIPELINES,
    *ROOF_NCU_CASES,
)
SHAPE_NCU_CASES = NCU_CASES[: len(NCU_CASES) - len(ROOF_NCU_CASES)]  # those at NCU_SHAPE
NCU_METRICS = (
    "gpu__time_duration.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "sm__cycles_active.avg",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "launch__registers_per_thread",
)
NCU_SHORT = {
    "issue_active": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "instructions": "smsp__inst_executed.sum",
    "fma_pipe": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_pipe": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "warps_active": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "l2_read_sectors": "lts__t_sectors_srcunit_tex_op_read.sum",
    "long_scoreboard": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "short_scoreboard": "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "dispatch_stall": "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "math_throttle": "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "wait": "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "not_selected": "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "mio_throttle": "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "registers": "launch__registers_per_thread",
    "time_ns": "gpu__time_duration.sum",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "lg_throttle": "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "sm_cycles_active": "sm__cycles_active.avg",
}


def ncu_cases() -> list[Case]:
    """One kernel launch each, at 2048^3 (``ROOF_NCU_CASES``: at 4096^3). The profiled process launches
    nothing else: inputs are copied from the host, and C is poisoned by a copy from the host before each
    launch; each case's check compares sampled rows with float64. Under ``record --ncu`` the kernels come
    from numba's disk cache, which the run's compile filled (the generated-source folder is in the
    environment this process inherits)."""
    cases = []
    for shape, names in ((NCU_SHAPE, SHAPE_NCU_CASES), (ROOF_SHAPE, ROOF_NCU_CASES)):
        cases += _ncu_cases_at(shape, names)
    return cases


def _ncu_cases_at(shape: str, names: tuple[str, ...]) -> list[Case]:
    m, n, k = SHAPES[shape]
    ((a_host, b_host),) = inputs(shape, 1)
    rows = sample_rows(m)
    reference = a_host[rows].astype(np.float64) @ b_host.astype(np.float64)
    poisoned = np.full((m, n), np.nan, np.float32)
    a, b = cuda.to_device(a_host), cuda.to_device(b_host)
    c = cuda.device_array((m, n), np.float32)

    def checked(precision: str) -> Callable[[], bool]:
        def check() -> bool:
            c_rows = np.stack([c[int(r)].copy_to_host() for r in rows])
            return (
                bool(np.isfinite(c_rows).all())
                and relative_error(c_rows, reference) < ERROR_LIMITS[precision]
            )

        return check

    def launched(kernel: Callable[[], None]) -> Callable[[], None]:
        def launch() -> None:
            c.copy_to_device(poisoned)  # a copy, not a kernel: the one launch is the kernel's
            kernel()

        return launch

    cases = []
    cp = cupy_or_none()
    if cp is not None and "cublas sgemm" in names:  # cuBLAS's kernel names all hold "gemm"
        ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
        cases.append(
            Case("cublas sgemm", "gemm", launched(lambda: cp.matmul(ca, cb, out=cc)), checked("fp32"))
        )
    gated = left_out()
    for name in names:
        if name == "cublas sgemm":
            continue
        variant = BY_NAME[name.removesuffix(f" {shape}")]
        if variant.name in gated:  # not on this GPU (the run's line said so)
            continue
        cases.append(
            Case(
                name,
                variant.ncu_kernel,
                launched(lambda v=variant: v.launch(a, b, c)),
                checked(variant.precision),
            )
        )
    return cases


# ------------------------------------------------------------------------- reading a result


def _gemm_rows(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[table["size"].isin(SHAPE_OF_SIZE) & ~table["variant"].str.startswith("mma_peak")].copy()
    rows["shape"] = rows["size"].map(SHAPE_OF_SIZE)
    rows["tflops"] = rows["gflops"] / 1e3
    return rows


def gemm_table(result: LessonResult) -> pd.DataFrame:
    """Every GEMM row: shape, TFLOP/s, and its share of cuBLAS SGEMM and of cuBLAS TF32 at that shape."""
    rows = _gemm_rows(result.table)
    for reference, column in (("cublas sgemm", "of_sgemm"), ("cublas tf32", "of_tf32")):
        by_shape = rows[rows["variant"] == reference].set_index("shape")["gflops"]
        rows[column] = rows["gflops"] / rows["shape"].map(by_shape)
    return rows[
        [
            "variant",
            "provider",
            "shape",
            "tflops",
            "of_sgemm",
            "of_tf32",
            "median_ms",
            "min_ms",
            "max_ms",
            "runs",
        ]
    ].reset_index(drop=True)


def tflops(result: LessonResult, variant: str, shape: str) -> float:
    """One variant's TFLOP/s at one shape (a RecordingError naming the recording when absent)."""
    rows = result.table[(result.table["variant"] == variant) & (result.table["size"] == size_of(shape))]
    if rows.empty:
        raise RecordingError(f"{result.source}: no row of {variant!r} at {shape}")
    return float(rows["gflops"].iloc[0]) / 1e3


def wide(result: LessonResult, variants=None, shapes=tuple(SHAPES)) -> pd.DataFrame:
    """TFLOP/s, variants (in the order given) as rows and shapes as columns; NaN where not timed."""
    rows = _gemm_rows(result.table)
    table = rows.pivot_table(index="variant", columns="shape", values="tflops", sort=False)
    order = list(variants) if variants is not None else list(dict.fromkeys(rows["variant"]))
    return table.reindex(index=order, columns=[s for s in shapes if s in table.columns])


PROGRESSION = ("cublas sgemm", *STEP_NAMES, "cublas tf32")


def progression(result: LessonResult, shapes=SQUARES) -> pd.DataFrame:
    """The TF32 steps in teaching order between cuBLAS SGEMM and cuBLAS TF32, TFLOP/s by shape."""
    return wide(result, PROGRESSION, shapes)


def candidates(result: LessonResult) -> pd.DataFrame:
    """The warp tile and its one-change neighbours, TFLOP/s by shape, with what each changes."""
    names = ["warp_tile", "warp_tile_64x64", *(v.name for v in VARIANTS[len(STEP_NAMES) :] if v.kind == "tc")]
    table = wide(result, names, SQUARES)
    table.insert(0, "change", [BY_NAME[name].what for name in table.index])
    return table


def errors(result: LessonResult) -> pd.DataFrame:
    """Each result's relative error against float64 (16 sampled rows), with its precision."""
    table = pd.DataFrame(result.evidence.fact("errors"))
    precision = {**{v.name: v.precision for v in VARIANTS}, "cublas sgemm": "fp32", "cublas tf32": "tf32"}
    table["precision"] = table["variant"].map(precision)
    table["k"] = table["shape"].map(lambda s: SHAPES[s][2])
    return table


def mma_ceiling(result: LessonResult) -> pd.DataFrame:
    """The ceiling's rows: chains per warp, warps per SM, TFLOP/s."""
    rows = result.table[result.table["variant"].isin(PEAKS)].copy()
    rows["chains"] = rows["variant"].str.split().str[1].astype(int)
    rows["warps_per_sm"] = rows["param"].astype(int)
    rows["tflops"] = rows["gflops"] / 1e3
    return rows[["variant", "chains", "warps_per_sm", "tflops", "median_ms"]].reset_index(drop=True)


def tf32_peak_gflops(result: LessonResult) -> float:
    """The mma.sync ceiling: the best of the ceiling's measurements, GFLOP/s."""
    rows = mma_ceiling(result)
    if rows.empty:
        raise RecordingError(f"{result.source}: no mma_peak rows (the 'mma ceiling' section)")
    return float(rows["tflops"].max()) * 1e3


def warps_per_sm(result: LessonResult, variant: str) -> int:
    """Resident warps per SM of a recorded kernel (lesson 2's calculator on its registers and shared
    memory; the pipelines' dynamic shared memory counted, opted in as the launch does)."""
    kernel = result.evidence.kernel(variant)
    tile = BY_NAME[variant].tile
    if tile is None:
        threads, dynamic = 32 * tc.GLOBAL_WARPS_M * tc.GLOBAL_WARPS_N, 0
    elif BY_NAME[variant].kind == "tc":
        threads, dynamic = tile.threads, tile.shared_bytes
    else:
        threads, dynamic = tile.threads, 4 * tile.shared_floats if tile.stages else 0
    shared = kernel.get("shared_bytes", 0) + dynamic
    limits = sm_limits() if result.live else recorded_limits(result.gpu)  # the GPU it was measured on
    return occupancy(
        threads, kernel["registers"], shared, limits, opt_in=shared > tc_codegen.STATIC_SHARED_LIMIT
    ).warps_per_sm


def mma_count(m: int, n: int, k: int) -> int:
    """m16n8k8 MMAs in an M x N x K GEMM (each dimension rounded up to the MMA's)."""
    return -(-m // 16) * -(-n // 8) * -(-k // 8)


def tile_intensity(variant: str) -> float:
    """FLOPs per byte a block reads from memory (L2 or DRAM) for its tile: B_M B_N / 2 (B_M + B_N), the
    notes' I_CTA (lesson 6), for every tiled kernel."""
    tile = BY_NAME[variant].tile
    if tile is None:
        raise ValueError(f"{variant} has no block tile: its warps read their own fragments")
    return tile.bm * tile.bn / (2 * (tile.bm + tile.bn))


def ideal_intensity(shape: str) -> float:
    """Every input read once, C written once: 2MNK / 4(MK + KN + MN) (n/6 for squares)."""
    m, n, k = SHAPES[shape]
    return 2 * m * n * k / (4 * (m * k + k * n + m * n))


ROOFLINE_KERNELS = ("mma_shared", "mma_async", "warp_tile", "warp_tile_64x64", LESSON6)
ROOFLINE_LABELS = {  # label and its place from the marker (dx, dy in points; ha), clear of the roofs' lines
    "mma_shared": ("mma_shared", 7, -7, "left"),
    "mma_async": ("mma_async", -7, 12, "right"),
    "warp_tile": ("warp_tile", 7, -4, "left"),
    "warp_tile_64x64": ("warp_tile_64x64", 7, 10, "left"),
    LESSON6: ("big_tile (lesson 6)", 0, -11, "center"),
    "cublas sgemm": ("cuBLAS SGEMM", -7, -6, "right"),
    "cublas tf32": ("cuBLAS TF32", -7, 14, "right"),
}


def roofline_points(result: LessonResult, shape: str = "4096^3") -> pd.DataFrame:
    """Our tiled kernels at their tile's intensity, cuBLAS at the ideal one, measured GFLOP/s (with
    where each label goes on the lesson's roofline)."""
    points = []
    for name in (*ROOFLINE_KERNELS, "cublas sgemm", "cublas tf32"):
        if name.startswith("cublas"):
            intensity, kind = ideal_intensity(shape), "cuBLAS (ideal reuse)"
        else:
            intensity = tile_intensity(name)
            kind = "TF32 mma.sync (tile count)" if BY_NAME[name].kind == "tc" else "FP32 SIMT (tile count)"
        label, dx, dy, ha = ROOFLINE_LABELS[name]
        points.append(
            {
                "label": label,
                "intensity": intensity,
                "gflops": tflops(result, name, shape) * 1e3,
                "kind": kind,
                "dx": dx,
                "dy": dy,
                "ha": ha,
            }
        )
    return pd.DataFrame(points)


def ncu_table(result: LessonResult, cases=SHAPE_NCU_CASES) -> pd.DataFrame:
    """The recorded counters, one row per case (those recorded), short metric names as columns (NaN
    where a metric was not recorded); empty for a run without ``--ncu``."""
    ncu = result.evidence.ncu
    rows = []
    for case in cases:
        if case not in ncu:
            continue
        metrics = ncu[case]["metrics"]
        rows.append(
            {
                "case": case,
                **{short: metrics.get(full, np.nan) for short, full in NCU_SHORT.items()},
                "source": ncu[case]["source"],
            }
        )
    return pd.DataFrame(rows, columns=["case", *NCU_SHORT, "source"]).set_index("case")


def simt_pipeline(result: LessonResult, counters: LessonResult | None = None) -> pd.DataFrame:
    """Lesson 6's kernel and its cp.async pipelines beside cuBLAS SGEMM: share of cuBLAS at 2048^3 and
    4096^3, registers, and the counters that say why (Nsight Compute at 2048^3, from ``counters``, by
    default the same result): issue slots busy, instructions, FMA pipe, warps waiting on global memory per
    issued instruction (long scoreboard), shared-memory wavefronts (loads; writes = all - loads), and where
    the counters come from (``counters_source``). NaN where a counter was not recorded."""
    names = (LESSON6, *SIMT_PIPELINES, "cublas sgemm")
    table = gemm_table(result)
    recorded = ncu_table(counters or result, names)
    rows = []
    for name in names:
        row = {"kernel": name}
        for shape in SIMT_SHAPES:
            hit = table[(table["variant"] == name) & (table["shape"] == shape)]
            row[f"of_sgemm {shape}"] = float(hit["of_sgemm"].iloc[0]) if len(hit) else np.nan
        c = recorded.loc[name] if name in recorded.index else pd.Series(dtype=float)
        kernel = result.evidence.kernels.get(name, {})
        row["registers"] = kernel.get("registers", c.get("registers", np.nan))
        row["issue_active"] = c.get("issue_active", np.nan)
        row["instructions"] = c.get("instructions", np.nan)
        row["fma_pipe"] = c.get("fma_pipe", np.nan)
        row["long_scoreboard"] = c.get("long_scoreboard", np.nan)
        row["shared_load_wavefronts"] = c.get("shared_load_wavefronts", np.nan)
        row["shared_write_wavefronts"] = c.get("shared_wavefronts", np.nan) - row["shared_load_wavefronts"]
        row["counters_source"] = c.get("source", "")  # cuBLAS SGEMM's may come from lesson 6's recording
        rows.append(row)
    return pd.DataFrame(rows).set_index("kernel")


def rounded_once(result: LessonResult) -> pd.DataFrame:
    """The "rounded once" section (4096^3): each kernel's TFLOP/s and relative error against float64 (empty
    for a recording without the section)."""
    names = list(ONCE_VARIANTS)
    rows = _gemm_rows(result.table)
    rows = rows[rows["variant"].isin(names) & (rows["shape"] == ONCE_SHAPE)].set_index("variant")
    found = pd.DataFrame(result.evidence.facts.get("rounded_once_errors", []),
                         columns=["variant", "shape", "relative_error"])
    table = pd.DataFrame({"what": {n: ONCE_VARIANTS[n][0] for n in names}})
    table["tflops"] = rows["tflops"]
    table["relative_error"] = found.set_index("variant")["relative_error"] if len(found) else np.nan
    return table.dropna(subset=["tflops"])


def roof_counters(result: LessonResult, roof: dict) -> pd.DataFrame:
    """The tiled TF32 kernels profiled at ``ROOF_SHAPE`` (Nsight Compute): tensor pipe busy, DRAM bytes
    (read + written) and L2 bytes read by the SMs (sectors x 32), the FLOP per byte of each, and the
    share of the measured bandwidth roof (``roof["bandwidth_gbps"]``) the DRAM traffic used in the
    profiled launch. Empty when the recording has no such counters."""
    m, n, k = SHAPES[ROOF_SHAPE]
    flops = 2 * m * n * k
    rows = []
    for name, case in zip(ROOF_NCU_KERNELS, ROOF_NCU_CASES, strict=True):
        entry = result.evidence.ncu.get(case)
        if entry is None:
            continue
        metrics = entry["metrics"]
        dram = metrics.get(NCU_SHORT["dram_read"], np.nan) + metrics.get(NCU_SHORT["dram_write"], np.nan)
        l2 = 32 * metrics.get(NCU_SHORT["l2_read_sectors"], np.nan)
        seconds = metrics[NCU_SHORT["time_ns"]] / 1e9
        rows.append({"kernel": name, "tile_intensity": tile_intensity(name),
                     "tensor_pipe": metrics.get(NCU_SHORT["tensor_pipe"], np.nan),
                     "tflops_profiled": flops / seconds / 1e12,
                     "dram_gb": dram / 1e9, "l2_read_gb": l2 / 1e9,
                     "flop_per_dram_byte": flops / dram, "flop_per_l2_byte": flops / l2,
                     "dram_share_of_roof": dram / seconds / 1e9 / roof["bandwidth_gbps"]})
    columns = ["kernel", "tile_intensity", "tensor_pipe", "tflops_profiled", "dram_gb", "l2_read_gb",
               "flop_per_dram_byte", "flop_per_l2_byte", "dram_share_of_roof"]
    return pd.DataFrame(rows, columns=columns).set_index("kernel")


SCHEDULERS_PER_SM = 4  # warp schedulers per SM, each issuing at most one warp instruction a cycle
ISSUE_MODEL_KERNELS = (LESSON6, *SIMT_PIPELINES, "cublas sgemm")
STALLS = ("long_scoreboard", "short_scoreboard", "dispatch_stall", "barrier", "math_throttle", "not_selected",
          "wait", "mio_throttle")


def ncu_blocks(entry: dict) -> int:
    """Blocks of a profiled launch at ``NCU_SHAPE``: its recorded grid; for cuBLAS's CUTLASS kernels, whose
    grid was not recorded, the block tile in the kernel's name (``..._sgemm_256x128_...``)."""
    if "grid" in entry:
        return int(np.prod(entry["grid"]))
    found = re.search(r"gemm_(\d+)x(\d+)_", entry["kernel"])
    if found is None:
        raise RecordingError(f"no grid recorded for {entry['kernel']!r} and no tile in its name")
    m, n, _ = SHAPES[NCU_SHAPE]
    tile_m, tile_n = int(found.group(1)), int(found.group(2))
    return -(-m // tile_m) * -(-n // tile_n)


def issue_time(instructions: float, issue_active_pct: float, busy_sms: int, clock_mhz: float) -> float:
    """Microseconds to issue ``instructions`` warp instructions on ``busy_sms`` SMs whose 4 schedulers
    issue in ``issue_active_pct`` % of cycles at ``clock_mhz``."""
    return instructions / (SCHEDULERS_PER_SM * busy_sms * clock_mhz * issue_active_pct / 100)


def issue_time_model(result: LessonResult, counters: LessonResult | None = None) -> pd.DataFrame:
    """Lesson 6's kernel, its cp.async pipelines and cuBLAS SGEMM at 2048^3 (Nsight Compute, from
    ``counters``, by default the same result): warp instructions, issue slots busy, the SMs holding a block
    (each launch fits one block per SM: min(blocks, SMs)), the measured duration, and ``issue_time`` of
    them at the recording's SM clock, with its error. The identity follows from the counters' definitions
    (issue slots busy: the share of active cycles with an issue, one instruction a scheduler per cycle): a
    small error confirms the clock and that the SMs stayed busy, not a model that predicts."""
    evidence = (counters or result).evidence
    sms, clock = int(result.meta["sms"]), float(result.meta["sm_clock_mhz"])
    rows = []
    for name in ISSUE_MODEL_KERNELS:
        entry = evidence.ncu_case(name)
        metrics = entry["metrics"]
        busy = min(ncu_blocks(entry), sms)
        instructions = metrics[NCU_SHORT["instructions"]]
        issue = metrics[NCU_SHORT["issue_active"]]
        model = issue_time(instructions, issue, busy, clock)
        measured_us = metrics[NCU_SHORT["time_ns"]] / 1e3
        rows.append({"kernel": name, "instructions": instructions, "issue_active": issue, "busy_sms": busy,
                     "measured_us": measured_us, "model_us": model, "error": model / measured_us - 1})
    return pd.DataFrame(rows).set_index("kernel")


def pipeline_loss(result: LessonResult, counters: LessonResult | None = None, stages: int = 3) -> dict:
    """Lesson 6's kernel against its ``stages``-deep cp.async pipeline at 2048^3: the timed slowdown (event
    timings), the profiled one (Nsight Compute's durations of the launches the counters come from), and the
    two counters' factors (instructions, issue slots busy) whose product splits it: on the same SMs at the
    same clock, time = instructions / issue rate is an identity (a decomposition, not a cause)."""
    evidence = (counters or result).evidence
    pipeline = f"simt cp.async {stages} stages"
    ms = {name: tflops_row(result, name, NCU_SHAPE)["median_ms"] for name in (LESSON6, pipeline)}

    def metric(name, short):
        return evidence.ncu_value(name, NCU_SHORT[short])

    profiled = metric(pipeline, "time_ns") / metric(LESSON6, "time_ns")  # the same launches as the counters

    instructions = metric(pipeline, "instructions") / metric(LESSON6, "instructions")
    issue = metric(LESSON6, "issue_active") / metric(pipeline, "issue_active")
    return {"lesson6_ms": ms[LESSON6], "pipeline_ms": ms[pipeline], "slowdown": ms[pipeline] / ms[LESSON6],
            "profiled_slowdown": profiled, "instructions": instructions, "issue": issue,
            "product": instructions * issue,
            "lesson6_issue": metric(LESSON6, "issue_active"),
            "pipeline_issue": metric(pipeline, "issue_active")}


def stall_table(result: LessonResult, counters: LessonResult | None = None) -> pd.DataFrame:
    """Warps stalled per issued instruction, by reason, for lesson 6's kernel and its pipelines (2048^3),
    with the warps active (% of the SM's 64)."""
    table = ncu_table(counters or result, (LESSON6, *SIMT_PIPELINES))
    return table[[*STALLS, "warps_active", "registers"]]


TILE_INTENSITY_LABEL = "Intensity by the tile count (FLOP per byte a block reads, from the L2 or DRAM)"

# NVIDIA's H200 SXM datasheet: "TF32 Tensor Core 989 TFLOPS", a figure with 2:4 structured sparsity;
# it gives no dense figure: half of it is ours to take (494.7 and 989.4 are the H100 SXM whitepaper's).
# A labelled reference, not a measurement.
DATASHEET_TF32_SPARSE_TFLOPS = 989.0
DATASHEET_TF32_DENSE_TFLOPS = DATASHEET_TF32_SPARSE_TFLOPS / 2


def tflops_row(result: LessonResult, variant: str, shape: str) -> pd.Series:
    """One variant's row of ``gemm_table`` at one shape (a RecordingError naming the recording when
    absent)."""
    table = gemm_table(result)
    rows = table[(table["variant"] == variant) & (table["shape"] == shape)]
    if rows.empty:
        raise RecordingError(f"{result.source}: no row of {variant!r} at {shape}")
    return rows.iloc[0]


LESSON6_BEST = "tile 128x256x16 8x16 pad 0"  # lesson 6's fastest kernel at 4096^3 (its search)
LESSON6_STEP12 = "big_tile"  # lesson 6's last step: the kernel this lesson's SIMT pipelines start from


def lesson6_baselines(lesson6: LessonResult, shape: str = "4096^3") -> dict:
    """Lesson 6's recording at one shape: its best kernel's and its last step's share of cuBLAS SGEMM."""
    table = lesson6.table[lesson6.table["size"] == size_of(shape)]
    gflops = table.set_index("variant")["gflops"]
    missing = [v for v in ("cublas sgemm", LESSON6_BEST, LESSON6_STEP12) if v not in gflops.index]
    if missing:
        raise RecordingError(f"{lesson6.source}: no row of {', '.join(missing)} at {shape}")
    return {name: float(gflops[name] / gflops["cublas sgemm"]) for name in (LESSON6_BEST, LESSON6_STEP12)}


# ------------------------------------------------------------------------- models


PIPELINE_PICTURE = (1, 2, 3, 4)  # the depths the concept picture draws


def pipeline_schedule(
    stages: int, tiles: int = 8, copy_time: float = 2.5, compute_time: float = 1.0
) -> pd.DataFrame:
    """When each tile's copy and compute happen in a ``stages``-deep pipeline (times in units of one
    tile's compute): rows (tile, what, start, end).

    1 stage: load tile i (through registers), barrier, compute it, barrier: nothing overlaps. ``s`` >= 2
    (the generated kernels' loop): copies of tiles 0 .. s-2 are issued at once; at iteration i the warp
    waits for tile i, issues tile i + s - 1, computes tile i. A copy takes ``copy_time``; the stage it
    overwrites was computed in iteration i - 1."""
    if stages < 1 or tiles < 1:
        raise ValueError("stages and tiles must be at least 1")
    rows, copy_end, compute_end = [], {}, 0.0
    if stages > 1:
        for tile in range(min(stages - 1, tiles)):
            rows.append((tile, "copy", 0.0, copy_time))
            copy_end[tile] = copy_time
    for tile in range(tiles):
        if stages == 1:
            rows.append((tile, "copy", compute_end, compute_end + copy_time))
            copy_end[tile] = compute_end + copy_time
        start = max(compute_end, copy_end[tile])
        ahead = tile + stages - 1
        if stages > 1 and ahead < tiles:
            rows.append((ahead, "copy", start, start + copy_time))
            copy_end[ahead] = start + copy_time
        rows.append((tile, "compute", start, start + compute_time))
        compute_end = start + compute_time
    return pd.DataFrame(rows, columns=["tile", "what", "start", "end"]).sort_values(
        ["what", "tile"], ignore_index=True
    )


def emulated_errors(
    ks=(64, 128, 256, 512, 1024, 2048, 4096, 8192), m: int = 64, n: int = 64, seed: int = 0
) -> pd.DataFrame:
    """The error model, on the host: relative (Frobenius) error against float64 of an M x K x N product of
    standard normal matrices, K at each of ``ks``, three ways -- FP32: one float32 FMA per k in order
    (each output's sum, as our SIMT kernels and cuBLAS's do it); TF32 rounded: A and B rounded to TF32
    (``cvt.rna``), products and sums exact; TF32 cut: A and B with their 13 low bits cut, sums exact."""
    rng = np.random.default_rng(seed)
    k_max = max(ks)
    a = rng.standard_normal((m, k_max), dtype=np.float32)
    b = rng.standard_normal((k_max, n), dtype=np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    conversions = {"TF32 rounded (cvt.rna)": tf32_rna, "TF32 cut (no cvt.rna)": tf32_truncate}
    rows, acc, done = [], np.zeros((m, n), np.float32), 0
    for k in sorted(ks):
        for j in range(done, k):  # float32 FMA: the exact product plus the sum, rounded once
            acc = (acc.astype(np.float64) + np.outer(a64[:, j], b64[j])).astype(np.float32)
        done = k
        exact = a64[:, :k] @ b64[:k]
        norm = np.linalg.norm(exact)
        rows.append(
            {"k": k, "model": "FP32 (one FMA per k)", "relative_error": np.linalg.norm(acc - exact) / norm}
        )
        for label, convert in conversions.items():
            approx = convert(a[:, :k]).astype(np.float64) @ convert(b[:k]).astype(np.float64)
            rows.append({"k": k, "model": label, "relative_error": np.linalg.norm(approx - exact) / norm})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------- figures


def figures(result: LessonResult, roof: dict) -> dict:
    """The lesson's figures: three concept pictures (fragment layout, the k order of a slab, pipeline
    timeline) and the measured ones (error against K, the mma.sync ceiling, the roofline with the TF32
    roof, the TF32 GEMM steps, the SIMT pipelines with their counters)."""
    provenance = result.provenance
    table = gemm_table(result)
    at_4096 = table[table["shape"] == "4096^3"]  # cuBLAS TF32's best size
    best = at_4096[at_4096["variant"].isin(TF32_GEMMS)]["tflops"].max()
    return {
        "fragment_layout": figs.fragment_layout(tc.fragment_owners()),
        "slab_k_order": figs.slab_k_order(tc.slab_k_order()),
        "cp_async_pipeline": figs.pipeline_timeline({s: pipeline_schedule(s) for s in PIPELINE_PICTURE}),
        "tf32_error": figs.error_against_k(emulated_errors(), errors(result), provenance=provenance),
        "mma_ceiling": figs.mma_ceiling(
            mma_ceiling(result),
            fp32_peak_tflops=roof["peak_gflops"] / 1e3,
            cublas_tf32_tflops=at_4096[at_4096["variant"] == "cublas tf32"]["tflops"].max(),
            best_gemm_tflops=best,
            provenance=provenance,
        ),
        "roofline": charts.roofline(
            roof["bandwidth_gbps"],
            roof["peak_gflops"],
            points=roofline_points(result),
            roofs={"mma.sync TF32 ceiling": tf32_peak_gflops(result)},
            label_ridges=False,
            provenance=provenance,
            title="Roofline with the mma.sync ceiling as a second roof (4096³)",
            xlabel=TILE_INTENSITY_LABEL,
        ),
        "progression": figs.progression(progression(result), provenance=provenance),
        "simt_cp_async": figs.simt_pipeline(simt_pipeline(result), provenance=provenance),
    }


# ------------------------------------------------------------------------- checks

SIM_CHECKS = (  # one- and two-warp tiles: the generators' code paths at sizes the simulator runs
    ("tc sync, 4-byte copies", "tc", tc.TcTile(bm=16, bn=32, bk=16, wm=16, wn=32, stages=1), (17, 13, 33)),
    ("tc cp.async 2 stages", "tc", tc.TcTile(bm=16, bn=32, bk=16, wm=16, wn=32, stages=2), (16, 20, 36)),
    (
        "simt cp.async 2 stages",
        "simt",
        gemm_codegen.Tile(bm=32, bn=32, tm=4, tn=4, lanes_m=4, double_buffer=False, stages=2),
        (33, 12, 36),
    ),
)


def _host_launcher(kind: str, tile) -> Callable:
    if kind == "tc":
        return lambda a, b: tc.gemm_tile(a, b, tile)
    return lambda a, b: gemm_codegen.gemm_generated(a, b, tile)


def _sim_check_needs(kind: str, tile) -> gates.Needs:
    return tc.tile_needs(tile) if kind == "tc" else gemm_codegen.needs(tile)


def check() -> pd.DataFrame:
    """Every kernel family against float64: the one-warp MMA, the ceiling's kernel, mma_global, the TF32
    tile generator (plain and cp.async) and lesson 6's generator with a cp.async pipeline. On a GPU, the
    lesson's own tiles on shapes no tile divides, K = 1 and K = 0 (4-byte twins included); on the
    simulator, one- and two-warp tiles of the same generators (a 256-thread block is too slow there).
    What this GPU cannot run is left out, and one line says what and why (``left_out``)."""
    gated = left_out()
    gates.say(NAME, gated)
    prepare()
    rng = np.random.default_rng()
    rows = []
    mma_here = not gates.missing(tc.MMA_NEEDS)
    if mma_here:
        a = rng.standard_normal((16, 8), dtype=np.float32)
        b = rng.standard_normal((8, 8), dtype=np.float32)
        c = rng.standard_normal((16, 8), dtype=np.float32)
        d = tc.mma_demo(a, b, c)
        ra, rb = tf32_rna(a).astype(np.float64), tf32_rna(b).astype(np.float64)
        exact = ra @ rb + c
        share = np.max(np.abs(d - exact) / (2.0**-21 * (np.abs(ra) @ np.abs(rb) + np.abs(c))))
        rows.append(
            check_row(
                "mma_demo (one warp, one m16n8k8)",
                share <= 1,
                f"worst element {share:.3f} of 2^-21 (|A||B| + |C|) from A B + C, A and B rounded",
            )
        )
        out = tc.run_peak(blocks=1, warps_per_block=1, iterations=3, chains=2).copy_to_host()
        expected = mma_peak_reference(2, 3)
        rows.append(
            check_row(
                "mma_peak 2 chains, 3 iterations",
                np.allclose(out, expected, rtol=1e-5),
                "each lane's sum against A B x iterations + the chains' start values",
            )
        )
    if SIMULATED:
        launchers = [("mma_global", "tf32", lambda a, b: tc.matmul(a, b, "mma_global"), ((20, 9, 12),))]
        launchers = launchers if mma_here else []
        launchers += [
            (name, "tf32" if kind == "tc" else "fp32", _host_launcher(kind, tile), (shape,))
            for name, kind, tile, shape in SIM_CHECKS
            if not gates.missing(_sim_check_needs(kind, tile))
        ]
    else:
        launchers = _lesson_launchers()
    for found in _edge_errors(launchers):
        share = found["share_of_bound"]
        rows.append(
            check_row(
                f"{found['variant']} {found['shape']}",
                share <= 1,
                f"worst element {share:.3f} of its error bound",
            )
        )
    table = pd.DataFrame(rows, columns=["check", "passed", "detail"])
    table.attrs["left_out"] = gated
    return table
