"""Every kernel the lessons launch, with how they launch it: the rows of the kernel x target matrix.

    from gpu_lessons.inventory import launches
    for launch in launches():
        launch.name, launch.threads, launch.dynamic_shared(target), launch.kernel()

A ``Launch`` names one kernel as a lesson part runs it: the lesson, the part (the name the lesson shows:
a variant, a step, a sweep), the kernel's argument types, the threads per block and the dynamic shared
memory per block of the launch (a number, or for launches sized from the GPU's limits, the amount for
a given target). ``kernel()`` builds the kernel (a numba dispatcher in GPU and compile modes) as the
lesson does. Sweeps over block sizes are listed at their largest block. ``gpu_lessons.matrix`` compiles
each for every target; ``tests/test_targets_matrix.py`` holds this list to the package's kernels (every
kernel of ``gpu_lessons.kernels`` is here, or in ``NOT_LAUNCHED`` with the reason).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

SIGNATURES = {  # module.kernel -> its argument types (numba's notation: [::1] is C-contiguous)
    "bank_conflicts.shared_read_kernel": "float32[::1], int64, int64",
    "bank_conflicts.shared_stride64_kernel": "float64[::1], float64[::1], int64",
    "bank_conflicts.shared_stride_kernel": "float32[::1], float32[::1], int64",
    "coalescing._count_nan_kernel": "float32[::1], int64[::1]",
    "coalescing.aos_field_kernel": "float32[:, ::1], float32[::1], int64",
    "coalescing.soa_field_kernel": "float32[:, ::1], float32[::1], int64",
    "coalescing.copy_w16_queue": "float32[::1], float32[::1], int64[::1]",
    "coalescing.copy_w16_thread_chunks": "float32[::1], float32[::1], int64",
    "coalescing.fill_random_kernel": "float32[::1], uint64",
    "coalescing.offset_copy_kernel": "float32[::1], float32[::1], int64",
    "coalescing.strided_copy_kernel": "float32[::1], float32[::1], int64",
    "coalescing.offset_copy_x4_kernel": "float32[::1], float32[::1], int64",
    "coalescing.strided_copy_x4_kernel": "float32[::1], float32[::1], int64",
    "coalescing.matrix_row_walk": "float32[:, ::1], float32[:, ::1], uint64, uint64",
    "coalescing.matrix_column_walk": "float32[:, ::1], float32[:, ::1], uint64, uint64",
    "coalescing.particles_aos_kernel": "float32[:, ::1], float32",
    "coalescing.particles_aosoa_kernel": "float32[:, :, ::1], uint64, float32",
    "coalescing.particles_padded_vec4_kernel": "float32[::1], float32",
    "coalescing._soa_to_aos_kernel": ", ".join(["float32[::1]"] * 6 + ["float32[:, ::1]"]),
    "coalescing._aos_aosoa_kernel": "float32[:, ::1], float32[:, :, ::1], boolean",
    "coalescing._aos_padded_kernel": "float32[:, ::1], float32[::1], boolean",
    "coalescing.add_vec4_kernel": "float32[::1], float32[::1], float32[::1]",
    "littles_law.pointer_chase": "uint32[::1], uint32[::1], int64",
    "littles_law._scatter": "uint32[::1], uint32[::1], uint32[::1]",
    "reduce.sum_partials": "float32[::1], int32, float32[::1]",
    "reduce.vec4_last_block": "float32[::1], float32[::1], int32[::1], float32[::1]",
    "reduce.repeat_no_tree": "float32[::1], float32[::1], int32",
    "roofline.fma_peak": "float32[::1], int32, float32, float32",
    "roofline.triad": "float32[::1], float32[::1], float32[::1]",
    "tensor_cores.mma_demo_kernel": "float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1]",
    "tensor_cores.mma_global": "float32[::1], float32[::1], float32[::1], uint64, uint64, uint64",
    "util._fill": "float32[::1], float32",
}
COPY = "float32[::1], float32[::1]"  # most kernels: (x, out)
MATRIX = "float32[:, ::1], float32[:, ::1]"
GEMM = "float32[:, ::1], float32[:, ::1], float32[:, ::1]"
FLAT_GEMM = "float32[::1], float32[::1], float32[::1], uint64, uint64, uint64"  # generated GEMMs
FLAT_TRANSPOSE = "float32[::1], float32[::1], int64, int64, int64"
PARTICLES_SOA = ", ".join(["float32[::1]"] * 6 + ["float32"])

# Kernels of gpu_lessons.kernels that no lesson part launches on a GPU, and why (none today).
NOT_LAUNCHED: dict[str, str] = {}


@dataclass(frozen=True)
class Launch:
    lesson: str
    part: str  # the name the lesson shows
    label: str  # the kernel: "module.name", or the generator and its parameters
    signature: str
    threads: int
    build: Callable[[], object]
    shared: int | Callable = 0  # dynamic shared bytes, or target -> bytes (sized from its limits)
    twin: bool = False  # the 4-byte twin a generated GEMM falls back to on awkward shapes

    @property
    def name(self) -> str:
        return f"{self.lesson}/{self.part}"

    def dynamic_shared(self, target) -> int:
        return int(self.shared(target) if callable(self.shared) else self.shared)

    def kernel(self):
        return self.build()

    def argument_types(self) -> tuple:
        from numba.core import types

        return tuple(eval(f"({self.signature},)", {"__builtins__": {}}, vars(types)))  # noqa: S307


def _module(name: str):
    return importlib.import_module(f"gpu_lessons.kernels.{name}")


def _attribute(label: str) -> Callable[[], object]:
    module, name = label.split(".")
    return lambda: getattr(_module(module), name)


def _label(module: str, kernel) -> str:
    """'module.name' of a kernel object of gpu_lessons.kernels.<module>."""
    return f"{module}." + next(name for name, value in vars(_module(module)).items() if value is kernel)


def _plain(lesson: str, label: str, threads: int = 256, part: str | None = None,
           signature: str | None = None, shared: int | Callable = 0) -> Launch:
    signature = signature or SIGNATURES.get(label, COPY)
    return Launch(lesson, part or label.split(".")[1], label, signature, threads, _attribute(label), shared)


def _roofline() -> list[Launch]:
    from .lessons import roofline as lesson

    rows = [_plain("roofline", f"roofline.{name}") for name in
            ("copy_one_per_thread", "copy_grid_stride", "copy_vec4_grid_stride", "copy_vec4", "triad",
             "fma_peak")]
    rows += [Launch("roofline", f"fma_intensity k={k}", f"roofline.fma_intensity({k})",
                    "float32[::1], float32[::1], float32, float32", 256,
                    lambda k=k: _module("roofline").fma_intensity(k)) for k in lesson.INTENSITY_KS]
    return rows


def _littles_law() -> list[Launch]:
    from .lessons import littles_law as lesson

    ll = "littles_law"

    def generated(part: str, factory: str, *args, threads: int = 256, shared=0, signature: str = COPY):
        label = f"{ll}.{factory}({', '.join(map(repr, args))})"
        build = lambda: getattr(_module(ll), factory)(*args)  # noqa: E731
        return Launch(ll, part, label, signature, threads, build, shared)

    def residency_shared(blocks_per_sm: int, threads: int = 256):
        return lambda target: _occupancy().shared_to_limit(threads, blocks_per_sm, target.sm_limits())

    rows = [_plain(ll, "littles_law.pointer_chase", threads=1), _plain(ll, "littles_law._scatter")]
    rows += [generated(f"fma c{c}", "fma_chains", c, threads=1024,
                       signature="float32[::1], int64, float32, float32") for c in lesson.FMA_CHAINS]
    for width in lesson.WIDTHS:
        for unroll in lesson.UNROLLS:
            vector, dtype = width == 16, "float64" if width == 8 else "float32"
            rows.append(generated(f"copy w{width} u{unroll}", "copy_ilp", unroll, vector,
                                  signature=f"{dtype}[::1], {dtype}[::1]"))
    rows += [generated(f"copy w16 u{u}", "copy_ilp", u, True) for u in lesson.PRESSURE_UNROLLS]
    rows += [generated(f"copy w16 u{u} cap {cap}", "copy_ilp", u, True, cap)
             for u, cap in lesson.MAX_REGISTERS]
    rows += [generated(f"copy w16 u4 at {threads} threads x {blocks} blocks/SM", "copy_ilp", 4, True,
                       threads=threads, shared=residency_shared(blocks, threads))
             for threads, blocks in lesson.RESIDENCY]
    rows += [generated(f"copy_persistent w16 u{u}", "copy_persistent", u) for u in lesson.PERSISTENT_UNROLLS]
    rows += [generated(lesson.queue_variant(*shape), "copy_queue", *shape,
                       signature="float32[::1], float32[::1], uint64[::1]") for shape in lesson.QUEUE_SHAPES]
    return rows


def _coalescing() -> list[Launch]:
    names = ("offset_copy_kernel", "strided_copy_kernel", "offset_copy_x4_kernel", "strided_copy_x4_kernel",
             "aos_field_kernel", "soa_field_kernel", "matrix_row_walk", "matrix_column_walk",
             "fill_random_kernel", "particles_soa_naive_kernel", "particles_soa_unsigned_kernel",
             "particles_soa_loads_first_kernel", "particles_soa_kernel", "particles_soa_vec4_kernel",
             "particles_aos_kernel", "particles_aosoa_kernel", "particles_padded_vec4_kernel",
             "_soa_to_aos_kernel", "_aos_aosoa_kernel", "_aos_padded_kernel", "copy_w4",
             "copy_w4_grid_stride", "copy_w8", "copy_w8_grid_stride", "copy_w16", "copy_w16_grid_stride",
             "copy_w16_grid_stride_x4",
             "copy_w16_block_chunks", "copy_w16_queue", "copy_w16_thread_chunks", "add_vec4_kernel",
             "_count_nan_kernel")
    rows = []
    for name in names:
        label = f"coalescing.{name}"
        signature = SIGNATURES.get(label, PARTICLES_SOA if name.startswith("particles_soa") else COPY)
        rows.append(_plain("coalescing", label, signature=signature))
    return rows


def _bank_conflicts() -> list[Launch]:
    bc = "bank_conflicts"
    rows = [_plain(bc, f"{bc}.{name}") for name in ("shared_read_kernel", "shared_stride_kernel",
                                                    "shared_stride64_kernel")]
    rows += [_plain(bc, f"{bc}.{name}", signature=MATRIX) for name in (
        "transpose_naive_kernel", "transpose_tiled_kernel", "transpose_padded_kernel",
        "transpose_padded_loop_kernel", "transpose_swizzled_kernel", "transpose_padded_two_tiles_kernel",
        "transpose_padded_grid_stride_kernel", "transpose_padded_prefetch_kernel",
        "transpose_tile64_scalar_swizzled_kernel")]
    rows += [_plain(bc, f"{bc}.{name}", signature=FLAT_TRANSPOSE) for name in (
        "transpose_tile64_kernel", "transpose_tile64_swizzled_kernel", "transpose_tile32_vec4_kernel",
        "transpose_tile32_vec4_swizzled_kernel", "transpose_tile32_vec4_float4_padded_kernel")]
    return rows


def _reduce() -> list[Launch]:
    k = _module("reduce")
    labels = [_label("reduce", kernel) for kernel in k.KERNELS.values()]
    labels += [f"reduce.{name}" for name in ("sum_partials", "vec4_lb8", "vec4_maxreg32", "vec4_u2",
                                             "tiles_no_tree", "repeat_no_tree")]
    rows = [_plain("reduce", label, signature=SIGNATURES.get(label, COPY)) for label in labels]
    rows.append(_plain("reduce", "reduce.vec4", part="vec4_smem4",
                       shared=lambda target: k.capped_dynamic_shared(limits=target.sm_limits())))
    rows += [_plain("reduce", f"divergence.{name}", _module("divergence").BLOCK,  # the two-path warp
                    signature="float32[::1], float32[::1], int32") for name in _module("divergence").KERNELS]
    return rows


def _tile_launch(lesson: str, part: str, generator: str, tile, shared: int, twin: bool = False) -> Launch:
    module = _module(generator)
    used = tile.scalar() if twin else tile
    return Launch(lesson, part + (" (4-byte twin)" if twin else ""), f"{generator} {used}", FLAT_GEMM,
                  used.threads, lambda: module.build(used), shared, twin)


def _gemm() -> list[Launch]:
    from .kernels import gemm_codegen, gemm_register
    from .kernels import gemm_steps as steps
    from .lessons import gemm as lesson

    def generated(part: str, tile, twin: bool) -> Launch:
        used = tile.scalar() if twin else tile
        return _tile_launch("gemm", part, "gemm_codegen", tile,
                            4 * used.shared_floats if used.stages else 0, twin)

    rows = [_plain("gemm", "gemm.gemm_naive_uncoalesced", 256, "naive_uncoalesced", GEMM),
            _plain("gemm", "gemm.gemm_naive", 256, "naive", GEMM),
            _plain("gemm", "gemm_tiled.gemm_tiled_kernel", 256, "shared_tiled", GEMM)]
    for name, (kernel, tile) in gemm_register.KERNELS.items():
        rows.append(_plain("gemm", _label("gemm_register", kernel), tile["threads"], name, GEMM))
    for step in steps.STEPS:  # and its 4-byte twin: the public wrapper gemm_steps.matmul takes any shape
        if step.tile is not None:
            rows += [generated(step.name, step.tile, False), generated(step.name, step.tile, True)]
    rows += [generated(name, tile, False) for name, tile in lesson.TUNE.items()]
    assert gemm_codegen  # the generator the labels name
    return rows


def _tensor_cores() -> list[Launch]:
    from .kernels import tensor_cores as tc
    from .lessons import tensor_cores as lesson

    tcl = "tensor_cores"
    rows = [_plain(tcl, "tensor_cores.mma_demo_kernel", 32, "mma_demo"),
            _plain(tcl, "tensor_cores.mma_global", 32 * tc.GLOBAL_WARPS_M * tc.GLOBAL_WARPS_N, "mma_global"),
            _plain(tcl, "tensor_cores.round_tf32_kernel", tc.ROUND_BLOCK, lesson.ROUND_PART)]
    for variant in lesson.VARIANTS:
        if variant.kind == "global":
            continue
        # the 4-byte twin: where the lesson times an awkward shape, and for every step of the public
        # wrapper (tensor_cores.matmul takes any shape)
        public = variant.name in tc.BY_NAME
        twins = (False, True) if lesson.AWKWARD in variant.shapes or public else (False,)
        for twin in twins:
            used = variant.tile.scalar() if twin else variant.tile
            if variant.kind == "tc":
                generator, shared = "tc_codegen", used.shared_bytes
            else:
                generator, shared = "gemm_codegen", 4 * used.shared_floats if used.stages else 0
            rows.append(_tile_launch(tcl, variant.name, generator, variant.tile, shared, twin))
    for chains in dict.fromkeys(chains for _, chains in lesson.PEAK_CONFIGS):
        threads = 32 * max(min(warps, 16) for warps, c in lesson.PEAK_CONFIGS if c == chains)
        rows.append(Launch(tcl, lesson.peak_name(chains), f"tensor_cores.peak_kernel({chains})",
                           "float32[::1], int64", threads, lambda c=chains: tc.peak_kernel(c)))
    return rows


def _occupancy():
    from . import occupancy

    return occupancy


def _common() -> list[Launch]:
    """What every lesson launches besides its own kernels: poisoning outputs before a check."""
    return [_plain("common", "util._fill", part="poison (util._fill)")]


LESSONS = {"common": _common, "roofline": _roofline, "littles_law": _littles_law, "coalescing": _coalescing,
           "bank_conflicts": _bank_conflicts, "reduce": _reduce, "gemm": _gemm, "tensor_cores": _tensor_cores}


@cache
def launches() -> tuple[Launch, ...]:
    """Every launch of every lesson, in lesson order; names are unique."""
    rows = [launch for make in LESSONS.values() for launch in make()]
    names = [r.name for r in rows]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"launches named twice: {duplicates}")
    return tuple(rows)
