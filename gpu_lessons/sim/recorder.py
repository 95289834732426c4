"""Record every element access of one simulated launch: the tracer's hot path.

While ``patched_simulator(recorder)`` is active (and only then), the simulator's in-kernel global
arrays (``FakeWithinKernelCUDAArray``) and its shared arrays (``FakeCUDAShared.array``, which then
returns ``TracedSharedArray``) report each element read or write to the recorder. Per access it
appends 7 ints: instruction id, how often this thread executed that instruction before, warp,
lane, root allocation, byte offset in the root, and 2 * bytes + is_store. Views keep their offset
because addresses are taken relative to the end of the ndarray ``.base`` chain.
"""

from __future__ import annotations

import bisect
import contextlib
import dis
import linecache
import os
import re
import sys
import threading
from contextlib import contextmanager
from operator import index as as_index

import numpy as np
from numba.cuda import types
from numba.cuda.np import numpy_support
from numba.cuda.simulator.cudadrv import devicearray as sim_arrays
from numba.cuda.simulator.kernelapi import FakeCUDAShared

from .scheduler import current_thread  # the simulated CUDA thread a pool worker runs

FakeCUDAArray = sim_arrays.FakeCUDAArray
FakeWithinKernelCUDAArray = sim_arrays.FakeWithinKernelCUDAArray

GLOBAL, SHARED = 0, 1
COLUMNS = 7  # instruction, seen before, warp, lane, root, offset, 2 * bytes + is_store
_META = "_gpu_lessons_trace"  # attribute caching a FakeCUDAArray's address description
_THREAD_STATE = "_gpu_lessons_trace_state"  # attribute of a simulated CUDA thread: its warp, lane...

_recorder: Recorder | None = None  # the launch being traced; the patches do nothing without one
_ndarray, _void = np.ndarray, np.void
_getframe = sys._getframe


class TraceError(RuntimeError):
    """The launch cannot be traced (nested trace, unsupported argument...)."""


def active() -> Recorder | None:
    return _recorder


# -- whose accesses count -----------------------------------------------------------------------


def _uncounted_files() -> set[str]:
    """Element accesses made from these files are the machinery's, not the kernel's."""

    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    files = {os.path.join(here, name) for name in ("recorder.py", "trace.py", "warp.py", "fma.py")}
    files |= {os.path.join(package, "vector.py"), os.path.abspath(contextlib.__file__),
              os.path.abspath(threading.__file__)}
    return files


_UNCOUNTED_FILES = _uncounted_files()
_UNCOUNTED_DIRS = (os.path.dirname(os.path.abspath(sys.modules["numba.cuda.simulator"].__file__)) + os.sep,)
_counted_cache: dict[str, bool] = {}


def exclude_from_counts(filename: str) -> None:
    """Accesses made from ``filename`` (a helper that reports them itself) are not counted."""
    _UNCOUNTED_FILES.add(os.path.abspath(filename))
    _counted_cache.clear()


def counted_file(filename: str) -> bool:
    counted = _counted_cache.get(filename)
    if counted is None:
        path = os.path.abspath(filename)
        counted = path not in _UNCOUNTED_FILES and not path.startswith(_UNCOUNTED_DIRS)
        _counted_cache[filename] = counted
    return counted


