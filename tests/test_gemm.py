"""Lesson 6 (GEMM): every step against float64 on shapes that are no multiple of any tile (K = 1
too), clear errors for bad input, the code generator's contract, the SASS reader, the lesson's
formulas and tables, and its scoreboard rows against the recording."""

import re

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from numba import cuda, float32

from gpu_lessons import sass
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.kernels import gemm_steps as steps
from gpu_lessons.lessons import gemm as lesson
from gpu_lessons.vector import load4_shared, store4_shared

rng = np.random.default_rng()
STEP_NAMES = [s.name for s in steps.STEPS]


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


@pytest.mark.parametrize("name", STEP_NAMES)
def test_step_matches_float64_at_awkward_shapes_and_k1(name):
    # 37x13 @ 13x45: K and N no multiple of 4 (4-byte path); 36x12 @ 12x44: the 16-byte path;
    # 33x1 @ 1x70: K = 1. None is a multiple of any tile.
    for m, k, n in [(37, 13, 45), (36, 12, 44), (33, 1, 70)]:
        a, b = operands(m, k, n)
        report = lesson.error_report(steps.matmul(a, b, name), a, b)
        assert report["finite"] and report["worst_share_of_bound"] <= 1.0, (name, (m, k, n), report)


def test_tile_candidate_matches_float64():
    a, b = operands(70, 20, 68)
    for tile in lesson.TUNE_TILES[2:4]:
        report = lesson.error_report(codegen.gemm_generated(a, b, tile), a, b)
        assert report["worst_share_of_bound"] <= 1.0, (tile, report)


@pytest.mark.simulator_only("on a GPU each twin of this tile is ~40 s of NVVM; there the recording checks "
                             "it against float64 at every shape it times, and the simulator runs the same "
                             "generated source here, partial k-tiles and K = 1 included")
@pytest.mark.parametrize("m, k, n", [(37, 13, 45), (36, 20, 44), (33, 1, 70)])
def test_16_deep_8x16_candidate_matches_float64(m, k, n):
    # the search's 128x256x16 tile (pad 0): 4-byte twin, 16-byte path with a partial k-tile, K = 1
    tile = lesson.TUNE_TILES[0]
    assert (tile.bn, tile.tn, tile.bk, tile.pad) == (256, 16, 16, 0)
    a, b = operands(m, k, n)
    report = lesson.error_report(codegen.gemm_generated(a, b, tile), a, b)
    assert report["finite"] and report["worst_share_of_bound"] <= 1.0, (m, k, n, report)


def test_big_tiles_fit_static_shared_memory():
    # two buffers of A (16 x 128) and B (16 x 256) floats: exactly 48 KiB with pad 0, over with pad 4
    def shared_bytes(tile):
        return 4 * 2 * tile.bk * (tile.bm + tile.pad + tile.bn)

    assert shared_bytes(lesson.TUNE_TILES[0]) == 48 * 1024
    assert shared_bytes(lesson.TUNE_TILES[0].__class__(bn=256, tn=16, bk=16, pad=4)) > 48 * 1024
    assert steps.BIG_TILE.threads == 256 and steps.BIG_TILE.tm * steps.BIG_TILE.tn == 128


def test_k_zero_gives_zeros_and_empty_c_needs_no_launch():
    a, b = operands(5, 0, 6)
    np.testing.assert_array_equal(steps.matmul(a, b, "register_cap"), np.zeros((5, 6), np.float32))
    assert steps.matmul(*operands(0, 3, 4), "register_cap").shape == (0, 4)


@pytest.mark.parametrize("a, b, message", [
    (np.zeros((4, 5), np.float32), np.zeros((4, 5), np.float32), "shape mismatch"),
    (np.zeros((4, 5), np.float64), np.zeros((5, 3), np.float32), "dtype float32"),
    (np.zeros((4, 10), np.float32)[:, ::2], np.zeros((5, 3), np.float32), "C-contiguous"),
    (np.zeros((5, 4), np.float32).T, np.zeros((5, 3), np.float32), "C-contiguous"),
    (np.zeros(5, np.float32), np.zeros((5, 3), np.float32), "2-D"),
])
def test_bad_operands_get_a_clear_error(a, b, message):
    with pytest.raises(InputError, match=message):
        steps.matmul(a, b, "register_cap")


def test_unknown_step_is_named():
    with pytest.raises(InputError, match="unknown GEMM step"):
        steps.matmul(*operands(2, 2, 2), "fastest")


# switches that move together: the layout (step 9), the block and micro-tile widths (step 12)
TOGETHER = {"lanes_m": "layout", "pad": "layout", "bn": "width", "tn": "width", "bm": "height",
            "tm": "height"}


def test_steps_change_one_thing_at_a_time():
    generated = [s for s in steps.STEPS if s.tile is not None]
    for before, after in zip(generated, generated[1:], strict=False):
        changed = {TOGETHER.get(f, f) for f in before.tile.__dataclass_fields__
                   if getattr(before.tile, f) != getattr(after.tile, f)}
        # step 12's 235 registers cannot keep step 11's cap of 128: the cap goes with the new tile
        allowed = 2 if after.name == "big_tile" and "max_registers" in changed else 1
        assert 1 <= len(changed) <= allowed, (before.name, after.name, changed)


