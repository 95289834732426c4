"""16-byte (float4) loads and stores for numba.cuda kernels.

numba-cuda has no float4 load: four adjacent float32 reads, a ``float32x4(...)`` built from them, or a
16-byte record dtype all compile to narrower loads (see the coalescing lesson). ``load4`` and
``store4`` emit one ``ld.global.v4.f32`` / ``st.global.v4.f32`` (SASS ``LDG.E.128`` / ``STG.E.128``)
through an LLVM intrinsic. Index ``i`` counts float4 groups: elements ``4*i .. 4*i+3``.

Contract, as in CUDA C: the array is float32, C-contiguous, and starts on a 16-byte boundary
(host wrappers check this with ``checks.require_aligned``); ``4*i+3`` is in bounds.
On the simulator they are plain Python and count as one 16-byte access in the traffic tracer.
"""

from . import SIMULATED
from .sim import trace


def _raw(array):
    """The ndarray behind a simulator kernel argument, so reads here are not traced twice."""
    inner = getattr(array, "_item", array)
    return getattr(inner, "_ary", inner)


def python_load4(array, i):
    """load4 as plain Python: the simulator runs it, and the tracer counts one 16-byte access."""
    trace.note_vector_access(array, 4 * i, 4, False)
    data = _raw(array)
    return data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3]


def python_store4(array, i, x0, x1, x2, x3):
    trace.note_vector_access(array, 4 * i, 4, True)
    data = _raw(array)
    data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3] = x0, x1, x2, x3


if SIMULATED:
    load4, store4 = python_load4, python_store4

else:  # the intrinsics compile only for a GPU: llvmlite and numba's CUDA typing are needed there alone
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    _FLOAT4 = ir.VectorType(ir.FloatType(), 4)

    def _float4_pointer(context, builder, array_type, array, index):
        """Address of element 4*index, cast to a pointer to a 16-byte-aligned float vector."""
        data = context.make_array(array_type)(context, builder, array).data
        element = builder.mul(builder.sext(index, ir.IntType(64)), ir.Constant(ir.IntType(64), 4))
        return builder.bitcast(builder.gep(data, [element]), _FLOAT4.as_pointer())

    def _is_float32_array(array):
        return isinstance(array, types.Array) and array.dtype == types.float32 and array.ndim == 1

    @intrinsic
    def load4(typingctx, array, i):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.UniTuple(types.float32, 4)(array, i)

        def codegen(context, builder, signature, args):
            pointer = _float4_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = builder.load(pointer, align=16)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(4)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    @intrinsic
    def store4(typingctx, array, i, x0, x1, x2, x3):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.void(array, i, types.float32, types.float32, types.float32, types.float32)

        def codegen(context, builder, signature, args):
            pointer = _float4_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = ir.Constant(_FLOAT4, ir.Undefined)
            for k, value in enumerate(args[2:]):
                vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), k))
            builder.store(vector, pointer, align=16)
            return context.get_dummy_value()

        return sig, codegen

    # With a GPU, the tracer runs kernels on the simulator: it swaps these for their Python twins.
    trace.register_python_twin(load4, python_load4)
    trace.register_python_twin(store4, python_store4)


# ---------------------------------------------------------------------------------------------
# 8-byte (float2) loads and stores (lesson 3: access width 4 / 8 / 16 bytes per thread)
#
# ``load2(array, i)`` reads elements 2*i and 2*i+1 as one ``ld.global.v2.f32`` (SASS ``LDG.E.64``);
# the array must start on an 8-byte boundary. Same contract as load4 otherwise.


def python_load2(array, i):
    trace.note_vector_access(array, 2 * i, 2, False)
    data = _raw(array)
    return data[2 * i], data[2 * i + 1]


def python_store2(array, i, x0, x1):
    trace.note_vector_access(array, 2 * i, 2, True)
    data = _raw(array)
    data[2 * i], data[2 * i + 1] = x0, x1


if SIMULATED:
    load2, store2 = python_load2, python_store2

else:
    _FLOAT2 = ir.VectorType(ir.FloatType(), 2)

    def _float2_pointer(context, builder, array_type, array, index):
        data = context.make_array(array_type)(context, builder, array).data
        element = builder.mul(builder.sext(index, ir.IntType(64)), ir.Constant(ir.IntType(64), 2))
        return builder.bitcast(builder.gep(data, [element]), _FLOAT2.as_pointer())

    @intrinsic
    def load2(typingctx, array, i):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.UniTuple(types.float32, 2)(array, i)

        def codegen(context, builder, signature, args):
            pointer = _float2_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = builder.load(pointer, align=8)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(2)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    @intrinsic
    def store2(typingctx, array, i, x0, x1):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.void(array, i, types.float32, types.float32)

        def codegen(context, builder, signature, args):
            pointer = _float2_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = ir.Constant(_FLOAT2, ir.Undefined)
            for k, value in enumerate(args[2:]):
                vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), k))
            builder.store(vector, pointer, align=8)
            return context.get_dummy_value()

        return sig, codegen

    trace.register_python_twin(load2, python_load2)
    trace.register_python_twin(store2, python_store2)


# ---------------------------------------------------------------------------------------------
# 16-byte shared-memory access (lessons 4 and 6): ``ld.shared.v4.f32`` / ``st.shared.v4.f32`` (SASS
# ``LDS.128`` / ``STS.128``). numba hands a kernel its ``cuda.shared.array`` through a generic
# pointer; these cast it back to the shared address space (3) so that the access is a shared one.
# Same contract as load4/store4: a 1-D float32 shared array, index i counts float4 groups.

if SIMULATED:
    load4_shared, store4_shared = python_load4, python_store4

else:
    _SHARED = 3

    def _shared_float4_pointer(context, builder, array_type, array, index):
        generic = _float4_pointer(context, builder, array_type, array, index)
        return builder.addrspacecast(generic, _FLOAT4.as_pointer(_SHARED))

    @intrinsic
    def load4_shared(typingctx, array, i):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.UniTuple(types.float32, 4)(array, i)

        def codegen(context, builder, signature, args):
            pointer = _shared_float4_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = builder.load(pointer, align=16)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), k)) for k in range(4)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    @intrinsic
    def store4_shared(typingctx, array, i, x0, x1, x2, x3):
        if not (_is_float32_array(array) and isinstance(i, types.Integer)):
            return None
        sig = types.void(array, i, types.float32, types.float32, types.float32, types.float32)

        def codegen(context, builder, signature, args):
            pointer = _shared_float4_pointer(context, builder, signature.args[0], args[0], args[1])
            vector = ir.Constant(_FLOAT4, ir.Undefined)
            for k, value in enumerate(args[2:]):
                vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), k))
            builder.store(vector, pointer, align=16)
            return context.get_dummy_value()

        return sig, codegen

    trace.register_python_twin(load4_shared, python_load4)
    trace.register_python_twin(store4_shared, python_store4)
