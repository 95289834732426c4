"""Lesson 6 (GEMM): steps 11 and 12 and the warp-tiled tile against float64, clear errors for bad
input, the code generator's contract, the SASS reader, the lesson's formulas and tables, the
shared-wavefront model against the tracer and against the H200's counters, the readers of the
recording's evidence, the sections run on the simulator with a stand-in timer, the ncu cases, and
the scoreboard rows against the recording."""

import re

import numpy as np
import pandas as pd
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from numba import cuda, float32

from gpu_lessons import bench, lessons, ncu, occupancy, sass, scoreboard
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.kernels import gemm_steps as steps
from gpu_lessons.lessons import gemm as lesson
from gpu_lessons.lessons import runner
from gpu_lessons.results import Evidence, LessonResult, RecordingError, make_table, read_probe, read_result
from gpu_lessons.vector import load4_shared, store4_shared

rng = np.random.default_rng()
STEP_NAMES = [s.name for s in steps.STEPS]


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


@pytest.fixture(scope="module")
def recording():
    return read_result("gemm")  # the committed H200 recording: a missing one is a failure


# ----------------------------------------------------------------------------- kernels


@pytest.mark.parametrize("name, k", [("register_cap", 12), ("big_tile", 4)])
def test_final_steps_match_float64(name, k):
    # 36 x K @ K x 44: the 16-byte path, edges in M and N; K = 12: two k-tiles, the double buffer swaps
    a, b = operands(36, k, 44)
    report = lesson.error_report(steps.matmul(a, b, name), a, b)
    assert report["finite"] and report["worst_share_of_bound"] <= 1.0, (name, report)


@pytest.mark.simulator_only("on a GPU this tile is ~40 s of NVVM; there the recording checks it against "
                            "float64 at every shape it times; here the simulator runs the same source")
def test_check_runs_the_warp_tiled_tile_against_float64():
    # the new kernel, exactly as the recording times it: 16-byte path, one partial 16-deep k-tile
    checks = lesson.check(names=[lesson.WARP_VARIANT])
    assert list(checks["check"]) == [f"{lesson.WARP_VARIANT} 36x12 @ 12x44"]
    assert checks["passed"].all(), checks


def test_check_shapes_keep_big_twins_off_the_gpu():
    assert lesson.check_shapes_for("register_cap", simulated=False) == lesson.CHECK_SHAPES  # it runs there
    assert lesson.check_shapes_for("unrolled", simulated=False) == [lesson.VECTOR_SHAPE]
    assert lesson.check_shapes_for("unrolled", simulated=True) == lesson.CHECK_SHAPES
    assert lesson.check_shapes_for(lesson.WARP_VARIANT, simulated=True) == [lesson.VECTOR_SHAPE]
    assert lesson.check_shapes_for("naive", simulated=False) == lesson.CHECK_SHAPES


def test_big_tiles_fit_static_shared_memory():
    # two buffers of A (16 x 128) and B (16 x 256) floats: exactly 48 KiB with pad 0, over with pad 4
    def shared_bytes(tile):
        return 4 * 2 * tile.bk * (tile.bm + tile.pad + tile.bn)

    assert shared_bytes(steps.SEARCH_TILE_8X16) == shared_bytes(steps.WARP_TILE_8X16) == 48 * 1024
    assert shared_bytes(codegen.Tile(bn=256, tn=16, bk=16, pad=4)) > 48 * 1024
    assert steps.BIG_TILE.threads == steps.WARP_TILE_8X16.threads == 256


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


# ----------------------------------------------------------------------------- the generator

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


def test_the_warp_tile_differs_from_its_sibling_in_the_lanes_only():
    sibling, warp = steps.SEARCH_TILE_8X16, steps.WARP_TILE_8X16
    changed = [f for f in warp.__dataclass_fields__ if getattr(warp, f) != getattr(sibling, f)]
    assert changed == ["lanes_m", "interleave"] and (warp.lanes_m, warp.interleave) == (4, 2)
    assert lesson.TUNE[lesson.WARP_VARIANT] == warp and lesson.TUNE[lesson.SEARCH_VARIANT] == sibling


