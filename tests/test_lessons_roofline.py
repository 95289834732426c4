"""Lesson 1's Nsight Compute cases and the bytes at each level they give (issue 26, item 4)."""

import json

import pytest

from gpu_lessons import lessons, ncu, plots
from gpu_lessons.lessons import roofline as lesson


def test_ncu_cases_launch_once_each_and_check_their_results(tmp_path):
    cases = lesson.ncu_cases(triad_elements=300, gemm_n=16)  # small: the simulator runs them
    assert [c.kernel for c in cases] == ["triad", "gemm_naive"]
    assert ncu.launch_all(cases, tmp_path / "launches.json") == 0
    launched = json.loads((tmp_path / "launches.json").read_text())
    assert [launch["case"] for launch in launched["launches"]] == [lesson.NCU_TRIAD, lesson.NCU_GEMM]
    assert launched["wrong_results"] == []
    assert set(lesson.L1_SECTORS + lesson.L2_SECTORS + lesson.DRAM_BYTES) <= set(lesson.NCU_METRICS)


def _with_counters(triad_dram: float, gemm_dram: float):
    n, fmas = lesson.TRIAD_ELEMENTS, lesson.GEMM_N**3
    outputs = lesson.GEMM_N**2

    def metrics(l1_read, l1_write, l2_read, l2_write, dram_read, dram_write):
        return dict(zip(lesson.L1_SECTORS + lesson.L2_SECTORS + lesson.DRAM_BYTES,
                        (l1_read, l1_write, l2_read, l2_write, dram_read, dram_write), strict=True))

    counters = {
        lesson.NCU_TRIAD: {"kernel": "triad", "source": "ncu test",
                           "metrics": metrics(3 * n // 8, n // 8, 3 * n // 8, n // 8,
                                              int(0.75 * triad_dram * n), int(0.25 * triad_dram * n))},
        lesson.NCU_GEMM: {"kernel": "gemm_naive", "source": "ncu test",
                          "metrics": metrics(5 * fmas // 32, outputs // 8, fmas // 64, outputs // 8,
                                             int(gemm_dram * fmas), 4 * outputs)},
    }
    recorded = lessons.load("roofline", live=False)
    return recorded.with_evidence(ncu=counters, sources={"ncu test": {"tool": "test"}})


def test_traffic_levels_per_element_and_per_fma():
    levels = lesson.traffic_levels(_with_counters(16.0, 0.05)).set_index(["kernel", "level"])["bytes"]
    assert levels["triad", "the count"] == 16 and levels["triad", "L1, simulator"] == pytest.approx(16)
    assert levels["triad", "L1, ncu"] == pytest.approx(16)
    assert levels["triad", "DRAM, ncu"] == pytest.approx(16)
    assert levels["gemm_naive", "the count"] == 8
    assert levels["gemm_naive", "L1, simulator"] == pytest.approx(5, rel=0.01)
    assert levels["gemm_naive", "L2, ncu"] == pytest.approx(0.5, rel=0.01)
    assert levels["gemm_naive", "DRAM, ncu"] == pytest.approx(0.05, rel=0.03)


def test_memory_levels_picture_has_alt_text(tmp_path):
    levels = lesson.traffic_levels(_with_counters(16.0, 0.05))
    figure = plots.roofline.memory_levels(levels, provenance="test")
    assert "gemm_naive, bytes per FMA: count 8" in figure.alt_text
    assert plots.save(figure, tmp_path / "levels.png").stat().st_size > 10_000
