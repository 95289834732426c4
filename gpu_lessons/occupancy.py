"""Occupancy: how many blocks and warps of a kernel an SM holds at once, and which resource limits it.

    from gpu_lessons.occupancy import occupancy, sm_limits
    occ = occupancy(threads_per_block=256, registers_per_thread=40, shared_bytes_per_block=0)
    occ.blocks_per_sm, occ.warps_per_sm, occ.fraction, occ.limiter

An SM holds a block only when all of its resources fit: threads (warps), a slot in the block table,
registers and shared memory. The rules below are those of NVIDIA's occupancy calculator
(``cuda_occupancy.h`` in the CUDA toolkit), which the driver's
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` implements; on a GPU the lesson compares the two for
every kernel of the package (``benchmarks/record_occupancy_driver.py``, recorded in
``data/<gpu>/occupancy_driver.csv``).

* warps: a block of ``t`` threads takes ``ceil(t / 32)`` warp slots (a partial warp is a whole one).
* registers: allocated per warp, ``registers_per_thread x 32`` rounded up to the allocation unit
  (256 registers on sm_70 to sm_90), in each of the SM's 4 sub-partitions (a quarter of the register
  file each); a block must also fit the per-block register limit, checked as if its warps were spread
  over all 4 sub-partitions (its warp count rounded up to a multiple of 4).
* shared memory: static + dynamic + the per-block reservation (1 KiB on sm_80+), rounded up to the
  allocation unit (256 bytes on sm_7x, 128 on sm_8x and later), out of the SM's shared memory
  (228 KiB on an H100/H200, with no carve-out preference set).
* the per-block shared-memory limit: a plain kernel may have 48 KiB (static + dynamic). Past that it
  must opt in: raise its ``cudaFuncAttributeMaxDynamicSharedMemorySize`` (numba:
  ``kernels.launch.allow_dynamic_shared``), up to the GPU's opt-in limit (227 KiB on an
  H100/H200). ``occupancy(..., opt_in=True)`` answers for a kernel that has; without it, a block over
  48 KiB cannot launch at all, and the answer says so (0 blocks, limited by ``nothing fits``), as the
  driver does.

The SM's limits come from the device in GPU mode (``sm_limits()``); on the simulator standing in for a
target GPU (``GPU_LESSONS_DEVICE``), from that target's published limits; else from the
recording where a GPU kept them (``data/<gpu>/littles_law.meta.json``, key ``facts.sm_limits``), so the
calculator gives the recorded GPU's answers everywhere. The allocation units and sub-partition count
are not device attributes: they are the per-architecture constants of ``cuda_occupancy.h``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache

import pandas as pd
from numba import cuda, typeof

from . import SIMULATED, results
from .checks import InputError, require_int

LIMITERS = ("warps", "threads", "blocks", "registers", "shared memory")
NOTHING_FITS = "nothing fits"

# Per-architecture constants of cuda_occupancy.h (not exposed as device attributes), by major CC.
ARCHITECTURE = {
    # major: (register allocation unit, max registers per thread, sub-partitions, shared alloc unit)
    7: (256, 255, 4, 256),  # sm_7x allocates shared memory in 256 bytes (cudaOccSMemAllocationGranularity)
    8: (256, 255, 4, 128),
    9: (256, 255, 4, 128),
    10: (256, 255, 4, 128),
    12: (256, 255, 4, 128),
}


@dataclass(frozen=True)
class SMLimits:
    """What one SM (and one block) may hold; ``source`` says where the figures were read."""

    compute_capability: str
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    register_allocation_unit: int  # registers, allocated per warp
    sub_partitions: int  # warp schedulers per SM, each with a quarter of the register file
    shared_per_sm: int  # bytes
    shared_per_block: int  # without opting in (48 KiB)
    shared_per_block_optin: int  # the most a kernel may ask for after raising its dynamic limit
    reserved_shared_per_block: int  # the system's share of each block's allocation
    shared_allocation_unit: int
    source: str = field(default="", compare=False)

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, facts: dict, source: str = "") -> SMLimits:
        names = [f.name for f in fields(cls) if f.name != "source"]
        missing = [n for n in names if n not in facts]
        if missing:
            raise ValueError(f"SM limits lack {', '.join(missing)}")
        return cls(**{n: facts[n] for n in names}, source=source or facts.get("source", ""))


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one launch shape, and what limits them."""

    threads_per_block: int
    registers_per_thread: int
    shared_bytes_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    fraction: float  # warps_per_sm / max warps per SM
    limiter: str  # one of LIMITERS, or 'nothing fits'
    blocks_by_resource: dict  # resource -> blocks that resource alone would allow
    registers_per_block: int  # as allocated (per-warp rounding)
    shared_allocated_per_block: int  # with the reservation and rounding
    detail: str

    def __str__(self) -> str:
        return (f"{self.blocks_per_sm} blocks x {self.threads_per_block} threads = {self.warps_per_sm} warps "
                f"per SM ({self.fraction:.1%} occupancy), limited by {self.limiter}: {self.detail}")


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int = 0,
              limits: SMLimits | None = None, *, opt_in: bool = False) -> Occupancy:
    """Blocks and warps of one kernel resident per SM (the driver's rules, see the module doc).

    ``shared_bytes_per_block`` is static + dynamic shared memory. ``opt_in``: the kernel has raised its
    dynamic shared-memory limit to the GPU's opt-in maximum (``cudaFuncAttributeMaxDynamicSharedMemorySize``
    = ``shared_per_block_optin`` - static, as ``kernels.launch.allow_dynamic_shared`` does); without
    it a block may have ``shared_per_block`` (48 KiB), and one that asks for more cannot launch: 0 blocks,
    limited by ``nothing fits``, with the reason in ``detail``. Raises ``InputError`` for shapes no launch
    on this GPU could have (more shared memory than even an opted-in kernel may have, too many threads).
    """
    lim = limits or sm_limits()
    threads = require_int(threads_per_block, "threads_per_block", 1)
    if threads > lim.max_threads_per_block:
        raise InputError(f"threads_per_block must be <= {lim.max_threads_per_block} (the most a block "
                         f"can have on this GPU), got {threads}")
    regs = require_int(registers_per_thread, "registers_per_thread", 0)
    if regs > lim.max_registers_per_thread:
        raise InputError(f"registers_per_thread must be <= {lim.max_registers_per_thread} (the ISA's "
                         f"limit), got {regs}")
    shared = require_int(shared_bytes_per_block, "shared_bytes_per_block", 0)
    if shared > lim.shared_per_block_optin:
        raise InputError(f"shared_bytes_per_block = {shared:,} is over this GPU's per-block limit of "
                         f"{lim.shared_per_block_optin:,} bytes (static + dynamic): no block can launch")
    if opt_in not in (True, False):
        raise InputError(f"opt_in must be True or False, got {opt_in!r}")
    shared_limit = lim.shared_per_block_optin if opt_in else lim.shared_per_block

    warps = -(-threads // lim.warp_size)
    by = {
        "warps": lim.max_warps_per_sm // warps,
        "threads": lim.max_threads_per_sm // threads,
        "blocks": lim.max_blocks_per_sm,
    }
    # Registers: per warp, rounded to the allocation unit, placed in the sub-partitions.
    per_warp = _round_up(regs * lim.warp_size, lim.register_allocation_unit)
    block_regs = per_warp * warps
    assumed = per_warp * _round_up(warps, lim.sub_partitions)  # the hardware's per-block check
    register_detail = ""
    if per_warp == 0:
        by["registers"] = math.inf
    elif assumed > lim.registers_per_block or block_regs > lim.registers_per_block:
        by["registers"] = 0
        register_detail = (f"a block needs {assumed:,} registers ({warps} warps rounded up to a multiple of "
                           f"{lim.sub_partitions}, x {per_warp} per warp); a block may have "
                           f"{lim.registers_per_block:,}")
    else:
        warps_per_partition = (lim.registers_per_sm // lim.sub_partitions) // per_warp
        by["registers"] = warps_per_partition * lim.sub_partitions // warps
        register_detail = (f"{regs} registers x 32 lanes = {regs * 32} per warp, allocated as {per_warp}; "
                           f"{warps_per_partition} warps fit in each of {lim.sub_partitions} sub-partitions "
                           f"of {lim.registers_per_sm // lim.sub_partitions:,} registers")
    # Shared memory: the reservation and the allocation unit count too.
    allocated = _round_up(shared + lim.reserved_shared_per_block, lim.shared_allocation_unit) if shared or \
        lim.reserved_shared_per_block else 0
    by["shared memory"] = lim.shared_per_sm // allocated if allocated else math.inf
    shared_detail = ""
    if shared > shared_limit:  # only a kernel that did not opt in gets here
        by["shared memory"] = 0
        shared_detail = (f"a block asks for {shared:,} bytes of shared memory (static + dynamic), over the "
                         f"{shared_limit:,} a kernel may have without opting in: it cannot launch (a kernel "
                         f"that raised cudaFuncAttributeMaxDynamicSharedMemorySize may have "
                         f"{lim.shared_per_block_optin:,}: opt_in=True)")

    blocks = int(min(by.values()))
    if blocks == 0:
        limiter = NOTHING_FITS
        detail = shared_detail or register_detail or "no resource admits one block"
    else:
        limiter = next(name for name in LIMITERS if by[name] == blocks)
        detail = {
            "warps": f"{warps} warps per block, {lim.max_warps_per_sm} warp slots per SM",
            "threads": f"{threads} threads per block, {lim.max_threads_per_sm} per SM",
            "blocks": f"at most {lim.max_blocks_per_sm} blocks per SM",
            "registers": register_detail,
            "shared memory": (f"{shared:,} + {lim.reserved_shared_per_block:,} reserved bytes, allocated as "
                              f"{allocated:,}, out of {lim.shared_per_sm:,} per SM"),
        }[limiter]
    warps_per_sm = blocks * warps
    return Occupancy(
        threads_per_block=threads, registers_per_thread=regs, shared_bytes_per_block=shared,
        blocks_per_sm=blocks, warps_per_sm=warps_per_sm, fraction=warps_per_sm / lim.max_warps_per_sm,
        limiter=limiter, blocks_by_resource={k: (v if v != math.inf else None) for k, v in by.items()},
        registers_per_block=block_regs, shared_allocated_per_block=allocated, detail=detail,
    )


def shared_to_limit(threads_per_block: int, blocks_per_sm: int, limits: SMLimits | None = None) -> int:
    """Dynamic shared bytes per block that cap residency at ``blocks_per_sm`` (for a kernel with no
    static shared memory): the largest allocation of which only that many fit on an SM.

    Used to limit occupancy on purpose. The block must be whole warps. Past ``shared_per_block``
    (48 KiB: fewer than 5 blocks per SM) the kernel must opt in (``kernels.launch.allow_dynamic_shared``;
    ``occupancy(..., opt_in=True)``).
    """
    lim = limits or sm_limits()
    threads = require_int(threads_per_block, "threads_per_block", lim.warp_size, lim.max_threads_per_block)
    if threads % lim.warp_size:
        raise InputError(f"threads_per_block must be a multiple of {lim.warp_size} (whole warps), "
                         f"got {threads}")
    blocks = require_int(blocks_per_sm, "blocks_per_sm", 1, lim.max_blocks_per_sm)
    # The largest allocation a with floor(shared_per_sm / a) == blocks, in allocation units.
    allocation = (lim.shared_per_sm // blocks) // lim.shared_allocation_unit * lim.shared_allocation_unit
    dynamic = min(allocation - lim.reserved_shared_per_block, lim.shared_per_block_optin)
    if dynamic < 0:
        raise InputError(f"cannot limit residency to {blocks} blocks per SM with shared memory")
    return dynamic


# ---------------------------------------------------------------------------------------------
# The SM's limits: from the device, or from a recording


def _read_device_limits() -> SMLimits:
    dev = cuda.get_current_device()

    def attribute(*names):  # the binding's enum spelling differs from numba's old one for a few
        for name in names:
            try:
                return int(getattr(dev, name))
            except AttributeError:
                continue
        raise AttributeError(f"the device reports none of {', '.join(names)}")

    major, minor = dev.compute_capability
    unit, max_regs, partitions, shared_unit = ARCHITECTURE.get(major, ARCHITECTURE[9])
    return SMLimits(
        compute_capability=f"{major}.{minor}",
        warp_size=attribute("WARP_SIZE"),
        max_threads_per_block=attribute("MAX_THREADS_PER_BLOCK"),
        max_threads_per_sm=attribute("MAX_THREADS_PER_MULTIPROCESSOR", "MAX_THREADS_PER_MULTI_PROCESSOR"),
        max_blocks_per_sm=attribute("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        registers_per_sm=attribute("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        registers_per_block=attribute("MAX_REGISTERS_PER_BLOCK"),
        max_registers_per_thread=max_regs,
        register_allocation_unit=unit,
        sub_partitions=partitions,
        shared_per_sm=attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        shared_per_block=attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
        shared_per_block_optin=attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        reserved_shared_per_block=attribute("RESERVED_SHARED_MEMORY_PER_BLOCK"),
        shared_allocation_unit=shared_unit,
        source=f"read from the device ({dev.name.decode() if isinstance(dev.name, bytes) else dev.name})",
    )


RECORDING = "littles_law"  # the lesson whose recording keeps the SM limits (evidence facts.sm_limits)
FACT = "sm_limits"


def recorded_limits(gpu: str | None = None) -> SMLimits:
    """The SM limits kept with a GPU's recording of lesson 2."""
    result = results.read_result(RECORDING, gpu=gpu)
    return SMLimits.from_dict(result.evidence.fact(FACT),
                              source=f"recorded on {result.meta['gpu']} ({result.evidence.origin})")


def limits_of(result) -> SMLimits:
    """The SM limits of the GPU a result was measured on: this device's for a live result, those kept
    with the recording's GPU for a recording (never this GPU's limits applied to another's kernels)."""
    return sm_limits() if result.live else recorded_limits(result.gpu)


@lru_cache(maxsize=1)
def sm_limits() -> SMLimits:
    """This GPU's SM limits in GPU mode; on the simulator, the target's it stands in for
    (``GPU_LESSONS_DEVICE``), else the recorded reference GPU's."""
    if not SIMULATED:
        return _read_device_limits()
    from .sim.target import active

    t = active()
    return t.sm_limits() if t is not None else recorded_limits()


# ---------------------------------------------------------------------------------------------
# A kernel's resources, from numba-cuda's report


@dataclass(frozen=True)
class KernelResources:
    name: str
    registers_per_thread: int
    shared_bytes_per_block: int  # static
    local_bytes_per_thread: int  # stack frame and spills: > 0 means local memory (LDL/STL)
    max_threads_per_block: int

    def as_dict(self) -> dict:
        return asdict(self)


def _signature_key(kernel, signature):
    if signature is None:
        if len(kernel.overloads) != 1:
            compiled = ", ".join(str(s) for s in kernel.overloads) or "none"
            raise InputError(f"{kernel.__name__} has {len(kernel.overloads)} compiled signatures "
                             f"({compiled}); pass signature= or call it with arguments first")
        return next(iter(kernel.overloads))
    return tuple(getattr(signature, "args", signature))


def kernel_resources(kernel, *args, signature=None) -> KernelResources:
    """Registers, static shared memory and local memory of a compiled kernel (GPU mode only).

    Give the arguments of a launch (the kernel is compiled for their types) or a signature; with
    neither, the kernel's only compiled signature. On the simulator there is no compiler: read the
    recorded figures (``lessons.littles_law.recorded_resources``) instead.
    """
    if SIMULATED:
        raise InputError("kernel resources come from the GPU compiler: on the simulator, use the "
                         "recorded ones (lessons.littles_law.recorded_resources())")
    if args:
        signature = tuple(typeof(a) for a in args)
        kernel.compile(signature)
    key = _signature_key(kernel, signature)
    overload = kernel.overloads[key]
    return KernelResources(
        name=kernel.__name__, registers_per_thread=int(overload.regs_per_thread),
        shared_bytes_per_block=int(overload.shared_mem_per_block),
        local_bytes_per_thread=int(overload.local_mem_per_thread),
        max_threads_per_block=int(overload.max_threads_per_block),
    )


def kernel_occupancy(kernel, threads_per_block: int, dynamic_shared_bytes: int = 0, *, args=(),
                     signature=None, limits: SMLimits | None = None, opt_in: bool = False) -> Occupancy:
    """occupancy() for a compiled kernel (for ``args``' types, or ``signature``), from its own resource
    report (GPU mode); ``opt_in`` as in occupancy()."""
    res = kernel_resources(kernel, *args, signature=signature)
    return occupancy(threads_per_block, res.registers_per_thread,
                     res.shared_bytes_per_block + dynamic_shared_bytes, limits, opt_in=opt_in)


def driver_blocks_per_sm(kernel, threads_per_block: int, dynamic_shared_bytes: int = 0,
                         signature=None) -> int:
    """The driver's answer (cuOccupancyMaxActiveBlocksPerMultiprocessor), GPU mode only."""
    key = _signature_key(kernel, signature)
    cufunc = kernel.overloads[key]._codelibrary.get_cufunc()
    result = cuda.current_context().get_active_blocks_per_multiprocessor(
        cufunc, threads_per_block, dynamic_shared_bytes)
    return int(result[1] if isinstance(result, tuple) else result)


# ---------------------------------------------------------------------------------------------
# The driver's answers, recorded on a GPU by benchmarks/record_occupancy_driver.py

DRIVER_TABLE = "occupancy_driver"  # data/<gpu>/checks/occupancy_driver.csv and .json


DRIVER_WAYS = ("", "_opt_in")  # column suffixes: the kernel at the plain limit, then opted in


def recorded_driver_table(gpu: str | None = None, root=None):
    """The recorded comparison: one row per (kernel, block, dynamic shared) with the driver's blocks
    per SM and the calculator's at the time, twice: ``driver``, ``calculator``, ``limiter``, ``agree``
    for the kernel as compiled (the plain 48 KiB limit), the same with ``_opt_in`` for the kernel with
    its dynamic limit raised (``occupancy(..., opt_in=True)``). ``.attrs['sm_limits']``: the GPU's limits."""
    folder = results.data_root(root) / (gpu or results.DEFAULT_GPU) / "checks"
    csv_path, json_path = folder / f"{DRIVER_TABLE}.csv", folder / f"{DRIVER_TABLE}.json"
    if not csv_path.exists():
        raise results.MissingRecordingError(f"{results.shown_path(csv_path)}: no driver comparison recorded")
    answers = [f"{name}{way}" for way in DRIVER_WAYS for name in ("driver", "calculator")]
    table = pd.read_csv(csv_path, dtype=dict.fromkeys(answers, str))
    missing = [c for c in answers + [f"agree{way}" for way in DRIVER_WAYS] if c not in table.columns]
    if missing:
        raise results.RecordingError(f"{results.shown_path(csv_path)}: no {', '.join(missing)} column(s) "
                                      "(recorded before the comparison asked both ways: re-record it with "
                                      "benchmarks/occupancy_driver.py)")
    for way in DRIVER_WAYS:
        table[f"agree{way}"] = table[f"agree{way}"].astype(str).str.lower() == "true"
    summary = json.loads(json_path.read_text())
    table.attrs["sm_limits"] = SMLimits.from_dict(summary["sm_limits"], source=results.shown_path(json_path))
    table.attrs["summary"] = {k: v for k, v in summary.items() if k != "sm_limits"}
    return table