# -- addresses ----------------------------------------------------------------------------------


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def root_of(array: np.ndarray) -> np.ndarray:
    """The ndarray that owns the memory a view looks into (the end of the ``.base`` chain)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def element_offset(meta: tuple, idx) -> int | None:
    """Byte offset of element ``idx`` in the root allocation, or None if ``idx`` is not one element."""
    _, _, offset, strides, shape, ndim, _ = meta
    try:
        if idx.__class__ is tuple:
            if len(idx) != ndim:
                return None  # a row or a slice, not an element
            for i, stride, extent in zip(idx, strides, shape, strict=True):
                i = as_index(i)
                offset += (i + extent if i < 0 else i) * stride
            return offset
        if ndim != 1:
            return None
        i = as_index(idx)
        return offset + (i + shape[0] if i < 0 else i) * strides[0]
    except TypeError:  # slices, Ellipsis, None: not an element access
        return None


_SHARED_NAME = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*[\w.]*shared\.array\s*\(")


def shared_name(filename: str, lineno: int) -> str:
    """The variable a ``cuda.shared.array`` line assigns, else ``shared@file:line``."""
    match = _SHARED_NAME.match(linecache.getline(filename, lineno))
    return match.group(1) if match else f"shared@{os.path.basename(filename)}:{lineno}"


class Recorder:
    """Collects the thread-level accesses of one launch of ``grid`` x ``block`` threads."""

    def __init__(self, grid: tuple, block: tuple, poison_shared: bool = False):
        self.grid, self.block = grid, block
        self.poison_shared = poison_shared  # new float shared arrays start as NaN, not leftover bytes
        self.warps_per_block = -(-block[0] * block[1] * block[2] // 32)
        self.flat: list[int] = []  # COLUMNS ints per access
        self._extend = self.flat.extend
        self.lock = threading.Lock()
        self.roots: list[dict] = []  # {"name", "space", "array"}: the array keeps its id unique
        self._root_ids: dict[int, int] = {}
        self.instructions: list[tuple] = []  # (code, bytecode offset of the instruction)
        self._instruction_starts: dict[int, list] = {}
        self._instruction_ids: dict[tuple, int] = {}  # (id(code), start) -> index
        self._offset_ids: dict[tuple, int] = {}  # (id(code), lasti) -> index, read without the lock
        self._described: list = []  # FakeCUDAArrays carrying a cached description

    # -- arrays ---------------------------------------------------------------------------------
    def root_index(self, root: np.ndarray, space: int, name: str | None = None) -> int:
        with self.lock:
            index = self._root_ids.get(id(root))
            if index is None:
                index = len(self.roots)
                self.roots.append({"name": name or f"array{index}", "space": space, "array": root})
                self._root_ids[id(root)] = index
            elif name and self.roots[index]["name"] == f"array{index}":
                self.roots[index]["name"] = name
            return index

    def known_space(self, root: np.ndarray) -> int | None:
        index = self._root_ids.get(id(root))
        return None if index is None else self.roots[index]["space"]

    def describe(self, array: np.ndarray, space: int, root: np.ndarray | None = None, name=None) -> tuple:
        """(recorder, root index, byte offset of element 0, strides, shape, ndim, 2 * itemsize)."""
        root = root_of(array) if root is None else root
        index = self.root_index(root, space, name)
        offset = _address(array) - _address(root)
        return (self, index, offset, array.strides, array.shape, array.ndim, 2 * array.itemsize)

    def global_meta(self, item: FakeCUDAArray) -> tuple:
        meta = self.describe(item._ary, GLOBAL)
        item.__dict__[_META] = meta
        self._described.append(item)
        return meta

    def forget_descriptions(self) -> None:
        for item in self._described:
            item.__dict__.pop(_META, None)
        self._described.clear()

    # -- accesses -------------------------------------------------------------------------------
    def _thread_state(self, thread):
        """(warp, lane, counters, by-instruction counters) of a simulated CUDA thread, kept on it:
        the simulator's OS threads run one CUDA thread after another (``sim.scheduler``)."""
        block_idx = getattr(thread, "blockIdx", None)
        if block_idx is None:  # not a simulated CUDA thread
            return None
        gx, gy, _ = self.grid
        block_linear = block_idx.x + gx * (block_idx.y + gy * block_idx.z)
        warp = block_linear * self.warps_per_block + thread.thread_id // 32
        state = (warp, thread.thread_id % 32, {}, {}, self)
        thread.__dict__[_THREAD_STATE] = state
        return state

    def _instruction(self, code, lasti: int) -> int:
        """Id of the instruction at bytecode offset ``lasti``. Python 3.11+ reports the offset of
        an inline cache entry once an instruction is specialized, so map it back to the start.
        Keyed by ``id(code)``: hashing a code object is slow, and ``instructions`` keeps it alive."""
        seen = self._offset_ids.get((id(code), lasti))
        if seen is not None:
            return seen
        with self.lock:
            starts = self._instruction_starts.get(id(code))
            if starts is None:
                starts = self._instruction_starts[id(code)] = [i.offset for i in dis.get_instructions(code)]
            start = starts[max(bisect.bisect_right(starts, lasti) - 1, 0)]
            index = self._instruction_ids.get((id(code), start))
            if index is None:
                index = self._instruction_ids[(id(code), start)] = len(self.instructions)
                self.instructions.append((code, start))
            self._offset_ids[(id(code), lasti)] = index
            return index

    def _counter(self, code, lasti: int, counters: dict, by_instruction: dict) -> list:
        """This thread's [instruction id, executions so far] for a (code, offset) not seen before."""
        index = self._instruction(code, lasti)
        counter = by_instruction.get(index)
        if counter is None:
            counter = by_instruction[index] = [index, 0]
        counters[(id(code), lasti)] = counter
        return counter

    def record(self, meta: tuple, idx, size_store: int, frame) -> None:
        """One thread-level access of element ``idx`` made by ``frame``'s current instruction."""
        # inline fast paths for x[i] and a[i, j] with Python ints: this runs for every access
        kind = idx.__class__
        if kind is int and meta[5] == 1:
            offset = meta[2] + (idx + meta[4][0] if idx < 0 else idx) * meta[3][0]
        elif kind is tuple and meta[5] == 2 and len(idx) == 2:
            i, j = idx
            if i.__class__ is int and j.__class__ is int:
                shape, strides = meta[4], meta[3]
                offset = (meta[2] + (i + shape[0] if i < 0 else i) * strides[0]
                          + (j + shape[1] if j < 0 else j) * strides[1])
            else:
                offset = element_offset(meta, idx)
        else:
            offset = element_offset(meta, idx)
        if offset is None:
            return
        thread = current_thread()
        state = thread.__dict__.get(_THREAD_STATE)
        if state is None or state[4] is not self:
            state = self._thread_state(thread)
            if state is None:
                return
        warp, lane, counters, by_instruction, _ = state
        code = frame.f_code
        lasti = frame.f_lasti
        counter = counters.get((id(code), lasti))
        if counter is None:
            counter = self._counter(code, lasti, counters, by_instruction)
        seen = counter[1]
        counter[1] = seen + 1
        self._extend((counter[0], seen, warp, lane, meta[1], offset, size_store))

    def counted_accesses(self) -> np.ndarray:
        """The recorded accesses as an (n, COLUMNS) int64 array, the machinery's own left out."""
        data = np.array(self.flat, dtype=np.int64).reshape(-1, COLUMNS)
        counted = np.array([counted_file(code.co_filename) for code, _ in self.instructions], dtype=bool)
        return data[counted[data[:, 0]]] if data.size else data


