"""The GPUs the course targets, as data: their published limits, and where each number comes from.

    from gpu_lessons.targets import TARGETS, target
    t4 = target("t4")
    t4.cc, t4.sms, t4.max_threads_per_sm, t4.shared_per_block_optin
    t4.sm_limits()          # the same form as occupancy.sm_limits() reads from a device
    fits("tensor_cores/warp_tile 4 stages", "rtx4090")   # (False, "shared 128 KiB > 99 KiB opt-in on sm_89")
    gated_parts("tensor_cores", "t4")                     # {part the lesson shows: why}, empty if all fit
    fits_device("tensor_cores/warp_tile", occupancy.sm_limits())   # a GPU read live, by its own limits

Facts read live from a device win over this table (``occupancy.sm_limits()``, ``device.device_info()``);
the table is for what cannot be asked (a GPU we do not have) and for the compile checks of every kernel
against every target (``gpu_lessons.matrix``).

Sources, named per field in each target's ``sources``:

* the per-SM and per-block limits (threads, warps, blocks, registers, shared memory, its reservation)
  are the CUDA C++ Programming Guide's table "Technical Specifications per Compute Capability"; they
  depend on the compute capability alone;
* the allocation units (shared memory: 256 bytes on sm_7x, 128 on sm_8x/9x; registers: 256 per warp)
  and the blocks per SM are those of CUDA's occupancy calculator header, ``cuda_occupancy.h``;
* SMs, L2, memory, clock and bandwidth are each GPU's datasheet or architecture whitepaper (boost
  clock; memory in GiB as sold, of which the driver reports a little less as usable);
* the H200's row is what the H200 the recordings come from reported (``data/nvidia-h200``), and equals
  its recorded ``facts.sm_limits`` (``tests/test_targets.py`` holds it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from .checks import InputError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

GUIDE = "CUDA C++ Programming Guide, table 'Technical Specifications per Compute Capability'"
OCCUPANCY_HEADER = "CUDA's occupancy calculator header cuda_occupancy.h"
H200_RECORDING = "the H200's recording (data/nvidia-h200/littles_law.meta.json and .evidence.json)"


@dataclass(frozen=True)
class ComputeCapability:
    """The limits that depend on the compute capability alone (GUIDE, OCCUPANCY_HEADER)."""

    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int  # bytes, the largest carve-out
    shared_per_block_optin: int  # bytes
    reserved_shared_per_block: int  # bytes
    shared_alloc_unit: int  # bytes


CC = {
    (7, 5): ComputeCapability(1024, 16, 64 * KiB, 64 * KiB, 0, 256),
    (8, 0): ComputeCapability(2048, 32, 164 * KiB, 163 * KiB, 1 * KiB, 128),
    (8, 6): ComputeCapability(1536, 16, 100 * KiB, 99 * KiB, 1 * KiB, 128),
    (8, 9): ComputeCapability(1536, 24, 100 * KiB, 99 * KiB, 1 * KiB, 128),
    (9, 0): ComputeCapability(2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 128),
}

# Common to sm_75 .. sm_90 (GUIDE; OCCUPANCY_HEADER for the register allocation unit, sub-partitions).
WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024
SHARED_PER_BLOCK = 48 * KiB  # without opting in
REGISTERS_PER_SM = 64 * 1024
REGISTERS_PER_BLOCK = 64 * 1024
MAX_REGISTERS_PER_THREAD = 255
REGISTER_ALLOCATION_UNIT = 256  # registers, per warp
SUB_PARTITIONS = 4


@dataclass(frozen=True)
class Target:
    key: str  # "t4", "a100", ...
    name: str  # "NVIDIA Tesla T4"
    cc: tuple[int, int]
    sms: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    shared_per_sm: int  # bytes
    shared_per_block: int  # bytes without opt-in (48 KiB)
    shared_per_block_optin: int  # bytes with opt-in
    reserved_shared_per_block: int
    shared_alloc_unit: int  # 256 on sm_7x, 128 on sm_8x/9x (cuda_occupancy.h)
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    l2_bytes: int
    memory_bytes: int
    sm_clock_mhz: int
    memory_bandwidth_gbs: float
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def sm(self) -> str:
        """The compiler's name for the architecture, e.g. 'sm_75'."""
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def compute_capability(self) -> str:
        return f"{self.cc[0]}.{self.cc[1]}"

    def sm_limits(self):
        """This target's limits in ``occupancy.SMLimits`` form (as ``occupancy.sm_limits()`` reads them
        from a device), for the occupancy calculator."""
        from .occupancy import SMLimits  # occupancy imports numba.cuda: only when asked

        return SMLimits(
            compute_capability=self.compute_capability, warp_size=WARP_SIZE,
            max_threads_per_block=self.max_threads_per_block, max_threads_per_sm=self.max_threads_per_sm,
            max_blocks_per_sm=self.max_blocks_per_sm, registers_per_sm=self.registers_per_sm,
            registers_per_block=self.registers_per_block,
            max_registers_per_thread=self.max_registers_per_thread,
            register_allocation_unit=REGISTER_ALLOCATION_UNIT, sub_partitions=SUB_PARTITIONS,
            shared_per_sm=self.shared_per_sm, shared_per_block=self.shared_per_block,
            shared_per_block_optin=self.shared_per_block_optin,
            reserved_shared_per_block=self.reserved_shared_per_block,
            shared_allocation_unit=self.shared_alloc_unit,
            source=f"the published limits of the {self.name} (gpu_lessons.targets)",
        )


