"""Count a kernel's memory traffic the way Nsight Compute does, by running it on the simulator.

    counts = trace(kernel, grid, block, *args)
    counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    counts.by_instruction      # pandas: one row per subscript in the source and array

How: for the duration of one launch (and only then: nothing is patched otherwise) the simulator's
array classes record every element read and write (``recorder``): per CUDA thread, the instruction
(the caller's code object and bytecode offset), how many times this thread executed it before, the
array's root allocation, the element's byte offset in it and the size. The k-th execution of an
instruction by each lane of a warp is one warp-level instruction (SIMT), so grouping by
(instruction, array, warp, k) gives the requests (``instruction_table``), and ``memory_model``
prices them in sectors, wavefronts and bank conflicts. Global arrays are named after the kernel's
parameters, shared arrays after the variable their ``cuda.shared.array`` line assigns.

With a GPU (numba.cuda in GPU mode) ``trace`` works too, for a learner who wants live timings and
counts side by side: the simulator's classes import fine in GPU mode, so the kernel's Python
function (``kernel.py_func``) runs in a ``FakeCUDAKernel``, which swaps ``cuda`` for the
simulator's module in the function's globals; compiled device functions it calls are swapped for
simulated ones for the launch, and device-array arguments are copied to the host and back (keeping
each pointer's distance from a 256-byte boundary, which sectors and banks depend on). Device
helpers that cannot run as Python (``@intrinsic``s) need a twin: ``register_python_twin``. Keep
such launches small: one Python thread per CUDA thread.

Hopper's wgmma (``gpu_lessons.ptx``) reads its operands from shared memory through the tensor
cores, not the load/store unit: ``MemoryTrace.wgmma`` lists each warpgroup wgmma with the bytes of
A and B it read (``sim.wgmma.wgmma_log``), apart from the LSU counts.

Not counted: atomics (their own Nsight Compute metrics), local arrays (registers or local memory),
constant arrays, accesses made by the simulator or by gpu_lessons' helpers (which report theirs
through ``note_vector_access``). Where the compiler merges accesses (four adjacent shared loads of
an unrolled loop into one 16-byte load, say) the GPU executes fewer instructions than the source
shows; the tracer counts the source.
"""

from __future__ import annotations

import inspect
import types
from contextlib import ExitStack, contextmanager

import numpy as np
from numba.cuda.simulator.kernel import FakeCUDAKernel

from ..mode import choose_mode
from . import recorder
from .instruction_table import instruction_table
from .recorder import GLOBAL, FakeCUDAArray, Recorder, TraceError, root_of
from .trace_result import METRICS, MemoryTrace
from .warp_request import accesses_frame, sites_frame
from .wgmma import wgmma_log

__all__ = ["METRICS", "MemoryTrace", "TraceError", "is_tracing", "note_vector_access",
           "register_python_twin", "simulate", "trace"]

ALLOCATION_ALIGNMENT = 256  # cudaMalloc's guarantee; every root allocation is modelled as aligned


def is_tracing() -> bool:
    return recorder.active() is not None


def note_vector_access(array, first_element_index, element_count: int, is_store: bool) -> None:
    """Record ``element_count`` consecutive elements from ``first_element_index`` as ONE access.

    For 16-byte load/store helpers in simulator mode (which then read the raw ndarray, so the
    elements are not counted again). The instruction is that of the first caller outside
    gpu_lessons' helpers and the simulator. A no-op when no trace is running.
    """
    rec = recorder.active()
    if rec is None:
        return
    meta = recorder.meta_of(rec, array)
    frame = recorder._getframe(1)
    while frame is not None and not recorder.counted_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return
    size_store = element_count * meta[6] + (1 if is_store else 0)
    rec.record(meta, first_element_index, size_store, frame)


_python_twins: dict[int, tuple] = {}


