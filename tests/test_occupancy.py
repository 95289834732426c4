"""The occupancy calculator: hand-worked cases on the sm_90 limits, edge cases, clear errors.

The limits here are the CUDA C Programming Guide's table for compute capability 9.0 (H100/H200).
The driver comparison recorded on the H200 is checked in test_occupancy_driver.py.
"""

import pytest

from gpu_lessons.checks import InputError
from gpu_lessons.occupancy import NOTHING_FITS, SMLimits, occupancy, shared_to_limit

SM90 = SMLimits(
    compute_capability="9.0", warp_size=32, max_threads_per_block=1024, max_threads_per_sm=2048,
    max_blocks_per_sm=32, registers_per_sm=65536, registers_per_block=65536, max_registers_per_thread=255,
    register_allocation_unit=256, sub_partitions=4, shared_per_sm=233472, shared_per_block=49152,
    shared_per_block_optin=232448, reserved_shared_per_block=1024, shared_allocation_unit=128,
    source="CUDA C Programming Guide, compute capability 9.0",
)


@pytest.mark.parametrize("threads, regs, shared, blocks, limiter", [
    (256, 32, 0, 8, "warps"),  # 8 warps per block, 64 slots
    (32, 16, 0, 32, "blocks"),  # one-warp blocks: the 32-block table is full first
    (256, 64, 0, 4, "registers"),  # 2048 regs per warp: 8 per sub-partition of 16384
    (256, 72, 0, 3, "registers"),  # 2304 per warp: 7 per sub-partition = 28 warps -> 3 blocks
    (256, 33, 0, 6, "registers"),  # 1056 -> 1280 per warp (unit 256): 12 per partition -> 48 warps
    (128, 255, 0, 2, "registers"),  # 8160 -> 8192 per warp: 2 per partition, 8 warps per SM
    (256, 32, 48 * 1024, 4, "shared memory"),  # 49152 + 1024 = 50176 -> 4 per 233472 (at the plain limit)
    (1024, 64, 0, 1, "registers"),  # 65536 registers: exactly one block
    (48, 32, 0, 32, "warps"),  # 2 warps per block (a partial warp is whole), 64 / 2 = 32, tie with blocks
])
def test_hand_worked_cases(threads, regs, shared, blocks, limiter):
    occ = occupancy(threads, regs, shared, SM90)
    assert occ.blocks_per_sm == blocks, occ
    assert occ.limiter == limiter, occ
    assert occ.warps_per_sm == blocks * -(-threads // 32)
    assert occ.fraction == occ.warps_per_sm / 64


@pytest.mark.parametrize("threads, regs", [(1024, 72), (1024, 65), (512, 255), (768, 96)])
def test_nothing_fits_when_a_block_needs_more_registers_than_a_block_may_have(threads, regs):
    occ = occupancy(threads, regs, 0, SM90)
    assert occ.blocks_per_sm == 0 and occ.limiter == NOTHING_FITS and "registers" in occ.detail


def test_registers_are_placed_per_sub_partition():
    # 21 warps x 3072 registers (96 per thread) = 64,512: under the 65,536 of the SM, but each of the
    # 4 sub-partitions holds 16,384 / 3072 = 5 warps, so only 20 warps fit: nothing fits.
    assert 21 * 3072 < SM90.registers_per_sm
    assert occupancy(672, 96, 0, SM90).blocks_per_sm == 0
    assert occupancy(640, 96, 0, SM90).blocks_per_sm == 1


def test_register_granularity_decides_between_neighbouring_counts():
    # 40 and 33 registers per thread round to the same allocation (1280 per warp); 32 does not.
    assert occupancy(256, 40, 0, SM90).blocks_per_sm == occupancy(256, 33, 0, SM90).blocks_per_sm == 6
    assert occupancy(256, 32, 0, SM90).blocks_per_sm == 8


def test_zero_registers_and_zero_shared_leave_warps_and_blocks():
    assert occupancy(1024, 0, 0, SM90).blocks_per_sm == 2


@pytest.mark.parametrize("shared, blocks", [(100 * 1024, 2), (48 * 1024 + 1, 4),
                                           (SM90.shared_per_block_optin, 1)])
def test_a_kernel_that_opted_in_may_have_more_than_48_kib(shared, blocks):
    occ = occupancy(256, 32, shared, SM90, opt_in=True)
    assert occ.blocks_per_sm == blocks and occ.limiter == "shared memory", occ


@pytest.mark.parametrize("shared", [48 * 1024 + 1, 100 * 1024, SM90.shared_per_block_optin])
def test_a_plain_kernel_over_48_kib_cannot_launch_and_is_told_so(shared):
    # the driver answers 0 blocks for a kernel that did not raise its dynamic shared-memory limit
    occ = occupancy(256, 32, shared, SM90)
    assert occ.blocks_per_sm == 0 and occ.warps_per_sm == 0 and occ.limiter == NOTHING_FITS
    assert occ.blocks_by_resource["shared memory"] == 0
    assert f"{shared:,} bytes" in occ.detail and "49,152" in occ.detail and "cannot launch" in occ.detail
    assert "opt_in=True" in str(occ)


def test_the_plain_limit_counts_static_and_dynamic_together():
    # 49,152 bytes in all fits a plain kernel, one byte more does not, however it is split
    assert occupancy(128, 32, 48 * 1024, SM90).blocks_per_sm == 4
    assert occupancy(128, 32, 48 * 1024 + 1, SM90).blocks_per_sm == 0
    assert occupancy(128, 32, 48 * 1024 + 1, SM90, opt_in=True).blocks_per_sm == 4


def test_opting_in_changes_nothing_up_to_48_kib():
    for shared in (0, 1, 20_000, 47 * 1024, 48 * 1024):
        for threads, regs in ((32, 16), (256, 72), (1024, 64), (672, 96)):
            plain = occupancy(threads, regs, shared, SM90)
            assert plain == occupancy(threads, regs, shared, SM90, opt_in=True)


def test_shared_to_limit_caps_residency_exactly():
    for threads in (64, 128, 256, 512):
        for blocks in range(1, 9):
            if blocks * threads > 2048:
                continue
            dynamic = shared_to_limit(threads, blocks, SM90)
            opt_in = dynamic > SM90.shared_per_block  # fewer than 5 blocks: past 48 KiB a block
            assert opt_in == (blocks < 5)
            assert occupancy(threads, 32, dynamic, SM90, opt_in=opt_in).blocks_per_sm == blocks
            if dynamic < SM90.shared_per_block_optin:  # one unit more and one block fewer fits
                assert occupancy(threads, 32, dynamic + 128, SM90, opt_in=True).blocks_per_sm == blocks - 1


@pytest.mark.parametrize("args, message", [
    ((1025, 32, 0), "threads_per_block must be <= 1024"),
    ((0, 32, 0), "threads_per_block must be >= 1"),
    ((256, -1, 0), "registers_per_thread must be >= 0"),
    ((256, 256, 0), "registers_per_thread must be <= 255"),
    ((256, 32, -4), "shared_bytes_per_block must be >= 0"),
    ((256, 32, 232449), "over this GPU's per-block limit of 232,448"),
    ((256.0, 32, 0), "must be an integer"),
])
@pytest.mark.parametrize("opt_in", [False, True])
def test_bad_input_gets_a_clear_error(args, message, opt_in):
    with pytest.raises(InputError, match=message):
        occupancy(*args, limits=SM90, opt_in=opt_in)


def test_opt_in_must_be_a_bool():
    with pytest.raises(InputError, match="opt_in must be True or False, got 'yes'"):
        occupancy(256, 32, 0, SM90, opt_in="yes")


def test_shared_to_limit_needs_whole_warps():
    with pytest.raises(InputError, match="multiple of 32"):
        shared_to_limit(100, 2, SM90)
    with pytest.raises(InputError, match="blocks_per_sm must be <= 32"):
        shared_to_limit(64, 33, SM90)


def test_limits_round_trip_through_a_dict():
    assert SMLimits.from_dict(SM90.as_dict()) == SM90
    with pytest.raises(ValueError, match="lack"):
        SMLimits.from_dict({"warp_size": 32})
