"""The calculator against the driver's answers recorded on the H200 (benchmarks/record_occupancy_driver.py).

Every recorded case is recomputed here from the kernel's recorded registers and shared memory and
the recorded SM limits, both ways the recorder asked the driver: with the kernel's dynamic
shared-memory limit as compiled (a plain kernel: 48 KiB per block) and raised to the opt-in maximum
(``occupancy(..., opt_in=True)``). A change to the calculator that breaks agreement with the driver
either way fails on the simulator too. On a GPU, the same comparison runs live for the lesson's kernels.
"""

import pytest

import gpu_lessons
from gpu_lessons import occupancy as occ
from gpu_lessons.checks import InputError

WAYS = {"": False, "_opt_in": True}  # column suffix -> opt_in


@pytest.fixture(scope="module")
def driver():
    return occ.recorded_driver_table()


def test_recording_covers_every_kernel_and_the_edge_cases(driver):
    limits = driver.attrs["sm_limits"]
    assert driver["kernel"].nunique() >= 20
    assert driver["block"].isin([1, 48, 672]).any()  # partial warps, sub-partition placement
    assert driver["registers"].nunique() >= 8  # register granularity decides between them
    for way in WAYS:
        assert (driver[f"driver{way}"] == "0").any(), f"no case where nothing fits ({way or 'plain'})"
        assert (driver[f"calculator{way}"] == "refused").any()  # past the opt-in per-block limit
    total = driver["static_shared"] + driver["dynamic_shared"]
    between = (total > limits.shared_per_block) & (total <= limits.shared_per_block_optin)
    # both edges of the plain limit, and cases between the limits (where the two ways differ)
    assert (total == limits.shared_per_block).any() and (total == limits.shared_per_block + 1).any()
    assert between.sum() >= 100


def recompute(row, limits, opt_in: bool) -> str:
    try:
        return str(occ.occupancy(row.block, row.registers, row.static_shared + row.dynamic_shared, limits,
                                 opt_in=opt_in).blocks_per_sm)
    except InputError:
        return "refused"


@pytest.mark.parametrize("way", list(WAYS), ids=["plain", "opt_in"])
def test_calculator_agrees_with_every_recorded_driver_answer(driver, way):
    limits = driver.attrs["sm_limits"]
    disagreements = []
    for row in driver.itertuples():
        mine, answer = recompute(row, limits, WAYS[way]), getattr(row, f"driver{way}")
        refused = mine == "refused" and (answer == "0" or answer.startswith("error"))
        if not (mine == answer or refused):
            disagreements.append((row.kernel, row.block, row.registers, row.static_shared, row.dynamic_shared,
                                  answer, mine))
    assert not disagreements, f"{len(disagreements)} disagree ({way or 'plain'}), e.g. {disagreements[:5]}"


def test_the_two_ways_differ_exactly_between_the_limits(driver):
    """The driver's answers show what opting in changes: nothing up to 48 KiB a block; past it, a plain
    kernel gets no block at all where an opted-in one gets some (the calculator says why)."""
    limits = driver.attrs["sm_limits"]
    total = driver["static_shared"] + driver["dynamic_shared"]
    differ = driver["driver"] != driver["driver_opt_in"]
    assert not differ[total <= limits.shared_per_block].any()
    past = driver[(total > limits.shared_per_block) & (total <= limits.shared_per_block_optin)]
    assert ((past["driver"] == "0") | past["driver"].str.startswith("error")).all()
    assert (past["driver_opt_in"] != "0").any()
    row = past[past["driver_opt_in"] != "0"].iloc[0]
    shared = int(row["static_shared"] + row["dynamic_shared"])
    plain = occ.occupancy(int(row["block"]), int(row["registers"]), shared, limits)
    assert plain.blocks_per_sm == 0 and plain.limiter == occ.NOTHING_FITS
    assert "cannot launch" in plain.detail and "opt_in=True" in plain.detail


def test_recorded_limits_are_the_lessons(driver):
    assert driver.attrs["sm_limits"] == occ.recorded_limits()


def test_a_recording_without_both_ways_is_named(tmp_path, driver):
    import json

    folder = tmp_path / "nvidia-h200" / "checks"
    folder.mkdir(parents=True)
    driver.drop(columns=["driver_opt_in"]).to_csv(folder / "occupancy_driver.csv", index=False)
    limits = driver.attrs["sm_limits"].as_dict()
    (folder / "occupancy_driver.json").write_text(json.dumps({"sm_limits": limits}))
    from gpu_lessons.results import RecordingError

    with pytest.raises(RecordingError, match="no driver_opt_in column"):
        occ.recorded_driver_table(root=tmp_path)


@pytest.mark.skipif(gpu_lessons.SIMULATED, reason="the driver answers only on a GPU")
def test_calculator_agrees_with_the_driver_live():
    import numpy as np
    from numba import cuda

    from gpu_lessons.kernels import littles_law as k

    x = cuda.to_device(np.ones(4096, np.float32))
    limits = occ.sm_limits()
    for kernel in (k.copy_ilp(1), k.copy_ilp(8, True), k.copy_ilp(64, True), k.copy_ilp(32, True, 64)):
        res = occ.kernel_resources(kernel, x, x)
        signature = next(iter(kernel.overloads))
        for opt_in, limit in ((False, limits.shared_per_block), (True, limits.shared_per_block_optin)):
            k.allow_dynamic_shared(kernel, (x, x), limit - res.shared_bytes_per_block)
            for block in (32, 96, 256, 1024):
                for shared in (0, 20_000, 100_000):
                    mine = occ.occupancy(block, res.registers_per_thread, res.shared_bytes_per_block + shared,
                                         opt_in=opt_in)
                    assert mine.blocks_per_sm == occ.driver_blocks_per_sm(kernel, block, shared, signature), (
                        kernel.__name__, opt_in, block, shared)
