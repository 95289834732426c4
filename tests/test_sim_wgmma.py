"""The simulator's Hopper wgmma (gpu_lessons.sim.wgmma): the descriptor's bits, the layouts, the
warpgroup and asynchrony rules, and outputs recorded on an H200
(data/nvidia-h200/checks/wgmma_primitives.npz)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gpu_lessons
from gpu_lessons.sim import wgmma as sim

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "data" / "nvidia-h200" / "checks" / "wgmma_primitives.npz"


def test_descriptor_bits_follow_the_ptx_isa_format():
    # 0x400 >> 4 in bits 0-13, 128 >> 4 in 16-29, 256 >> 4 in 32-45, swizzle in 62-63
    assert sim.descriptor_bits(0x400, 128, 256, sim.SWIZZLE_NONE) == 0x40 | 8 << 16 | 16 << 32
    assert sim.descriptor_bits(0x400, 16, 1024, sim.SWIZZLE_128B) == 0x40 | 1 << 16 | 64 << 32 | 1 << 62
    assert sim.descriptor_bits(0x400, 16, 1024, sim.SWIZZLE_32B) >> 62 == 3
    d = sim.decode_descriptor(sim.descriptor_bits(0x3FFF0, 0x3FFF0, 0x10, sim.SWIZZLE_64B))
    assert (d.start, d.leading, d.stride, d.base_offset, d.swizzle) == (0x3FFF0, 0x3FFF0, 0x10, 0, 2)


def test_operand_addresses_without_and_with_the_128_byte_swizzle():
    plain = sim.operand_addresses(sim.descriptor_bits(0, 128, 256, sim.SWIZZLE_NONE), 16)
    assert plain[0].tolist() == [0, 4, 8, 12, 128, 132, 136, 140]  # core matrix 0, then 1 (leading)
    assert plain[1, 0] == 16 and plain[8, 0] == 256  # next row: 16 bytes; next 8 rows: stride
    swizzled = sim.operand_addresses(sim.descriptor_bits(1024, 16, 1024, sim.SWIZZLE_128B), 16)
    assert swizzled[0].tolist() == [1024 + 4 * k for k in range(8)]  # row 0: chunks in place
    assert swizzled[3, 0] == 1024 + 3 * 128 + (3 << 4)  # row 3: chunk 0 moved to chunk 3
    assert swizzled[3, 4] == 1024 + 3 * 128 + ((1 ^ 3) << 4)
    assert swizzled[8, 0] == 2048  # the stride


def test_accumulator_layout_is_m16n8_per_warp_slab():
    rows, cols = sim.accumulator_layout(16)
    assert (rows[0].tolist(), cols[0].tolist()) == ([0, 0, 8, 8, 0, 0, 8, 8], [0, 1, 0, 1, 8, 9, 8, 9])
    assert rows[32 + 5, 0] == 16 + 1 and cols[32 + 5, 0] == 2  # warp 1, lane 5: g 1, t 1
    assert len(set(zip(rows.ravel(), cols.ravel(), strict=True))) == 64 * 16  # each element once


if not gpu_lessons.SIMULATED:
    pytest.skip("the rest runs the simulator's wgmma (on a GPU the hardware runs them)",
                allow_module_level=True)

from numba import cuda, float32  # noqa: E402

from gpu_lessons.ptx import (  # noqa: E402
    fence_proxy_async,
    matrix_descriptor,
    shared_address,
    wgmma_commit_group,
    wgmma_fence,
    wgmma_m64n8k8_tf32,
    wgmma_wait_group,
    wgmma_zero_accumulators,
)
from gpu_lessons.sim import wgmma_cases as cases  # noqa: E402
from gpu_lessons.sim.trace import trace  # noqa: E402
from gpu_lessons.sim.warp import WarpDeadlockError  # noqa: E402

WRONG = ("n64_none_int_offsets_swapped", "n64_sw128_int_read_unswizzled")
EXACT = [s.name for s in cases.SPECS if s.values != "float" and s.name not in WRONG]


def _run(spec):
    a, b, args = spec.inputs()
    case = spec.case()
    case.kernel[case.grid, case.block](*args)
    return a, b, args[-1]


@pytest.mark.parametrize("name", EXACT)
def test_a_times_b_for_each_n_layout_and_swizzle(name):
    spec = cases.BY_NAME[name]
    a, b, out = _run(spec)
    np.testing.assert_array_equal(out, cases.expected(spec, a, b).astype(np.float32))


@pytest.mark.parametrize("name", WRONG)
def test_descriptors_that_misread_the_layout_give_a_wrong_answer(name):
    spec = cases.BY_NAME[name]
    a, b, out = _run(spec)
    assert not np.array_equal(out, cases.expected(spec, a, b).astype(np.float32))


def test_float_operands_are_cut_to_tf32_and_summed_closely():
    spec = cases.BY_NAME["n64_none_float_k16"]
    a, b, out = _run(spec)
    exact = cases.expected(spec, a, b)
    scale = cases.expected(spec, np.abs(a), np.abs(b))
    assert np.all(np.abs(out - exact) <= 2.0**-21 * scale)


# --- the rules the simulator enforces -------------------------------------------------------------

A_FLOATS, B_FLOATS = 64 * 8, 8 * 8


def _kernel(fence_proxy=True, fence=True, early_read=False, wait_n=0, threads_same=True,
            overwrite=False):
    """One m64n8k8 wgmma on A = ones and B = twos in shared memory (no swizzle), with one rule
    broken on request."""

    @cuda.jit
    def one_wgmma(out):
        s = cuda.shared.array(A_FLOATS + B_FLOATS + 4, float32)
        t = cuda.threadIdx.x
        first = ((16 - shared_address(s, 0) % 16) % 16) // 4
        for i in range(t, A_FLOATS + B_FLOATS, cuda.blockDim.x):
            s[first + i] = float32(1) if i < A_FLOATS else float32(2)
        if fence_proxy:
            fence_proxy_async()
        cuda.syncthreads()
        start = shared_address(s, first)
        desc_a = matrix_descriptor(start, 128, 256, 0)
        desc_b = matrix_descriptor(start + 4 * A_FLOATS + (0 if threads_same or t < 64 else 16), 128, 256, 0)
        acc = wgmma_zero_accumulators(8)
        if fence:
            wgmma_fence()
        acc = wgmma_m64n8k8_tf32(desc_a, desc_b, acc, 0)
        if early_read:
            out[t, 0] = acc[0]
        wgmma_commit_group()
        if overwrite:  # the next stage's refill while this wgmma may still read B
            cuda.syncthreads()
            s[first + A_FLOATS + t % B_FLOATS] = float32(3)
        acc = wgmma_wait_group(wait_n, acc)
        for i in range(4):
            out[t, i] = acc[i]

    return one_wgmma


def _launch(kernel, threads=128):
    out = np.zeros((threads, 4), np.float32)
    kernel[1, threads](out)
    return out


def test_the_rules_kept_give_the_product():
    np.testing.assert_array_equal(_launch(_kernel()), np.full((128, 4), 16, np.float32))


def test_a_missing_proxy_fence_is_caught():
    with pytest.raises(sim.AsyncProxyError, match="fence_proxy_async"):
        _launch(_kernel(fence_proxy=False))


def test_reading_accumulators_before_the_wait_is_caught():
    with pytest.raises(sim.AccumulatorsNotReady, match="before wgmma_wait_group"):
        _launch(_kernel(early_read=True))


def test_waiting_on_the_wrong_group_leaves_the_accumulators_pending():
    with pytest.raises(sim.AccumulatorsNotReady):
        _launch(_kernel(wait_n=1))


def test_refilling_shared_memory_under_an_in_flight_wgmma_is_caught():
    with pytest.raises(sim.AsyncProxyError, match="changed before wgmma_wait_group"):
        _launch(_kernel(overwrite=True))


def test_a_missing_wgmma_fence_is_caught():
    with pytest.raises(sim.WgmmaFenceError, match="wgmma_fence"):
        _launch(_kernel(fence=False))


def test_the_warpgroup_must_be_whole_and_agree():
    with pytest.raises(sim.WarpgroupError, match="all 128 threads"):
        _launch(_kernel(), threads=96)
    with pytest.raises(sim.WarpgroupError, match="desc_b"):
        _launch(_kernel(threads_same=False))


@cuda.jit
def _half_skips(out):
    s = cuda.shared.array(A_FLOATS + B_FLOATS + 4, float32)
    t = cuda.threadIdx.x
    first = ((16 - shared_address(s, 0) % 16) % 16) // 4
    start = shared_address(s, first)
    fence_proxy_async()
    if t < 64:
        wgmma_fence()
        acc = wgmma_m64n8k8_tf32(matrix_descriptor(start, 128, 256, 0),
                                 matrix_descriptor(start + 4 * A_FLOATS, 128, 256, 0),
                                 wgmma_zero_accumulators(8), 0)
        wgmma_commit_group()
        out[t] = wgmma_wait_group(0, acc)[0]


def test_a_warpgroup_thread_that_never_arrives_is_a_deadlock():
    with pytest.raises(WarpDeadlockError, match="warpgroup 0"):
        _half_skips[1, 128](np.zeros(128, np.float32))


@cuda.jit
def _half_waits_at_a_barrier(out):  # threads 64..127 wait in a syncthreads() the others never reach
    s = cuda.shared.array(A_FLOATS + B_FLOATS + 4, float32)
    t = cuda.threadIdx.x
    first = ((16 - shared_address(s, 0) % 16) % 16) // 4
    start = shared_address(s, first)
    fence_proxy_async()
    if t >= 64:
        cuda.syncthreads()
    wgmma_fence()
    acc = wgmma_m64n8k8_tf32(matrix_descriptor(start, 128, 256, 0),
                             matrix_descriptor(start + 4 * A_FLOATS, 128, 256, 0),
                             wgmma_zero_accumulators(8), 0)
    wgmma_commit_group()
    out[t] = wgmma_wait_group(0, acc)[0]


def test_a_warpgroup_thread_held_at_a_barrier_is_a_deadlock():
    with pytest.raises(WarpDeadlockError, match="waits in cuda.syncthreads"):
        _half_waits_at_a_barrier[1, 128](np.zeros(128, np.float32))


def test_the_tracer_lists_each_wgmma_and_its_shared_reads():
    spec = cases.BY_NAME["n64_none_int_k16"]
    _, _, args = spec.inputs()
    result = trace(spec.case().kernel, 1, 128, *args)
    assert len(result.wgmma) == 2  # K = 16: two chained wgmmas, one row per warpgroup instruction
    assert result.wgmma["a_bytes"].tolist() == [2048, 2048]
    assert result.wgmma["b_bytes"].tolist() == [64 * 32, 64 * 32]
    assert result.wgmma["flops"].sum() == 2 * 64 * 64 * 16


# --- against the H200 -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recording():
    if not RECORDING.exists():
        pytest.skip(f"no GPU recording at {RECORDING.relative_to(ROOT)}: run "
                    "`python benchmarks/record_wgmma_primitives.py --out data/nvidia-h200/checks` on an H200")
    facts = json.loads(RECORDING.with_suffix(".json").read_text())
    stale = [name for name, fp in cases.fingerprints().items() if facts["fingerprints"].get(name) != fp]
    assert not stale, f"cases changed since the GPU recording, re-record: {stale}"
    assert all(facts["repeatable"].values()), "the GPU gave different outputs on two runs"
    with np.load(RECORDING) as gpu:
        return {name: gpu[name] for name in gpu.files}


@pytest.mark.parametrize("name", [s.name for s in cases.SPECS if s.values != "float"])
def test_layouts_bit_for_bit_with_the_h200(recording, name):
    _, _, out = _run(cases.BY_NAME[name])
    np.testing.assert_array_equal(out.view(np.uint32), recording[name].view(np.uint32))


@pytest.mark.parametrize("name", [s.name for s in cases.SPECS if s.values == "float"])
def test_tf32_sums_within_the_mma_sync_model_tolerance_of_the_h200(recording, name):
    from gpu_lessons.sim.ptx import MODEL_TOLERANCE

    spec = cases.BY_NAME[name]
    a, b, out = _run(spec)
    k_steps = spec.k // 8  # each chained wgmma adds one rounding of the running sum
    scale = cases.expected(spec, np.abs(a), np.abs(b))
    gpu = recording[name]
    assert np.all(np.abs(out.astype(np.float64) - gpu) <= k_steps * MODEL_TOLERANCE * scale)
    assert np.mean(out.view(np.uint32) == gpu.view(np.uint32)) >= 0.5
