"""The compiled side of ``gpu_lessons.ptx``'s Hopper primitives (imported by it in GPU mode only).

Each is an ``@intrinsic`` whose code is one ``ir.InlineAsm`` of the PTX (as ``ptx``'s cp.async and
mma.sync). The semantics, the descriptor and the accumulator layout are written out in
``gpu_lessons.sim.wgmma``, whose functions are these intrinsics' Python twins for the tracer.

wgmma and its fences exist on sm_90a only (Hopper: H100, H200). numba-cuda compiles for the GPU it
runs on, and only an sm_90 GPU gets sm_90a; elsewhere ``ptxas`` would refuse the instructions with
a page of text, so the typing refuses them first with one line (``HopperOnly``).
"""

from __future__ import annotations

from llvmlite import ir
from numba import cuda
from numba.cuda import types
from numba.cuda.extending import intrinsic, register_jitable

from .sim import wgmma as _python
from .sim.wgmma_layout import WGMMA_N, descriptor_bits

_I32, _I64, _F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
_SHARED = 3
HOPPER = (9, 0)


class HopperOnly(RuntimeError):
    """A Hopper (sm_90a) instruction in a kernel compiled for another GPU."""


def _require_hopper(name: str) -> None:
    try:
        cc = tuple(cuda.get_current_device().compute_capability)
    except Exception:  # noqa: BLE001 - no device to ask (compiling ahead of time): let ptxas judge
        return
    if cc != HOPPER:
        raise HopperOnly(f"{name} needs a Hopper GPU (sm_90a: H100, H200); this GPU is sm_{cc[0]}{cc[1]}")


def _asm(builder, result_type, text: str, constraints: str, args, side_effect: bool = True):
    kind = ir.FunctionType(result_type, [a.type for a in args])
    return builder.call(ir.InlineAsm(kind, text, constraints, side_effect=side_effect), args)


def _statement(name: str, text: str):
    """An intrinsic of no operands that emits one PTX statement (a fence, a commit)."""

    def typer(typingctx):
        _require_hopper(name)

        def codegen(context, builder, signature, args):
            _asm(builder, ir.VoidType(), text, "~{memory}", [])
            return context.get_dummy_value()

        return types.void(), codegen

    typer.__name__ = name
    return intrinsic(typer)


wgmma_fence = _statement("wgmma_fence", "wgmma.fence.sync.aligned;")
wgmma_commit_group = _statement("wgmma_commit_group", "wgmma.commit_group.sync.aligned;")
fence_proxy_async = _statement("fence_proxy_async", "fence.proxy.async.shared::cta;")


@intrinsic
def shared_address(typingctx, array, index):
    if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0]).data
        position = args[1] if args[1].type.width == 64 else builder.sext(args[1], _I64)
        pointer = builder.gep(data, [position])
        shared = builder.addrspacecast(pointer, pointer.type.pointee.as_pointer(_SHARED))
        return builder.ptrtoint(shared, _I32)

    return types.uint32(array, index), codegen


matrix_descriptor = register_jitable(descriptor_bits)  # compiled inline where a kernel calls it


def _accumulators(acc, count: int) -> bool:
    return isinstance(acc, types.UniTuple) and acc.count == count and acc.dtype == types.float32


@intrinsic
def wgmma_zero_accumulators(typingctx, n):
    if not (isinstance(n, types.IntegerLiteral) and n.literal_value in WGMMA_N):
        return None
    count = n.literal_value // 2
    result = types.UniTuple(types.float32, count)

    def codegen(context, builder, signature, args):
        zero = context.get_constant(types.float32, 0.0)
        return context.make_tuple(builder, result, [zero] * count)

    return result(n), codegen


@intrinsic
def wgmma_wait_group(typingctx, n, acc):
    if not (isinstance(n, types.IntegerLiteral) and 0 <= n.literal_value <= 7):
        return None
    if not (isinstance(acc, types.UniTuple) and acc.dtype == types.float32):
        return None
    _require_hopper("wgmma_wait_group")
    pending, count = int(n.literal_value), acc.count
    # the accumulators pass through the asm ("+f"): nothing reads them before the wait
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["~{memory}"])

    def codegen(context, builder, signature, args):
        values = [builder.extract_value(args[1], i) for i in range(count)]
        out = _asm(builder, ir.LiteralStructType([_F32] * count),
                   f"wgmma.wait_group.sync.aligned {pending};", constraints, values)
        return context.make_tuple(builder, acc, [builder.extract_value(out, i) for i in range(count)])

    return acc(n, acc), codegen


def _wgmma(n: int):
    name = f"wgmma_m64n{n}k8_tf32"
    count = n // 2
    registers = ", ".join(f"${i}" for i in range(count))
    text = ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${count + 2}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{registers}}}, ${count}, "
            f"${count + 1}, p, 1, 1;\n}}")
    constraints = ",".join(["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)]
                           + ["~{memory}"])

    def typer(typingctx, desc_a, desc_b, acc, scale_d):
        integers = all(isinstance(x, types.Integer) for x in (desc_a, desc_b))
        if not (integers and _accumulators(acc, count)
                and isinstance(scale_d, (types.Integer, types.Boolean))):
            return None
        _require_hopper(name)
        sig = acc(types.int64, types.int64, acc, types.int32)

        def codegen(context, builder, signature, args):
            values = [builder.extract_value(args[2], i) for i in range(count)]
            out = _asm(builder, ir.LiteralStructType([_F32] * count), text, constraints,
                       [args[0], args[1], args[3], *values])
            return context.make_tuple(builder, acc, [builder.extract_value(out, i) for i in range(count)])

        return sig, codegen

    typer.__name__ = name
    return intrinsic(typer)


WGMMA_TF32 = {n: _wgmma(n) for n in WGMMA_N}


def register_twins(register) -> None:
    """Let the tracer run kernels that use these on the simulator (``trace.register_python_twin``)."""
    for compiled, twin in ((wgmma_fence, _python.wgmma_fence),
                           (wgmma_commit_group, _python.wgmma_commit_group),
                           (wgmma_wait_group, _python.wgmma_wait_group),
                           (fence_proxy_async, _python.fence_proxy_async),
                           (shared_address, _python.shared_address),
                           (wgmma_zero_accumulators, _python.wgmma_zero_accumulators)):
        register(compiled, twin)
    for n, compiled in WGMMA_TF32.items():
        register(compiled, _python.WGMMA_TF32[n])
