"""Lesson 7's experiment: the committed recording through the lesson's readers (the numbers the notebook
quotes), its scoreboard rows, the conversion from the first GPU run, check() on the simulator, the
models behind the concept pictures, and the names the sections and ncu cases write."""

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons import lessons
from gpu_lessons.kernels import generated
from gpu_lessons.lessons import tensor_cores as lesson
from gpu_lessons.results import DEFAULT_DATA_ROOT, RecordingError
from gpu_lessons.scoreboard import score

DATA = DEFAULT_DATA_ROOT / "nvidia-h200"


@pytest.fixture(scope="module")
def recorded():
    return lessons.load(lesson.NAME, live=False)


def test_registered_after_gemm():
    assert list(lessons.LESSONS)[-2:] == ["gemm", "tensor_cores"]
    assert lesson.NOTEBOOK == "07_tensor_cores.ipynb"


def test_every_row_the_sections_time_is_recorded(recorded):
    for variant in lesson.VARIANTS:
        for shape in variant.shapes:
            assert lesson.tflops(recorded, variant.name, shape) > 0, (variant.name, shape)
    for shape in lesson.SHAPES:
        assert lesson.tflops(recorded, "cublas sgemm", shape) > 0
        assert lesson.tflops(recorded, "cublas tf32", shape) > 0
    ceiling = lesson.mma_ceiling(recorded)
    assert sorted(zip(ceiling["warps_per_sm"], ceiling["chains"], strict=True)) == sorted(lesson.PEAK_CONFIGS)
    with pytest.raises(RecordingError, match="no row of 'warp_tile_64x64' at 4095x4097x1023"):
        lesson.tflops(recorded, "warp_tile_64x64", lesson.AWKWARD)


def test_the_numbers_the_lesson_quotes(recorded):
    steps = lesson.progression(recorded).round(1)
    assert steps.loc["cublas sgemm"].tolist() == [49.7, 51.3, 51.1]
    assert steps.loc["cublas tf32"].tolist() == [342.8, 395.1, 390.3]
    assert steps.loc["warp_tile_64x64"].tolist() == [106.4, 113.6, 119.1]
    assert steps.loc["mma_async", "4096^3"] == 38.0 and steps.loc["mma_global", "2048^3"] == 11.3
    table = lesson.gemm_table(recorded).set_index(["variant", "shape"])
    assert round(table.loc[("warp_tile_64x64", "4096^3"), "of_sgemm"], 2) == 2.21
    assert round(table.loc[("warp_tile_64x64", "4096^3"), "of_tf32"], 3) == 0.287
    assert round(lesson.tf32_peak_gflops(recorded) / 1e3, 1) == 317.0
    assert lesson.warps_per_sm(recorded, "warp_tile_64x64") == 8  # 254 registers x 128 threads: 2 blocks
    assert lesson.warps_per_sm(recorded, "warp_tile") == 8  # 162 registers x 256 threads: 1 block
    ncu = lesson.ncu_table(recorded)  # section 6: the 64x64 tiles' instruction drop at 2048^3
    assert round(ncu.loc["warp_tile", "instructions"] / 1e6, 1) == 94.4
    assert round(ncu.loc["warp_tile_64x64", "instructions"] / 1e6, 1) == 75.1
    assert round(ncu.loc["warp_tile", "issue_active"], 1) == 56.6
    assert round(ncu.loc["warp_tile_64x64", "issue_active"], 1) == 55.1
    stalls = ncu.loc[[lesson.LESSON6, *lesson.SIMT_PIPELINES]]  # section 7: what moved with the issue rate
    assert stalls["dispatch_stall"].round(2).tolist() == [0.25, 0.29, 0.44, 0.42]
    assert stalls["short_scoreboard"].round(2).tolist() == [0.08, 0.22, 0.16, 0.15]
    ceiling = lesson.mma_ceiling(recorded).set_index(["warps_per_sm", "chains"])["tflops"].round(1)
    assert ceiling[(4, 8)] == 281.3 and ceiling[(8, 4)] == 301.7  # section 3: 32 chains per SM either way
    assert round(lesson.DATASHEET_TF32_DENSE_TFLOPS / 64.3, 1) == 7.7  # the takeaway: 989 / 2 over FP32's


