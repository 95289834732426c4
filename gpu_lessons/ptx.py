"""Inline PTX for numba.cuda kernels: asynchronous copies (cp.async) and TF32 tensor cores (lesson 7).

numba-cuda exposes neither, so each is an ``@intrinsic`` whose code is one ``ir.InlineAsm`` of the
PTX instruction (the pattern of ``bench.global_timer_ns``). Call them inside ``@cuda.jit`` kernels:

``cp_async4/8/16(dst, dst_index, src, src_index, src_bytes)``
    ``cp.async.{ca,ca,cg}.shared.global``: copy 4, 8 or 16 bytes from the 1-D float32 global array
    ``src`` (element ``src_index``) to the 1-D float32 shared array ``dst`` (element ``dst_index``)
    without passing through registers: the thread issues it and goes on. Only ``src_bytes`` (0 up
    to the size) are read, the rest of the copy is zero-filled: the guard for tile edges (pass a
    valid ``src_index``, e.g. 0, when ``src_bytes`` is 0). Both addresses aligned to the size. The
    16-byte copy uses ``.cg`` (cached in L2 only: tiles are reused from shared memory, not L1);
    PTX allows only ``.ca`` for 4 and 8 bytes.
``cp_async_commit_group()``, ``cp_async_wait_group(n)``, ``cp_async_wait_all()``
    Close the copies issued so far into a group; wait until at most ``n`` (a constant) of this
    thread's groups are still in flight; wait for all. Waiting covers the calling thread's copies
    only: a ``cuda.syncthreads()`` after the wait makes every thread's copies visible to all.
``mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3) -> (d0, d1, d2, d3)``
    ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: the warp's 32 lanes together compute
    D = A B + C for a 16x8x8 tile on the tensor cores, each lane holding the fragment elements the
    PTX ISA assigns it (``gpu_lessons.sim.ptx`` spells the layout out). Every lane of a full warp
    must call it (``.aligned``). A and B are read as TF32 (10 fraction bits), C and D are float32.
``cvt_rna_tf32(x)``
    ``cvt.rna.tf32.f32``: x rounded to nearest TF32 (ties away from zero), returned as a float32
    whose 13 low bits are zero, for kernels that want A and B rounded rather than cut.
``shared_address(array, index)``, ``matrix_descriptor(address, leading_bytes, stride_bytes, swizzle)``
    Hopper (sm_90a only): the shared-window byte address of ``array[index]`` (``cvta.to.shared``),
    and the 64-bit shared-memory matrix descriptor of a wgmma operand (``SWIZZLE_NONE``,
    ``SWIZZLE_128B``, ``SWIZZLE_64B``, ``SWIZZLE_32B``; the layout in ``gpu_lessons.sim.wgmma``).
``wgmma_m64n{N}k8_tf32(desc_a, desc_b, acc, scale_d) -> acc`` for N in ``WGMMA_N`` (8 ... 256)
    ``wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32``: the 128 threads of a warpgroup (4
    consecutive warps) together add A (64x8, shared memory, ``desc_a``) times B (8xN, ``desc_b``,
    stored N rows of K) to D (64xN: ``acc``, a tuple of N/2 float32 per thread, mma.m16n8's layout
    per 16-row slab, one slab per warp), or start from zero where ``scale_d`` is 0. Asynchronous:
    ``acc`` may be passed on to further wgmmas, but read only after ``wgmma_wait_group``.
``wgmma_zero_accumulators(N)``: the N/2 zeros to start from (a literal tuple of many floats trips
    numba's bytecode reader). ``wgmma_fence()`` (``wgmma.fence.sync.aligned``) before each batch;
    ``wgmma_commit_group()``; ``acc = wgmma_wait_group(n, acc)`` (``wgmma.wait_group.sync.aligned
    n``, n a constant; passing ``acc`` through keeps the compiler from reading it earlier);
    ``fence_proxy_async()`` (``fence.proxy.async.shared::cta``) after storing operands to shared
    memory and before the barrier that precedes the wgmma. On a GPU other than sm_90 these fail to
    compile with one line saying so.

On the simulator these are the Python functions of ``gpu_lessons.sim.ptx`` and ``.sim.wgmma``: the
copies land at the wait; the MMA is a warp collective whose fragment layout is exact and whose
arithmetic is a model fitted to an H200's outputs (bit-identical on 76-95% of them, every one
within 2^-23 (|A||B| + |C|)).
With a GPU the tracer swaps the same functions in (``trace.register_python_twin``).
"""

