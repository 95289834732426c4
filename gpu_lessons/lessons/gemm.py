"""Lesson 6: FP32 GEMM, from naive to near cuBLAS, in Numba (the notes' "GEMM 的分块与数据复用").

The experiment: every step of ``kernels.gemm_steps`` (one change each), and a small visible
autotuning search over tile shapes, timed against cuBLAS SGEMM (CuPy ``a @ b``, TF32 off) in the
same run, at square and awkward shapes. Every result is checked against a float64 reference: the
error must stay within what FP32 accumulation over K allows, |C - C64| <= K u (|A||B|), u = 2^-24.

Sizes are keyed by M*N*K in the tidy table's ``size`` column (``SHAPES`` names them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..kernels import gemm_codegen as codegen
from ..kernels import gemm_steps as steps
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

NAME = "gemm"
TITLE = "GEMM: tiling and data reuse, from naive to near cuBLAS"
NOTEBOOK = "06_gemm_tiling.ipynb"
SUMMARY = "FP32 GEMM one change at a time: coalescing, shared and register tiles, 16-byte loads, unsigned " \
          "indices, unrolling, pipelining, 8x16 micro-tiles; a visible tile search; cuBLAS in the same run"

UNIT_ROUNDOFF = 2.0**-24  # float32

SHAPES: dict[str, tuple[int, int, int]] = {  # name: (M, N, K)
    "128^3": (128, 128, 128),
    "1024^3": (1024, 1024, 1024),
    "2048^3": (2048, 2048, 2048),
    "4096^3": (4096, 4096, 4096),
    "8192^3": (8192, 8192, 8192),
    "4095x4097x1023": (4095, 4097, 1023),
    "16384x64x4096": (16384, 64, 4096),
}
AWKWARD = "4095x4097x1023"
# The slow early steps are left out of the big shapes, so that measure() stays near three minutes.
SLOW_STEPS = ("naive_uncoalesced", "naive", "shared_tiled")
MID_STEPS = ("register_1d", "register_2d", "register_2d_uint64")
SLOW_SHAPES = ("128^3", "1024^3", "2048^3")
MID_SHAPES = (*SLOW_SHAPES, AWKWARD, "4096^3")

# Autotuning in plain sight: tile shapes tried beside steps 11 and 12 (every one is the same
# generated kernel with other constants). The table shows each candidate's GFLOP/s.
TUNE_TILES = [
    # step 12's tile 16 deep: half the barriers per K; pad 0 so that two buffers fit the 48 KiB of
    # static shared memory (pad 4 would need 49,664 bytes); 255 registers on the H200, no spills
    codegen.Tile(bn=256, tn=16, bk=16, max_registers=None, pad=0),
    codegen.Tile(bk=16),
    codegen.Tile(group_m=8),
    codegen.Tile(bn=64, tn=4),
    codegen.Tile(bm=64, bn=64, tm=4, tn=4),
    codegen.Tile(bm=32, bn=32, tm=4, tn=4, lanes_m=4),  # 64 threads: for small matrices
]
TUNE_SHAPES = ("128^3", "1024^3", "2048^3", "4096^3", "8192^3", "16384x64x4096")


def size_of(shape: str) -> int:
    m, n, k = SHAPES[shape]
    return m * n * k


SHAPE_OF_SIZE = {size_of(name): name for name in SHAPES}


def tile_name(tile: codegen.Tile) -> str:
    name = f"tile {tile.bm}x{tile.bn}x{tile.bk} {tile.tm}x{tile.tn}"
    if tile.pad != 4:  # 4: the conflict-free layout's padding (step 9 on)
        name += f" pad {tile.pad}"
    if not tile.double_buffer:
        name += " single-buffered"
    if tile.group_m:
        name += f" grouped {tile.group_m}"
    return name


TUNE = {tile_name(t): t for t in TUNE_TILES}


def _comparison(shape: str) -> Comparison:
    """Our best kernel at one shape (any step or tile candidate) against cuBLAS, same run."""
    return Comparison(title=f"FP32 GEMM {shape} (best Numba kernel)", lesson=NAME, metric="gflops",
                      reference="cublas sgemm", size=size_of(shape))


COMPARISONS = [_comparison(s) for s in ("4096^3", "2048^3", AWKWARD, "8192^3", "16384x64x4096", "1024^3",
                                         "128^3")]


# At the awkward shape a 16-byte kernel runs its 4-byte twin (rows of A and B are not 16-byte
# aligned): time it there for the last two steps only (each twin is one more big compile), and
# 8192^3 for those and the tile candidates (measure() stays near three minutes on the H200).
FINAL_STEPS = ("register_cap", "big_tile")
FAST_SHAPES = ("128^3", "1024^3", "2048^3", "4096^3", "16384x64x4096")
# The order shapes are measured in: the ones the targets name first.
MEASURE_ORDER = ("4096^3", "2048^3", AWKWARD, "128^3", "16384x64x4096", "1024^3", "8192^3")


def shapes_for(name: str) -> tuple[str, ...]:
    if name in SLOW_STEPS:
        return SLOW_SHAPES
    if name in MID_STEPS:
        return MID_SHAPES
    if name in TUNE:  # small tiles are for small or skinny matrices: not at 8192^3
        return tuple(s for s in TUNE_SHAPES if TUNE[name].bm >= 128 or s != "8192^3")
    if name in FINAL_STEPS:
        return tuple(SHAPES)
    return FAST_SHAPES


def source_excerpt(source: str, fmas: int = 8) -> str:
    """A generated kernel's source with its unrolled compute shortened for reading: the first k-step
    keeps its shared loads and its first ``fmas`` FMAs; every other line of the unrolled k-steps is
    replaced by one comment saying how many lines it stands for. Everything else is verbatim."""
    out: list[str] = []
    run: list[str] = []  # consecutive compute lines (shared loads of fa/fb, FMAs)
    first_step_done = False

    def flush():
        nonlocal first_step_done
        if not run:
            return
        indent = run[0][: len(run[0]) - len(run[0].lstrip())]
        kept = 0
        if not first_step_done:
            starts = [i for i, line in enumerate(run) if line.lstrip().startswith("fa0,")]
            end = starts[1] if len(starts) > 1 else len(run)
            step_lines = run[:end]
            loads = [line for line in step_lines if "cuda.fma" not in line]
            ffma = [line for line in step_lines if "cuda.fma" in line]
            out.extend(loads + ffma[:fmas])
            if len(ffma) > fmas:
                out.append(f"{indent}# ... {len(ffma) - fmas} more FMAs of this k-step")
            kept, first_step_done = end, True
        if len(run) > kept:
            out.append(f"{indent}# ... {len(run) - kept} more lines: the next k-steps, written out the "
                       "same way (the shared-tile offsets + U(kk) * row length)")
        run.clear()

    for line in source.splitlines():
        body = line.lstrip()
        if "cuda.fma(" in body or (body.startswith(("fa", "fb")) and "load4_shared" in body):
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ counting, for the narrative


def naive_intensity(k: int) -> float:
    """One thread per output, no reuse: K FMAs (2K FLOP) for 2K floats read and one written."""
    return 2 * k / (8 * k + 4)


def cta_intensity(bm: int, bn: int) -> float:
    """The notes' CTA tile intensity: 2 B_M B_N B_K / 4 (B_M B_K + B_K B_N) = B_M B_N / 2 (B_M + B_N)."""
    return bm * bn / (2 * (bm + bn))


