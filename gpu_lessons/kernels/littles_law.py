"""Kernels of lesson 2 (Little's Law, latency hiding, ILP and occupancy), in teaching order.

1. ``pointer_chase``     one thread follows ``j = chain[j]``: every load waits for the one before,
                         so time / steps is the load latency (DRAM, L2 or L1, by the chain's size)
2. ``fma_chains(c)``     ``c`` independent chains of dependent FMAs per thread; with one warp and
                         ``c = 1``, time / FMAs is the FMA latency; over many warps, the FMA rate
3. ``copy_ilp(u)``       a copy where each thread issues ``u`` independent loads before its first
                         store (ILP); 4- or 8-byte accesses (float32 or float64 data)
4. ``copy_ilp(u, vector=True)``  the same with 16-byte loads and stores (``gpu_lessons.vector``)
5. ``copy_persistent(u)`` a grid-stride (persistent) version, for the open question of the lesson
6. ``copy_queue(u, r)``  the answer: persistent warps take chunks from a queue (one atomic per ``r``
                         chunks) and load the next chunk before storing this one (software pipelining)

The copies and FMA chains are generated from a template, one kernel per unroll factor, because
NVVM does not unroll loops with big bodies: the source (``kernel_source(kernel)``) shows exactly
the loads the compiler sees. Indices are unsigned (``uint64``) so Numba emits no negative-index
wrap-around code. Host wrappers check their inputs and return host arrays; ``*_launch`` functions
take device arrays and only launch (the timing harness calls those).
"""

from __future__ import annotations

import inspect
import linecache
from functools import cache

import numpy as np
from numba import cuda, float32, int64, uint32, uint64

from .. import SIMULATED
from ..checks import (
    InputError,
    require_aligned,
    require_array,
    require_block,
    require_contiguous,
    require_host,
    require_int,
)
from ..occupancy import sm_limits
from ..vector import load4, store4
from .launch import THREADS_PER_BLOCK, allow_dynamic_shared
from .util import queue_counters

LINE_BYTES = 128  # one chain node per cache line: each step is a new line
CHAIN_DTYPE = np.uint32

# ---------------------------------------------------------------------------------- 1. latency


@cuda.jit
def pointer_chase(chain, state, steps):
    """One thread: ``steps`` dependent loads; state[0] is where to start and, after, where it ended."""
    j = state[0]
    for _ in range(steps):
        j = chain[j]  # the address of the next load is the value of this one
    state[0] = j


@cuda.jit
def _scatter(chain, positions, values):
    """chain[positions[k]] = values[k]: writes a chain's nodes into a (large) device buffer."""
    for k in range(cuda.grid(1), positions.size, cuda.gridsize(1)):
        chain[uint64(positions[k])] = values[k]


def chain_nodes(buffer_elements: int, nodes: int, seed: int = 0) -> np.ndarray:
    """Element indices of ``nodes`` random cache lines of a buffer, in a random cyclic order.

    Following ``chain[node[k]] = node[k+1]`` (and the last back to the first) visits every node
    once per cycle; consecutive nodes are on unrelated lines, so no prefetcher can guess them.
    """
    per_line = LINE_BYTES // np.dtype(CHAIN_DTYPE).itemsize
    lines = require_int(buffer_elements, "buffer_elements", per_line) // per_line
    nodes = require_int(nodes, "nodes", 1, lines)
    if buffer_elements > np.iinfo(CHAIN_DTYPE).max:
        raise InputError(f"buffer_elements must be < 2**32 (uint32 indices), got {buffer_elements}")
    rng = np.random.default_rng(require_int(seed, "seed", 0))
    chosen = rng.choice(lines, nodes, replace=False) if nodes < lines else rng.permutation(lines)
    return (chosen.astype(np.int64) * per_line).astype(CHAIN_DTYPE)