def _target(key: str, name: str, cc: tuple[int, int], *, sms: int, l2_mib: int, memory_gib: int,
            clock_mhz: int, bandwidth_gbs: float, datasheet: str) -> Target:
    arch = CC[cc]
    per_cc = f"{GUIDE}, compute capability {cc[0]}.{cc[1]}"
    sources = dict.fromkeys(("max_threads_per_sm", "max_warps_per_sm", "max_threads_per_block",
                             "shared_per_sm", "shared_per_block", "shared_per_block_optin",
                             "reserved_shared_per_block", "registers_per_sm", "registers_per_block",
                             "max_registers_per_thread"), per_cc)
    sources["max_blocks_per_sm"] = f"{per_cc}; {OCCUPANCY_HEADER} (cudaOccMaxBlocksPerMultiprocessor)"
    sources["shared_alloc_unit"] = f"{OCCUPANCY_HEADER} (cudaOccSMemAllocationGranularity)"
    sources.update(dict.fromkeys(("sms", "l2_bytes", "memory_bytes", "sm_clock_mhz",
                                  "memory_bandwidth_gbs"), datasheet))
    return Target(
        key=key, name=name, cc=cc, sms=sms,
        max_threads_per_sm=arch.max_threads_per_sm, max_warps_per_sm=arch.max_threads_per_sm // WARP_SIZE,
        max_blocks_per_sm=arch.max_blocks_per_sm, max_threads_per_block=MAX_THREADS_PER_BLOCK,
        shared_per_sm=arch.shared_per_sm, shared_per_block=SHARED_PER_BLOCK,
        shared_per_block_optin=arch.shared_per_block_optin,
        reserved_shared_per_block=arch.reserved_shared_per_block, shared_alloc_unit=arch.shared_alloc_unit,
        registers_per_sm=REGISTERS_PER_SM, registers_per_block=REGISTERS_PER_BLOCK,
        max_registers_per_thread=MAX_REGISTERS_PER_THREAD,
        l2_bytes=l2_mib * MiB, memory_bytes=memory_gib * GiB, sm_clock_mhz=clock_mhz,
        memory_bandwidth_gbs=bandwidth_gbs, sources=sources,
    )


_ROWS = (
    _target("t4", "NVIDIA Tesla T4", (7, 5), sms=40, l2_mib=4, memory_gib=16, clock_mhz=1590,
            bandwidth_gbs=320.0,
            datasheet="NVIDIA T4 datasheet (2,560 CUDA cores = 40 SMs x 64; 16 GB GDDR6, 320 GB/s; boost "
                      "1,590 MHz) and the Turing architecture whitepaper (TU104: 4 MB L2)"),
    _target("a100", "NVIDIA A100-SXM4-40GB", (8, 0), sms=108, l2_mib=40, memory_gib=40, clock_mhz=1410,
            bandwidth_gbs=1555.0,
            datasheet="NVIDIA A100 Tensor Core GPU architecture whitepaper (108 SMs, 40 MB L2, 40 GB HBM2 "
                      "at 1,555 GB/s, boost 1,410 MHz)"),
    _target("a10", "NVIDIA A10", (8, 6), sms=72, l2_mib=6, memory_gib=24, clock_mhz=1695,
            bandwidth_gbs=600.0,
            datasheet="NVIDIA A10 datasheet (9,216 CUDA cores = 72 SMs x 128; 24 GB GDDR6, 600 GB/s; boost "
                      "1,695 MHz) and the Ampere GA102 whitepaper (6 MB L2)"),
    _target("rtx3060", "NVIDIA GeForce RTX 3060", (8, 6), sms=28, l2_mib=3, memory_gib=12, clock_mhz=1777,
            bandwidth_gbs=360.0,
            datasheet="NVIDIA GeForce RTX 3060 specifications (3,584 CUDA cores = 28 SMs x 128; 12 GB "
                      "GDDR6, 192-bit at 15 Gbps = 360 GB/s; boost 1,777 MHz); GA106: 3 MB L2"),
    _target("l4", "NVIDIA L4", (8, 9), sms=58, l2_mib=48, memory_gib=24, clock_mhz=2040,
            bandwidth_gbs=300.0,
            datasheet="NVIDIA L4 datasheet (7,424 CUDA cores = 58 SMs x 128; 24 GB GDDR6, 300 GB/s; boost "
                      "2,040 MHz) and the Ada Lovelace whitepaper (48 MB L2)"),
    _target("rtx4090", "NVIDIA GeForce RTX 4090", (8, 9), sms=128, l2_mib=72, memory_gib=24,
            clock_mhz=2520, bandwidth_gbs=1008.0,
            datasheet="NVIDIA Ada Lovelace architecture whitepaper, RTX 4090 column (128 SMs, 72 MB L2, "
                      "24 GB GDDR6X at 1,008 GB/s, boost 2,520 MHz)"),
    _target("h100", "NVIDIA H100 SXM5 80GB", (9, 0), sms=132, l2_mib=50, memory_gib=80, clock_mhz=1980,
            bandwidth_gbs=3350.0,
            datasheet="NVIDIA H100 Tensor Core GPU architecture whitepaper and datasheet, SXM5 (132 SMs, "
                      "50 MB L2, 80 GB HBM3 at 3.35 TB/s, boost 1,980 MHz)"),
    _target("h200", "NVIDIA H200", (9, 0), sms=132, l2_mib=60, memory_gib=141, clock_mhz=1980,
            bandwidth_gbs=4800.0,
            datasheet=f"{H200_RECORDING}: 132 SMs, 60 MiB L2, SM clock up to 1,980 MHz; NVIDIA H200 "
                      "datasheet: 141 GB HBM3e at 4.8 TB/s"),
)

