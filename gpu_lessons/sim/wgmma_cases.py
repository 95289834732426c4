"""Fixed wgmma kernels and inputs, to hold the simulator's ``sim.wgmma`` to an H200.

Like ``ptx_cases``: each case is a kernel, a launch and deterministic inputs; ``run_cases()``
launches them on whichever device ``gpu_lessons`` picked. ``benchmarks/record_wgmma_primitives.py``
saves an H200's outputs and ``tests/test_sim_wgmma.py`` compares the simulator's with them.

One kernel per N (``wgmma_kernel(n)``) copies an *image* of shared memory (A and B already laid out
as the case's descriptors describe, built on the host by ``pack_operand``) into a 1024-byte aligned
place in a shared array, fences the async proxy, and issues ``ksteps`` chained wgmmas in one group,
stepping both descriptors' start addresses along K; each thread then writes its N / 2 accumulators.
The descriptors a case passes may differ from the ones its image was packed with (``swapped``
leading and stride offsets, a swizzled image read without the swizzle): the GPU then reads other
bytes, and the simulator must read the same ones.

Inputs: small integers (exact in any summation order: they pin the layouts alone), standard-normal
float32 (the tensor cores' TF32 arithmetic), and a probe whose A holds each element's own index
and whose B is the identity, so that D shows which element the GPU read for each A[r, k].
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32

from ..ptx import (
    WGMMA_TF32,
    fence_proxy_async,
    matrix_descriptor,
    shared_address,
    wgmma_commit_group,
    wgmma_fence,
    wgmma_wait_group,
    wgmma_zero_accumulators,
)
from .warp_cases import SEED, WarpCase
from .wgmma import (
    SWIZZLE_32B,
    SWIZZLE_64B,
    SWIZZLE_128B,
    SWIZZLE_BYTES,
    SWIZZLE_NONE,
    accumulator_layout,
    descriptor_bits,
    operand_addresses,
)

ALIGN = 1024  # the image starts on a 128-byte swizzle's pattern boundary
SHARED_FLOATS = 11_776  # 46 KiB: the largest image (40 KiB) and room to align it
SENTINEL = np.float32(-7.0)
PARAMS = ("a_offset", "b_offset", "a_leading", "a_stride", "b_leading", "b_stride", "swizzle",
          "ksteps", "a_kstep", "b_kstep", "a_group", "b_group")


# --- Kernels --------------------------------------------------------------------------------------


def _kernel(n: int):
    wgmma = WGMMA_TF32[n]
    half = n // 2

    def wgmma_case(image, params, out):
        s = cuda.shared.array(SHARED_FLOATS, float32)
        t = cuda.threadIdx.x
        first = ((ALIGN - shared_address(s, 0) % ALIGN) % ALIGN) // 4
        for i in range(t, image.size, cuda.blockDim.x):
            s[first + i] = image[i]
        fence_proxy_async()
        cuda.syncthreads()
        group = t // 128
        start = shared_address(s, first)
        a_start = start + params[0] + group * params[10]
        b_start = start + params[1] + group * params[11]
        acc = wgmma_zero_accumulators(n)
        wgmma_fence()
        for k in range(params[7]):
            desc_a = matrix_descriptor(a_start + k * params[8], params[2], params[3], params[6])
            desc_b = matrix_descriptor(b_start + k * params[9], params[4], params[5], params[6])
            acc = wgmma(desc_a, desc_b, acc, k)  # scale_d = 0 on the first: D = A B
        wgmma_commit_group()
        acc = wgmma_wait_group(0, acc)
        for i in range(half):
            out[group, t % 128, i] = acc[i]

    wgmma_case.__name__ = f"wgmma_case_n{n}"
    return cuda.jit(wgmma_case)


_KERNELS: dict = {}


def wgmma_kernel(n: int):
    """The case kernel for one N (compiled or simulated on first use)."""
    if n not in _KERNELS:
        _KERNELS[n] = _kernel(n)
    return _KERNELS[n]


# --- Layouts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How a K-major operand of ``k`` columns is laid out: swizzle, byte offsets, the K step."""

    swizzle: int
    leading: int
    stride: int
    kstep: int  # bytes from one 8-column slice of K to the next

    def descriptor(self, address: int) -> int:
        return descriptor_bits(address, self.leading, self.stride, self.swizzle)


