"""The simulator's cp.async and TF32 mma.sync (gpu_lessons.sim.ptx), against the PTX ISA's rules
written out here and against outputs recorded on an H200 (data/nvidia-h200/checks/ptx_primitives.npz)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gpu_lessons

if not gpu_lessons.SIMULATED:
    pytest.skip("these test the simulator's own cp.async and mma.sync (on a GPU the hardware runs them; "
                "the recording test below compares the two)", allow_module_level=True)

from numba import cuda, float32  # noqa: E402

from gpu_lessons.ptx import (  # noqa: E402
    cp_async4,
    cp_async16,
    cp_async_commit_group,
    cp_async_wait_all,
    cp_async_wait_group,
    mma_tf32,
)
from gpu_lessons.sim import ptx as sim  # noqa: E402
from gpu_lessons.sim import ptx_cases as cases  # noqa: E402
from gpu_lessons.sim.trace import trace  # noqa: E402
from gpu_lessons.sim.warp import WarpMaskError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "data" / "nvidia-h200" / "checks" / "ptx_primitives.npz"
rng = np.random.default_rng()


def test_fragment_layout_is_the_ptx_isa_table():
    # PTX ISA, mma.m16n8k8 .tf32: row = groupID (+8 for a1, a3), col = threadID_in_group (+4 for a2, a3)
    seen = {"A": set(), "B": set(), "C": set()}
    for lane in range(32):
        g, t = lane // 4, lane % 4
        assert sim.a_fragment(lane) == [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]
        assert sim.b_fragment(lane) == [(t, g), (t + 4, g)]
        assert sim.c_fragment(lane) == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
        for name, coords in (("A", sim.a_fragment(lane)), ("B", sim.b_fragment(lane)),
                             ("C", sim.c_fragment(lane))):
            seen[name].update(coords)
    assert len(seen["A"]) == 128 and len(seen["B"]) == 64 and len(seen["C"]) == 128


def test_one_warp_mma_of_integers_is_exact():
    a, b, c = (rng.integers(-50, 51, s).astype(np.float32) for s in ((16, 8), (8, 8), (16, 8)))
    d = np.full((16, 8), np.nan, np.float32)
    cases.mma_tiles[1, 32](a[None], b[None], c[None], np.int32(0), d[None])
    np.testing.assert_array_equal(d, a @ b + c)


def test_tf32_conversions():
    one = np.float32(1)
    bits = lambda x: int(np.float32(x).view(np.uint32))  # noqa: E731
    assert bits(sim.tf32_truncate(np.float32(1 + 2**-10 + 2**-11 + 2**-12))) == bits(1 + 2**-10)
    assert bits(sim.tf32_rna(np.float32(1 + 2**-11))) == bits(1 + 2**-10)  # a tie goes away from zero
    assert bits(sim.tf32_rna(np.float32(-(1 + 2**-11)))) == bits(-(1 + 2**-10))
    assert bits(sim.tf32_rna(np.float32(1 + 2**-12))) == bits(one)
    largest_tie = np.array([0x7F7FF000], np.uint32).view(np.float32)[0]
    assert bits(sim.cvt_rna_tf32(largest_tie)) == 0x7F800000  # rounds up past the largest TF32
    nan_in_low_bits = np.array([0x7F800001], np.uint32).view(np.float32)
    assert int(sim.tf32_rna(nan_in_low_bits).view(np.uint32)[0]) == 0x7F800000  # as the H200 does


def test_operands_not_rounded_first_are_cut():
    a = np.zeros((16, 8), np.float32)
    a[:, 0] = 1 + 2**-11 + 2**-12  # cut: 1; rounded to nearest: 1 + 2**-10
    b = np.zeros((8, 8), np.float32)
    b[0, :] = 1
    d = np.full((1, 16, 8), np.nan, np.float32)
    cases.mma_tiles[1, 32](a[None], b[None], np.zeros((1, 16, 8), np.float32), np.int32(0), d)
    np.testing.assert_array_equal(d[0], np.ones((16, 8), np.float32))
    cases.mma_tiles[1, 32](a[None], b[None], np.zeros((1, 16, 8), np.float32), np.int32(1), d)
    np.testing.assert_array_equal(d[0], np.full((16, 8), 1 + 2**-10, np.float32))


def test_mma_needs_a_full_warp():
    @cuda.jit
    def partial(out):
        x = float32(1)
        d0, d1, d2, d3 = mma_tf32(x, x, x, x, x, x, x, x, x, x)
        out[cuda.threadIdx.x] = d0

    with pytest.raises(WarpMaskError, match="all 32 lanes"):
        partial[1, 16](np.zeros(16, np.float32))


@cuda.jit
def _copy_then_look(src, seen):
    """One thread: what shared memory holds before and after each wait."""
    s = cuda.shared.array(16, float32)
    for i in range(16):
        s[i] = float32(-1)
    cp_async16(s, 0, src, 4, 16)  # group 0: src[4..7] -> s[0..3]
    cp_async_commit_group()
    cp_async16(s, 4, src, 8, 6)  # group 1: 6 bytes read, the rest of the 16 zero-filled
    cp_async_commit_group()
    cp_async4(s, 8, src, 0, 4)  # never committed before wait_all
    seen[0, 0] = s[0]  # nothing has landed yet
    cp_async_wait_group(1)  # group 0 has landed, group 1 may not have
    seen[1, 0], seen[1, 1] = s[0], s[4]
    cp_async_wait_group(0)
    seen[2, 0], seen[2, 1], seen[2, 2], seen[2, 3] = s[4], s[5], s[6], s[8]
    cp_async_wait_all()
    seen[3, 0] = s[8]


def test_cp_async_lands_at_its_wait():
    src = (np.arange(1, 17) + 0.1).astype(np.float32)
    seen = np.zeros((4, 4), np.float32)
    _copy_then_look[1, 1](src, seen)
    assert seen[0, 0] == -1  # read before the wait: the old contents (a race on a GPU)
    assert (seen[1, 0], seen[1, 1]) == (src[4], -1)  # wait_group(1) landed only the older group
    # 6 of 16 bytes read: s[4] = src[8], s[5] = src[9]'s first two bytes (little-endian: its low
    # half) and two zero bytes, s[6] = 0; s[8]'s copy was never committed, so not waited for
    assert seen[2, 0] == src[8] and seen[2, 2] == 0 and seen[2, 3] == -1
    assert int(seen[2, 1:2].view(np.uint32)[0]) == int(src[9:10].view(np.uint32)[0]) & 0xFFFF
    assert seen[3, 0] == src[0]  # wait_all commits it, then lands it


@cuda.jit
def _misaligned(src, out):
    s = cuda.shared.array(8, float32)
    cp_async16(s, 2, src, 0, 16)
    cp_async_wait_all()
    out[0] = s[2]


def test_cp_async_contract_errors():
    with pytest.raises(ValueError, match="16-byte aligned"):
        _misaligned[1, 1](np.ones(8, np.float32), np.zeros(1, np.float32))
    with pytest.raises(RuntimeError, match="inside a kernel"):
        sim.cp_async_commit_group()


@cuda.jit
def _tile_copy(src, out):
    s = cuda.shared.array(64, float32)
    i = cuda.threadIdx.x
    cp_async16(s, 4 * i, src, 4 * i, 16)
    cp_async_wait_all()
    cuda.syncthreads()
    out[i] = s[i]


def test_tracer_counts_the_copy_where_it_is_issued():
    src = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(16, np.float32)
    result = trace(_tile_copy, 1, 16, src, out)
    np.testing.assert_array_equal(out, src[:16])
    copy = result.by_instruction[result.by_instruction["source"].str.startswith("cp_async16")]
    loads = copy[copy["space"] == "global"]
    stores = copy[copy["space"] == "shared"]
    assert int(loads["sectors"].sum()) == 8  # 256 contiguous bytes
    assert int(stores["wavefronts"].sum()) == 2  # 16 lanes x 16 bytes: two 128-byte wavefronts


def test_mma_model_stays_within_its_tolerance_of_exact_arithmetic():
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((50, 16, 8), (50, 8, 8), (50, 16, 8)))
    d = sim.mma_m16n8k8(a, b, c)
    at, bt = sim.tf32_truncate(a).astype(np.float64), sim.tf32_truncate(b).astype(np.float64)
    exact = at @ bt + c
    scale = np.abs(at) @ np.abs(bt) + np.abs(c)
    assert np.all(np.abs(d - exact) <= 2**-21 * scale)  # a few cuts of 2^-26 plus one float32 rounding


# --- against the H200 -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recording():
    if not RECORDING.exists():
        pytest.skip(f"no GPU recording at {RECORDING.relative_to(ROOT)}: run "
                    "`python benchmarks/record_ptx_primitives.py --out data/nvidia-h200/checks` on an H200")
    facts = json.loads(RECORDING.with_suffix(".json").read_text())
    stale = [name for name, fp in cases.fingerprints().items() if facts["fingerprints"].get(name) != fp]
    assert not stale, f"cases changed since the GPU recording, re-record: {stale}"
    assert all(facts["repeatable"].values()), "the GPU gave different outputs on two runs"
    with np.load(RECORDING) as gpu:
        return {name: gpu[name] for name in gpu.files}


def _mma_inputs(name):
    a, b, c, round_first, _ = cases.BY_NAME[name].args()
    return a, b, c, int(round_first)


def _within(d, expected, a, b, c, round_first, tolerance):
    convert = sim.tf32_rna if round_first else sim.tf32_truncate
    scale = np.abs(convert(a).astype(np.float64)) @ np.abs(convert(b).astype(np.float64)) + np.abs(c)
    return np.abs(d.astype(np.float64) - expected) <= tolerance * scale


MMA_CASES = [case.name for case in cases.CASES if case.kernel is cases.mma_tiles]


@pytest.mark.parametrize("name", MMA_CASES)
def test_mma_bit_for_bit_or_within_the_measured_tolerance_of_the_h200(recording, name):
    a, b, c, round_first = _mma_inputs(name)
    expected = recording[name]
    first = 2  # the simulated kernel (fragments, collective, model) on two tiles ...
    d = np.full((first, 16, 8), np.nan, np.float32)
    cases.mma_tiles[1, 32 * first](a[:first], b[:first], c[:first], np.int32(round_first), d)
    modelled = sim.mma_m16n8k8(sim.tf32_rna(a) if round_first else a,
                               sim.tf32_rna(b) if round_first else b, c)  # ... the model on all
    np.testing.assert_array_equal(d.view(np.uint32), modelled[:first].view(np.uint32))
    close = _within(modelled, expected, a, b, c, round_first, sim.MODEL_TOLERANCE)
    assert close.all(), f"{name}: {np.count_nonzero(~close)} outputs further than 2^-23 (|A||B|+|C|)"
    identical = np.mean(modelled.view(np.uint32) == expected.view(np.uint32))
    assert identical >= (1.0 if name == "mma_integers" else 0.75), (name, identical)


def test_the_h200_cuts_operands_that_were_not_rounded(recording):
    a, b, c, _ = _mma_inputs("mma_raw_float32")
    rounded = sim.mma_m16n8k8(sim.tf32_rna(a), sim.tf32_rna(b), c)
    assert not _within(rounded, recording["mma_raw_float32"], a, b, c, 0, 2.0**-12).all()


def test_cvt_and_cp_async_bit_for_bit_with_the_h200(recording):
    x, _ = cases.BY_NAME["cvt_rna_tf32"].args()
    np.testing.assert_array_equal(sim.tf32_rna(x).view(np.uint32), recording["cvt_rna_tf32"].view(np.uint32))
    out = np.zeros(64, np.float32)
    cases.cvt_elements[1, 64](x[:64], out)
    np.testing.assert_array_equal(out.view(np.uint32), recording["cvt_rna_tf32"][:64].view(np.uint32))
    copies = cases.BY_NAME["cp_async_groups"].run()
    np.testing.assert_array_equal(copies.view(np.uint32), recording["cp_async_groups"].view(np.uint32))
