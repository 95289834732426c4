import pytest

import gpu_lessons
from gpu_lessons import bench


def test_summarize_takes_median_and_extremes():
    timing = bench.summarize([3.0, 1.0, 2.0, 10.0, 2.5])
    assert (timing.median_ms, timing.min_ms, timing.max_ms, timing.runs) == (2.5, 1.0, 10.0, 5)
    assert timing.spread == pytest.approx((10.0 - 1.0) / 2.5)


@pytest.mark.parametrize("samples", [[], [1.0, 0.0], [-1.0]])
def test_summarize_rejects_empty_or_non_positive(samples):
    with pytest.raises(ValueError):
        bench.summarize(samples)


def test_throughput_units():
    timing = bench.Timing(median_ms=2.0, min_ms=2.0, max_ms=2.0, runs=1)
    figures = bench.throughput(bytes_moved=8_000_000_000, flops=4_000_000_000_000, timing=timing)
    assert figures["gbps"] == pytest.approx(4000.0)
    assert figures["gflops"] == pytest.approx(2_000_000.0)


def test_input_sets_cover_several_l2s():
    l2 = 60 * 2**20
    assert bench.input_sets_needed(8 * 2**28, l2) == 1  # 2 GiB: far past the L2
    assert bench.input_sets_needed(l2, l2) == bench.L2_MULTIPLE
    assert bench.input_sets_needed(1024, l2) == 64  # capped
    with pytest.raises(ValueError):
        bench.input_sets_needed(0, l2)


@pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="simulator behaviour")
def test_simulator_refuses_to_time():
    with pytest.raises(bench.TimingUnavailable, match="recorded on a real GPU"):
        bench.measure(lambda k: None)
