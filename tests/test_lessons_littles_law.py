"""Lesson 2's experiment: its analysis on a hand-made table, then the H200 recording it ships with."""

import numpy as np
import pandas as pd
import pytest

import gpu_lessons
from gpu_lessons import occupancy as occ
from gpu_lessons import results, scoreboard
from gpu_lessons.lessons import littles_law as lesson
from gpu_lessons.results import make_table


def row(variant, size, param, median_ms, bytes_moved=0, flops=0, provider="gpu_lessons"):
    return {"lesson": lesson.NAME, "variant": variant, "provider": provider, "size": size, "param": param,
            "bytes": bytes_moved, "flops": flops, "runs": 25, "median_ms": median_ms, "min_ms": median_ms,
            "max_ms": median_ms}


META = {"sms": 132, "sm_clock_mhz": 2000.0, "sm_clock_now_mhz": 1000, "peak_fp32_gflops": 1000.0}


def made_up_table():
    gib = 8 * lesson.COPY_ELEMENTS
    return make_table([
        row("chase DRAM", 1000, 2**27, 1.0), row("chase DRAM", 2000, 2**27, 1.5),  # 500 ns
        row("chase FMA", 16000, np.nan, 0.1), row("chase FMA", 32000, np.nan, 0.164),  # 4 ns = 4 cycles
        row("copy w4 u1", lesson.COPY_ELEMENTS, 8, gib / 2e9, gib),  # 2,000 GB/s
        row("copy w16 u4", lesson.COPY_ELEMENTS, 16, gib / 4e9, gib),  # 4,000 GB/s
        row("cupy copy", lesson.COPY_ELEMENTS, np.nan, gib / 4e9, gib, provider="cupy"),
        row("fma c1", 64, 1, 1.0, flops=10**9), row("fma c4", 64, 8, 1.0, flops=5 * 10**8),
    ])


def test_latency_is_the_difference_of_two_chain_lengths():
    lat = lesson.latencies(made_up_table(), META).set_index("level")
    assert lat.loc["DRAM", "latency_ns"] == pytest.approx(500.0)
    assert lat.loc["FMA", "latency_ns"] == pytest.approx(4.0)
    assert lat.loc["FMA", "latency_cycles"] == pytest.approx(4.0)  # at the observed 1000 MHz


def test_memory_points_hold_each_copy_to_littles_law():
    points = lesson.memory_points(made_up_table(), META).set_index("variant")
    # w4 u1 at 8 warps: 8 x 32 x 4 = 1 KiB per SM; 2 x 1024 B x 132 SMs / 500 ns = 541 GB/s predicted
    assert points.loc["copy w4 u1", "bytes_in_flight_per_sm"] == 1024
    assert points.loc["copy w4 u1", "predicted_gbps"] == pytest.approx(2 * 1024 * 132 / 500)
    assert points.loc["copy w16 u4", "predicted_gbps"] == pytest.approx(4000.0)  # the ceiling
    assert points.loc["copy w16 u4", "error"] == pytest.approx(0.0)
    implied = points.loc["copy w4 u1", "implied_latency_ns"]
    assert implied == pytest.approx(2 * 1024 * 132 / 2000)  # bytes in flight / measured bandwidth


def test_fma_points_against_the_scheduler_model():
    fma = lesson.fma_points(made_up_table(), META).set_index("variant")
    # 1 warp, 1 chain, latency 4 cycles: 1/16 of the peak, but the run's clock is half the max
    assert fma.loc["fma c1", "predicted_fraction"] == pytest.approx(1 / 16 / 2)
    assert fma.loc["fma c1", "fraction_of_peak"] == pytest.approx(1.0)  # 1e9 FLOP in 1 ms = 1000 GFLOP/s
    assert fma.loc["fma c4", "predicted_fraction"] == pytest.approx(0.5)