def ideal_intensity(m: int, n: int, k: int) -> float:
    """Every input read once and C written once: 2MNK / 4(MK + KN + MN)."""
    return 2 * m * n * k / (4 * (m * k + k * n + m * n))


def step_intensity(name: str, k: int = 4096) -> float:
    if name in TUNE:
        return cta_intensity(TUNE[name].bm, TUNE[name].bn)
    step = steps.step(name)
    return naive_intensity(k) if step.cta is None else cta_intensity(*step.cta)


def fp32_error_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bound on a float32 dot product's error over K terms: K u (|A| |B|)."""
    return a.shape[1] * UNIT_ROUNDOFF * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def error_report(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict:
    """Relative (Frobenius) error against float64, and the worst element's share of the bound."""
    reference = a.astype(np.float64) @ b.astype(np.float64)
    diff = np.abs(c.astype(np.float64) - reference)
    bound = fp32_error_bound(a, b)
    norm = np.linalg.norm(reference)
    return {"relative_error": float(np.linalg.norm(diff) / norm) if norm else float(np.linalg.norm(diff)),
            "worst_share_of_bound": float(np.max(diff / np.where(bound > 0, bound, np.inf), initial=0.0)),
            "finite": bool(np.isfinite(c).all())}


# ----------------------------------------------------------------------------- experiment


def _launcher(name: str):
    if name in TUNE:
        tile = TUNE[name]
        return lambda a, b, c: codegen.launch(tile, a, b, c)
    return steps.step(name).launch


LAST_ERRORS: pd.DataFrame | None = None  # the errors measure() saw, per variant and shape


def measure(show_progress: bool = True, after_shape=None) -> pd.DataFrame:
    """Time every step and tile candidate against cuBLAS on the GPU; returns the tidy table.

    Every result is checked against float64 on sampled rows (AssertionError past the FP32 bound);
    the errors are kept in ``LAST_ERRORS`` (benchmarks/gemm_gpu.py records them).
    ``after_shape(table)``, when given, sees the table so far after each shape.
    """
    global LAST_ERRORS
    from ..results import make_table

    rows, errors = [], []
    for shape in progress(list(MEASURE_ORDER), NAME) if show_progress else MEASURE_ORDER:
        _measure_shape(shape, rows, errors)
        LAST_ERRORS = pd.DataFrame(errors)
        if after_shape is not None:
            after_shape(make_table(rows))
    return make_table(rows)


def _measure_shape(shape: str, rows: list, errors: list) -> None:
    import cupy as cp
    from numba import cuda

    from ..bench import input_sets_needed
    from ..device import device_info
    from ..kernels.util import poison

    m, n, k = SHAPES[shape]
    l2_bytes = int(device_info().l2_mib * 2**20)
    generator = cp.random.default_rng(2026)
    sets = input_sets_needed(4 * (m * k + k * n + m * n), l2_bytes, most=16)
    a = [generator.standard_normal((m, k), dtype=cp.float32) for _ in range(sets)]
    b = [generator.standard_normal((k, n), dtype=cp.float32) for _ in range(sets)]
    c = [cp.empty((m, n), cp.float32) for _ in range(sets)]
    common = dict(size=m * n * k, bytes_moved=4 * (m * k + k * n + m * n), flops=2 * m * n * k,
                  input_sets=sets)
    rows.append(timed_row(NAME, "cublas sgemm", lambda s: cp.matmul(a[s], b[s], out=c[s]),
                          provider="cublas", **common))
    errors.append(_checked("cublas sgemm", shape, a[0], b[0], c[0], limit=1.0))
    da, db, dc = ([cuda.as_cuda_array(x) for x in xs] for xs in (a, b, c))
    for name in [s.name for s in steps.STEPS] + list(TUNE):
        if shape not in shapes_for(name):
            continue
        for out in dc:
            poison(out)
        launch = _launcher(name)
        rows.append(timed_row(NAME, name, lambda s, f=launch: f(da[s], db[s], dc[s]), **common))
        if not all(bool(cp.isfinite(x).all()) for x in c):
            raise AssertionError(f"{name} at {shape} left outputs unwritten (NaN poison remains)")
        errors.append(_checked(name, shape, a[0], b[0], c[0], limit=1.0))


def _checked(name, shape, a, b, c, limit, sample_rows=16):
    """Sampled rows against float64 (on the GPU); raises past ``limit`` times the FP32 bound."""
    import cupy as cp

    rows = cp.asarray(np.random.default_rng(0).choice(a.shape[0], min(a.shape[0], sample_rows),
                                                      replace=False))
    a64, b64 = a[rows].astype(cp.float64), b.astype(cp.float64)
    reference = a64 @ b64
    diff = cp.abs(c[rows].astype(cp.float64) - reference)
    bound = a.shape[1] * UNIT_ROUNDOFF * (cp.abs(a64) @ cp.abs(b64))
    share = float(cp.max(diff / bound))
    relative = float(cp.linalg.norm(diff) / cp.linalg.norm(reference))
    if not share <= limit:
        raise AssertionError(f"{name} at {shape}: error {share:.2f}x the FP32 bound K*u*|A||B|")
    if name == "cublas sgemm" and not relative < 1e-5:  # TF32 would land near 3e-4
        raise AssertionError(f"cuBLAS SGEMM relative error {relative:.1e}: TF32 on, or wrong result")
    return {"variant": name, "shape": shape, "relative_error": relative, "worst_share_of_bound": share}


# ------------------------------------------------------------------------- reading the table


def with_shapes(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its shape's name, and each row's fraction of cuBLAS at the same shape."""
    out = table.copy()
    out["shape"] = out["size"].map(SHAPE_OF_SIZE)
    reference = out[out["variant"] == "cublas sgemm"].set_index("size")["gflops"]
    out["of_cublas"] = out["gflops"] / out["size"].map(reference)
    return out


def progression(table: pd.DataFrame) -> pd.DataFrame:
    """Steps (rows, teaching order) by shape (columns): fraction of cuBLAS in the same run."""
    t = with_shapes(table)
    order = [s.name for s in steps.STEPS]
    t = t[t["variant"].isin(order)]
    wide = t.pivot_table(index="variant", columns="shape", values="of_cublas")
    return wide.reindex(index=order, columns=[s for s in SHAPES if s in wide.columns])


def gflops_table(table: pd.DataFrame) -> pd.DataFrame:
    t = with_shapes(table)
    order = ["cublas sgemm"] + [s.name for s in steps.STEPS] + list(TUNE)
    wide = t.pivot_table(index="variant", columns="shape", values="gflops")
    return wide.reindex(index=[v for v in order if v in wide.index],
                        columns=[s for s in SHAPES if s in wide.columns])


SEARCH_STEPS = {"register_cap": 11, "big_tile": 12}  # the steps whose tiles are points of the search


def search_label(variant: str) -> str:
    """A search row's name: the tile, and the step number where the tile is a step."""
    if variant in SEARCH_STEPS:
        return f"{tile_name(steps.step(variant).tile)} (step {SEARCH_STEPS[variant]})"
    return variant


def autotune_table(table: pd.DataFrame, values: str = "gflops") -> pd.DataFrame:
    """The visible search: steps 11 and 12's tiles and every candidate, by shape (GFLOP/s, or
    ``values="of_cublas"``). The candidates were not timed at the awkward shape (each would need its
    4-byte twin compiled); steps 11 and 12 were."""
    t = with_shapes(table)
    names = [*SEARCH_STEPS, *TUNE]
    t = t[t["variant"].isin(names)]
    wide = t.pivot_table(index="variant", columns="shape", values=values)
    columns = [s for s in (*TUNE_SHAPES, AWKWARD) if s in wide.columns]
    wide = wide.reindex(index=[n for n in names if n in wide.index], columns=columns)
    wide.index = [search_label(v) for v in wide.index]
    return wide


def search_winners(table: pd.DataFrame) -> pd.DataFrame:
    """The search's winner at each shape it ran at (measured rows, not a fixed choice), its
    GFLOP/s, fraction of cuBLAS, and the runner-up's fraction."""
    fractions = autotune_table(table, "of_cublas")
    rows = []
    for shape in fractions.columns:
        ranked = fractions[shape].dropna().sort_values(ascending=False)
        rows.append({"shape": shape, "winner": ranked.index[0], "of_cublas": float(ranked.iloc[0]),
                     "runner-up": ranked.index[1] if len(ranked) > 1 else None,
                     "runner-up of_cublas": float(ranked.iloc[1]) if len(ranked) > 1 else None})
    return pd.DataFrame(rows).set_index("shape")


def tile_of(variant: str) -> codegen.Tile:
    """The generated tile behind a variant name (a generated step or a tile candidate)."""
    if variant in TUNE:
        return TUNE[variant]
    tile = steps.step(variant).tile
    if tile is None:
        raise KeyError(f"{variant!r} is a hand-written step, not a generated tile")
    return tile


def best_per_shape(table: pd.DataFrame) -> pd.DataFrame:
    """For each shape: our best kernel (any step or tile candidate) and its fraction of cuBLAS."""
    t = with_shapes(table)
    ours = t[t["provider"] == "gpu_lessons"]
    best = ours.loc[ours.groupby("shape")["gflops"].idxmax()]
    out = best[["shape", "variant", "gflops", "of_cublas"]].set_index("shape")
    out["cublas_gflops"] = t[t["variant"] == "cublas sgemm"].set_index("shape")["gflops"]
    return out.reindex([s for s in SHAPES if s in out.index])


TARGETS = {"4096^3": 0.85, "2048^3": 0.75, AWKWARD: 0.70}  # issue 11: fraction of cuBLAS, same run


def targets(table: pd.DataFrame) -> pd.DataFrame:
    """The lesson's targets against the recording: our best kernel's fraction of cuBLAS per shape."""
    best = best_per_shape(table)
    rows = [{"shape": shape, "target": target, "best kernel": best.loc[shape, "variant"],
             "fraction of cuBLAS": float(best.loc[shape, "of_cublas"]),
             "met": bool(best.loc[shape, "of_cublas"] >= target)}
            for shape, target in TARGETS.items() if shape in best.index]
    return pd.DataFrame(rows).set_index("shape")


# On the roofline: one point per tiling (the 128x128 steps between these sit on the same vertical)
ROOFLINE_STEPS = ("naive_uncoalesced", "naive", "shared_tiled", "register_1d", "register_2d",
                  "register_2d_uint64", "register_cap", "big_tile")


def roofline_points(table: pd.DataFrame, shape: str = "4096^3", names=ROOFLINE_STEPS) -> pd.DataFrame:
    """Steps at one shape (the slow ones at 2048^3), x = the notes' intensity of their tiling."""
    t = with_shapes(table)
    points = []
    for step in (steps.step(name) for name in names):
        where = shape if shape in shapes_for(step.name) else "2048^3"
        row = t[(t["variant"] == step.name) & (t["shape"] == where)]
        if row.empty:
            continue
        k = SHAPES[where][2]
        kind = "naive (no reuse)" if step.cta is None else f"CTA tile {step.cta[0]}x{step.cta[1]}"
        points.append({"label": step.name, "intensity": step_intensity(step.name, k),
                       "gflops": float(row["gflops"].iloc[0]), "kind": kind})
    ref = t[(t["variant"] == "cublas sgemm") & (t["shape"] == shape)]
    if not ref.empty:
        points.append({"label": "cuBLAS", "intensity": ideal_intensity(*SHAPES[shape]),
                       "gflops": float(ref["gflops"].iloc[0]), "kind": "cuBLAS (ideal reuse)"})
    return pd.DataFrame(points)


def figures(table: pd.DataFrame, ceilings: dict, provenance: str, datasheet: dict | None = None) -> dict:
    from .. import plots

    return {
        "progression": plots.gemm_progression(progression(table), shapes=["2048^3", "4096^3"],
                                              provenance=provenance),
        "roofline": plots.roofline(ceilings["bandwidth_gbps"], ceilings["peak_gflops"],
                                   points=roofline_points(table), datasheet=datasheet,
                                   provenance=provenance, title="GEMM steps on the roofline (4096^3)"),
    }


# ------------------------------------------------------------------ recorded GPU evidence


def evidence_path(gpu: str = "nvidia-h200") -> Path:
    from ..results import data_root

    return data_root() / gpu / "gemm_evidence.json"


def load_evidence(gpu: str = "nvidia-h200") -> dict:
    """Registers, shared and local memory, SASS summaries and ncu counters per kernel, recorded on
    the GPU by benchmarks/gemm_gpu.py (with its provenance under "meta")."""
    return json.loads(evidence_path(gpu).read_text())


def load_probe(gpu: str = "nvidia-h200") -> tuple[pd.DataFrame, dict]:
    """The probe run (benchmarks/gemm_probe.py) that chose the steps: candidates the lesson does not
    re-measure (warp tiling, launch bounds, 4-byte-load variants), each beside cuBLAS in that run."""
    from ..results import data_root

    folder = data_root() / gpu
    meta = json.loads((folder / "gemm_probe.meta.json").read_text())
    return pd.read_csv(folder / "gemm_probe.csv"), meta


def threads_per_block(kernel: str) -> int:
    """Threads per block of a step, a tile candidate or a probe variant (by the evidence's names)."""
    name = kernel.split(" (")[0]
    if name in TUNE:
        return TUNE[name].threads
    if name in steps.BY_NAME:
        step = steps.step(name)
        if step.tile is not None:
            return step.tile.threads
        return {"register_1d": 512}.get(name, 256)  # naive: 32 x 8, shared_tiled: 16 x 16, 2-D: 256
    return 256  # the probe's variants of the 128x128 tile


def resources_table(evidence: dict) -> pd.DataFrame:
    """Per kernel: registers, shared and local memory (spills), occupancy (lesson 2's calculator,
    from the recorded registers and shared memory), SASS instruction mix of the hot loop."""
    from ..occupancy import occupancy

    rows = []
    for name, info in evidence["kernels"].items():
        sass = info.get("sass", {})
        memory = sass.get("loop_memory", {})
        threads = threads_per_block(name)
        occ = occupancy(threads, info["registers"], info["shared_bytes"])
        rows.append({
            "kernel": name, "threads": threads, "registers": info.get("registers"),
            "shared_bytes": info.get("shared_bytes"), "local_bytes": info.get("local_bytes"),
            "blocks/SM": occ.blocks_per_sm, "warps/SM": occ.warps_per_sm, "limited by": occ.limiter,
            "hot_loop_ffma_share": sass.get("loop_ffma_share"),
            "hot_loop_instructions": sass.get("loop_instructions"),
            "LDS.128": memory.get("LDS.128", 0), "LDS": memory.get("LDS", 0),
            "LDG.E.128": sass.get("memory", {}).get("LDG.E.128", 0),
            "spill_ops (LDL/STL)": sass.get("spill_ops"),
            "recorded by": info.get("from", "the recording's run"),
        })
    return pd.DataFrame(rows).set_index("kernel")


def waves(evidence: dict, names=("register_cap", "big_tile"), shapes=("2048^3", "4096^3", "8192^3", AWKWARD),
          sms: int | None = None) -> pd.DataFrame:
    """Blocks, resident blocks per SM (lesson 2's calculator on the recorded registers and shared
    memory of the twin that runs there) and waves per grid; ``filled``: the share of SM slots the
    waves keep busy (the last wave's idle slots are lost time when blocks take equal time)."""
    from ..occupancy import occupancy

    sms = sms or int(evidence.get("meta", {}).get("sms", 0)) or None
    if sms is None:
        raise ValueError("the evidence has no SM count (meta.sms): pass sms=")
    rows = []
    for name in names:
        tile = tile_of(name)
        for shape in shapes:
            m, n, k = SHAPES[shape]
            vector = k % 4 == 0 and n % 4 == 0
            kernel = evidence.get("kernels", {}).get(name if vector else f"{name} (4-byte loads)")
            if kernel is None:
                continue
            per_sm = occupancy(tile.threads, kernel["registers"], kernel["shared_bytes"]).blocks_per_sm
            blocks = -(-n // tile.bn) * -(-m // tile.bm)
            w = blocks / (per_sm * sms)
            rows.append({"kernel": name, "shape": shape, "loads": "16-byte" if vector else "4-byte",
                         "blocks": blocks, "blocks/SM": per_sm, "waves": w, "filled": w / np.ceil(w)})
    return pd.DataFrame(rows).set_index(["kernel", "shape"])


def per_k_step(tiles: dict) -> pd.DataFrame:
    """Counted from the tiles (what the generator writes): per thread and k-step, the FMAs and the
    16-byte shared loads that feed them; per block and k-tile, the FMAs between two barriers."""
    rows = []
    for label, t in tiles.items():
        loads = (t.tm + t.tn) // 4
        rows.append({"tile": label, "block tile": f"{t.bm}x{t.bn}x{t.bk}", "per thread": f"{t.tm}x{t.tn}",
                     "threads": t.threads, "FFMA per k-step": t.tm * t.tn, "LDS.128 per k-step": loads,
                     "FFMA per LDS.128": t.tm * t.tn / loads,
                     "FFMA per thread per k-tile": t.bk * t.tm * t.tn,
                     "I_CTA (FLOP/byte)": cta_intensity(t.bm, t.bn)})
    return pd.DataFrame(rows).set_index("tile")


NCU_SHORT = {  # short names for the Nsight Compute metrics the checklist quotes
    "long_scoreboard": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "mio_throttle": "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "warps_active": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "issue_active": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "fma_pipe": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "thread_ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
}


def _ncu(evidence: dict, step: str, short: str):
    return evidence.get("ncu", {}).get(step, {}).get(NCU_SHORT[short])


def _fmt(value, spec: str = ".0f", suffix: str = "") -> str:
    return "not recorded" if value is None else f"{value:{spec}}{suffix}"


def _observation(step: str, previous: str, evidence: dict) -> str:
    """What the previous step's counters, resources or SASS showed (recorded on the GPU)."""
    loop, kernel = _loop(evidence, previous), evidence.get("kernels", {}).get(previous, {})
    memory = loop.get("loop_memory", {})
    share = _fmt(loop.get("loop_ffma_share"), ".0%")

    def ncu(short, spec=".1f", suffix=""):
        return _fmt(_ncu(evidence, previous, short), spec, suffix)

    if step == "naive":
        sectors, requests = _ncu(evidence, previous, "sectors"), _ncu(evidence, previous, "requests")
        per = sectors / requests if sectors is not None and requests else None
        return f"ncu: {_fmt(per, '.1f')} sectors per global load request (lanes 32 rows apart)"
    if step == "shared_tiled":
        requests, ffma = _ncu(evidence, previous, "requests"), _ncu(evidence, previous, "thread_ffma")
        per = 32 * requests / ffma if requests and ffma else None
        return (f"ncu: {_fmt(per, '.1f')} global loads per FMA; issue slots {ncu('issue_active', '.0f', '%')}"
                f" busy, FMA pipe {ncu('fma_pipe', '.0f', '%')}: every element is re-read K times")
    if step == "register_2d":
        return (f"ncu: issue slots {ncu('issue_active', '.0f', '%')} busy but FMA pipe "
                f"{ncu('fma_pipe', '.0f', '%')}: the SM issues other instructions, not FMAs; hot loop "
                f"{share} FFMA")
    if step == "register_1d":
        loads = memory.get("LDS", 0) + memory.get("LDS.128", 0)
        return (f"SASS hot loop: {loads} shared loads for {loop.get('loop_ffma', 0)} FFMA ({share} "
                f"FFMA); ncu: {ncu('mio_throttle')} warps stalled on the shared-memory queue per issue")
    if step == "register_2d_uint64":
        top = dict(loop.get("top", []))
        return (f"SASS: {loop.get('instructions', 'n/a')} instructions, {top.get('SEL', 0)} SEL, "
                f"{top.get('BRA', 0)} BRA (negative-index wraparound); hot loop {share} FFMA")
    if step == "vector_loads":
        return (f"SASS: {loop.get('memory', {}).get('LDG.E', 0)} 4-byte global loads per tile, no "
                f"LDG.E.128; {memory.get('LDS', 0)} scalar LDS in the hot loop")
    if step == "unrolled":
        per_loop = loop.get("loop_ffma", 0) // 64  # 64 FMAs (8 x 8) per k-step
        return (f"SASS: NVVM unrolled {per_loop} of the 8 k-steps: a loop of {loop.get('loop_instructions')} "
                f"instructions, {share} FFMA")
    if step == "conflict_free":
        return (f"ncu: {ncu('conflicts_ld', ',.0f')} shared-load and {ncu('conflicts_st', ',.0f')} "
                "shared-store bank conflicts")
    if step == "double_buffer":
        return (f"SASS: {memory.get('BAR.SYNC.DEFER_BLOCKING', 0)} barriers per tile, each after the "
                "tile's loads: every warp waits for global memory, then again before the next load")
    if step == "register_cap":
        return (f"resources: {kernel.get('registers', 'n/a')} registers per thread x 256 threads: one "
                "block per SM (65,536 registers), 8 warps to hide latency")
    if step == "big_tile":
        tile = steps.step(previous).tile
        k_steps = loop.get("loop_ffma", 0) // (tile.tm * tile.tn) or None
        per_step = _fmt(memory.get("LDS.128", 0) / k_steps if k_steps else None, ".0f")
        return (f"SASS: each k-step {tile.tm * tile.tn} FFMA per {per_step} LDS.128, hot loop {share} "
                f"FFMA; ncu: FMA pipe {ncu('fma_pipe', '.0f', '%')} with issue slots "
                f"{ncu('issue_active', '.0f', '%')} busy: more FMAs per load and per loop, not more warps")
    return ""


def _resources_note(step: str, evidence: dict) -> str:
    """What the resource report and the SASS say of a step's own kernel (for the steps whose point
    is registers and occupancy): appended to the checklist's "what moved"."""
    kernel = evidence.get("kernels", {}).get(step)
    if step not in ("register_cap", "big_tile") or not kernel:
        return ""
    from ..occupancy import occupancy

    tile = steps.step(step).tile
    occ = occupancy(tile.threads, kernel["registers"], kernel["shared_bytes"])
    sass = kernel.get("sass", {})
    return (f"; {kernel['registers']} registers, {sass.get('spill_ops', 'n/a')} spill ops, "
            f"{occ.blocks_per_sm} block(s) = {occ.warps_per_sm} warps/SM, hot loop "
            f"{_fmt(sass.get('loop_ffma_share'), '.0%')} FFMA")


def _loop(evidence: dict, step: str) -> dict:
    return evidence.get("kernels", {}).get(step, {}).get("sass", {})


def checklist(table: pd.DataFrame, evidence: dict) -> pd.DataFrame:
    """The notes' checklist applied: per step, what the previous step showed (a counter, the
    resource report or SASS, recorded on the GPU), the change, and what moved (same run)."""
    t = with_shapes(table)
    rows, previous = [], None
    for step in steps.STEPS:
        shape = "4096^3" if "4096^3" in shapes_for(step.name) else "2048^3"
        if previous is not None and shape not in shapes_for(previous.name):
            shape = "2048^3"

        def gflops(name, shape=shape):
            hit = t[(t["variant"] == name) & (t["shape"] == shape)]
            return float(hit["gflops"].iloc[0]) if len(hit) else None

        now = gflops(step.name)
        before = gflops(previous.name) if previous is not None else None
        moved = f"{_fmt(now, ',.0f')} GFLOP/s ({shape})"
        if previous is not None:
            moved = f"{_fmt(before, ',.0f')} -> " + moved + _resources_note(step.name, evidence)
        seen = _observation(step.name, previous.name, evidence) if previous is not None else "baseline"
        rows.append({"step": step.name, "observation (previous step, on the GPU)": seen,
                     "change": step.change, "what moved": moved,
                     "speed-up": now / before if now and before else None})
        previous = step
    harness = _harness_row()
    if harness is not None:
        rows.append(harness)
    return pd.DataFrame(rows).set_index("step")


def load_spin_check(gpu: str = "nvidia-h200") -> tuple[dict, dict]:
    """The timing harness check (benchmarks/bench_spin_check.py): the spin before each timed launch,
    old (nanosleep) and new (%globaltimer), and kernels timed with each; with its provenance."""
    from ..results import data_root

    folder = data_root() / gpu / "probes"
    return (json.loads((folder / "bench_spin_check.json").read_text()),
            json.loads((folder / "bench_spin_check.meta.json").read_text()))


def _harness_row() -> dict | None:
    """The checklist's last row: the 2048^3 spread was the timing harness, not the kernels."""
    try:
        check, meta = load_spin_check()
    except FileNotFoundError:
        return None
    ours, ref = check["timings_ms"]["gemm register_cap 2048"], check["timings_ms"]["cublas 2048"]

    def spread(t):  # [median, min, max] -> (max - min) / median
        return (t[2] - t[1]) / t[0]

    def span(t):
        return f"{t[0]:.3f} ms [{t[1]:.3f}, {t[2]:.3f}]"

    return {"step": "timing harness",
            "observation (previous step, on the GPU)":
                f"2048^3 medians of our kernels spread {spread(ours['old_spin']):.0%} run to run, "
                f"cuBLAS's {spread(ref['old_spin']):.0%}; 20 launches back to back: "
                f"{check['timings_ms']['gemm register_cap 2048']['back_to_back_ms']:.3f} ms each",
            "change": "the spin before each timed launch waits on %globaltimer (nanosleep may sleep 0..2x "
                      "the request, and numba's launch then leaked into the events)",
            "what moved": f"register_cap at 2048^3: {span(ours['old_spin'])} -> {span(ours['new_spin'])} "
                          f"(median [min, max], {meta['command']}, git {meta['git_revision']})",
            "speed-up": ours["old_spin"][0] / ours["new_spin"][0]}


# -------------------------------------------------------------------------------- checks

CHECK_SHAPES = [(37, 45, 13), (36, 44, 12), (33, 70, 1)]  # 4-byte path, 16-byte path, K = 1
VECTOR_SHAPE = (36, 44, 12)


def _check_shapes(name: str) -> list:
    """On a GPU each 16-byte kernel's 4-byte twin is a second big compile: check it there only
    where measure() runs it (the simulator checks every path of every step)."""
    from .. import SIMULATED

    generated = name in TUNE or steps.step(name).tile is not None
    if SIMULATED or not generated or AWKWARD in shapes_for(name):
        return CHECK_SHAPES
    return [VECTOR_SHAPE]


def check(shapes=None, names=None) -> pd.DataFrame:
    """Every step (and tile candidate) against a float64 reference on shapes that are no multiple
    of any tile, K = 1 included; the error must stay within the FP32 bound K u |A||B|."""
    rng = np.random.default_rng()
    rows = []
    names = names or [s.name for s in steps.STEPS]
    for m, n, k in shapes or CHECK_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        for name in names:
            if shapes is None and (m, n, k) not in _check_shapes(name):
                continue
            if name in TUNE:
                c = codegen.gemm_generated(a, b, TUNE[name])
            else:
                c = steps.matmul(a, b, name)
            report = error_report(c, a, b)
            ok = report["finite"] and report["worst_share_of_bound"] <= 1.0
            rows.append(check_row(f"{name} {m}x{k} @ {k}x{n}", ok,
                                  f"relative error {report['relative_error']:.1e}, worst element "
                                  f"{report['worst_share_of_bound']:.3f} of the FP32 bound"))
    return pd.DataFrame(rows)


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