def register_python_twin(compiled, python_function) -> None:
    """In GPU mode, run ``python_function`` wherever a traced kernel calls ``compiled``.

    For device helpers that cannot run as Python (``@intrinsic``s such as float4 loads): the twin
    is their simulator implementation, which reports its accesses with ``note_vector_access``.
    """
    _python_twins[id(compiled)] = (compiled, python_function)


def _dims(value) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise TraceError(f"launch dimensions must be 1 to 3 positive integers, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


class _Arguments:
    """The launch's arguments as simulator arrays, their roots named after the kernel's parameters.

    NumPy arrays behave as in a launch: copied to a fresh (aligned) allocation and back afterwards.
    """

    def __init__(self, args, function, rec: Recorder, gpu_mode: bool):
        try:
            names = list(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            names = []
        self.values, self._writebacks = [], []
        for position, arg in enumerate(args):
            name = names[position] if position < len(names) else f"arg{position}"
            self.values.append(self._prepare(arg, name, rec, gpu_mode))

    def _prepare(self, arg, name: str, rec: Recorder, gpu_mode: bool):
        if isinstance(arg, np.ndarray) and arg.ndim > 0:
            device = recorder.sim_arrays.to_device(arg)
            self._writebacks.append(lambda: np.copyto(arg, device._ary))
            rec.root_index(root_of(device._ary), GLOBAL, name)
            return device
        if isinstance(arg, FakeCUDAArray):
            rec.root_index(root_of(arg._ary), GLOBAL, name)
            return arg
        if gpu_mode and hasattr(arg, "__cuda_array_interface__"):
            return self._host_copy_of_device_array(arg, name, rec)
        return arg

    def _host_copy_of_device_array(self, arg, name: str, rec: Recorder):
        from numba import cuda  # GPU mode only: a device array to copy back for the simulated run

        device = arg if hasattr(arg, "copy_to_host") else cuda.as_cuda_array(arg)
        try:
            host = device.copy_to_host()
        except Exception as error:  # e.g. a non-contiguous view
            raise TraceError(f"cannot copy argument {name!r} to the host for tracing: {error}") from error
        pad = device.__cuda_array_interface__["data"][0] % ALLOCATION_ALIGNMENT
        buffer = np.zeros(pad + host.nbytes, dtype=np.uint8)
        view = buffer[pad:].view(host.dtype).reshape(host.shape)
        view[...] = host
        rec.root_index(buffer, GLOBAL, name)
        self._writebacks.append(lambda: device.copy_to_device(np.ascontiguousarray(view)))
        return FakeCUDAArray(view)

    def write_back(self) -> None:
        for writeback in self._writebacks:
            writeback()


@contextmanager
def _python_device_functions(function):
    """GPU mode: for the launch, swap the compiled device functions (and registered twins)
    that ``function`` reaches, through its module's globals, its closure or one of the course's own
    modules it names (``kernels.warp_reduce_sum``, ``ptx.cp_async16``), for simulated ones."""
    from numba.cuda.dispatcher import CUDADispatcher  # GPU mode only: the compiled kernels' type

    restore: list = []  # callables that undo one swap each
    seen_functions: set[int] = set()
    seen_globals: set[int] = set()

    def replacement(value):
        twin = _python_twins.get(id(value))
        if twin is not None and twin[0] is value:
            return twin[1]
        if isinstance(value, CUDADispatcher) and value.targetoptions.get("device"):
            visit(value.py_func)
            return FakeCUDAKernel(value.py_func, device=True)
        return None

    def swap_global(namespace, name, value):
        new = replacement(value)
        if new is not None:
            namespace[name] = new
            restore.append(lambda: namespace.__setitem__(name, value))

    def swap_cell(cell, value):
        new = replacement(value)
        if new is not None:
            cell.cell_contents = new
            restore.append(lambda: setattr(cell, "cell_contents", value))

    def course_module(module):
        """A module attribute (``ptx.cp_async16``): swapped in the module itself, for this launch."""
        if id(module.__dict__) in seen_globals:
            return
        seen_globals.add(id(module.__dict__))
        for name, value in list(vars(module).items()):
            swap_global(module.__dict__, name, value)

    def visit(fn):
        if id(fn) in seen_functions:
            return
        seen_functions.add(id(fn))
        namespace = fn.__globals__
        if id(namespace) not in seen_globals:
            seen_globals.add(id(namespace))
            for name, value in list(namespace.items()):
                swap_global(namespace, name, value)
                if isinstance(value, types.ModuleType) and value.__name__.startswith("gpu_lessons."):
                    course_module(value)
        for cell in fn.__closure__ or ():
            try:
                swap_cell(cell, cell.cell_contents)
            except ValueError:  # an empty cell (a name not bound yet)
                continue

    try:
        visit(function)
        yield
    finally:
        for undo in reversed(restore):
            undo()


def _simulated_kernel(kernel) -> FakeCUDAKernel:
    if isinstance(kernel, FakeCUDAKernel):
        return kernel
    function = getattr(kernel, "py_func", None)
    if function is None and inspect.isfunction(kernel):
        function = kernel
    if function is None:
        raise TraceError(f"trace() needs a @cuda.jit kernel or a function, not {type(kernel).__name__}")
    return FakeCUDAKernel(function, device=False)


def simulate(kernel, grid, block, *args, dynamic_shared_bytes: int = 0) -> None:
    """Run ``kernel[grid, block](*args)`` once on the simulator, in any mode, counting nothing: for
    checks that need what only the simulator shows (a race between its threads, an index past the end,
    which a GPU runs through silently). NumPy arguments are copied in and back out, as in a launch."""
    gpu_mode = choose_mode() == "gpu"
    if gpu_mode:
        from . import install  # sim/__init__ imports this module: a cycle at the top

        install()
    simulated = _simulated_kernel(kernel)
    with ExitStack() as stack:
        if gpu_mode:
            stack.enter_context(_python_device_functions(simulated.py_func))
        simulated[_dims(grid), _dims(block), 0, dynamic_shared_bytes](*args)


def trace(kernel, grid, block, *args, dynamic_shared_bytes: int = 0,
          poison_shared: bool = False) -> MemoryTrace:
    """Run ``kernel[grid, block](*args)`` once on the simulator and count its memory traffic.

    ``poison_shared``: float ``cuda.shared.array``s start as NaN (a GPU leaves them undefined), so
    that a result built on an entry no thread wrote is visibly wrong.

    Arguments behave as in a launch (NumPy arrays are copied in and back out). Returns a
    ``MemoryTrace``: ``.totals`` (Nsight Compute metric -> count), ``.by_array`` and
    ``.by_instruction`` (DataFrames). Works in simulator and in GPU mode (see the module doc).
    """
    gpu_mode = choose_mode() == "gpu"
    if gpu_mode:
        from . import install  # sim/__init__ imports this module: a cycle at the top

        install()  # the simulator extras (warp primitives...) for the simulated run
    simulated = _simulated_kernel(kernel)
    grid3, block3 = _dims(grid), _dims(block)
    if block3[0] * block3[1] * block3[2] > 1024:
        raise TraceError(f"block {block3} has more than 1024 threads")
    rec = Recorder(grid3, block3, poison_shared)
    with ExitStack() as stack:
        stack.enter_context(recorder.patched_simulator(rec))
        arguments = _Arguments(args, simulated.py_func, rec, gpu_mode)
        if gpu_mode:
            stack.enter_context(_python_device_functions(simulated.py_func))
        wgmma = stack.enter_context(wgmma_log())
        simulated[grid3, block3, 0, dynamic_shared_bytes](*arguments.values)
    arguments.write_back()
    name = simulated.py_func.__name__
    data = rec.counted_accesses()
    table = instruction_table(data, rec.roots, rec.instructions, name)
    accesses = accesses_frame(data)
    sites = sites_frame(rec.instructions, rec.roots, accesses)
    return MemoryTrace(name, grid3, block3, table, accesses=accesses, sites=sites, wgmma=wgmma.frame())