def test_low_occupancy_copies_judge_the_target_on_the_rows():
    gib = 8 * lesson.COPY_ELEMENTS
    table = make_table([
        row("copy w16 u20", lesson.COPY_ELEMENTS, 16, gib / 3.8e9, gib),
        row("copy w16 u32", lesson.COPY_ELEMENTS, 8, gib / 3.9e9, gib),
        row("copy w16 u1", lesson.COPY_ELEMENTS, 64, gib / 4.0e9, gib),  # too many warps
        row("copy w4 u8", lesson.COPY_ELEMENTS, 16, gib / 3.0e9, gib),  # not 16-byte
        row(lesson.queue_variant(16, 2, 128), lesson.COPY_ELEMENTS, 16, gib / 3.9e9, gib),
        row("cupy copy", lesson.COPY_ELEMENTS, np.nan, gib / 4e9, gib, provider="cupy"),
        row("fma c1", 64, 1, 1.0, flops=10**9),
    ])
    copies = lesson.low_occupancy_copies(table)
    assert list(copies["variant"]) == ["copy w16 u32", "copy_queue w16 u16 r2 maxreg128", "copy w16 u20"]
    assert copies["of_copyto"].tolist() == pytest.approx([0.975, 0.975, 0.95])
    assert copies["meets_target"].tolist() == [True, True, False]
    queue = copies.iloc[1]
    assert (queue["kind"], queue["chunks_per_claim"], queue["max_registers"]) == ("warp queue", 2, 128)
    assert list(lesson.best_low_occupancy(table)["kind"]) == ["one-shot", "warp queue"]
    assert lesson.low_occupancy_copies(table[table["variant"] != "cupy copy"]).empty


def test_claim_model_recovers_its_terms():
    # ns per chunk = 2 / r + 0.5 x u
    shapes = [(2, 1), (4, 1), (8, 1), (8, 2), (8, 4)]
    rows = pd.DataFrame({"variant": [f"q u{u} r{r}" for u, r in shapes], "unroll": [u for u, _ in shapes],
                         "chunks_per_claim": [r for _, r in shapes],
                         "gbps": [2 * 32 * 16 * u / (2 / r + 0.5 * u) for u, r in shapes]})
    model = lesson.claim_costs(rows, ceiling_gbps=1e9)
    assert model.attrs["ns_claim"] == pytest.approx(2) and model.attrs["ns_float4"] == pytest.approx(0.5)
    assert model["error"].abs().max() < 1e-9
    assert lesson.claim_costs(rows, ceiling_gbps=1000.0)["predicted_gbps"].max() == 1000.0


def test_variant_names_parse():
    assert lesson.parse_variant("copy w16 u32 maxreg64") == {"kind": "copy", "width": 16, "unroll": 32,
                                                           "max_registers": 64}
    assert lesson.parse_variant("fma c12") == {"kind": "fma", "chains": 12}


def test_sass_counts_tell_widths_apart():
    sass = """
        /*0080*/   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0090*/   LDG.E.128 R8, desc[UR4][R2.64+0x1000] ;
        /*00a0*/   LDG.E R12, desc[UR4][R6.64] ;
        /*00b0*/   STG.E.64 desc[UR4][R2.64], R4 ;
        /*00c0*/   STL.128 [R1], R8 ;
        /*00d0*/   FFMA R3, R3, R4, R5 ;
    """
    counts = lesson.sass_counts(sass)
    assert counts["LDG.E.128"] == 2 and counts["LDG.E"] == 1 and counts["STG.E.64"] == 1
    assert counts["STL"] == 1 and counts["FFMA"] == 1 and counts["LDL"] == 0


def test_check_passes_on_this_machine():
    checks = lesson.check()
    assert checks["passed"].all(), checks[~checks["passed"]]


# ---------------------------------------------------------------- the recording shipped in data/


@pytest.fixture(scope="module")
def recording():
    return results.read_recording(lesson.NAME)