def test_scoreboard_rows(recorded):
    rows = {c.title: score(recorded, c) for c in lesson.COMPARISONS}
    assert all(row["status"] == "ok" for row in rows.values())
    ratio = {title: round(row["ratio"], 2) for title, row in rows.items()}
    assert ratio["TF32 mma.sync GEMM 4096^3 vs FP32 SGEMM"] == 2.21
    assert ratio["TF32 mma.sync GEMM 2048^3 vs FP32 SGEMM"] == 2.14
    assert ratio["TF32 mma.sync GEMM 8192^3 vs FP32 SGEMM"] == 2.33
    assert ratio["TF32 mma.sync GEMM 4096^3 vs cuBLAS TF32 (CUPY_TF32=1)"] == 0.29
    assert ratio["FP32 SIMT GEMM with a cp.async pipeline 4096^3"] == 0.81
    assert ratio["FP32 SIMT GEMM with a cp.async pipeline 2048^3"] == 0.75
    assert ratio["mma.sync TF32 ceiling (registers only) vs cuBLAS TF32"] == 0.81
    best = {row["best_variant"] for title, row in rows.items() if "TF32 mma.sync GEMM" in title}
    assert best == {"warp_tile_64x64"}


def test_the_conversion_kept_every_number_of_the_first_run(recorded):
    folder = DATA / "probes"  # the first run's files, kept as it wrote them (its meta is nested: read here)
    rows = pd.read_csv(folder / "tensor_cores.csv", float_precision="round_trip")  # as the reader: exact
    meta = json.loads((folder / "tensor_cores.meta.json").read_text())
    renamed = {"warp_tile 64x64 (4 warps)": "warp_tile_64x64", "warp_tile_64x64": "warp_tile_64x64 128x256"}
    table = recorded.table.set_index(["variant", "size"])
    for row in rows.itertuples():
        kept = table.loc[(renamed.get(row.variant, row.variant), lesson.size_of(row.shape))]
        assert (kept["median_ms"], kept["min_ms"], kept["max_ms"]) == (row.median_ms, row.min_ms, row.max_ms)
        assert math.isclose(kept["gflops"], row.tflops * 1e3, rel_tol=1e-12)
    for peak in meta["mma_peak"]:
        rows = lesson.mma_ceiling(recorded)
        hit = rows[(rows["chains"] == peak["chains"]) & (rows["warps_per_sm"] == peak["warps_per_sm"])]
        assert math.isclose(hit["tflops"].iloc[0], peak["tflops"], rel_tol=1e-12)
    peaks = recorded.table[recorded.table["variant"].isin(lesson.PEAKS)]
    assert peaks[["min_ms", "max_ms"]].isna().all().all()
    assert recorded.meta["git_revision"] == meta["meta"]["git_revision"] == "cd6770b"
    assert "min_ms and max_ms of the mma_peak rows" in " ".join(recorded.meta["not_recorded"])
    tiles = recorded.evidence.fact("tiles")
    assert tiles["warp_tile_64x64"] == repr(lesson.BY_NAME["warp_tile_64x64"].tile)
    assert tiles["warp_tile_64x64 128x256"] == repr(lesson.BY_NAME["warp_tile_64x64 128x256"].tile)


def test_errors_by_precision(recorded):
    errors = lesson.errors(recorded)
    spread = errors.groupby("precision")["relative_error"].agg(["min", "max"])
    assert 2.9e-4 < spread.loc["tf32", "min"] and spread.loc["tf32", "max"] < 3.0e-4
    assert spread.loc["fp32", "max"] < 2e-6
    assert round(spread.loc["tf32 cut", "max"], 6) == 7.81e-4
    assert set(errors["variant"]) >= {"cublas sgemm", "cublas tf32", *lesson.STEP_NAMES}


def test_error_model_beside_the_h200(recorded):
    model = lesson.emulated_errors(ks=(64, 4096), m=32, n=32).set_index(["model", "k"])["relative_error"]
    at_4096 = lesson.errors(recorded).query("shape == '4096^3'")
    measured = at_4096.groupby("precision")["relative_error"].mean()
    for name, precision in (("TF32 rounded (cvt.rna)", "tf32"), ("TF32 cut (no cvt.rna)", "tf32 cut"),
                            ("FP32 (one FMA per k)", "fp32")):
        assert abs(model[(name, 4096)] / measured[precision] - 1) < 0.15, name
    assert model[("FP32 (one FMA per k)", 4096)] > 4 * model[("FP32 (one FMA per k)", 64)]  # grows with K
    assert abs(model[("TF32 rounded (cvt.rna)", 4096)] / model[("TF32 rounded (cvt.rna)", 64)] - 1) < 0.15