def test_generated_source_keeps_to_unsigned_arithmetic():
    # every integer constant is wrapped in U(...): a bare int meeting a uint64 would give float64
    for tile in (steps.REGISTER_CAP_TILE, steps.WARP_TILE_8X16, steps.UNROLLED_TILE):
        source = codegen.kernel_source(tile)
        code = [line.split("#")[0] for line in source.splitlines() if "shared.array" not in line]
        offenders = [line for line in code if re.search(r"[-+*/%<>] *\d", line)]
        assert not offenders, offenders[:3]
    source = codegen.kernel_source(steps.REGISTER_CAP_TILE)
    assert source.count("cuda.fma") == 8 * 8 * 8  # BK x TM x TN, written out
    assert "load4_shared" in source and "store4_shared" in source and "load4(a" in source


@pytest.mark.parametrize("tile", [s.tile for s in steps.STEPS if s.tile is not None] + lesson.TUNE_TILES,
                         ids=lambda t: lesson.tile_name(t))
def test_generated_source_reads_as_written(tile):
    source = codegen.kernel_source(tile)
    assert "// U(1)" not in source and "% U(1)" not in source  # a dimension of one warp is left out
    assert "{" not in source  # no f-string left unformatted
    offsets = [line for line in source.splitlines() if re.match(r"\s+[rc]\d+ = ", line)]
    assert offsets and not [line for line in offsets if "U(0)" in line]  # no zero terms
    rows = ", ".join(f"r{g}..r{g}+3" for g in range(tile.tm // 4))
    assert f"# this thread's outputs: rows {rows} and columns c0..c0+3" in source


def test_warp_tile_source_numbers_lanes_in_pairs():
    source = codegen.kernel_source(steps.WARP_TILE_8X16)
    assert "wm, wn = warp // U(2), warp % U(2)" in source
    assert "lm = lane // U(16) * U(2) + lane % U(2)" in source and "ln = lane // U(2) % U(8)" in source
    assert "wm = warp  # the warps are stacked along M" in codegen.kernel_source(steps.BIG_TILE)


def test_source_excerpt_keeps_everything_but_the_repeated_k_steps():
    source = codegen.kernel_source(steps.SEARCH_TILE_8X16, "best")
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
    (codegen.Tile(interleave=3), "interleave"),
    (codegen.Tile(lanes_m=0, interleave=2), "interleave"),
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


def test_the_record_compiles_two_16_deep_8x16_tiles_and_two_4_byte_twins():
    compiled = lesson.compiled_kernels()
    assert len(compiled) == len(set(compiled)) == len(steps.STEPS) + len(lesson.TUNE) + 2
    twins = [k for k in compiled if "4-byte" in k]
    assert twins == ["register_cap (4-byte loads)", "big_tile (4-byte loads)"]
    deep = [k for k in compiled if k in lesson.TUNE and lesson.TUNE[k].bk == 16 and lesson.TUNE[k].tn == 16]
    assert deep == [lesson.SEARCH_VARIANT, lesson.WARP_VARIANT]
    assert set(lesson.shapes_for(lesson.WARP_VARIANT)) >= {"2048^3", "4096^3", "8192^3"}


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


# --------------------------------------------------------------------------- counting


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


def test_lds128_wavefronts_by_hand():
    lanes = np.arange(32)
    assert lesson.lds128_wavefronts(16 * lanes) == (4, 4)  # 512 distinct bytes: 4 quarter-warps
    assert lesson.lds128_wavefronts(np.zeros(32, int)) == (2, 2)  # one address: pairs, half-warps
    assert lesson.lds128_wavefronts(16 * (lanes // 2)) == (2, 2)  # lanes l, l^1 equal
    assert lesson.lds128_wavefronts(16 * (lanes % 2 + lanes // 4 * 2)) == (2, 2)  # lanes l, l^2 equal
    assert lesson.lds128_wavefronts(32 * lanes) == (8, 4)  # 32-byte stride: 2 words a bank a quarter
    with pytest.raises(ValueError, match="32 lane addresses"):
        lesson.lds128_wavefronts(np.zeros(16))


def test_the_pair_rule_gives_the_h200s_wavefronts(recording):
    # per warp per k-step, at 2048^3: step 8 (contiguous 8x8: 8 conflicts), step 11, step 12
    for case, wavefronts, conflicts in (("unrolled", 20, 8), ("register_cap", 12, 0), ("big_tile", 20, 0)):
        model = lesson.shared_wavefronts_per_k_step(steps.step(case).tile)
        assert model["wavefronts"] == wavefronts and model["bank_conflicts"] == conflicts, case
        measured = lesson.shared_wavefronts_per_warp_k_step(recording.evidence, case)
        assert measured == pytest.approx(wavefronts, abs=0.01), case
    per_k = recording.evidence.ncu_value("unrolled", lesson.NCU_SHORT["conflicts_ld"]) / (256 * 8 * 2048)
    assert per_k == pytest.approx(8, abs=0.01)
    cublas = lesson.shared_wavefronts_per_warp_k_step(recording.evidence, lesson.CUBLAS)
    assert cublas == pytest.approx(12, abs=0.25)  # 12.08 at 2048^3: what the pair rule gives a paired 8x16
    assert lesson.shared_wavefronts_per_k_step(steps.WARP_TILE_8X16)["wavefronts"] == 12


def test_lane_layouts_only_pairs_cut_the_wavefronts():
    layouts = lesson.lane_layouts()
    assert layouts.loc["2x16 (step 12)", "wavefronts per k-step"] == 20
    assert layouts.loc["4x8", "wavefronts per k-step"] == 20  # a 4x8 warp alone changes nothing
    assert layouts.loc["4x8 paired", "wavefronts per k-step"] == 12 == layouts["wavefronts per k-step"].min()
    assert layouts.loc["4x8 paired", "warp tile"] == "32x128"


def test_owners_cover_the_block_tile_once_as_the_generator_writes():
    for tile in (steps.UNROLLED_TILE, steps.BIG_TILE, steps.WARP_TILE_8X16):
        owners = lesson.output_owners(tile)
        counts = np.bincount(owners["thread"].ravel(), minlength=tile.threads)
        assert (counts == tile.tm * tile.tn).all()  # every output once, each thread its micro-tile
    big = lesson.output_owners(steps.BIG_TILE)
    rows, cols = np.nonzero(big["thread"] == 0)
    assert sorted(set(rows)) == [0, 1, 2, 3, 8, 9, 10, 11]  # r0 = lm * 4, r1 = 8 + lm * 4
    assert sorted(set(cols // 4 * 4)) == [0, 64, 128, 192]  # c_h = 64 h + ln * 4
    assert set(big["warp"][16:32].ravel()) == {1}  # warps stacked along M, 16 rows each


def test_bank_map_agrees_with_the_pair_rule():
    for tile in (steps.UNROLLED_TILE, steps.CONFLICT_FREE_TILE, steps.BIG_TILE, steps.WARP_TILE_8X16):
        for key, addresses in lesson.shared_load_addresses(tile).items():
            words = lesson.lds128_bank_map(addresses)
            per_phase = words.groupby("phase")["words_in_bank"].max()
            assert (int(per_phase.sum()), len(per_phase)) == lesson.lds128_wavefronts(addresses), (tile, key)
    step8 = lesson.lds128_bank_map(lesson.shared_load_addresses(steps.UNROLLED_TILE)[("b", 0)])
    assert set(step8.loc[step8["phase"] == 0, "words_in_bank"]) == {2}  # lanes 0 and 4 share bank 0


def test_pipeline_timeline_overlaps_loads_with_fmas_only_with_two_buffers():
    one, two = lesson.pipeline_timeline(4), lesson.pipeline_timeline(4, double_buffer=True)
    assert one["end"].max() == pytest.approx(4 * (0.8 + 0.15 + 1.0))
    assert two["end"].max() == pytest.approx(0.95 + 4 * 1.0 + 3 * 0.15)
    loads, fmas = (two[two["work"] == w].set_index("tile") for w in ("global loads", "FMAs"))
    assert (loads.loc[1:, "start"].to_numpy() == fmas.loc[:2, "start"].to_numpy()).all()  # issued together


def test_source_diff_shows_what_one_switch_changes():
    diff = lesson.source_diff(steps.VECTOR_TILE, steps.UNROLLED_TILE)
    assert "-        for kk in range(U(8)):" in diff and "more lines: the next k-steps" in diff
    assert len(diff.splitlines()) < 25
    folded = lesson.source_diff(steps.CONFLICT_FREE_TILE, steps.DOUBLE_BUFFER_TILE)
    assert "# ... 2 more like it" in folded and "cur, nxt = tile % U(2)" in folded
    assert lesson.source_diff(steps.DOUBLE_BUFFER_TILE, steps.REGISTER_CAP_TILE) == "\n"  # a compiler option
    switches = lesson.tile_switches()
    assert list(switches["changed"]) == ["(first)", "unroll", "lanes_m, pad", "double_buffer",
                                         "max_registers", "max_registers, bn, tn", "pad, bk",
                                         "lanes_m, interleave"]


def test_stalls_and_the_shared_load_schedule_from_the_recording(recording):
    stalls = lesson.stall_table(recording)
    assert list(stalls.columns) == ["register_cap", "big_tile", lesson.CUBLAS]
    assert stalls.loc["barrier", "register_cap"] > stalls.loc["barrier", "big_tile"]  # 0.42 -> 0.13
    assert stalls.loc["issue slots busy (%)", lesson.CUBLAS] > stalls.loc["issue slots busy (%)", "big_tile"]
    for name in (lesson.SEARCH_VARIANT, lesson.WARP_VARIANT):
        loads = lesson.lds_schedule(recording, name)
        first = loads[loads["k_step"] == 0]
        assert sorted(first["operand"]) == ["A", "A", "B", "B", "B", "B"]  # 6 LDS.128 per k-step
        assert sorted(first["group"][first["operand"] == "B"]) == [0, 1, 2, 3]


# one warp per tile with the lanes and micro-tile of step 12 and of the warp tile
ONE_WARP = {"2x16": codegen.Tile(bm=16, bn=256, bk=4, tm=8, tn=16, pad=0, max_registers=None),
            "4x8 paired": codegen.Tile(bm=32, bn=128, bk=4, tm=8, tn=16, lanes_m=4, interleave=2, pad=0,
                                       max_registers=None)}


@pytest.mark.parametrize("label, full", [("2x16", steps.BIG_TILE), ("4x8 paired", steps.WARP_TILE_8X16)])
def test_tracers_lane_addresses_give_the_models_count(label, full):
    traced = lesson.traced_shared_wavefronts(ONE_WARP[label])
    model = lesson.shared_wavefronts_per_k_step(ONE_WARP[label])["wavefronts"]
    assert traced["pair rule"] == model == lesson.shared_wavefronts_per_k_step(full)["wavefronts"]
    assert traced["tracer"] >= traced["pair rule"]  # the tracer's 16-byte model has no pairs


def test_naive_sectors_per_request_is_the_mean_of_a_and_b(recording):
    along_rows, along_columns = (lesson.naive_sectors_per_request(r) for r in (True, False))
    assert (along_rows["a"], along_rows["b"], along_rows["mean"]) == (32, 1, 16.5)
    assert along_columns["mean"] == 2.5
    assert lesson.sectors_per_request(recording.evidence, "naive_uncoalesced") == along_rows["mean"]
    assert lesson.sectors_per_request(recording.evidence, "naive") == along_columns["mean"]


def test_per_k_step_counts_what_the_generator_writes():
    tiles = {"12": steps.BIG_TILE, "11": steps.REGISTER_CAP_TILE, "w": steps.WARP_TILE_8X16}
    counts = lesson.per_k_step(tiles)
    assert counts.loc["12", "FFMA per k-step"] == 128 and counts.loc["12", "LDS.128 per k-step"] == 6
    assert counts.loc["11", "FFMA per k-step"] == 64 and counts.loc["11", "LDS.128 per k-step"] == 4
    assert list(counts["shared wavefronts per warp per k-step"]) == [20, 12, 12]
    source = codegen.kernel_source(steps.BIG_TILE)
    assert source.count("cuda.fma") == 8 * 128 and source.count("load4_shared(") == 8 * 6


# ------------------------------------------------------------- the recording's evidence


def test_counters_say_what_the_lesson_quotes(recording):
    evidence = recording.evidence
    counters = lesson.counter_table(recording)
    assert list(counters.index) == [c for c in lesson.NCU_CASES if c in evidence.ncu]
    # the FP32 rate from the FFMA count (one per multiply-add: M N K of them) over the kernel's time
    ffma, ns = (evidence.ncu_value("big_tile", lesson.NCU_SHORT[m]) for m in ("thread_ffma", "time_ns"))
    assert ffma == 2048**3 and counters.loc["big_tile", "FP32 GFLOP/s (FFMA)"] == pytest.approx(2 * ffma / ns)
    peak = recording.meta["peak_fp32_gflops"]
    assert counters.loc["big_tile", "of FP32 peak"] == pytest.approx(2 * ffma / ns / peak)
    assert 0.5 < counters.loc["big_tile", "of FP32 peak"] < counters.loc[lesson.CUBLAS, "of FP32 peak"] < 1
    # naive -> shared_tiled: as many times fewer instructions (9,677 M -> 1,657 M) as times faster
    bound = lesson.issue_bound(recording)
    assert bound["instructions_before"] > 5 * bound["instructions_after"]
    assert bound["speedup"] == pytest.approx(bound["instruction_ratio"], rel=0.05)


def test_ncu_warps_come_from_the_launch_or_the_kernel_name(recording):
    assert lesson.ncu_warps(recording.evidence, "big_tile") == 8 * 16 * 8  # 8 x 16 blocks of 8 warps
    assert lesson.ncu_warps(recording.evidence, lesson.CUBLAS) == 8 * 16 * 8  # 256x128 tiles, 8 warps
    assert lesson.ncu_warps(recording.evidence, "naive") == 2048 * 2048 // 32
    recorded = {"kernel": "gemm_generated", "source": "run", "grid": [8, 16, 1], "block": [256, 1, 1],
                "metrics": {"x": 1}}
    assert lesson.ncu_warps(Evidence(ncu={"big_tile": recorded}), "big_tile") == 1024
    with pytest.raises(RecordingError, match="no CUTLASS tile"):
        lesson.launch_warps(lesson.CUBLAS, lesson.NCU_SHAPE, "some_other_sgemm_kernel")


def test_checklist_reads_the_evidence_and_ends_with_the_timing_harness(recording):
    spin = read_probe("bench_spin_check")
    table = lesson.checklist(recording, spin)
    assert list(table.index) == STEP_NAMES + ["timing harness"]
    old = spin.data["timings_ms"]["gemm register_cap 2048"]["old_spin"]
    assert f"{old[0]:.3f} ms" in table.loc["timing harness", "what moved"]
    seen = table["observation (previous step, on the GPU)"]
    assert "16.5 sectors per global load request" in seen["naive"]
    assert re.search(r"FFMAs at \d+\.\d% of the FP32 peak", seen["big_tile"])
    assert "36 instructions per FFMA" in seen["shared_tiled"]
    assert "most instructions are not FFMAs" in seen["shared_tiled"]
    assert "11.7% of the FP32 peak" in seen["register_2d"]  # register_1d: not "near a third"
    assert "unrolled the rolled k-loop 2 times" in seen["unrolled"]  # vector_loads' SASS
    assert list(lesson.checklist(recording).index) == STEP_NAMES


def test_a_missing_counter_names_the_file_and_field(recording):
    without = recording.with_evidence(ncu={k: v for k, v in recording.evidence.ncu.items() if k != "naive"})
    with pytest.raises(RecordingError, match=r"gemm.evidence.json: ncu.naive is missing"):
        lesson.checklist(without)


def test_waves_resources_and_errors_from_the_recording(recording):
    waves = lesson.waves(recording)
    assert waves.loc[("big_tile", "4096^3"), "blocks"] == 16 * 32
    assert waves.loc[("big_tile", "4096^3"), "blocks/SM"] == 1  # 235 x 256 registers: one block
    awkward = waves.loc[("big_tile", lesson.AWKWARD)]  # 17 x 32 blocks: 4.12 waves -> 5
    assert awkward["loads"] == "4-byte" and awkward["filled"] == pytest.approx(544 / 660)
    assert set(waves.index.get_level_values("kernel")) >= {"register_cap", lesson.SEARCH_VARIANT}
    assert ("tile 64x64x8 4x4", "8192^3") not in waves.index  # not timed there
    assert lesson.waves(recording.with_evidence(kernels={})).empty  # nothing recorded, nothing shown
    resources = lesson.resources_table(recording)
    assert resources.loc["register_cap", "blocks/SM"] == 2 and resources.loc["big_tile", "warps/SM"] == 8
    assert set(resources["source"]) <= {"run", *recording.evidence.sources}
    errors = lesson.errors_table(recording)
    assert (errors.max().max() <= 1.0) and "4096^3" in errors.columns


def test_probe_fractions_read_a_retired_probe():
    fractions = lesson.probe_fractions(read_probe("gemm_probe"), ["warp_tile", "register_cap"], [4096])
    assert sorted(fractions.index) == ["register_cap", "warp_tile"] and list(fractions.columns) == ["4096"]
    assert fractions.loc["warp_tile", "4096"] < fractions.loc["register_cap", "4096"]  # the 8x8 warp tile


def test_figures_from_the_recording_have_alt_text(recording):
    figures = lesson.figures(recording, lessons.roof())
    assert set(figures) == {"progression", "roofline", "search", "wavefronts", "stalls"}
    assert all(len(getattr(f, "alt_text", "")) > 40 for f in figures.values())
    assert "90% at 2048^3" in figures["progression"].alt_text  # the search's tile is on the chart
    live = recording.with_evidence(ncu={})  # a live run has no counters: no stall figure
    assert "stalls" not in lesson.figures(live, lessons.roof())
    concept = (lesson.hierarchy_figure(), lesson.bank_figure(), lesson.pipeline_figure(),
               lesson.pairing_figure())
    assert all(len(getattr(f, "alt_text", "")) > 40 for f in concept)
    assert "8 wavefronts" in concept[1].alt_text and "4 wavefronts" in concept[1].alt_text
    assert "lanes 2 x 16: 2 x 16" in concept[3].alt_text and "pairs: 4 x 8" in concept[3].alt_text


def test_the_pairing_picture_puts_pairs_of_lanes_in_one_column():
    paired = lesson.lane_grid(lesson.PAIRING_LAYOUTS["warp 4 x 8, lanes in pairs"]).set_index("lane")
    assert (paired.loc[0::2, "col"].to_numpy() == paired.loc[1::2, "col"].to_numpy()).all()
    plain = lesson.lane_grid(lesson.PAIRING_LAYOUTS["step 12: lanes 2 x 16"]).set_index("lane")
    assert plain["col"].nunique() == 16 and plain["row"].nunique() == 2


def test_scoreboard_rows_fit_the_recording(recording):
    for comparison in lesson.COMPARISONS:
        result = scoreboard.score(recording, comparison)
        assert result["status"] == "ok", result


# --------------------------------------------------------------------- the tidy table


def synthetic_table():
    rows = []
    for shape, (m, n, k) in lesson.SHAPES.items():
        for i, name in enumerate([lesson.CUBLAS] + STEP_NAMES + list(lesson.TUNE)):
            if name != lesson.CUBLAS and shape not in lesson.shapes_for(name):
                continue
            gflops = 40000.0 if name == lesson.CUBLAS else 1000.0 * (i + 1)
            flops = 2 * m * n * k
            ms = flops / gflops / 1e6
            rows.append({"lesson": "gemm", "variant": name,
                         "provider": "cublas" if name == lesson.CUBLAS else "gpu_lessons",
                         "size": m * n * k, "param": np.nan, "bytes": 4 * (m * k + k * n + m * n),
                         "flops": flops, "runs": 25, "median_ms": ms, "min_ms": ms, "max_ms": ms})
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
    assert tune.index[1] == "tile 128x256x8 8x16 (step 12)" and tune.index[3] == lesson.WARP_VARIANT
    long = lesson.search_table(table)
    assert len(long) == tune.notna().sum().sum()
    assert set(long.loc[long["tile"] == lesson.WARP_VARIANT, "lanes"]) == {"4x8 paired"}
    winners = lesson.search_winners(table)
    assert winners.loc["4096^3", "winner"] == list(lesson.TUNE)[-1]  # the fastest synthetic row
    assert winners.loc[lesson.AWKWARD, "winner"].endswith("(step 12)")  # candidates skip it
    assert lesson.tile_of(list(lesson.TUNE)[0]) == lesson.TUNE_TILES[0]
    assert lesson.tile_of("big_tile") == steps.BIG_TILE
    with pytest.raises(KeyError, match="hand-written"):
        lesson.tile_of("naive")
    goals = lesson.targets(table)
    assert list(goals.index) == list(lesson.TARGETS) and goals["met"].dtype == bool
    points = lesson.roofline_points(table)  # 2048^3: every step ran there
    assert list(points["label"]) == [str(i) for i in range(1, 13)] + ["S", "cuBLAS"]
    assert list(points["name"][:12]) == STEP_NAMES
    assert points.set_index("label").loc["cuBLAS", "intensity"] == lesson.cta_intensity(256, 128)
    assert points.set_index("label").loc["1", "intensity"] == lesson.naive_intensity(2048)
    searched = lesson.progression(table, search=True)
    assert list(searched.index) == STEP_NAMES + [lesson.SEARCH_VARIANT]
    assert lesson.progression_labels(searched.index)[-1] == "search: 128x256x16 8x16 pad 0"
    warp = lesson.warp_tiling(table)
    assert list(warp.columns) == ["2048^3", "4096^3", "8192^3"]
    i_warp, i_sibling = (1 + len(STEP_NAMES) + list(lesson.TUNE).index(v)
                         for v in (lesson.WARP_VARIANT, lesson.SEARCH_VARIANT))
    assert warp.loc["warp tile / lanes 2x16", "4096^3"] == pytest.approx((i_warp + 1) / (i_sibling + 1))


# --------------------------------------------------- the sections, on the simulator


@pytest.fixture
def dry_run(monkeypatch):
    """The sections as a recording runs them, on tiny shapes: each launch once instead of timed,
    made-up resources instead of the compiler's (the simulator has none), two cheap variants."""
    def measure(launch, input_sets=1, **_):
        for k in range(input_sets):
            launch(k)
        return bench.Timing(2.0, 1.5, 3.0, 25)

    resources = occupancy.KernelResources(name="k", registers_per_thread=32, shared_bytes_per_block=0,
                                          local_bytes_per_thread=0, max_threads_per_block=1024)
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(occupancy, "kernel_resources", lambda kernel, *args, **_: resources)
    monkeypatch.setitem(lesson.SHAPES, "2048^3", (20, 36, 12))
    monkeypatch.setitem(lesson.SHAPES, lesson.AWKWARD, (21, 37, 13))
    monkeypatch.setattr(lesson, "variants_at", lambda shape: ["naive", "tile 32x32x8 4x4"])


@pytest.mark.simulator_only("the sections run on tiny shapes with a stand-in timer; on a GPU "
                            "`gpu-lessons record gemm` runs them for real")
def test_sections_check_time_and_record_each_kernel(dry_run):
    result = runner.measure(lesson, sections=["2048^3", lesson.AWKWARD], show_progress=False)
    assert not result.failures, result.failures
    assert list(result.table["variant"]) == ["naive", "tile 32x32x8 4x4"] * 2  # no CuPy here: no cuBLAS
    errors = pd.DataFrame(result.facts["errors"])
    assert list(errors["shape"]) == ["2048^3"] * 2 + [lesson.AWKWARD] * 2
    assert (errors["worst_share_of_bound"] <= 1.0).all()
    assert set(result.evidence.kernels) == {"naive", "tile 32x32x8 4x4", "tile 32x32x8 4x4 (4-byte loads)"}
    assert result.evidence.kernel("naive")["registers"] == 32
    assert set(result.facts["section_seconds"]) == {"2048^3", lesson.AWKWARD}


@pytest.mark.simulator_only("a kernel that writes nothing, run on tiny shapes with a stand-in timer")
def test_a_failing_kernel_fails_its_section_but_not_the_others(dry_run, monkeypatch):
    real = lesson._launcher

    def launcher(name):
        return (lambda a, b, c: None) if name == "naive" else real(name)

    monkeypatch.setattr(lesson, "_launcher", launcher)
    result = runner.measure(lesson, sections=["2048^3"], show_progress=False)
    assert len(result.failures) == 1 and "naive at 2048^3 left outputs unwritten" in result.failures[0].error
    assert list(result.table["variant"]) == ["naive", "tile 32x32x8 4x4"]  # the other kernel still ran
    assert [e["variant"] for e in result.facts["errors"]] == ["tile 32x32x8 4x4"]


def test_one_section_per_shape_in_measuring_order():
    assert [s.name for s in lesson.SECTIONS] == list(lesson.MEASURE_ORDER)
    assert set(lesson.MEASURE_ORDER) == set(lesson.SHAPES)


# --------------------------------------------------------------------------- ncu


def test_ncu_cases_name_every_counter_the_lesson_quotes(recording):
    cases = lesson.ncu_cases(shape=(20, 24, 12))
    with_cublas = runner.cupy_or_none() is not None  # cuBLAS needs CuPy
    assert [c.name for c in cases] == list(lesson.NCU_CASES if with_cublas else lesson.NCU_CASES[:-1])
    for case in cases:
        assert case.kernel == lesson.ncu_kernel_name(case.name)
    for name, entry in recording.evidence.ncu.items():  # the names ncu reported on the H200
        assert lesson.ncu_kernel_name(name) in entry["kernel"], (name, entry["kernel"][:60])
    assert set(lesson.NCU_CASES) >= set(recording.evidence.ncu)
    assert set(lesson.NCU_METRICS) >= set(next(iter(recording.evidence.ncu.values()))["metrics"])


def test_ncu_cases_launch_once_and_check_their_result():
    cases = {c.name: c for c in lesson.ncu_cases(shape=(20, 24, 12))}
    assert not cases["naive"].check()  # not launched yet: NaN
    cases["naive"].launch()
    assert cases["naive"].check()


def test_cublas_is_matched_by_a_substring_of_its_kernel_name():
    metrics = [lesson.NCU_SHORT["time_ns"]]
    launches = [{"case": "big_tile", "kernel": "gemm_generated"},
                {"case": lesson.CUBLAS, "kernel": lesson.CUBLAS_KERNEL}]
    text = ncu.fake_ncu_csv(launches, metrics, [{metrics[0]: 392544}, {metrics[0]: 344064}])
    text = text.replace("_ZN6cudapy11gpu_lessons5sgemmE",
                        "_ZN7cutlass7Kernel2I45cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE")
    matched = ncu.match_launches(ncu.parse_ncu_csv(text), launches, metrics, "ncu test")
    assert matched[lesson.CUBLAS]["metrics"][metrics[0]] == 344064


def test_a_result_without_evidence_fails_loudly():
    empty = LessonResult(lesson="gemm", table=synthetic_table(), meta={"sms": 132, "peak_fp32_gflops": 1.0})
    with pytest.raises(RecordingError, match="kernels.register_cap is missing"):
        lesson.waves(empty, names=["register_cap"])
    with pytest.raises(RecordingError, match="facts.errors is missing"):
        lesson.errors_table(empty)


def test_generated_source_folds_constant_terms():
    """No ``U(0) + ...`` or ``U(a) + U(b)`` in what the generator writes: constants are summed."""
    for step in steps.STEPS[6:]:
        source = codegen.kernel_source(step.tile)
        assert not re.search(r"U\(0\) [+*]|[+*] U\(0\)", source), step.name
        assert not re.search(r"(?<!\* )U\(\d+\) \+ U\(\d+\)(?! \*)", source), step.name  # two constants
    assert codegen._sum("cur * U(64)", 0, 2 * 132, "r0") == "cur * U(64) + U(264) + r0"
    assert codegen._sum(0, 0) == "U(0)"


def test_timing_spread_marks_the_noisy_shapes(recording):
    spread = lesson.timing_spread(recording.table)
    assert spread[("median_over_min", "cuBLAS")].max() < 1.05
    assert lesson.noisy_shapes(recording.table) == ["128^3", "1024^3", "16384x64x4096"]