def canonical_layout(swizzle: int, k: int) -> Layout:
    """The usual K-major layout of ``k`` TF32 columns: without swizzle, core matrices along K are
    adjacent (leading 128 bytes) and 8-row groups follow (stride 128 k / 4 bytes); swizzled, each
    row is one W-byte swizzle row (k = W / 4), 8-row groups 8 W bytes apart, the K step 32 bytes."""
    if swizzle == SWIZZLE_NONE:
        return Layout(SWIZZLE_NONE, 128, 128 * (k // 4), 256)
    width = SWIZZLE_BYTES[swizzle]
    if k * 4 != width:
        raise ValueError(f"a {width}-byte swizzle row holds {width // 4} TF32 columns, not {k}")
    return Layout(swizzle, 16, 8 * width, 32)


def operand_bytes(rows: int, k: int, layout: Layout) -> int:
    return rows * k * 4 if layout.swizzle == SWIZZLE_NONE else rows * SWIZZLE_BYTES[layout.swizzle]


def pack_operand(image: np.ndarray, offset: int, matrix: np.ndarray, layout: Layout) -> None:
    """Store ``matrix`` (rows, k), K-major, into the float32 ``image`` from byte ``offset`` (a
    multiple of 1024) as ``layout`` says: where the descriptors' reads will find it."""
    rows, k = matrix.shape
    for step in range(k // 8):
        addresses = operand_addresses(layout.descriptor(offset + step * layout.kstep), rows)
        image[addresses // 4] = matrix[:, 8 * step:8 * step + 8]


# --- Cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WgmmaSpec:
    name: str
    n: int
    swizzle: int
    k: int
    values: str  # "int", "float" or "probe"
    groups: int = 1
    read_as: Layout | None = None  # descriptors that differ from the packing's

    @property
    def layout(self) -> Layout:
        return canonical_layout(self.swizzle, self.k)

    def matrices(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """A (groups, 64, k) and B stored as (n, k) rows of K."""
        a_shape, b_shape = (self.groups, 64, self.k), (self.n, self.k)
        if self.values == "int":
            return (rng.integers(-8, 9, a_shape).astype(np.float32),
                    rng.integers(-8, 9, b_shape).astype(np.float32))
        if self.values == "float":
            return (rng.standard_normal(a_shape).astype(np.float32),
                    rng.standard_normal(b_shape).astype(np.float32))
        a = np.arange(np.prod(a_shape), dtype=np.float32).reshape(a_shape) % 2048
        return a, np.eye(self.n, self.k, 16 if self.k >= 24 else 0, dtype=np.float32)

    def make_args(self, rng, grid, block):
        a, b = self.matrices(rng)
        layout = self.layout
        a_bytes = operand_bytes(64, self.k, layout)
        b_offset = -(-self.groups * a_bytes // ALIGN) * ALIGN
        image = np.zeros((b_offset + operand_bytes(self.n, self.k, layout)) // 4, np.float32)
        for g in range(self.groups):
            pack_operand(image, g * a_bytes, a[g], layout)
        pack_operand(image, b_offset, b, layout)
        read = self.read_as or layout
        params = np.array([0, b_offset, read.leading, read.stride, read.leading, read.stride,
                           read.swizzle, self.k // 8, read.kstep, read.kstep, a_bytes, 0], np.int64)
        return image, params, np.full((self.groups, 128, self.n // 2), SENTINEL, np.float32)

    def case(self) -> WarpCase:
        return WarpCase(self.name, wgmma_kernel(self.n), 1, 128 * self.groups, self.make_args)

    def inputs(self):
        """(A, B, the case's arguments), reproduced from the case's seed."""
        rng = np.random.default_rng([SEED, zlib.crc32(self.name.encode())])
        a, b = self.matrices(rng)
        return a, b, self.case().args()


SPECS: tuple[WgmmaSpec, ...] = (
    WgmmaSpec("n8_none_int", 8, SWIZZLE_NONE, 8, "int"),
    WgmmaSpec("n64_none_int_k16", 64, SWIZZLE_NONE, 16, "int"),
    WgmmaSpec("n128_sw128_int_k32", 128, SWIZZLE_128B, 32, "int"),
    WgmmaSpec("n256_sw128_int_k32", 256, SWIZZLE_128B, 32, "int"),
    WgmmaSpec("n64_sw64_int_k16", 64, SWIZZLE_64B, 16, "int"),
    WgmmaSpec("n64_sw32_int_k8", 64, SWIZZLE_32B, 8, "int"),
    WgmmaSpec("n64_none_int_two_warpgroups", 64, SWIZZLE_NONE, 16, "int", groups=2),
    WgmmaSpec("n64_none_float_k16", 64, SWIZZLE_NONE, 16, "float"),
    WgmmaSpec("n256_sw128_float_k32", 256, SWIZZLE_128B, 32, "float"),
    WgmmaSpec("n8_sw128_probe_k32", 8, SWIZZLE_128B, 32, "probe"),
    WgmmaSpec("n64_none_int_offsets_swapped", 64, SWIZZLE_NONE, 16, "int",
              read_as=Layout(SWIZZLE_NONE, 512, 128, 256)),
    WgmmaSpec("n64_sw128_int_read_unswizzled", 64, SWIZZLE_128B, 32, "int",
              read_as=Layout(SWIZZLE_NONE, 16, 1024, 32)),
)
BY_NAME = {spec.name: spec for spec in SPECS}


def expected(spec: WgmmaSpec, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What a correct wgmma gives in the case's output: D = A B (exact in float64, operands cut to
    TF32) in the accumulator layout, (groups, 128, n / 2)."""
    from .ptx import tf32_truncate

    rows, cols = accumulator_layout(spec.n)
    d = tf32_truncate(a).astype(np.float64) @ tf32_truncate(b).astype(np.float64).T  # (groups, 64, n)
    return d[:, rows, cols]


def cases() -> tuple[WarpCase, ...]:
    return tuple(spec.case() for spec in SPECS)


def fingerprints() -> dict[str, str]:
    return {case.name: case.fingerprint() for case in cases()}


def run_cases(names=None) -> dict[str, np.ndarray]:
    """Launch every case (or those named) on the current device; each case's output by name."""
    return {case.name: case.run() for case in cases() if names is None or case.name in names}


__all__ = ["BY_NAME", "Layout", "SPECS", "SWIZZLE_128B", "WgmmaSpec", "canonical_layout", "cases",
           "expected", "pack_operand", "run_cases", "wgmma_kernel"]