def test_simt_pipelines_and_their_counters(recorded):
    table = lesson.simt_pipeline(recorded).round(2)
    assert table["issue_active"].tolist() == [78.21, 75.73, 71.46, 71.21, 88.45]
    assert table["of_sgemm 4096^3"].tolist()[:4] == [0.84, 0.81, 0.75, 0.76]
    assert table["registers"].tolist()[:4] == [235, 255, 217, 217]
    writes = table["shared_write_wavefronts"]
    assert (writes.iloc[1:4] / 1e6).round(1).tolist() == [7.0, 6.8, 6.5]  # section 7: 3.2 -> 6.5-7.0 M
    assert table["counters_source"].tolist()[-1].startswith("lesson 6")  # cuBLAS's, noted in the figure
    assert writes.iloc[0] == 3_196_032 and (writes.iloc[1:4] > 6_000_000).all() and math.isnan(writes.iloc[4])
    bare = recorded.with_evidence(ncu={})
    assert lesson.simt_pipeline(bare)["issue_active"].isna().all()  # a run without --ncu: no counters
    assert lesson.simt_pipeline(bare, counters=recorded)["issue_active"].iloc[0] == 78.21


def test_recorded_names_are_the_ones_the_sections_and_ncu_cases_write(recorded):
    assert set(recorded.evidence.kernels) >= {v.name for v in lesson.VARIANTS}
    assert set(recorded.evidence.ncu) <= set(lesson.NCU_CASES)
    assert set(lesson.NCU_SHORT.values()) <= set(lesson.NCU_METRICS)
    assert [section.name for section in lesson.SECTIONS] == [
        "gemm 2048^3", "gemm 4096^3", "gemm 8192^3", "gemm 4095x4097x1023", "edge shapes", "cublas tf32",
        "mma ceiling", "kernels", "rounded once"]
    for name in lesson.NCU_CASES[1:]:
        kernel = lesson.BY_NAME[name.removesuffix(f" {lesson.ROOF_SHAPE}")].ncu_kernel
        assert kernel in ("mma_global", "tc_gemm_generated", "gemm_generated")


@pytest.mark.needs_sm80
@pytest.mark.simulator_only("on a GPU check() compiles and checks all 17 generated kernels (a minute or "
                             "two); gpu-lessons record runs it there before every recording")
def test_check_passes_on_the_simulator():
    checks = lesson.check()
    assert checks["passed"].all(), checks[~checks["passed"]]
    names = " ".join(checks["check"])
    for family in ("mma_demo", "mma_peak", "mma_global", "tc sync", "tc cp.async", "simt cp.async"):
        assert family in names


def test_error_bounds_refuse_a_wrong_product():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 16), dtype=np.float32)
    b = rng.standard_normal((16, 8), dtype=np.float32)
    right = (a.astype(np.float64) @ b).astype(np.float32)
    assert lesson.share_of_bound(right, a, b, "fp32") <= 1
    wrong = right.copy()
    wrong[3, 4] += 1e-3 * abs(wrong[3, 4]) + 1e-3  # a TF32-sized error is too big for FP32
    assert lesson.share_of_bound(wrong, a, b, "fp32") > 1 and lesson.share_of_bound(wrong, a, b, "tf32") <= 1
    assert lesson.share_of_bound(np.ones((2, 3), np.float32), a[:2, :0], b[:0, :3], "tf32") == math.inf


def test_pipeline_model():
    from gpu_lessons.plots.tensor_cores import steady_period

    periods = {s: steady_period(lesson.pipeline_schedule(s), s) for s in (1, 2, 3, 4)}
    assert periods == {1: 3.5, 2: 2.5, 3: 1.25, 4: 1.0}  # copy 2.5, compute 1: max(1, 2.5 / (s - 1))
    schedule = lesson.pipeline_schedule(3, tiles=4)
    copies = schedule[schedule["what"] == "copy"].set_index("tile")
    computes = schedule[schedule["what"] == "compute"].set_index("tile")
    assert (computes["start"] >= copies["end"]).all()  # nothing is computed before its copy lands
    assert (copies.loc[2:, "start"].to_numpy() == computes.loc[:1, "start"].to_numpy()).all()  # issued ahead


def test_peak_launch_shape_and_flops():
    blocks, per_block, iterations = lesson.peak_launch_shape(132, 64, 8)
    assert (blocks, per_block, iterations) == (528, 16, 3906)
    assert lesson.mma_count(16, 8, 8) == 1 and lesson.mma_count(4096, 4096, 4096) == 256 * 512 * 512


@pytest.mark.needs_sm80
@pytest.mark.simulator_only("on a GPU the workers compile two big kernels for real (a minute); the "
                             "recording's first section does that there")