def test_generated_source_keeps_to_unsigned_arithmetic():
    # every integer constant is wrapped in U(...): a bare int meeting a uint64 would give float64
    source = codegen.kernel_source(steps.REGISTER_CAP_TILE)
    code = [line.split("#")[0] for line in source.splitlines() if "shared.array" not in line]
    offenders = [line for line in code if re.search(r"[-+*/%<>] *\d", line)]
    assert not offenders, offenders[:3]
    assert source.count("cuda.fma") == 8 * 8 * 8  # BK x TM x TN, written out
    assert "load4_shared" in source and "store4_shared" in source and "load4(a" in source


def test_source_excerpt_keeps_everything_but_the_repeated_k_steps():
    source = codegen.kernel_source(lesson.TUNE_TILES[0], "best")
    excerpt = lesson.source_excerpt(source, fmas=8)
    assert excerpt.count("cuda.fma") == 8 and "# ... 120 more FMAs of this k-step" in excerpt
    fmas = 16 * 8 * 16  # BK x TM x TN
    loads = 16 * 6  # 2 of A, 4 of B per k-step
    assert f"# ... {fmas + loads - 128 - 6} more lines" in excerpt
    kept = [line for line in source.splitlines() if "cuda.fma" not in line and "load4_shared" not in line]
    assert all(line in excerpt.splitlines() for line in kept)  # nothing else is left out


def test_rolled_tile_keeps_its_loop_and_scalar_twin_uses_4_byte_loads():
    assert "for kk in range(U(8))" in codegen.kernel_source(steps.VECTOR_TILE)
    scalar = codegen.kernel_source(steps.REGISTER_CAP_TILE.scalar())
    assert "load4(" not in scalar and "store4(" not in scalar


@pytest.mark.parametrize("tile, message", [
    (codegen.Tile(tm=6), "multiples of 4"),
    (codegen.Tile(bm=256, bn=256, tm=4, tn=4), "threads"),
    (codegen.Tile(pad=2), "16-byte"),
    (codegen.Tile(lanes_m=3), "warp"),
])
def test_bad_tiles_are_refused(tile, message):
    with pytest.raises(InputError, match=message):
        codegen.kernel_source(tile)


def test_scalar_twin_is_picked_when_rows_are_not_16_byte_aligned():
    a = np.zeros((8, 6), np.float32)
    b = np.zeros((6, 8), np.float32)
    c = np.zeros((8, 8), np.float32)
    assert not codegen.vector_ok(a, b, c, 6, 8)  # K = 6: rows of A start 24 bytes apart
    a = np.zeros((8, 8), np.float32)
    b = np.zeros((8, 8), np.float32)
    assert codegen.vector_ok(a, b, c, 8, 8) == all(x.ctypes.data % 16 == 0 for x in (a, b, c))


