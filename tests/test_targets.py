"""The target GPUs' table: its limits in the occupancy calculator's form, and the H200 row held to the
recording's."""

import pytest

from gpu_lessons import occupancy, targets
from gpu_lessons.checks import InputError


def test_every_target_is_a_known_compute_capability_with_named_sources():
    assert list(targets.TARGETS) == ["t4", "a100", "a10", "rtx3060", "l4", "rtx4090", "h100", "h200"]
    for t in targets.TARGETS.values():
        assert t.cc in targets.CC
        assert t.max_warps_per_sm * 32 == t.max_threads_per_sm
        assert t.shared_per_block_optin <= t.shared_per_sm
        unnamed = [f for f in ("sms", "max_threads_per_sm", "max_blocks_per_sm", "shared_per_sm",
                               "shared_per_block_optin", "shared_alloc_unit", "l2_bytes", "memory_bytes",
                               "sm_clock_mhz", "memory_bandwidth_gbs") if not t.sources.get(f)]
        assert not unnamed, f"{t.key}: no source for {unnamed}"


def test_the_h200_row_is_what_the_h200_reported():
    recorded = occupancy.recorded_limits("nvidia-h200")
    assert targets.target("h200").sm_limits() == recorded  # the source is not compared


def test_sm75_allocates_shared_memory_in_256_bytes():
    t4 = targets.target("t4")
    assert t4.shared_alloc_unit == 256 and t4.reserved_shared_per_block == 0
    assert occupancy.ARCHITECTURE[7][3] == 256
    # 1,000 bytes take 1,024 (4 units of 256), so 64 blocks of them would fill 64 KiB, capped at 16
    occ = occupancy.occupancy(32, 32, 1000, t4.sm_limits())
    assert occ.shared_allocated_per_block == 1024 and occ.blocks_per_sm == 16


def test_an_unknown_target_is_one_clear_error():
    with pytest.raises(InputError, match="unknown target 'v100'; the targets are: t4, a100"):
        targets.target("v100")
    assert targets.target(" T4 ").key == "t4"
