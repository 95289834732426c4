"""The simulator as each target GPU (``GPU_LESSONS_DEVICE``): what numba and the course see, the sizes
derived from the device's limits, and the gates (what a GPU cannot run is left out with one line)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import gpu_lessons

# isort: split
from gpu_lessons import device, gates, targets
from gpu_lessons.kernels import launch
from gpu_lessons.lessons import littles_law, runner
from gpu_lessons.lessons import tensor_cores as lesson
from gpu_lessons.mode import DEVICE_VARIABLE, ModeError, requested_target
from gpu_lessons.occupancy import sm_limits

pytestmark = pytest.mark.simulator_only("the switch makes the simulator stand in for a target; a GPU "
                                        "reports its own facts")

KEYS = list(targets.TARGETS)
MiB, GiB = 2**20, 2**30

# 256-thread blocks that fill one SM: 2,048 threads on sm_80/sm_90, 1,536 on sm_86/sm_89, 1,024 on sm_75
BLOCKS_OF_256 = {"t4": 4, "a100": 8, "a10": 6, "rtx3060": 6, "l4": 6, "rtx4090": 6, "h100": 8, "h200": 8}
# the L2 chase's footprint: at most a third of the L2, at most 16 MiB
L2_CHASE_MIB = {"t4": 1, "a100": 8, "a10": 2, "rtx3060": 1, "l4": 16, "rtx4090": 16, "h100": 16, "h200": 16}
BIG_TILES = {"warp_tile 4 stages", "warp_tile_64x64 128x256"}  # 128 and 144 KiB of shared memory


@pytest.fixture(params=KEYS)
def as_target(request):
    from gpu_lessons.sim import target

    with target.use(request.param) as t:
        yield t


def test_numba_and_the_course_see_the_target(as_target):
    from numba import cuda

    t = as_target
    dev = cuda.get_current_device()
    assert dev.compute_capability == t.cc and dev.MULTIPROCESSOR_COUNT == t.sms
    assert dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN == t.shared_per_block_optin
    assert dev.MAX_THREADS_PER_MULTIPROCESSOR == t.max_threads_per_sm and dev.L2_CACHE_SIZE == t.l2_bytes
    assert cuda.current_context().get_memory_info().total == t.memory_bytes
    info = device.device_info()
    assert (info.mode, info.target, info.name, info.sms) == ("sim", t.key, t.name, t.sms)
    assert info.compute_capability == t.compute_capability and info.l2_mib * MiB == t.l2_bytes
    assert sm_limits() == t.sm_limits()
    assert f"GPU_LESSONS_DEVICE={t.key}" in gpu_lessons.describe()


def test_sizes_come_from_the_target(as_target):
    t = as_target
    assert launch.blocks_per_sm() * launch.THREADS_PER_BLOCK <= t.max_threads_per_sm  # one wave, not 1.33-2
    assert launch.blocks_per_sm() == BLOCKS_OF_256[t.key]
    assert launch.resident_blocks() == launch.SIMULATOR_MAX_BLOCKS  # the simulator's grids stay tiny
    from gpu_lessons.lessons import reduce

    assert reduce.default_blocks_per_sm() == BLOCKS_OF_256[t.key]  # the progression's grid: one full SM
    assert reduce.default_blocks_per_sm(runner.load(reduce, live=False)) == 8  # the H200's recording
    _dram, (level, elements, nodes, _steps), _l1 = littles_law.chases()
    footprint = nodes * littles_law.CHASE_LINE_BYTES
    assert level == "L2" and footprint == L2_CHASE_MIB[t.key] * MiB and 3 * footprint <= t.l2_bytes
    assert elements * 4 == 4 * footprint  # the buffer stays 4x the footprint
    assert device.free_memory_bytes() == t.memory_bytes
    assert device.fitting_elements(2**30, 4) == 2**30  # every target has room for lesson 3's 4 GiB


def test_buffers_shrink_to_the_free_memory(monkeypatch):
    monkeypatch.setattr(device, "free_memory_bytes", lambda: 6 * GiB)  # a 6 GiB laptop GPU
    assert device.fitting_elements(2**30, 4) == 2**29  # lesson 3's input: 2 GiB, not 4
    assert device.fitting_elements(2**28, 4, buffers=2) == 2**28  # two 1 GiB copy buffers fit
    from gpu_lessons.lessons import coalescing

    assert coalescing.Plan().big == 2**29
    assert coalescing.stride_outputs(256) == coalescing.Plan(big=2**30).stride_outputs(256)  # recordings'


def test_the_gates_on_every_target(as_target):
    t = as_target
    gated = lesson.left_out()
    if t.cc < (8, 0):  # mma.sync .tf32 and cp.async: everything but lesson 6's SIMT kernel
        assert set(gated) == set(lesson.NEEDS) - {lesson.LESSON6}
        assert all("needs sm_80" in why and "this GPU is sm_75" in why for why in gated.values())
    elif t.shared_per_block_optin < 128 * 1024:  # sm_86/sm_89: 99 KiB a block
        assert set(gated) == BIG_TILES
        assert "a block may have 99 KiB on sm_8" in gated["warp_tile 4 stages"]
    else:
        assert gated == {}
    line = gates.line(lesson.NAME, gated)
    assert ("\n" not in line) and (line.startswith("tensor_cores: left out on this GPU: ") or not gated)
    assert [v.name for v in lesson.runnable()] == [v.name for v in lesson.VARIANTS if v.name not in gated]


def test_a_t4_says_what_it_cannot_run_and_runs_the_rest(capsys):
    from gpu_lessons.kernels import tensor_cores as tc
    from gpu_lessons.sim import target

    with target.use("t4"):
        checks = lesson.check()
        said = capsys.readouterr().out.strip().splitlines()
        assert checks.empty and list(checks.columns) == ["check", "passed", "detail"]
        assert len(said) == 1 and said[0].startswith("tensor_cores: left out on this GPU: mma_demo")
        with pytest.raises(gates.NotOnThisGPU, match="mma_global cannot run on this GPU: it needs sm_80"):
            tc.matmul(np.ones((8, 8), np.float32), np.ones((8, 8), np.float32), "mma_global")
        assert lesson.mma_demo(np.ones((16, 8), np.float32), np.ones((8, 8), np.float32)) is None
        assert capsys.readouterr().out.startswith("mma_demo: left out on this GPU: it needs sm_80")


def test_a_section_leaves_out_what_does_not_fit_and_runs_the_rest(capsys):
    from types import SimpleNamespace

    from gpu_lessons.sim import target

    def section(run):
        for variant in lesson.VARIANTS:
            if variant.name in lesson.left_out():
                run.leave_out(variant.name, lesson.left_out()[variant.name])
            else:
                run.rows.append({"variant": variant.name})

    fake = SimpleNamespace(NAME=lesson.NAME, SECTIONS=(runner.Section("gemm", section),),
                           left_out=lesson.left_out)
    with target.use("rtx4090"):
        run = runner.Run(lesson.NAME)
        section(run)
        assert set(run.facts["left_out"]) == BIG_TILES and len(run.rows) == len(lesson.VARIANTS) - 2
        assert runner.left_out(fake) == lesson.left_out()
        gates.say(fake.NAME, runner.left_out(fake))
    assert capsys.readouterr().out.count("\n") == 1


def test_the_switch_is_checked(monkeypatch):
    monkeypatch.setenv(DEVICE_VARIABLE, " RTX4090 ")
    assert requested_target() == "rtx4090"
    monkeypatch.setenv(DEVICE_VARIABLE, "v100")
    with pytest.raises(ModeError, match="DEVICE='v100' is not a target GPU; choose one of: t4, a100"):
        requested_target()
    monkeypatch.setenv(DEVICE_VARIABLE, "")
    assert requested_target() is None


@pytest.mark.parametrize("env, message", [
    ({DEVICE_VARIABLE: "v100"}, "is not a target GPU"),
    ({DEVICE_VARIABLE: "t4", "GPU_LESSONS_MODE": "gpu"}, "asks for the real one: unset one of them"),
])
def test_the_cli_refuses_a_bad_switch_in_one_line(env, message):
    done = subprocess.run([sys.executable, "-m", "gpu_lessons", "list"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_gates_agree_with_the_compilers_matrix():
    """What lesson 7 leaves out on each target (its kernels' needs against the target's limits) is what
    ptxas and the limits say in the kernel x target matrix (data/targets.json, gpu_lessons.matrix)."""
    from gpu_lessons.sim import target

    try:
        targets.gates(lesson.NAME, "t4")
    except FileNotFoundError:
        pytest.skip("no kernel x target matrix in data/ yet ('gpu-lessons targets --write' makes it)")
    for key in KEYS:
        compiled = set(targets.gates(lesson.NAME, key))
        with target.use(key):
            ours = set(lesson.left_out()) - {"cublas tf32"}  # a library call: not in the matrix
        assert all(any(name in label for label in compiled) for name in ours), (key, ours, compiled)
        assert all(any(name in label for name in ours) for label in compiled), (key, ours, compiled)


def test_a_live_roof_is_this_gpus_own(monkeypatch, capsys):
    """On a GPU the roof is its recording's, else its ceilings measured once per process: never the
    H200's recording under another GPU's live results."""
    from types import SimpleNamespace

    from gpu_lessons import lessons

    h200 = lessons.roof(gpu="nvidia-h200")
    measured = []

    def measure(module, show_progress=True):
        measured.append(module.NAME)
        result = runner.load(module, live=False)
        table = result.table.copy()
        table["gbps"] *= 0.25  # a slower GPU
        return SimpleNamespace(table=table, live=True)

    monkeypatch.setattr(lessons, "SIMULATED", False)
    monkeypatch.setattr(runner, "measure", measure)
    monkeypatch.setattr(lessons, "_MEASURED_ROOFS", {})
    monkeypatch.setattr(lessons, "device_info", lambda: SimpleNamespace(slug="nvidia-h200"))
    assert lessons.roof() == h200 and measured == []  # the H200 itself: its recording
    monkeypatch.setattr(lessons, "device_info", lambda: SimpleNamespace(slug="nvidia-geforce-rtx-4090"))
    first, again = lessons.roof(), lessons.roof()
    assert measured == ["ceilings"] and first == again  # measured once, kept
    assert first["bandwidth_gbps"] == pytest.approx(h200["bandwidth_gbps"] * 0.25)
    assert "No ceilings recorded for nvidia-geforce-rtx-4090" in capsys.readouterr().out
    recorded = runner.load(lessons.get("roofline"), live=False)
    assert lessons.roof_of(recorded) == h200  # a recording: its own GPU's roof, whatever GPU is here


def test_list_says_what_each_lesson_leaves_out(capsys):
    from gpu_lessons import cli
    from gpu_lessons.sim import target

    with target.use("rtx4090"):
        assert cli.main(["list"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "left out" in line]
    assert len(said) == 1 and "warp_tile 4 stages" in said[0] and "99 KiB on sm_89" in said[0]
    assert cli.main(["list"]) == 0  # the simulator as shipped: the H200's limits, nothing left out
    assert "left out" not in capsys.readouterr().out