from .mode import choose_mode

SIMULATED = choose_mode() == "sim"

__all__ = ["cp_async4", "cp_async8", "cp_async16", "cp_async_commit_group", "cp_async_wait_all",
           "cp_async_wait_group", "cvt_rna_tf32", "mma_tf32"]

from .sim.wgmma_layout import (  # noqa: E402 - plain Python, for both modes
    SWIZZLE_32B,
    SWIZZLE_64B,
    SWIZZLE_128B,
    SWIZZLE_NONE,
    WGMMA_N,
    descriptor_bits,
)

__all__ += ["SWIZZLE_32B", "SWIZZLE_64B", "SWIZZLE_128B", "SWIZZLE_NONE", "WGMMA_N", "WGMMA_TF32",
            "descriptor_bits", "fence_proxy_async", "matrix_descriptor", "shared_address",
            "wgmma_commit_group", "wgmma_fence", "wgmma_wait_group", "wgmma_zero_accumulators",
            *(f"wgmma_m64n{n}k8_tf32" for n in WGMMA_N)]

if SIMULATED:
    from .sim.ptx import (  # noqa: F401 - the kernel API on the simulator
        cp_async4,
        cp_async8,
        cp_async16,
        cp_async_commit_group,
        cp_async_wait_all,
        cp_async_wait_group,
        cvt_rna_tf32,
        mma_tf32,
    )
    from .sim.wgmma import (  # noqa: F401 - the kernel API on the simulator
        WGMMA_TF32,
        fence_proxy_async,
        matrix_descriptor,
        shared_address,
        wgmma_commit_group,
        wgmma_fence,
        wgmma_wait_group,
        wgmma_zero_accumulators,
    )

    globals().update({f.__name__: f for f in WGMMA_TF32.values()})