# -- the patches --------------------------------------------------------------------------------


def _traced_global_getitem(self, idx):
    item = self._item
    value = item._ary[idx]
    if value.__class__ is _ndarray or value.__class__ is _void:  # a view or a record, not a load
        return FakeWithinKernelCUDAArray(FakeCUDAArray(value, stream=item.stream))
    rec = _recorder
    if rec is not None:
        meta = item.__dict__.get(_META)
        if meta is None or meta[0] is not rec:
            meta = rec.global_meta(item)
        rec.record(meta, idx, meta[6], _getframe(1))
    return value


def _traced_global_setitem(self, idx, value):
    item = self._item
    item._ary[idx] = value
    rec = _recorder
    if rec is not None:
        meta = item.__dict__.get(_META)
        if meta is None or meta[0] is not rec:
            meta = rec.global_meta(item)
        rec.record(meta, idx, meta[6] | 1, _getframe(1))


class TracedSharedArray:
    """A shared array whose element reads and writes are recorded; anything else is the ndarray's."""

    __slots__ = ("_ary", "_meta")

    def __init__(self, ary: np.ndarray, meta: tuple):
        self._ary = ary  # vector.py's _raw() unwraps this name
        self._meta = meta

    def __getitem__(self, idx):
        value = self._ary[idx]
        if value.__class__ is _ndarray:  # a view into the same shared allocation
            meta = self._meta
            offset = meta[2] + _address(value) - _address(self._ary)
            view_meta = (meta[0], meta[1], offset, value.strides, value.shape, value.ndim, 2 * value.itemsize)
            return TracedSharedArray(value, view_meta)
        rec = _recorder
        if rec is not None:
            rec.record(self._meta, idx, self._meta[6], _getframe(1))
        return value

    def __setitem__(self, idx, value):
        self._ary[idx] = value
        rec = _recorder
        if rec is not None:
            rec.record(self._meta, idx, self._meta[6] | 1, _getframe(1))

    def __getattr__(self, name):
        return getattr(self._ary, name)

    def __len__(self):
        return len(self._ary)

    def __iter__(self):
        return (self[i] for i in range(len(self._ary)))

    def __array__(self, dtype=None, copy=None):
        return self._ary if dtype is None else self._ary.astype(dtype)

    def __repr__(self):
        return f"TracedSharedArray({self._ary!r})"


