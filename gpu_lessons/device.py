"""Facts about the device the lessons run on: the GPU, or the simulator standing in for one."""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.metadata import version

from .mode import choose_mode

WARP_SIZE = 32  # threads per warp on every NVIDIA GPU so far (and on the simulator)

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic Instructions").
FP32_LANES_PER_SM = {(6, 0): 64, (7, 0): 64, (7, 5): 64, (8, 0): 64}
DEFAULT_FP32_LANES_PER_SM = 128  # 6.1, 8.6, 8.9, 9.0, 10.x, 12.x


@dataclass(frozen=True)
class DeviceInfo:
    mode: str
    name: str
    compute_capability: str
    sms: int
    sm_clock_mhz: float  # maximum SM clock the driver reports
    memory_clock_mhz: float
    memory_bus_bits: int
    memory_gib: float
    l2_mib: float
    driver: str
    cuda_runtime: str
    numba: str
    numba_cuda: str
    python: str
    target: str = ""  # on the simulator: the target GPU it stands in for (GPU_LESSONS_DEVICE), if any

    @property
    def slug(self) -> str:
        """Folder name for this GPU's recordings, e.g. 'nvidia-h200'."""
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")

    @property
    def fp32_lanes_per_sm(self) -> int:
        major, minor = (int(p) for p in self.compute_capability.split("."))
        return FP32_LANES_PER_SM.get((major, minor), DEFAULT_FP32_LANES_PER_SM)

    @property
    def peak_fp32_gflops(self) -> float:
        """Theoretical FP32 rate: SMs x FP32 lanes x 2 FLOP per FMA x max SM clock."""
        return self.sms * self.fp32_lanes_per_sm * 2 * self.sm_clock_mhz / 1e3

    @property
    def datasheet_bandwidth_gbps(self) -> float:
        """DRAM bandwidth from the driver's memory clock and bus width (double data rate)."""
        return 2 * self.memory_clock_mhz * 1e6 * self.memory_bus_bits / 8 / 1e9

    def as_dict(self) -> dict:
        facts = asdict(self)
        if not self.target:
            del facts["target"]  # only the simulator standing in for a target has one
        facts["slug"] = self.slug
        if self.mode == "gpu":
            facts["peak_fp32_gflops"] = round(self.peak_fp32_gflops, 1)
            facts["datasheet_bandwidth_gbps"] = round(self.datasheet_bandwidth_gbps, 1)
        return facts


def free_memory_bytes() -> int:
    """Device memory free now: the driver's answer on a GPU; on the simulator, the target's memory (all
    free) or, without a target, the recorded reference GPU's (the H200's 141 GiB: sizes as recorded)."""
    if choose_mode() == "gpu":
        from numba import cuda

        return int(cuda.current_context().get_memory_info()[0])
    from .sim.target import active
    from .targets import target

    return (active() or target("h200")).memory_bytes


def fitting_elements(wanted: int, itemsize: int, buffers: int = 1, share: float = 0.6) -> int:
    """The most elements, a power of two up to ``wanted``, of which ``buffers`` buffers of ``itemsize``
    bytes each take at most ``share`` of the free device memory (the rest is left for the other buffers
    of a run, CuPy's pool and the driver)."""
    budget = share * free_memory_bytes() / (buffers * itemsize)
    elements = wanted
    while elements > 1 and elements > budget:
        elements //= 2
    return elements


def _versions() -> dict:
    return {
        "numba": version("numba"),
        "numba_cuda": version("numba-cuda"),
        "python": platform.python_version(),
    }


@lru_cache(maxsize=1)
def device_info() -> DeviceInfo:
    """Describe the current device (cached: the device does not change within a process)."""
    mode = choose_mode()
    if mode == "sim":
        from .sim.target import active

        t = active()
        if t is not None:
            return DeviceInfo(
                mode="sim", name=t.name, compute_capability=t.compute_capability, sms=t.sms,
                sm_clock_mhz=float(t.sm_clock_mhz), memory_clock_mhz=0.0, memory_bus_bits=0,
                memory_gib=round(t.memory_bytes / 2**30, 1), l2_mib=t.l2_bytes / 2**20,
                driver="none", cuda_runtime="none", target=t.key, **_versions(),
            )
    if mode in ("sim", "compile"):
        return DeviceInfo(
            mode=mode, name="numba-cuda simulator" if mode == "sim" else "no GPU (compile only)",
            compute_capability="0.0", sms=0,
            sm_clock_mhz=0.0, memory_clock_mhz=0.0, memory_bus_bits=0, memory_gib=0.0, l2_mib=0.0,
            driver="none", cuda_runtime="none", **_versions(),
        )
    from numba import cuda  # here, once the mode is known: only GPU mode asks the device

    dev = cuda.get_current_device()
    ctx = cuda.current_context()
    _free, total = ctx.get_memory_info()
    driver = cuda.cudadrv.driver.driver.get_version()
    runtime = cuda.runtime.get_version()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return DeviceInfo(
        mode="gpu",
        name=name,
        compute_capability="{}.{}".format(*dev.compute_capability),
        sms=dev.MULTIPROCESSOR_COUNT,
        sm_clock_mhz=dev.CLOCK_RATE / 1e3,
        memory_clock_mhz=dev.MEMORY_CLOCK_RATE / 1e3,
        memory_bus_bits=dev.GLOBAL_MEMORY_BUS_WIDTH,
        memory_gib=round(total / 2**30, 1),
        l2_mib=dev.L2_CACHE_SIZE / 2**20,
        driver="{}.{}".format(*driver),
        cuda_runtime="{}.{}".format(*runtime),
        **_versions(),
    )


def describe() -> str:
    """One paragraph a notebook's first cell prints: the mode and the device."""
    info = device_info()
    if info.mode == "sim" and info.target:
        return (
            f"Mode: simulator standing in for an {info.name} (GPU_LESSONS_DEVICE={info.target}: compute "
            f"capability {info.compute_capability}, {info.sms} SMs, L2 {info.l2_mib:g} MiB, "
            f"{info.memory_gib:g} GiB; numba-cuda {info.numba_cuda}). Kernels run one Python thread per "
            "CUDA thread and are checked against NumPy; what this GPU cannot run is left out; timings "
            "come from recordings under data/."
        )
    if info.mode == "compile":
        return ("Mode: compile only (numba-cuda's compiler, no GPU): kernels compile to PTX for a target "
                "GPU; nothing runs.")
    if info.mode == "sim":
        return (
            f"Mode: simulator (numba-cuda {info.numba_cuda}, numba {info.numba}). No GPU here: "
            "kernels run one Python thread per CUDA thread and are checked against NumPy; "
            "memory traffic is counted; timings come from recordings under data/."
        )
    return (
        f"Mode: GPU. {info.name}, compute capability {info.compute_capability}, {info.sms} SMs, "
        f"SM clock up to {info.sm_clock_mhz:.0f} MHz, {info.memory_gib} GiB, L2 {info.l2_mib:.0f} MiB; "
        f"driver CUDA {info.driver}, numba-cuda {info.numba_cuda}. "
        f"Theoretical FP32 peak {info.peak_fp32_gflops / 1e3:.1f} TFLOP/s; "
        f"DRAM datasheet estimate {info.datasheet_bandwidth_gbps:.0f} GB/s."
    )