def test_recording_has_every_variant_and_its_facts(recording):
    variants = set(recording.table["variant"])
    assert set(lesson.COPY_VARIANTS) <= variants and set(lesson.FMA_VARIANTS) <= variants
    assert {"chase DRAM", "chase L2", "chase L1", "chase FMA", "cupy copy"} <= variants
    facts = recording.meta["facts"]
    assert occ.SMLimits.from_dict(facts["sm_limits"]).max_warps_per_sm == 64
    for variant in lesson.COPY_VARIANTS:
        assert facts["kernels"][variant]["registers_per_thread"] > 0
    assert facts["occupancy_disagreements"] == 0


def test_recorded_latencies_are_ordered(recording):
    lat = lesson.latencies(recording.table, recording.meta).set_index("level")["latency_ns"]
    assert lat["DRAM"] > lat["L2"] > lat["L1"] > lat["FMA"] > 0


def test_recorded_targets(recording):
    board = scoreboard.scoreboard(lesson.COMPARISONS).set_index("title")
    at16, at8, fma = (board.loc[c.title] for c in lesson.COMPARISONS[:3])
    assert (board["status"] == "ok").all(), board[board["status"] != "ok"]
    assert at16["param"] == lesson.LOW_OCCUPANCY_WARPS and at16["ratio"] >= 0.95, at16
    # Issue 7: <= 16 warps/SM within 3% of copyto; on the H200 the pipelined queue did it at 8 warps/SM
    assert at8["param"] == 8 and at8["best_variant"].startswith("copy_queue") and at8["ratio"] >= 0.97, at8
    assert fma["ratio"] >= 0.90 and fma["param"] <= lesson.FMA_LOW_WARPS, fma
    best = lesson.low_occupancy_copies(recording.table).iloc[0]
    assert best["variant"] == at8["best_variant"] and best["meets_target"]
    # the residency of the winning copies, by the driver as well as the calculator
    for row in (at16, at8):
        shapes = [o for o in recording.meta["facts"]["occupancy"] if o["kernel"] == row["best_variant"]]
        assert any(o["driver"] == o["calculator"] and o["driver"] * o["block"] // 32 == row["param"]
                   for o in shapes), row["best_variant"]


def test_recorded_queue_rows_at_their_residency(recording):
    queue = recording.table[recording.table["variant"].isin(lesson.QUEUE_VARIANTS)]
    assert set(queue["variant"]) == set(lesson.QUEUE_VARIANTS)
    kernels = recording.meta["facts"]["kernels"]
    for _, row in queue.iterrows():  # 2 blocks of 256 per SM unless the registers allow only one
        registers = kernels[row["variant"]]["registers_per_thread"]
        assert row["param"] == (16 if registers <= 128 else 8), (row["variant"], registers)


def test_register_pressure_shows_spills_and_occupancy(recording):
    pressure = lesson.register_pressure(recording.table, recording.meta)
    assert pressure["registers"].is_monotonic_increasing or len(pressure) > 3
    assert (pressure["local_bytes"] > 0).any(), "no variant spills"
    assert pressure["warps_per_sm"].min() < pressure["warps_per_sm"].max()


def test_figures_draw_from_the_recording(recording):
    figs = lesson.figures(recording.table, {}, results.provenance(recording.meta), meta=recording.meta)
    assert set(figs) == {"littles_law_memory", "littles_law_fma", "register_pressure", "low_occupancy_copies"}


def test_kernel_resources_table(recording):
    table = lesson.kernel_resources_table(recording.meta)
    assert isinstance(table, pd.DataFrame) and "registers_per_thread" in table


@pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="on a GPU, 'run' measures for a minute")
def test_cli_run_draws_the_lessons_figures(tmp_path, capsys):
    from gpu_lessons.cli import main

    assert main(["run", lesson.NAME, "--out", str(tmp_path), "--no-progress"]) == 0
    assert "correctness checks passed" in capsys.readouterr().out
    figures = sorted(p.name for p in (tmp_path / lesson.NAME).glob("*.png"))
    assert figures == ["littles_law_fma.png", "littles_law_memory.png", "low_occupancy_copies.png",
                       "register_pressure.png"]