def _traced_shared_array(self, shape, dtype, alignment=None):
    """``FakeCUDAShared.array`` returning recorded arrays: one allocation per source line, as the
    simulator does, but found without ``traceback.extract_stack`` and without its get-then-set race
    between a block's threads."""
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    dtype = np.dtype(dtype)
    rec = _recorder
    caller = _getframe(1)
    filename, line = caller.f_code.co_filename, caller.f_lineno
    if shape == 0:  # dynamic shared memory: every such array aliases one buffer
        count = self._dynshared_size // dtype.itemsize
        ary = np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        meta = rec.describe(ary, SHARED, root=self._dynshared, name=shared_name(filename, line))
        return TracedSharedArray(ary, meta)
    key = (filename, line)
    with rec.lock:
        shared = self._allocations.get(key)
    if shared is None:
        ary = np.empty(shape, dtype)
        if rec.poison_shared and dtype.kind == "f":
            ary.fill(np.nan)  # a read of an entry no thread wrote shows as NaN in the result
        candidate = TracedSharedArray(ary, rec.describe(ary, SHARED, name=shared_name(filename, line)))
        with rec.lock:
            shared = self._allocations.setdefault(key, candidate)
    return shared


@contextmanager
def patched_simulator(rec: Recorder):
    """Install the recording patches for one launch; restore the simulator's methods after."""
    global _recorder
    if _recorder is not None:
        raise TraceError("trace() is already running; traces cannot be nested")
    arrays = FakeWithinKernelCUDAArray
    saved = (arrays.__getitem__, arrays.__setitem__, FakeCUDAShared.array)
    arrays.__getitem__ = _traced_global_getitem
    arrays.__setitem__ = _traced_global_setitem
    FakeCUDAShared.array = _traced_shared_array
    _recorder = rec
    try:
        yield rec
    finally:
        _recorder = None
        arrays.__getitem__, arrays.__setitem__, FakeCUDAShared.array = saved
        rec.forget_descriptions()


def meta_of(rec: Recorder, array) -> tuple:
    """The address description of any array a kernel may hold (global, shared, or a raw ndarray)."""
    if isinstance(array, TracedSharedArray):
        return array._meta
    if isinstance(array, FakeWithinKernelCUDAArray):
        array = array._item
    if isinstance(array, FakeCUDAArray):
        meta = array.__dict__.get(_META)
        return meta if meta is not None and meta[0] is rec else rec.global_meta(array)
    if isinstance(array, np.ndarray):
        root = root_of(array)
        space = rec.known_space(root)
        return rec.describe(array, GLOBAL if space is None else space, root=root)
    raise TraceError(f"cannot tell where a {type(array).__name__} lives")