TARGETS: dict[str, Target] = {t.key: t for t in _ROWS}


class UnknownTargetError(InputError):
    """A target key that is not in the table."""


def target(key: str) -> Target:
    """The target with this key (``t4``, ``a100``, ...); an unknown key raises one clear error."""
    wanted = str(key).strip().lower()
    if wanted not in TARGETS:
        raise UnknownTargetError(f"unknown target {key!r}; the targets are: {', '.join(TARGETS)}")
    return TARGETS[wanted]


def for_compute_capability(cc: tuple[int, int]) -> list[Target]:
    """The targets of one compute capability (the compile checks depend on it alone)."""
    return [t for t in TARGETS.values() if t.cc == tuple(cc)]


# ---------------------------------------------------------------------------------------------
# The verdicts: every kernel a lesson launches, compiled and assembled for every target
# (gpu_lessons.matrix makes them; data/targets.json keeps them)

MATRIX_FILE = "targets.json"  # under data/ (the checkout's, or the wheel's copy)


@lru_cache(maxsize=1)
def _matrix() -> dict:
    from .course import data_folder

    return json.loads((data_folder() / MATRIX_FILE).read_text())


def _key(which) -> str:
    return which.key if isinstance(which, Target) else target(which).key


def fits(kernel: str, which) -> tuple[bool, str]:
    """Whether a kernel of the matrix (its name there, e.g. ``tensor_cores/warp_tile 4 stages``) fits a
    target (a ``Target`` or its key): ``(True, "")``, or ``(False, why)`` in one line, e.g.
    ``(False, "needs sm_80 (mma.sync .tf32, cp.async)")``."""
    cell = _row(kernel)["targets"][_key(which)]
    return cell["fits"], cell["reason"]


def fits_device(kernel: str, limits) -> tuple[bool, str]:
    """``fits`` for a GPU read live (``occupancy.sm_limits()`` in GPU mode): the matrix's compile for
    its architecture held against its own limits. An architecture the matrix did not compile for
    (not one of the targets') is ``(True, "not checked for sm_XY")``: the compiler will say."""
    from . import matrix
    from .inventory import launches

    row = _row(kernel)
    major, minor = (int(p) for p in limits.compute_capability.split("."))
    architecture = matrix.arch((major, minor))
    if architecture not in row["compiled"]:
        return True, f"not checked for {architecture}"
    launch = next(launch for launch in launches() if launch.name == kernel)
    device = _LiveTarget(limits)
    cell = matrix.judge(row["compiled"][architecture], launch.threads, launch.dynamic_shared(device), limits,
                        architecture)
    return cell["fits"], cell["reason"]


class _LiveTarget:
    """What a launch sized from a GPU's limits asks of a target: its limits."""

    def __init__(self, limits):
        self._limits = limits

    def sm_limits(self):
        return self._limits


def _row(kernel: str) -> dict:
    verdicts = _matrix()["kernels"]
    if kernel not in verdicts:
        raise InputError(f"{kernel!r} is not a kernel of the matrix (gpu-lessons targets lists them)")
    return verdicts[kernel]


def gated_parts(lesson: str, which) -> dict[str, str]:
    """``gates`` by the part names the lesson shows (a 4-byte twin counts as its part)."""
    gated = gates(lesson, which)
    return {name.split("/", 1)[1].removesuffix(" (4-byte twin)"): why for name, why in gated.items()}


def gates(lesson: str, which) -> dict[str, str]:
    """The kernels of one lesson that do not fit a target: kernel name -> why (empty: all fit)."""
    key = _key(which)
    return {name: row["targets"][key]["reason"] for name, row in _matrix()["kernels"].items()
            if row["lesson"] == lesson and not row["targets"][key]["fits"]}