else:
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from .sim import ptx as _python

    _I32, _I64, _F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
    _SHARED = 3

    def _asm(builder, result_type, text: str, constraints: str, args, side_effect: bool = True):
        """Copies and waits have side effects (the compiler must keep them in place); mma and cvt
        are pure values, free to be scheduled."""
        kind = ir.FunctionType(result_type, [a.type for a in args])
        return builder.call(ir.InlineAsm(kind, text, constraints, side_effect=side_effect), args)

    def _element_pointer(context, builder, array_type, array, index):
        data = context.make_array(array_type)(context, builder, array).data
        return builder.gep(data, [builder.zext(index, _I64) if index.type.width < 64 else index])

    def _is_float32_vector(array) -> bool:
        return isinstance(array, types.Array) and array.dtype == types.float32 and array.ndim == 1

    def _cp_async(size: int):
        cache = "cg" if size == 16 else "ca"
        text = f"cp.async.{cache}.shared.global [$0], [$1], {size}, $2;"

        def typer(typingctx, dst, dst_index, src, src_index, src_bytes):
            arrays_ok = _is_float32_vector(dst) and _is_float32_vector(src)
            integers = all(isinstance(x, types.Integer) for x in (dst_index, src_index, src_bytes))
            if not (arrays_ok and integers):
                return None
            sig = types.void(dst, dst_index, src, src_index, src_bytes)

            def codegen(context, builder, signature, args):
                dst_type, _, src_type, _, bytes_type = signature.args
                shared = builder.addrspacecast(
                    _element_pointer(context, builder, dst_type, args[0], args[1]), _F32.as_pointer(_SHARED))
                source = _element_pointer(context, builder, src_type, args[2], args[3])
                count = context.cast(builder, args[4], bytes_type, types.uint32)
                _asm(builder, ir.VoidType(), text, "r,l,r,~{memory}",
                     [builder.ptrtoint(shared, _I32), builder.ptrtoint(source, _I64), count])
                return context.get_dummy_value()

            return sig, codegen

        typer.__name__ = f"cp_async{size}"
        return intrinsic(typer)

    cp_async4, cp_async8, cp_async16 = _cp_async(4), _cp_async(8), _cp_async(16)

    @intrinsic
    def cp_async_commit_group(typingctx):
        def codegen(context, builder, signature, args):
            _asm(builder, ir.VoidType(), "cp.async.commit_group;", "~{memory}", [])
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def cp_async_wait_group(typingctx, n):
        # numba tries the plain type first, then the literal one: only a constant n compiles
        # (PTX takes it as an immediate)
        if not isinstance(n, types.IntegerLiteral):
            return None
        pending = int(n.literal_value)
        if not 0 <= pending <= 7:
            return None

        def codegen(context, builder, signature, args):
            _asm(builder, ir.VoidType(), f"cp.async.wait_group {pending};", "~{memory}", [])
            return context.get_dummy_value()

        return types.void(n), codegen

    @intrinsic
    def cp_async_wait_all(typingctx):
        def codegen(context, builder, signature, args):
            _asm(builder, ir.VoidType(), "cp.async.wait_all;", "~{memory}", [])
            return context.get_dummy_value()

        return types.void(), codegen

    _MMA = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
            "{$8, $9}, {$10, $11, $12, $13};")

    @intrinsic
    def mma_tf32(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        operands = (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)
        if not all(isinstance(x, (types.Float, types.Integer)) for x in operands):
            return None
        sig = types.UniTuple(types.float32, 4)(*[types.float32] * 10)

        def codegen(context, builder, signature, args):
            tf32 = [builder.bitcast(x, _I32) for x in args[:6]]  # b32 registers holding TF32
            result = _asm(builder, ir.LiteralStructType([_F32] * 4), _MMA,
                          "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", [*tf32, *args[6:]], side_effect=False)
            d = [builder.extract_value(result, i) for i in range(4)]
            return context.make_tuple(builder, signature.return_type, d)

        return sig, codegen

    @intrinsic
    def cvt_rna_tf32(typingctx, x):
        if not isinstance(x, (types.Float, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            bits = _asm(builder, _I32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [args[0]], side_effect=False)
            return builder.bitcast(bits, _F32)

        return types.float32(types.float32), codegen

    from . import _wgmma_gpu
    from ._wgmma_gpu import (  # noqa: F401 - the kernel API on a GPU
        WGMMA_TF32,
        fence_proxy_async,
        matrix_descriptor,
        shared_address,
        wgmma_commit_group,
        wgmma_fence,
        wgmma_wait_group,
        wgmma_zero_accumulators,
    )

    globals().update({f"wgmma_m64n{n}k8_tf32": f for n, f in WGMMA_TF32.items()})

    # With a GPU, the tracer runs kernels on the simulator: it swaps these for their Python twins.
    from .sim.trace import register_python_twin

    _wgmma_gpu.register_twins(register_python_twin)

    for _compiled, _twin in ((cp_async4, _python.cp_async4), (cp_async8, _python.cp_async8),
                             (cp_async16, _python.cp_async16),
                             (cp_async_commit_group, _python.cp_async_commit_group),
                             (cp_async_wait_group, _python.cp_async_wait_group),
                             (cp_async_wait_all, _python.cp_async_wait_all),
                             (mma_tf32, _python.mma_tf32), (cvt_rna_tf32, _python.cvt_rna_tf32)):
        register_python_twin(_compiled, _twin)