SASS_TEXT = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   LDS.128 R4, [R2] ;
        /*0020*/                   FFMA R8, R4, R5, R8 ;
        /*0030*/                   FFMA R9, R4, R6, R9 ;
        /*0040*/                   NOP ;
        /*0050*/               @P0 BRA `(.L_x_0) ;
        /*0060*/                   STL [R1], R8 ;
        /*0070*/                   EXIT ;
"""


def test_sass_summary_finds_the_hot_loop():
    summary = sass.summary(SASS_TEXT)
    assert summary["instructions"] == 7  # NOPs do not count
    assert summary["loop_instructions"] == 4 and summary["loop_ffma"] == 2
    assert summary["loop_ffma_share"] == 0.5
    assert summary["loop_memory"] == {"LDS.128": 1} and summary["spill_ops"] == 1


def test_intensity_formulas_of_the_notes():
    assert lesson.cta_intensity(16, 16) == 4
    assert lesson.cta_intensity(128, 128) == 32
    assert lesson.naive_intensity(4096) == pytest.approx(0.25, rel=1e-3)
    assert lesson.ideal_intensity(4096, 4096, 4096) == pytest.approx(4096 / 6)


def test_error_bound_catches_a_wrong_result():
    a, b = operands(20, 30, 10)
    c = (a @ b).astype(np.float32)
    assert lesson.error_report(c, a, b)["worst_share_of_bound"] <= 1.0
    c[3, 4] += 1e-3
    assert lesson.error_report(c, a, b)["worst_share_of_bound"] > 1.0


def synthetic_table():
    rows = []
    for shape, (m, n, k) in lesson.SHAPES.items():
        for i, name in enumerate(["cublas sgemm"] + STEP_NAMES + list(lesson.TUNE)):
            if name != "cublas sgemm" and shape not in lesson.shapes_for(name):
                continue
            gflops = 40000.0 if name == "cublas sgemm" else 1000.0 * (i + 1)
            flops = 2 * m * n * k
            ms = flops / gflops / 1e6
            rows.append({"lesson": "gemm", "variant": name,
                         "provider": "cublas" if name == "cublas sgemm" else "gpu_lessons",
                         "size": m * n * k, "param": np.nan, "bytes": 4 * (m * k + k * n + m * n),
                         "flops": flops, "runs": 25, "median_ms": ms, "min_ms": ms, "max_ms": ms})
    from gpu_lessons.results import make_table

    return make_table(rows)


def test_tables_read_the_tidy_table():
    table = synthetic_table()
    fractions = lesson.progression(table)
    assert list(fractions.index) == STEP_NAMES
    assert fractions.loc["naive", "2048^3"] == pytest.approx(3000 / 40000)  # i = 2
    assert np.isnan(fractions.loc["naive", "4096^3"])  # slow steps skip the big shapes
    best = lesson.best_per_shape(table)
    assert best.loc["4096^3", "variant"] == list(lesson.TUNE)[-1]
    tune = lesson.autotune_table(table)
    assert len(tune) == 2 + len(lesson.TUNE)  # steps 11 and 12, then the candidates
    assert list(tune.columns) == [*lesson.TUNE_SHAPES, lesson.AWKWARD]
    assert tune.index[1] == "tile 128x256x8 8x16 (step 12)"
    winners = lesson.search_winners(table)
    assert winners.loc["4096^3", "winner"] == list(lesson.TUNE)[-1]  # the fastest synthetic row
    assert winners.loc[lesson.AWKWARD, "winner"].endswith("(step 12)")  # candidates skip it
    assert lesson.tile_of(list(lesson.TUNE)[0]) == lesson.TUNE_TILES[0]
    assert lesson.tile_of("big_tile") == steps.BIG_TILE
    with pytest.raises(KeyError, match="hand-written"):
        lesson.tile_of("naive")
    goals = lesson.targets(table)
    assert list(goals.index) == list(lesson.TARGETS) and goals["met"].dtype == bool
    points = lesson.roofline_points(table)
    assert set(points["label"]) == set(lesson.ROOFLINE_STEPS) | {"cuBLAS"}


def test_checklist_ends_with_the_timing_harness_from_the_spin_check():
    evidence = lesson.load_evidence()
    table = lesson.checklist(synthetic_table(), evidence)
    assert list(table.index) == STEP_NAMES + ["timing harness"]
    check, _ = lesson.load_spin_check()
    old = check["timings_ms"]["gemm register_cap 2048"]["old_spin"]
    assert f"{old[0]:.3f} ms" in table.loc["timing harness", "what moved"]


def test_figures_draw_from_a_table():
    figures = lesson.figures(synthetic_table(), {"bandwidth_gbps": 4000.0, "peak_gflops": 60000.0}, "test")
    assert set(figures) == {"progression", "roofline"}


def test_scoreboard_rows_fit_the_recording():
    from gpu_lessons import scoreboard
    from gpu_lessons.results import MissingRecordingError, read_recording

    try:
        recording = read_recording("gemm")
    except MissingRecordingError:
        pytest.skip("no gemm recording yet")
    for comparison in lesson.COMPARISONS:
        result = scoreboard.score(recording, comparison)
        assert result["status"] == "ok", result


@cuda.jit
def reverse_groups(x, y):
    """Four float4 groups through shared memory, read back in reverse order."""
    s = cuda.shared.array(16, float32)
    i = cuda.threadIdx.x
    store4_shared(s, i, x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3])
    cuda.syncthreads()
    a, b, c, d = load4_shared(s, 3 - i)
    y[4 * i], y[4 * i + 1], y[4 * i + 2], y[4 * i + 3] = a, b, c, d


def test_load4_shared_and_store4_shared():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    reverse_groups[1, 4](x, y)
    np.testing.assert_array_equal(y, x.reshape(4, 4)[::-1].reshape(-1))


def test_waves_count_blocks_per_sm_from_the_recorded_resources():
    kernel = {"registers": 235, "shared_bytes": 2 * 8 * (132 + 256) * 4, "local_bytes": 0}
    evidence = {"meta": {"sms": 132}, "kernels": {"big_tile": kernel, "big_tile (4-byte loads)": kernel}}
    table = lesson.waves(evidence, names=("big_tile",))
    assert table.loc[("big_tile", "4096^3"), "blocks"] == 16 * 32
    assert table.loc[("big_tile", "4096^3"), "blocks/SM"] == 1  # 235 x 256 registers: one block
    awkward = table.loc[("big_tile", lesson.AWKWARD)]  # 17 x 32 blocks: 4.12 waves -> 5
    assert awkward["loads"] == "4-byte" and awkward["filled"] == pytest.approx(544 / 660)
    with pytest.raises(ValueError, match="SM count"):
        lesson.waves({"kernels": {}})


def test_per_k_step_counts_what_the_generator_writes():
    counts = lesson.per_k_step({"12": steps.BIG_TILE, "11": steps.REGISTER_CAP_TILE})
    assert counts.loc["12", "FFMA per k-step"] == 128 and counts.loc["12", "LDS.128 per k-step"] == 6
    assert counts.loc["11", "FFMA per k-step"] == 64 and counts.loc["11", "LDS.128 per k-step"] == 4
    source = codegen.kernel_source(steps.BIG_TILE)
    assert source.count("cuda.fma") == 8 * 128 and source.count("load4_shared(") == 8 * 6
