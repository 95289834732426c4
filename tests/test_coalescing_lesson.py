"""Lesson 3 (coalescing): the tracer's sector counts behind the models, the models against the
recording (sectors, DRAM bytes in 64-byte granules, particle bytes), the readers of the recording's
evidence, the figures, and the new sections and Nsight Compute cases run at toy sizes on the
simulator (timing replaced by a fixed one)."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from numba.cuda.simulator.kernel import FakeCUDAKernel

import gpu_lessons
from gpu_lessons import bench, lessons, ncu, plots
from gpu_lessons.kernels import coalescing as k
from gpu_lessons.lessons import coalescing as lesson
from gpu_lessons.lessons import runner
from gpu_lessons.results import Evidence, RecordingError, make_table


@pytest.fixture(scope="module")
def recording():
    return lessons.load("coalescing", live=False)


def _row(variant, size, param, gbps, provider="gpu_lessons"):
    ms = 8 * size / gbps / 1e6
    return {"lesson": "coalescing", "variant": variant, "provider": provider, "size": size, "param": param,
            "bytes": 8 * size, "flops": 0, "runs": 25, "median_ms": ms, "min_ms": ms, "max_ms": ms}


def _with_rows(result, rows, replacing=()):
    """The recording with the rows of the variants ``replacing`` taken out and ``rows`` added, same
    evidence (a result as a recording without those experiments, or with made-up timings, would be)."""
    kept = result.table[~result.table["variant"].isin(replacing)]
    return replace(result, table=pd.concat([kept, make_table(rows)], ignore_index=True) if rows else kept)


# ------------------------------------------------------------------------------ the tracer


def test_traced_sectors_equal_the_recorded_nsight_compute_counts(recording):
    for kind, least in (("offset", 4), ("stride", 9)):
        counted = lesson.recorded_ncu_sectors(recording, kind)
        assert len(counted) >= least
        traced = lesson.sweep_sectors(kind, counted["param"])
        assert traced["ld_sectors"].tolist() == counted["ncu_ld_sectors"].tolist()
        assert traced["st_sectors"].tolist() == counted["ncu_st_sectors"].tolist()


def test_sweep_sectors_beyond_the_recorded_cases():
    offsets = lesson.sweep_sectors("offset", [0, 8, 9, 31, 32]).set_index("param")["ld_sectors"]
    assert offsets.to_dict() == {0: 4, 8: 4, 9: 5, 31: 5, 32: 4}
    strides = lesson.sweep_sectors("stride", [3, 6, 64, 256]).set_index("param")["ld_sectors"]
    assert strides.to_dict() == {3: 12, 6: 24, 64: 32, 256: 32}


def test_four_loads_per_thread_make_the_same_requests():
    for kind, values in (("offset", [0, 1, 9]), ("stride", [2, 12, 64])):
        one = lesson.sweep_sectors(kind, values)
        four = lesson.sweep_sectors(kind, values, x4=True)
        assert one.equals(four), (kind, one, four)
    counts = lesson.traced_offset(1, x4=True)
    assert counts.totals["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * 4  # 2 warps, 4 loads each


def test_a_column_walk_needs_a_sector_per_lane_and_touches_the_same_bytes():
    table = lesson.matrix_sectors().set_index("variant")
    assert table.loc["matrix_row_walk", ["ld_sectors", "st_sectors"]].tolist() == [4, 4]
    assert table.loc["matrix_column_walk", ["ld_sectors", "st_sectors"]].tolist() == [32, 32]
    assert table["distinct_bytes_per_useful"].tolist() == [1.0, 1.0]  # every sector fully used, once
    column = lesson.traced_matrix("matrix_column_walk", ld=40).request(array="a", op="ld")
    assert column["address"].diff().dropna().unique().tolist() == [160]  # ld * 4 bytes down a column
    assert column["line"].nunique() == 32
    with pytest.raises(ValueError, match="at least the 32 columns"):
        lesson.traced_matrix("matrix_row_walk", ld=16)


def test_float4_is_coalesced_only_when_adjacent_lanes_take_adjacent_chunks():
    table = lesson.float4_adjacency().set_index("per_thread")
    assert table["ld_sectors"].to_dict() == {1: 16, 2: 32, 4: 32}
    assert table["ideal_sectors"].tolist() == [16, 16, 16]
    assert table["used_share"].to_dict() == {1: 1.0, 2: 0.5, 4: 0.5}
    assert table["distinct_bytes_per_useful"].tolist() == [1.0, 1.0, 1.0]  # reuse: DRAM sees no waste
    names = [name for name, _, _ in lesson.float4_requests()]
    assert names == ["request_float4_adjacent", "request_float4_spread_2"]


def test_layout_sectors_count_the_bytes_each_layout_moves():
    table = lesson.layout_sectors().set_index("variant")
    assert table.loc["particles_aos", "ld_sectors_per_request"] == 24  # 32 records of 24 bytes
    assert table.loc["particles_soa", "ld_sectors_per_request"] == 4
    assert table["dram_bytes"].to_dict() == {"particles_aos": 48, "particles_soa": 36,
                                             "particles_soa_vec4": 36, "particles_aosoa": 36,
                                             "particles_padded_vec4": 64}
    table.loc["particles_aos", "dram_bytes"] = 0  # a caller's change does not reach the next caller
    assert lesson.layout_sectors().set_index("variant").loc["particles_aos", "dram_bytes"] == 48


# ------------------------------------------------------------------------------ the models


def test_sweep_model_states_both_models_and_their_errors(recording):
    offsets = lesson.sweep_model(recording, "offset").set_index("param")
    ideal = lesson.sweep_ceiling(recording.table, "offset_copy")
    assert offsets.loc[0, "gbps"] == pytest.approx(ideal)
    assert offsets.loc[1, "model_gbps"] == pytest.approx(ideal * 8 / 9)  # 5 + 4 sectors
    assert offsets.loc[1, "error"] == pytest.approx(offsets.loc[1, "gbps"] / (ideal * 8 / 9) - 1)
    assert offsets.loc[1, "dram_model_gbps"] == pytest.approx(ideal)  # contiguous: the same DRAM bytes
    assert offsets.loc[1, "ncu_ld_sectors"] == 5 and np.isnan(offsets.loc[2, "ncu_ld_sectors"])
    strides = lesson.sweep_model(recording, "stride").set_index("param")
    ideal = lesson.sweep_ceiling(recording.table, "strided_copy")
    assert strides.loc[64, "model_gbps"] == pytest.approx(ideal * 8 / 36)
    assert strides.loc[64, "dram_bytes"] == 68  # 64-byte granule read + 4 written
    assert strides.loc[64, "dram_model_gbps"] == pytest.approx(ideal * 8 / 68)
    assert strides.loc[64, "ncu_dram_bytes"] == pytest.approx(68, rel=0.01)
    # the one-load copy is not DRAM-bound at stride 1: it beats the DRAM model at small strides
    assert strides.loc[2, "dram_model_error"] > 0.3
    with pytest.raises(ValueError, match="unknown sweep 'diagonal'"):
        lesson.sweep_model(recording, "diagonal")
    without = _with_rows(recording, [], replacing=["offset_copy_x4"])
    with pytest.raises(RecordingError, match="no rows of variant 'offset_copy_x4'"):
        lesson.sweep_model(without, "offset_copy_x4")


def test_the_recorded_dram_bound_sweeps_against_their_models(recording):
    """With four loads in flight the copies are DRAM-bound at their ideal point: the DRAM-bytes model
    holds where the sector model does not (misaligned offsets, strides of 12 to 24)."""
    offsets = lesson.sweep_model(recording, "offset_copy_x4").set_index("param")
    assert offsets.loc[0, "gbps"] == pytest.approx(4215.4, abs=0.1)
    misaligned = [o for o in offsets.index if o % 8]
    assert (offsets.loc[misaligned, "error"] > 0.11).all()  # the sector model charges 9 sectors, not 8
    assert offsets["dram_model_error"].abs().max() < 0.013  # the DRAM model: within 1.3% at every offset
    strides = lesson.sweep_model(recording, "strided_copy_x4").set_index("param")
    assert strides.loc[[2, 3, 4, 6, 8], "error"].abs().max() < 0.065  # sectors = DRAM bytes up to 32 B apart
    assert strides.loc[[2, 3, 4, 6, 8, 12, 16, 24], "dram_model_error"].abs().max() < 0.065
    assert strides.loc[16, "error"] < -0.4  # the sector model misses the 64-byte granule
    assert strides.loc[[64, 128, 256], "dram_model_error"].max() < -0.35  # the DRAM model misses far strides
    # no x4 copy was profiled: the DRAM bytes come from the one-load copy's cases of the same addresses
    assert strides.loc[16, "ncu_dram_case"] == "strided_copy 16"
    assert np.isnan(strides.loc[3, "ncu_dram_bytes"])
    assert strides.loc[16, "ncu_dram_bytes"] == pytest.approx(68, rel=0.001)
    assert strides.loc[16, "ncu_dram_model_gbps"] == pytest.approx(
        4191.16 * strides.loc[1, "ncu_dram_bytes"] / strides.loc[16, "ncu_dram_bytes"], rel=1e-4)


def test_a_dram_bound_sweep_against_its_models(recording):
    rows = [_row("strided_copy_x4", lesson.stride_outputs(s), s, 4000 * 8 / (4 + min(4 * s, 64)))
            for s in (1, 2, 8, 16, 64)]
    made_up = _with_rows(recording, rows, replacing=["strided_copy_x4"])
    model = lesson.sweep_model(made_up, "strided_copy_x4").set_index("param")
    assert np.allclose(model["dram_model_error"], 0)  # time = DRAM bytes / DRAM rate, as built
    assert model.loc[16, "error"] == pytest.approx((4000 * 8 / 68) / (4000 * 8 / 36) - 1)
    assert model.loc[[1, 2, 8, 16, 64], "ncu_dram_bytes"].notna().all()  # from the one-load copy's cases


def test_dram_moves_64_byte_granules(recording):
    table = lesson.dram_granularity(recording).set_index("stride")
    assert set(table.index) >= {1, 2, 4, 8, 16, 32, 64, 128, 256}
    assert np.allclose(table["granule_model_error"], 0, atol=0.01)
    assert np.allclose(table.loc[[16, 32, 64, 128, 256], "sector_model_error"], 1.0, atol=0.01)
    assert np.allclose(table.loc[[1, 2, 4, 8], "sector_model_error"], 0, atol=0.01)
    assert lesson.dram_bytes_per_element("stride", [1, 8, 12, 16, 256]).tolist() == [8, 36, 52, 68, 68]
    assert lesson.dram_bytes_per_element("offset", [0, 1, 31]).tolist() == [8, 8, 8]


def test_the_particle_bytes_model_and_its_error(recording):
    summary = lesson.particle_summary(recording).set_index("variant")
    assert summary.loc["particles_aos", "bytes_model_vs_soa"] == 0.75
    assert summary.loc["particles_padded_vec4", "bytes_model_vs_soa"] == pytest.approx(0.5625, abs=1e-3)
    assert summary.loc["particles_aos", "vs_soa"] == pytest.approx(0.67, abs=0.005)
    assert summary.loc["particles_padded_vec4", "vs_soa"] == pytest.approx(0.53, abs=0.005)
    assert summary.loc["particles_aos", "bytes_model_error"] == pytest.approx(0.670 / 0.75 - 1, abs=0.01)
    assert summary.loc["particles_padded_vec4", "bytes_model_error"] == pytest.approx(-0.058, abs=0.001)
    assert summary.loc["particles_aosoa", "bytes_model_error"] == pytest.approx(-0.033, abs=0.001)
    assert summary.loc["particles_aos", "ncu_dram_bytes_per_particle"] == pytest.approx(46.4, abs=0.1)
    assert summary.loc["particles_aos", "dram_bytes_per_particle"] == 48


def test_matrix_summary_puts_both_models_beside_the_walks(recording):
    summary = lesson.matrix_summary(recording).set_index(["variant", "ld"])
    for ld in lesson.MATRIX_LDS:
        column = summary.loc[("matrix_column_walk", ld)]
        assert column["vs_row_walk"] == pytest.approx(0.1555, abs=0.001)  # 394 / 2,535 and 391 / 2,512
        assert column["sector_model_vs_row"] == 0.125 and column["dram_model_vs_row"] == 1.0
        assert column["sector_model_error"] == pytest.approx(0.244, abs=0.002)
        assert column["dram_model_error"] == pytest.approx(-0.844, abs=0.002)
    assert "ncu_ld_sectors" not in summary  # no Nsight Compute counters of the walks in this recording
    with pytest.raises(RecordingError, match="no 2-D walks recorded"):
        lesson.matrix_summary(_with_rows(recording, [], replacing=lesson.MATRIX_WALKS))
    rows = [_row(walk, 8192**2, ld, gbps) for ld in (8192, 8224)
            for walk, gbps in (("matrix_row_walk", 4000.0), ("matrix_column_walk", 1000.0))]
    summary = lesson.matrix_summary(_with_rows(recording, rows, replacing=lesson.MATRIX_WALKS))
    column = summary.set_index(["variant", "ld"]).loc[("matrix_column_walk", 8192)]
    assert column["vs_row_walk"] == 0.25 and column["sector_model_vs_row"] == 0.125
    assert column["sector_model_error"] == pytest.approx(1.0) and column["dram_model_error"] == -0.75


def test_the_recorded_counters_hold_every_case_the_readers_use(recording):
    counters = lesson.recorded_counters(recording)
    wanted = {case for *_, case in lesson.GAP_TESTS}
    wanted |= {f"strided_copy {s}" for s in lesson.NCU_STRIDES["strided_copy"]}
    wanted |= {f"offset_copy {o}" for o in lesson.NCU_OFFSETS["offset_copy"]}
    assert wanted <= set(counters.index)
    assert (counters["sm_cycles_max"] >= counters["sm_cycles_min"]).all()
    assert counters.loc["copy_w16", "time_us"] == pytest.approx(124.0)  # 124000 ns
    source = lesson.recorded_counters_source(recording)
    assert "22 launches at 71dfd8f on 2026-12-01" in source and "12 launches at 7c7ba93" in source
    assert len(lesson.recorded_counters(recording, raw=True)) == sum(
        len(entry["metrics"]) for entry in recording.evidence.ncu.values())


def test_the_ncu_cases_make_the_recorded_case_names_and_metrics(recording):
    names = {case.name for case in _dry_ncu_cases()[0]}
    recorded = set(recording.evidence.ncu) - {"cupy ElementwiseKernel"}  # CuPy: not on the simulator
    assert recorded <= names  # a new `record --ncu` keeps every case the readers know
    used = set(lesson.COUNTER_COLUMNS) | {"lts__t_sector_hit_rate.pct"}
    assert used <= set(lesson.NCU_METRICS)
    every = set(next(iter(recording.evidence.ncu.values()))["metrics"])
    assert set(lesson.NCU_METRICS) <= every  # each metric was valid under ncu on the H200


def test_recorded_sass_shows_the_load_order(recording):
    naive = lesson.recorded_sass(recording, "particles_soa_naive", grep="G.E")
    first = lesson.recorded_sass(recording, "particles_soa", grep="G.E")
    assert first.splitlines()[0] == "// particles_soa: 18 registers per thread"
    assert [line.split()[1][:3] for line in first.splitlines()[1:]] == ["LDG"] * 6 + ["STG"] * 3
    assert [line.split()[1][:3] for line in naive.splitlines()[1:]].index("STG") == 2
    assert lesson.recorded_sass_meta(recording, "particles_soa")["git_revision"] == "d4381b5"  # today's run


def test_readers_name_the_file_and_field_when_evidence_is_missing(recording):
    bare = replace(recording, evidence=Evidence(origin="data/x/coalescing.evidence.json"))
    with pytest.raises(RecordingError, match="coalescing.evidence.json: kernels.particles_soa is missing"):
        lesson.recorded_sass(bare, "particles_soa")
    with pytest.raises(RecordingError, match="data/x/coalescing.evidence.json: no Nsight Compute counters"):
        lesson.recorded_counters(bare)
    with pytest.raises(RecordingError, match="no Nsight Compute counters"):
        lesson.recorded_counters_source(bare)
    assert lesson.recorded_ncu_sectors(bare, "offset").empty
    assert lesson.waves_table(bare)["sm_max_over_min"].isna().all()  # timings still there


def test_the_gap_tables_read_the_recording(recording):
    waves = lesson.waves_table(recording)
    assert waves["waves"].tolist() == [1, *lesson.GAP_WAVES]
    assert waves.loc[0, "sm_max_over_min"] == pytest.approx(1.208, abs=0.001)
    assert waves.loc[0, "vs_cupy_copy"] == pytest.approx(0.930, abs=0.001)
    hypotheses = lesson.gap_hypotheses(recording)
    assert len(hypotheses) == len(lesson.GAP_TESTS) and hypotheses["vs_cupy_copy"].notna().all()
    assert hypotheses["sm_max_over_min"].notna().all()
    widths = lesson.width_summary(recording)
    at_1gib = widths[widths["size"] == 2**28].set_index("variant")
    assert at_1gib.loc["copy_w4", "vs_cupy_copy"] == pytest.approx(0.65, abs=0.03)  # the notes' 65%
    assert at_1gib.loc["copy_w16", "access_bytes"] == 16 and not at_1gib.loc["copy_w16", "grid_stride"]
    assert len(widths) == len(lesson.WIDTH_SIZES) * (len(lesson.WIDTH_VARIANTS) + 1)
    copies = lesson.copy_summary(recording)
    assert copies.loc[0, "variant"] == "copy_w16" and copies.loc[0, "vs_cupy_copy"] == pytest.approx(1.008)


# ------------------------------------------------------------------------------ figures


def test_figures_from_the_recording_and_without_its_new_experiments(recording):
    figures = lesson.figures(recording, {})
    assert {"request_offset_1", "requests_offset", "request_stride_32", "request_matrix_column",
            "matrix_picture", "requests_float4", "offset_sweep", "stride_sweep", "offset_sweep_x4",
            "stride_sweep_x4", "dram_granularity", "access_width", "particles", "copies", "waves",
            "matrix_walks"} <= set(figures)
    for name, figure in figures.items():
        assert plots.style.alt_text(figure), name
    title = figures["request_offset_1"].axes[0].get_title(loc="left")
    assert "5 sectors per request" in title and "128 useful of 160 bytes moved" in title
    sweep = figures["stride_sweep_x4"].axes[0]
    assert {"sector model: ceiling x 8 / sectors per warp",
            "DRAM model: ceiling x 8 / DRAM bytes per element"} <= {
        line.get_label() for line in sweep.get_lines()}
    assert "4 loads in flight per thread" in sweep.get_title(loc="left")
    assert "1 load in flight" in figures["offset_sweep"].axes[0].get_title(loc="left")
    assert figures["offset_sweep_x4"].axes[0].get_ylim()[0] == 0  # bandwidth axes start at 0
    assert "particles_aos 0.670 of SoA against a model of 0.75;" in plots.style.alt_text(figures["particles"])
    assert len(figures["request_stride_32"].axes[0].get_yticks()) == 12  # 32 lines drawn in 4 rows of 8
    stride_32 = figures["request_stride_32"].axes[0].get_title(loc="left")
    assert "128 useful of 1024 bytes moved (12.5%)" in stride_32  # an honest share, not "12%"
    assert "the measurement is 64.0 bytes" in plots.style.alt_text(figures["dram_granularity"])
    assert [plots.style.share_percent(v) for v in (0.125, 0.8, 1.0, 0.5)] == ["12.5%", "80%", "100%", "50%"]
    older = _with_rows(recording, [], replacing=[*lesson.MATRIX_WALKS, "offset_copy_x4", "strided_copy_x4"])
    # figures() on the older recording, less the concept pictures (traced, the same for any result)
    measured = {name: build for name, build in lesson.FIGURES.items() if name not in lesson.CONCEPT_FIGURES}
    left = {name: build(older) for name, build in measured.items()}
    left = {name: drawn for name, drawn in left.items() if drawn is not None}
    assert not {"matrix_walks", "offset_sweep_x4", "stride_sweep_x4"} & set(left)  # left out, not failed
    assert "stride_sweep" in left


def test_global_sectors_refuses_a_shared_memory_request():
    request = pd.DataFrame({"lane": [0], "address": [0], "bytes": [4]})
    request.attrs.update(space="shared")
    with pytest.raises(ValueError, match="global-memory requests"):
        plots.charts.global_sectors(request)


# ------------------------------------------------------------------------------ the lesson


# lesson.check() (every kernel against NumPy on awkward sizes) runs, and must pass, in
# notebooks/deep_dives/03_coalescing_aos_soa.ipynb: nbval runs it there, once for CI.


def test_lesson_shape():
    assert lessons.get("coalescing") is lesson
    assert all(c.lesson == "coalescing" for c in lesson.COMPARISONS)
    assert [s.name for s in lesson.SECTIONS] == ["particles", "access widths", "grid-stride gap", "offsets",
                                                 "strides", "offsets x4", "strides x4", "2-D walks"]
    for retired in ("measure", "load", "recorded_facts", "model_table", "dram_model", "_data_file"):
        assert not hasattr(lesson, retired), retired
    assert lesson.stride_outputs(256) == 2**22 and lesson.Plan().stride_outputs(1) == 2**26


# ---------------------------------------------------------------- sections and ncu cases, dry


TOY = lesson.Plan(big=2**14, offset_n=300, offsets=(0, 9), strides=(3, 64), stride_max_out=300,
                  passes=2, width_sizes=(1028,), gap_waves=(2,), particles=1028, matrix=9, matrix_lds=(12,))


@pytest.fixture
def dry_run(monkeypatch):
    """A Run at toy sizes where timing runs the launch once and kernel() only notes the name."""
    def measure(launch, input_sets=1, **_):
        for s in range(input_sets):
            launch(s)
        return bench.Timing(2.0, 1.5, 3.0, 25)

    kernels = []
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(runner.Run, "kernel", lambda self, name, kernel, args, pattern=None:
                        kernels.append((name, kernel.__name__)))
    run = runner.Run("coalescing")
    run.shared("plan", lambda: TOY)
    return run, kernels


def _sections(run, *names):
    for section in lesson.SECTIONS:
        if section.name in names:
            section.measure(run)


@pytest.mark.simulator_only("runs the sections' kernels at toy sizes; a GPU runs them in `record`")
def test_the_new_sections_time_check_and_record(dry_run):
    run, kernels = dry_run
    _sections(run, "offsets x4", "strides x4", "2-D walks")
    table = make_table(run.rows)
    x4 = table[table["variant"] == "offset_copy_x4"]
    assert x4["param"].tolist() == [0, 9] and (x4["runs"] == 50).all()  # two passes of 25
    strided = table[table["variant"] == "strided_copy_x4"].set_index("param")["size"]
    assert strided.to_dict() == {3: 300, 64: 256}  # 2**14 // 64
    walks = table[table["variant"].isin(lesson.MATRIX_WALKS)]
    assert len(walks) == 2 and (walks["bytes"] == 8 * 81).all() and (walks["param"] == 12).all()
    assert kernels == [("offset_copy_x4_kernel", "offset_copy_x4_kernel"),
                       ("strided_copy_x4_kernel", "strided_copy_x4_kernel"),
                       ("matrix_row_walk", "matrix_row_walk"), ("matrix_column_walk", "matrix_column_walk")]
    assert run.facts["matrix_walks"] == {"rows": 9, "cols": 9, "lds": [12], "threads_per_block": 256}
    assert run.facts["offset_copy_x4"]["elements_per_thread"] == 4


@pytest.mark.simulator_only("breaks a kernel at toy sizes to see the section's own check fail")
def test_a_wrong_copy_fails_its_section(dry_run, monkeypatch):
    run = runner.Run("coalescing")  # the fixture's fakes, a smaller random input
    run.shared("plan", lambda: replace(TOY, big=2**10))
    right = k.offset_copy_launch
    monkeypatch.setattr(k, "offset_copy_launch",
                        lambda x, out, offset, x4=False, block=256: right(x, out, offset + 1, x4, block))
    with pytest.raises(AssertionError, match=r"offset_copy_x4 offset=0: wrong values"):
        _sections(run, "offsets x4")


def _dry_ncu_cases():
    """ncu_cases at toy sizes with every simulated launch noted, not run: (cases, launches in setup)."""
    launched = []
    original = FakeCUDAKernel.__call__
    FakeCUDAKernel.__call__ = lambda self, *args: launched.append(self.fn.__name__)
    try:
        cases = lesson.ncu_cases(lesson.NcuPlan(big=2**14, elements=1000, particles=1028, matrix=9,
                                                matrix_lds=(9, 12)))
        in_setup = list(launched)
        per_case = []
        for case in cases:
            launched.clear()
            case.launch()
            per_case.append(list(launched))
    finally:
        FakeCUDAKernel.__call__ = original
    return cases, in_setup, per_case


@pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="counts simulated launches; on a GPU ncu matches them")
def test_each_ncu_case_launches_its_kernel_once_and_setup_launches_none():
    cases, in_setup, per_case = _dry_ncu_cases()
    assert in_setup == []  # under ncu every launch is profiled: inputs come by host copies
    for case, launched in zip(cases, per_case, strict=True):
        assert len(launched) == 1 and case.kernel in launched[0], (case.name, launched)
    assert all(isinstance(case, ncu.Case) for case in cases)
    assert {"offset_copy_x4 1", "strided_copy_x4 16", "matrix_column_walk 12"} <= {c.name for c in cases}


def test_the_concept_pictures_say_what_each_level_moved(recording):  # issue 26
    sharing = plots.style.alt_text(lesson.figure("sector_sharing", recording))
    assert "touches 5 sectors and sector 4 is in both" in sharing
    assert "L1 load sectors 1.250 times" in sharing and "DRAM bytes read 1.000 times" in sharing
    granule = plots.style.alt_text(lesson.figure("granule", recording))
    assert "stride 8: 32 bytes a lane, measured 32.0" in granule and "stride 32: 64 bytes a lane" in granule