def test_compile_jobs_and_parallel_workers(tmp_path, monkeypatch):
    jobs = lesson.compile_jobs()
    gated = [lesson.BY_NAME[name].tile for name in lesson.left_out() if name in lesson.BY_NAME]
    if not gated:  # every generated variant, and the 4-byte twins timed at the awkward shape
        assert len(jobs) == 14 + 3
    assert not set(gated) & {tile for _, tile in jobs}  # what this GPU cannot run is not compiled
    monkeypatch.setenv(generated.DIRECTORY_VARIABLE, str(tmp_path))
    seconds = generated.compile_in_parallel(lesson.__name__, "compile_worker", 2, workers=2)
    assert seconds > 0 and len(list(tmp_path.glob("tc_gemm_generated_*.py"))) == 2
    assert os.environ[generated.DIRECTORY_VARIABLE] == str(tmp_path)


def test_cublas_tf32_child_needs_its_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("CUPY_TF32", raising=False)
    with pytest.raises(RuntimeError, match="CUPY_TF32=1"):
        lesson.cublas_tf32_child(str(tmp_path / "out.json"))


def test_every_figure_has_alt_text(recorded):
    from gpu_lessons.plots import style

    figures = lesson.figures(recorded, lessons.roof())
    assert set(figures) == {"fragment_layout", "slab_k_order", "cp_async_pipeline", "tf32_error",
                            "mma_ceiling", "roofline", "progression", "simt_cp_async"}
    assert all(style.alt_text(figure) for figure in figures.values())
    assert "317,028 GFLOP/s" in style.alt_text(figures["roofline"])  # the second, TF32 roof


@pytest.mark.simulator_only("the section runs one-warp tiles at a toy shape with a stand-in timer; on a GPU "
                            "`gpu-lessons record tensor_cores --section 'rounded once' --merge` runs it")
def test_rounded_once_section_times_four_kernels_and_keeps_their_errors(monkeypatch):
    """Rounding A and B once (tc.round_tf32) and skipping cvt.rna in the kernel gives the rounded error;
    skipping it on raw inputs gives the cut one (the section refuses a result over its precision's limit)."""
    from gpu_lessons import bench
    from gpu_lessons.kernels import tensor_cores as tc
    from gpu_lessons.lessons import runner

    def measure(launch, input_sets=1, **_):
        for k in range(input_sets):
            launch(k)
        return bench.Timing(2.0, 1.5, 3.0, 25)

    small = tc.TcTile(bm=16, bn=32, bk=16, wm=16, wn=32, stages=2)
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setitem(lesson.SHAPES, lesson.ONCE_SHAPE, (16, 32, 64))
    monkeypatch.setattr(lesson, "input_sets", lambda shape: 1)
    monkeypatch.setattr(tc, "WARP_TILE", small)
    monkeypatch.setattr(lesson, "ONCE_TILE", tc.TcTile(bm=16, bn=32, bk=16, wm=16, wn=32, stages=2,
                                                       round_inputs=False))
    result = runner.measure(lesson, sections=["rounded once"], show_progress=False)
    assert not result.failures, result.failures
    assert list(result.table["variant"]) == list(lesson.ONCE_VARIANTS)
    found = pd.DataFrame(result.facts["rounded_once_errors"]).set_index("variant")["relative_error"]
    rounded, cut = found["once: warp_tile"], found["once: warp_tile unrounded"]
    assert cut > 1.5 * rounded
    assert found["once: prerounded inputs"] == pytest.approx(rounded, rel=0.05)
    assert found["once: round A, B + prerounded"] == found["once: prerounded inputs"]


def test_roof_counters_put_bytes_and_flops_of_each_level_side_by_side(recorded):
    """The 4096^3 cases' counters: FLOP per DRAM byte (read + written) and per L2 byte the SMs read."""
    case = lesson.ROOF_NCU_CASES[0]
    metrics = {lesson.NCU_SHORT["dram_read"]: 1.0e9, lesson.NCU_SHORT["dram_write"]: 0.25e9,
               lesson.NCU_SHORT["l2_read_sectors"]: 2.0e9 / 32, lesson.NCU_SHORT["tensor_pipe"]: 20.0,
               lesson.NCU_SHORT["time_ns"]: 4.0e6}
    entry = {"kernel": "tc_gemm_generated", "source": "ncu", "metrics": metrics}
    fake = recorded.with_evidence(ncu={case: entry})
    table = lesson.roof_counters(fake, {"bandwidth_gbps": 4000.0})
    row = table.loc[lesson.ROOF_NCU_KERNELS[0]]
    flops = 2 * 4096**3
    assert row["flop_per_dram_byte"] == pytest.approx(flops / 1.25e9)
    assert row["flop_per_l2_byte"] == pytest.approx(flops / 2.0e9)
    assert row["dram_share_of_roof"] == pytest.approx(1.25e9 / 4e-3 / 4e12)
    assert row["tflops_profiled"] == pytest.approx(flops / 4e-3 / 1e12)
    assert list(table.index) == [lesson.ROOF_NCU_KERNELS[0]]