def build_chain(buffer_elements: int, nodes: int, seed: int = 0, device: bool = False):
    """A pointer-chase buffer: returns (chain, first node). On the device, only the nodes are
    copied and scattered into an uninitialised buffer (a 1 GiB chain needs no 1 GiB host array)."""
    order = chain_nodes(buffer_elements, nodes, seed)
    successors = np.roll(order, -1)
    if not device:
        chain = np.zeros(buffer_elements, CHAIN_DTYPE)
        chain[order] = successors
        return chain, int(order[0])
    chain = cuda.device_array(buffer_elements, CHAIN_DTYPE)
    blocks = max(1, min(1024, -(-nodes // 256)))
    _scatter[blocks, 256](chain, cuda.to_device(order), cuda.to_device(successors))
    return chain, int(order[0])


def chase_state(start: int):
    return cuda.to_device(np.array([start], CHAIN_DTYPE))


def chase_launch(chain, state, steps: int) -> None:
    pointer_chase[1, 1](chain, state, int64(steps))


def chase(chain, start: int, steps: int) -> int:
    """Follow a host chain ``steps`` times from ``start`` with the kernel; returns where it ends."""
    require_array(chain, "chain", dtype=CHAIN_DTYPE, ndim=1)
    require_contiguous(chain, "chain")
    if chain.size == 0:
        raise InputError("chain is empty: there is no node to start from (build one with build_chain)")
    start = require_int(start, "start", 0, chain.size - 1)
    steps = require_int(steps, "steps", 0)
    state = np.array([start], CHAIN_DTYPE)
    pointer_chase[1, 1](chain, state, int64(steps))
    return int(state[0])


# ------------------------------------------------------------------------ generated kernels


_SOURCES: dict[str, str] = {}
GENERATED: dict[str, object] = {}  # name -> kernel, for the occupancy check over every kernel


def _compile(name: str, source: str, jit_options: dict | None = None):
    """Define a kernel from generated source; the source stays readable (inspect, tracebacks)."""
    filename = f"<gpu_lessons.kernels.littles_law:{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"cuda": cuda, "float32": float32, "uint64": uint64, "int64": int64, "uint32": uint32,
                 "load4": load4, "store4": store4}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own template
    options = {} if SIMULATED else (jit_options or {})  # the simulator has no register allocator
    kernel = cuda.jit(**options)(namespace[name])
    _SOURCES[name] = source
    GENERATED[name] = kernel
    return kernel


def kernel_source(kernel) -> str:
    """The Python source of a kernel, generated or not."""
    name = getattr(kernel, "__name__", None) or kernel.py_func.__name__
    if name in _SOURCES:
        return _SOURCES[name]
    return inspect.getsource(kernel.py_func)


# ------------------------------------------------------------------------- 2. FMA chains

FMA_UNROLL = 16  # FMAs per chain per loop trip: the loop's own instructions stay a small share
FMA_A, FMA_B = np.float32(0.999), np.float32(0.001)  # v -> 0.999 v + 0.001 stays finite


def fma_chains(chains: int):
    """``chains`` independent chains of dependent FMAs per thread, registers only.

    Each trip does FMA_UNROLL FMAs on every chain, written out (one line per step, the chains side
    by side): FMAs of one line are independent, each line depends on the one before.
    """
    return _fma_chains(require_int(chains, "chains", 1, 32))


@cache  # one kernel per distinct value (the wrappers normalise arguments: f(2) and f(2, None) are one)
def _fma_chains(chains: int):
    names = [f"x{c}" for c in range(chains)]
    lines = [f"def fma_chains_{chains}(out, trips, a, b):",
             f'    """{chains} independent FMA chain(s) per thread, {FMA_UNROLL} FMAs each per trip."""',
             "    t = cuda.grid(1)",
             "    x0 = float32(t)"]
    lines += [f"    x{c} = x0 + float32({c})" for c in range(1, chains)]
    lines.append("    for _ in range(trips):")
    step = f"        {', '.join(names)} = {', '.join(f'cuda.fma({x}, a, b)' for x in names)}"
    lines += [step] * FMA_UNROLL
    lines.append("    if t < out.size:")
    lines.append(f"        out[t] = {_pairwise_sum(names)}")
    return _compile(f"fma_chains_{chains}", "\n".join(lines) + "\n")


def _pairwise_sum(names: list[str]) -> str:
    """((x0 + x1) + (x2 + x3)) ...: the order fma_chains_reference adds them in."""
    terms = list(names)
    while len(terms) > 1:
        terms = [f"({terms[i]} + {terms[i + 1]})" if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0].removeprefix("(").removesuffix(")") if len(names) > 1 else terms[0]


def fma_chains_reference(threads, chains: int, trips: int) -> np.ndarray:
    """What fma_chains(chains) writes for the given thread indices (float32 FMAs emulated in float64)."""
    a, b = np.float64(FMA_A), np.float64(FMA_B)
    x0 = np.asarray(threads).astype(np.float32)
    xs = [x0] + [(x0 + np.float32(c)).astype(np.float32) for c in range(1, chains)]
    for _ in range(trips * FMA_UNROLL):
        xs = [(x.astype(np.float64) * a + b).astype(np.float32) for x in xs]
    while len(xs) > 1:
        xs = [(xs[i] + xs[i + 1]).astype(np.float32) if i + 1 < len(xs) else xs[i]
              for i in range(0, len(xs), 2)]
    return xs[0]


def fma_chains_launch(chains: int, out, blocks: int, threads: int, trips: int) -> None:
    fma_chains(chains)[blocks, threads](out, int64(trips), FMA_A, FMA_B)


def fma_chains_flops(chains: int, blocks: int, threads: int, trips: int) -> int:
    return 2 * chains * FMA_UNROLL * trips * blocks * threads


def fma_chains_host(chains: int, blocks: int, threads: int, trips: int) -> np.ndarray:
    """Run fma_chains on a grid; returns every thread's output (host array)."""
    chains = require_int(chains, "chains", 1, 32)
    blocks = require_int(blocks, "blocks", 1, 2**31 - 1)  # the largest grid
    threads = require_int(threads, "threads", 1, 1024)
    trips = require_int(trips, "trips", 0)
    out = np.full(blocks * threads, np.nan, np.float32)
    fma_chains_launch(chains, out, blocks, threads, trips)
    return out


# --------------------------------------------------------------------- 3-4. copies with ILP

COPY_BLOCK = THREADS_PER_BLOCK


def _copy_scalar_source(name: str, unroll: int) -> str:
    idx = [f"i{k}" for k in range(unroll)]
    lines = [f"def {name}(x, out):",
             f'    """Each thread copies {unroll} element(s), a block apart: {unroll} load(s) in flight, then'
             ' the stores."""',
             "    step = uint64(cuda.blockDim.x)",
             f"    i0 = uint64(cuda.blockIdx.x) * step * uint64({unroll}) + uint64(cuda.threadIdx.x)"]
    lines += [f"    i{k} = i{k - 1} + step" for k in range(1, unroll)]
    lines += ["    n = uint64(x.size)", f"    if {idx[-1]} < n:  # the whole block's share is in bounds"]
    lines += [f"        v{k} = x[i{k}]" for k in range(unroll)]
    lines += [f"        out[i{k}] = v{k}" for k in range(unroll)]
    lines.append("    else:  # the last block: element by element")
    for k in range(unroll):
        lines += [f"        if i{k} < n:", f"            out[i{k}] = x[i{k}]"]
    return "\n".join(lines) + "\n"


def _copy_vector_source(name: str, unroll: int) -> str:
    lines = [f"def {name}(x, out):",
             f'    """Each thread copies {unroll} float4(s), a block apart: {unroll} 16-byte load(s) in'
             ' flight, then the stores; the n % 4 last elements one by one."""',
             "    step = uint64(cuda.blockDim.x)",
             f"    i0 = uint64(cuda.blockIdx.x) * step * uint64({unroll}) + uint64(cuda.threadIdx.x)"]
    lines += [f"    i{k} = i{k - 1} + step" for k in range(1, unroll)]
    lines += ["    groups = uint64(x.size) // uint64(4)",
              f"    if i{unroll - 1} < groups:  # the whole block's share is in bounds"]
    lines += [f"        a{k}, b{k}, c{k}, d{k} = load4(x, int64(i{k}))" for k in range(unroll)]
    lines += [f"        store4(out, int64(i{k}), a{k}, b{k}, c{k}, d{k})" for k in range(unroll)]
    lines.append("    else:  # the last block: float4 by float4, then the tail")
    for k in range(unroll):
        lines += [f"        if i{k} < groups:",
                  f"            a, b, c, d = load4(x, int64(i{k}))",
                  f"            store4(out, int64(i{k}), a, b, c, d)"]
    lines += ["    tail = uint64(4) * groups + uint64(cuda.threadIdx.x)  # the n % 4 past the last float4",
              "    if cuda.blockIdx.x == 0 and tail < uint64(x.size):",
              "        out[tail] = x[tail]"]
    return "\n".join(lines) + "\n"


def copy_ilp(unroll: int, vector: bool = False, max_registers: int | None = None):
    """A copy with ``unroll`` independent loads per thread before its stores.

    vector=False: one element per access (4 bytes on float32 data, 8 on float64);
    vector=True: one float4 (16 bytes) per access, float32 data only.
    max_registers caps the registers per thread (numba's counterpart of __launch_bounds__):
    fewer registers, more resident warps, but values that do not fit spill to local memory.
    """
    unroll = require_int(unroll, "unroll", 1, 128)
    if max_registers is not None:
        max_registers = require_int(max_registers, "max_registers", 16, 255)
    return _copy_ilp(unroll, bool(vector), max_registers)


@cache
def _copy_ilp(unroll: int, vector: bool, max_registers: int | None):
    name = f"copy_{'vec4' if vector else 'scalar'}_u{unroll}"
    if max_registers is not None:
        name += f"_r{max_registers}"
    source = (_copy_vector_source if vector else _copy_scalar_source)(name, unroll)
    return _compile(name, source, {"max_registers": max_registers} if max_registers else None)


def copy_grid(x_size: int, unroll: int, vector: bool, block: int = COPY_BLOCK) -> int:
    """One-shot grid: every thread does ``unroll`` accesses, all blocks together cover the array."""
    items = x_size // 4 if vector else x_size  # the float4 tail: block 0's first threads
    return max(1, -(-items // (block * unroll)))


def copy_ilp_launch(unroll: int, vector: bool, x, out, block: int = COPY_BLOCK, shared: int = 0,
                    max_registers: int | None = None) -> None:
    """Launch the copy on device arrays; ``shared`` bytes of dynamic shared memory per block (unused
    by the kernel: it only limits how many blocks an SM holds)."""
    kernel = copy_ilp(unroll, vector, max_registers)
    kernel[copy_grid(x.size, unroll, vector, block), block, 0, shared](x, out)


def copy(x, unroll: int = 1, vector: bool = False, block: int = COPY_BLOCK, shared: int = 0,
         max_registers: int | None = None):
    """Copy a float32 (or, scalar only, float64) NumPy vector with copy_ilp; returns the copy.
    ``shared`` bytes of dynamic shared memory per block: past 48 KiB the kernel is opted in."""
    require_host(x, "x")
    require_array(x, "x", ndim=1)
    require_contiguous(x, "x")
    if vector:
        require_array(x, "x", dtype=np.float32)
        require_aligned(x, "x", 16)
    elif np.dtype(x.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise InputError(f"x must have dtype float32 or float64, got {np.dtype(x.dtype).name}")
    block = require_int(block, "block", 1, 1024)
    kernel = copy_ilp(unroll, vector, max_registers)  # a bad unroll or max_registers: an error first
    shared = _dynamic_shared(kernel, shared, (x, x))
    out = np.full_like(x, np.nan)
    if x.size:  # an empty x: an empty copy, no launch
        copy_ilp_launch(unroll, vector, x, out, block, shared, max_registers)
    return out


def _dynamic_shared(kernel, shared: int, args) -> int:
    """Check a launch's dynamic shared memory; past a plain kernel's 48 KiB, opt the kernel in."""
    limits = sm_limits()
    shared = require_int(shared, "shared", 0, limits.shared_per_block_optin)
    if shared > limits.shared_per_block:  # the copies have no static shared memory
        allow_dynamic_shared(kernel, args, limits.shared_per_block_optin)
    return shared


# ------------------------------------------------------------------ 5. persistent copies


def copy_persistent(unroll: int):
    """Grid-stride float4 copy: a fixed grid loops over the array, ``unroll`` float4 in flight."""
    return _copy_persistent(require_int(unroll, "unroll", 1, 16))


@cache
def _copy_persistent(unroll: int):
    name = f"copy_persistent_u{unroll}"
    lines = [f"def {name}(x, out):",
             f'    """A fixed grid strides over the array, {unroll} float4 load(s) in flight per trip."""',
             "    stride = uint64(cuda.gridDim.x) * uint64(cuda.blockDim.x)",
             "    start = uint64(cuda.blockIdx.x) * uint64(cuda.blockDim.x) + uint64(cuda.threadIdx.x)",
             "    groups = uint64(x.size) // uint64(4)",
             "    i = start",
             f"    while i + uint64({unroll - 1}) * stride < groups:"]
    lines += [f"        a{k}, b{k}, c{k}, d{k} = load4(x, int64(i + uint64({k}) * stride))"
              for k in range(unroll)]
    lines += [f"        store4(out, int64(i + uint64({k}) * stride), a{k}, b{k}, c{k}, d{k})"
              for k in range(unroll)]
    lines += [f"        i += uint64({unroll}) * stride",
              "    while i < groups:",
              "        a, b, c, d = load4(x, int64(i))",
              "        store4(out, int64(i), a, b, c, d)",
              "        i += stride",
              "    tail = uint64(4) * groups + start",
              "    if tail < uint64(x.size):",
              "        out[tail] = x[tail]"]
    return _compile(name, "\n".join(lines) + "\n")


def copy_persistent_launch(unroll: int, x, out, blocks: int, block: int = COPY_BLOCK) -> None:
    copy_persistent(unroll)[blocks, block](x, out)


def copy_persistent_host(x, unroll: int = 1, blocks: int = 2, block: int = COPY_BLOCK):
    """Copy a float32 NumPy vector with copy_persistent on ``blocks`` x ``block`` threads."""
    require_host(x, "x")
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    require_aligned(x, "x", 16)
    blocks, block = require_int(blocks, "blocks", 1), require_int(block, "block", 1, 1024)
    kernel = copy_persistent(unroll)  # a bad unroll: an error before any work
    out = np.full_like(x, np.nan)
    if x.size:  # an empty x: an empty copy, no launch
        kernel[blocks, block](x, out)
    return out


# ------------------------------------------------------------ 6. a pipelined warp queue

def copy_queue(unroll: int, chunks_per_claim: int = 1, max_registers: int | None = None):
    """Persistent float4 copy: warps take chunks of 32 lanes x ``unroll`` float4 from a queue.

    Why: a one-shot thread has nothing in flight while it waits for its last load, stores, exits and
    the next block starts; at 16 warps/SM that idle time costs ~4% of the bandwidth. Here each warp
    loads its next chunk before it stores the current one, so its loads stay in flight across chunk
    boundaries; a queue (not a fixed grid stride) lets faster SMs take more chunks.

    Lane 0 claims ``chunks_per_claim`` consecutive chunks with one atomic on ``counters[0]`` and
    shuffles the claim to the warp. The warp that draws the first claim past the full chunks copies
    the tail (the float4 past the last full chunk, then the n % 4 floats); the last warp to finish
    resets both counters, so the next launch needs no memset. Launch with whole warps
    (``copy_queue_launch``); ``counters`` is ``queue_counters(np.uint64)``.
    Registers hold two chunks (this one and the next): u16 needs ~146 per thread, and 16 warps/SM
    in blocks of 256 need <= 128, hence ``max_registers`` (as in copy_ilp; past the need it spills).
    """
    unroll = require_int(unroll, "unroll", 1, 32)
    per_claim = require_int(chunks_per_claim, "chunks_per_claim", 1, 64)
    if max_registers is not None:
        max_registers = require_int(max_registers, "max_registers", 16, 255)
    return _copy_queue(unroll, per_claim, max_registers)


@cache
def _copy_queue(unroll: int, per_claim: int, max_registers: int | None):
    name = f"copy_queue_u{unroll}_r{per_claim}" + (f"_maxreg{max_registers}" if max_registers else "")
    regs = [(f"a{j}", f"b{j}", f"c{j}", f"d{j}") for j in range(unroll)]
    nxt = [(f"e{j}", f"f{j}", f"g{j}", f"h{j}") for j in range(unroll)]

    def loads(names, base, pad):
        return [f"{pad}{', '.join(v)} = load4(x, int64({base} + uint64({32 * j})))"
                for j, v in enumerate(names)]

    def zeros(names, pad):
        return [f"{pad}{' = '.join(v)} = float32(0)" for v in names]

    def claim(pad):
        return [f"{pad}got = int64(0)",
                f"{pad}if lane == uint64(0):",
                f"{pad}    got = int64(cuda.atomic.add(counters, 0, uint64(1)))",
                f"{pad}claim = uint64(cuda.shfl_sync(0xffffffff, got, 0))  # lane 0's claim, to the warp"]

    lines = [f"def {name}(x, out, counters):",
             f'    """Warps claim {per_claim} chunk(s) of 32 lanes x {unroll} float4 per atomic; the next'
             ' chunk\'s loads go out before this chunk\'s stores."""',
             "    lane = uint64(cuda.threadIdx.x) & uint64(31)",
             "    groups = uint64(x.size) // uint64(4)",
             f"    span = uint64({32 * unroll})  # float4 per chunk",
             "    chunks = groups // span  # full chunks; the float4 past them and the n % 4 are the tail",
             f"    claims = (chunks + uint64({per_claim - 1})) // uint64({per_claim})  # with full chunks"]
    lines += claim("    ")
    lines += [f"    chunk = claim * uint64({per_claim})",
              f"    end = min(chunk + uint64({per_claim}), chunks)  # past the claim's last full chunk",
              "    base = chunk * span + lane",
              "    if chunk < end:"]
    lines += loads(regs, "base", "        ")
    lines += ["    else:"] + zeros(regs, "        ")
    lines += ["    while chunk < end:"]
    if per_claim > 1:
        lines += ["        if chunk + uint64(1) < end:  # the claim's next chunk",
                  "            nxt = chunk + uint64(1)",
                  "        else:  # claim again"]
        lines += claim("            ")
        lines += [f"            nxt = claim * uint64({per_claim})",
                  f"            end = min(nxt + uint64({per_claim}), chunks)"]
    else:
        lines += claim("        ")
        lines += ["        nxt = claim", "        end = min(nxt + uint64(1), chunks)"]
    lines += ["        nbase = nxt * span + lane",
              "        if nxt < end:  # the next chunk's loads, before this chunk's stores"]
    lines += loads(nxt, "nbase", "            ")
    lines += ["        else:"] + zeros(nxt, "            ")
    lines += [f"        store4(out, int64(base + uint64({32 * j})), {', '.join(v)})"
              for j, v in enumerate(regs)]
    lines += [f"        {', '.join(v)} = {', '.join(w)}" for v, w in zip(regs, nxt, strict=True)]
    lines += ["        chunk, base = nxt, nbase",
              "    if claim == claims:  # one warp draws the first claim past the full chunks: the tail",
              "        i = chunks * span + lane",
              "        while i < groups:",
              "            p, q, r, s = load4(x, int64(i))",
              "            store4(out, int64(i), p, q, r, s)",
              "            i += uint64(32)",
              "        t = uint64(4) * groups + lane",
              "        if t < uint64(x.size):",
              "            out[t] = x[t]",
              "    if lane == uint64(0):",
              "        cuda.threadfence()  # this warp's claims are done before it counts itself done",
              "        done = cuda.atomic.add(counters, 1, uint64(1))",
              "        warps = uint64(cuda.gridDim.x) * uint64(cuda.blockDim.x) // uint64(32)",
              "        if done == warps - uint64(1):  # the last warp: no claim is left to draw",
              "            counters[0] = uint64(0)",
              "            counters[1] = uint64(0)"]
    options = {"max_registers": max_registers} if max_registers else None
    return _compile(name, "\n".join(lines) + "\n", options)


def copy_queue_launch(unroll: int, x, out, blocks: int, block: int = COPY_BLOCK, shared: int = 0,
                      chunks_per_claim: int = 1, max_registers: int | None = None) -> None:
    """Launch copy_queue on device arrays: ``blocks`` x ``block`` threads (whole warps), ``shared``
    bytes of dynamic shared memory per block (unused: it only caps the blocks an SM holds)."""
    kernel = copy_queue(unroll, chunks_per_claim, max_registers)
    kernel[blocks, block, 0, shared](x, out, queue_counters(np.uint64))


def copy_queue_host(x, unroll: int = 8, chunks_per_claim: int = 1, blocks: int = 2, block: int = 64):
    """Copy a float32 NumPy vector with copy_queue on ``blocks`` x ``block`` threads; returns the copy."""
    require_host(x, "x")
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    require_aligned(x, "x", 16)
    blocks, block = require_int(blocks, "blocks", 1), require_block(block)
    kernel = copy_queue(unroll, chunks_per_claim)  # bad unroll or chunks_per_claim: an error before any work
    out = np.full_like(x, np.nan)
    if x.size:  # an empty x: an empty copy, no launch
        kernel[blocks, block](x, out, queue_counters(np.uint64))
    return out


# ------------------------------------------------------------------ bytes in flight


def bytes_in_flight_per_sm(warps_per_sm: float, loads_per_thread: int, bytes_per_load: int) -> float:
    """Read bytes a copy keeps in flight on one SM: warps x 32 lanes x loads x bytes (Little's L)."""
    return warps_per_sm * 32 * loads_per_thread * bytes_per_load


def littles_law_gbps(bytes_in_flight_sm, latency_ns: float, sms: int, ceiling_gbps: float):
    """Copy bandwidth Little's Law predicts: reads = bytes in flight / latency, and as many bytes
    written as read (GB/s counts both), capped by the measured ceiling."""
    reads = np.asarray(bytes_in_flight_sm, dtype=float) * sms / latency_ns  # bytes per ns = GB/s
    return np.minimum(ceiling_gbps, 2 * reads)


def fma_model_fraction(warps_per_sm, chains, latency_cycles: float, schedulers: int = 4):
    """Share of the FP32 peak Little's Law predicts for FMA chains: each scheduler issues one warp
    FMA per cycle, and needs latency_cycles independent FMAs in flight to do so every cycle.
    Warps are dealt to the schedulers round robin (warp w to scheduler w % 4)."""
    warps = np.asarray(warps_per_sm, dtype=float)
    chains = np.asarray(chains, dtype=float)
    total = np.zeros(np.broadcast(warps, chains).shape)
    for s in range(schedulers):
        mine = np.floor((warps - s - 1) / schedulers) + 1  # warps s, s+4, ... below `warps`
        mine = np.maximum(mine, 0)
        total = total + np.minimum(1.0, mine * chains / latency_cycles)
    return total / schedulers


# ------------------------------------------------------------------ GPU-only helpers
