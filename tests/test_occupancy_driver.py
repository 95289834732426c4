"""The calculator against the driver's answers recorded on the H200 (benchmarks/record_occupancy_driver.py).

Every recorded case is recomputed here from the kernel's recorded registers and shared memory and
the recorded SM limits, so a change to the calculator that breaks agreement with the driver fails
on the simulator too. On a GPU, the same comparison runs live for the lesson's kernels.
"""

import pytest

import gpu_lessons
from gpu_lessons import occupancy as occ
from gpu_lessons.checks import InputError


@pytest.fixture(scope="module")
def driver():
    return occ.recorded_driver_table()


def test_recording_covers_every_kernel_and_the_edge_cases(driver):
    assert driver["kernel"].nunique() >= 20
    assert (driver["driver"] == "0").any(), "no case where nothing fits"
    assert driver["block"].isin([1, 48, 672]).any()  # partial warps, sub-partition placement
    assert driver["registers"].nunique() >= 8  # register granularity decides between them
    assert (driver["calculator"] == "refused").any()  # past the per-block shared-memory limit


def test_calculator_agrees_with_every_recorded_driver_answer(driver):
    limits = driver.attrs["sm_limits"]
    disagreements = []
    for row in driver.itertuples():
        try:
            mine = str(occ.occupancy(row.block, row.registers, row.static_shared + row.dynamic_shared,
                                     limits).blocks_per_sm)
        except InputError:
            mine = "refused"
        refused = mine == "refused" and (row.driver == "0" or row.driver.startswith("error"))
        if not (mine == row.driver or refused):
            disagreements.append((row.kernel, row.block, row.registers, row.dynamic_shared, row.driver, mine))
    assert not disagreements, f"{len(disagreements)} disagreements, e.g. {disagreements[:5]}"


def test_recorded_limits_are_the_lessons(driver):
    assert driver.attrs["sm_limits"] == occ.recorded_limits()


@pytest.mark.skipif(gpu_lessons.SIMULATED, reason="the driver answers only on a GPU")
def test_calculator_agrees_with_the_driver_live():
    import numpy as np
    from numba import cuda

    from gpu_lessons.kernels import littles_law as k

    x = cuda.to_device(np.ones(4096, np.float32))
    for kernel in (k.copy_ilp(1), k.copy_ilp(8, True), k.copy_ilp(64, True), k.copy_ilp(32, True, 64)):
        res = occ.kernel_resources(kernel, x, x)
        signature = next(iter(kernel.overloads))
        optin = occ.sm_limits().shared_per_block_optin
        k.allow_dynamic_shared(kernel, (x, x), optin - res.shared_bytes_per_block)
        for block in (32, 96, 256, 1024):
            for shared in (0, 20_000, 100_000):
                mine = occ.occupancy(block, res.registers_per_thread, res.shared_bytes_per_block + shared)
                assert mine.blocks_per_sm == occ.driver_blocks_per_sm(kernel, block, shared, signature), (
                    kernel.__name__, block, shared)
