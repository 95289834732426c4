"""The kernel x target matrix (data/targets.json) held to the code, the targets' limits and the H200.

Every key is recomputed (a kernel whose code changed since the matrix was made fails here: remake it
with ``gpu-lessons targets --write``), every verdict is recomputed from the recorded compile results
and today's limits, and a sample is compiled and assembled afresh (numba's compiler and ptxas, no GPU:
the ``targets`` extra) and must give what the matrix says.
"""

import csv
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_lessons
import gpu_lessons.kernels
from gpu_lessons import inventory, matrix, targets

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ("roofline/copy_vec4", "reduce/vec4_smem4", "bank_conflicts/shared_read_kernel",
          "littles_law/copy w16 u64", "tensor_cores/mma_global", "tensor_cores/mma_async")  # a second each
# the 4-byte twin of lesson 7's fastest tile: ~30 s of numba's front end, the only compile here that
# reaches the RecursionError tensor_cores.matmul(a, b, "warp_tile_64x64") once ended in (its copies had
# so many branches that numba's recursive control-flow search ran out of stack)
TWIN = "tensor_cores/warp_tile_64x64 (4-byte twin)"


@pytest.fixture(scope="module")
def committed():
    return matrix.read()


def test_every_kernel_of_the_package_is_in_the_inventory():
    module_kernels = set()
    for info in pkgutil.iter_modules(gpu_lessons.kernels.__path__):
        module = importlib.import_module(f"gpu_lessons.kernels.{info.name}")
        for name, value in vars(module).items():
            function = getattr(value, "py_func", None) or getattr(value, "fn", None)
            device = getattr(value, "_device", False) or getattr(value, "targetoptions", {}).get("device")
            if function is not None and hasattr(value, "__getitem__") and not device \
                    and getattr(function, "__module__", "") == module.__name__:
                module_kernels.add(f"{info.name}.{name}")
    labels = {launch.label for launch in inventory.launches()}
    missing = sorted(module_kernels - labels - set(inventory.NOT_LAUNCHED))
    assert not missing, f"kernels no launch of gpu_lessons.inventory names: {missing}"


def test_the_matrix_is_made_from_todays_code(committed):
    problems = matrix.stale(committed)
    assert not problems, ("data/targets.json is stale (gpu-lessons targets --write): "
                          + "; ".join(f"{name}: {why}" for name, why in list(problems.items())[:10]))


def test_lesson_7_needs_sm_80_and_its_big_tiles_need_the_big_shared_memories(committed):
    def cell(kernel, target):
        return committed["kernels"][kernel]["targets"][target]

    assert cell("tensor_cores/mma_async", "t4")["reason"] == "needs sm_80 (mma.sync, TF32, cp.async)"
    assert cell("tensor_cores/mma_global", "t4")["reason"] == "needs sm_80 (mma.sync, TF32)"
    assert cell("tensor_cores/simt cp.async 2 stages", "t4")["reason"] == "needs sm_80 (cp.async)"
    assert cell("tensor_cores/warp_tile_64x64 128x256", "rtx4090")["reason"] == \
        "shared 144 KiB > 99 KiB opt-in on sm_89"
    assert cell("tensor_cores/warp_tile 4 stages", "a10")["reason"] == \
        "shared 128 KiB > 99 KiB opt-in on sm_86"
    for target in ("a100", "h100", "h200"):
        assert all(k["targets"][target]["fits"] for k in committed["kernels"].values()), target
    kernels = committed["kernels"].values()
    assert all(k["targets"]["t4"]["fits"] for k in kernels if k["lesson"] != "tensor_cores")


def test_the_sm90a_column_is_what_the_h200_reported(committed):
    """The H200's driver reported registers and static shared memory of the kernels its GPU-mode tests
    compiled (checks/occupancy_driver.csv): the matrix's sm_90a compile must say the same."""
    recorded = {}
    for row in csv.DictReader(open(ROOT / "data/nvidia-h200/checks/occupancy_driver.csv")):
        signature = re.sub(r"(\w+)\[1d\]", r"\1[::1]", row["signature"][1:-1])
        signature = re.sub(r"(\w+)\[2d\]", r"\1[:, ::1]", signature)
        recorded[(row["kernel"], signature)] = (int(row["registers"]), int(row["static_shared"]))
    compared = 0
    for kernel in committed["kernels"].values():
        module = kernel["label"].split(".")[0]  # generated kernels: the recording names their function
        found = recorded.get((kernel["label"], kernel["signature"])) or \
            recorded.get((f"{module}.{kernel['function']}", kernel["signature"]))
        if found is None:
            continue
        ours = kernel["compiled"]["sm_90a"]
        assert (ours["registers"], ours["static_shared"]) == found, kernel["label"]
        compared += 1
    assert compared >= 60


def test_the_readme_shows_the_matrix(committed):
    assert matrix.summary_markdown(committed) in (ROOT / "README.md").read_text(), (
        "the README's kernel x target table differs: paste "
        "`python -c 'from gpu_lessons import matrix; print(matrix.summary_markdown(matrix.read()))'`")


def test_fits_and_gates_answer_from_the_matrix():
    assert targets.fits("tensor_cores/warp_tile", "h200") == (True, "")
    fits, why = targets.fits("tensor_cores/warp_tile", targets.target("t4"))
    assert not fits and why.startswith("needs sm_80")
    gated = targets.gates("tensor_cores", "rtx4090")
    assert set(gated) == {"tensor_cores/warp_tile 4 stages", "tensor_cores/warp_tile_64x64 128x256"}
    assert targets.gates("reduce", "t4") == {}
    assert targets.gated_parts("tensor_cores", "a10") == {
        "warp_tile 4 stages": "shared 128 KiB > 99 KiB opt-in on sm_86",
        "warp_tile_64x64 128x256": "shared 144 KiB > 99 KiB opt-in on sm_86"}
    assert "mma_async" in targets.gated_parts("tensor_cores", "t4")


def test_a_gpu_read_live_is_judged_by_its_own_limits():
    """An RTX 3080 (sm_86 like the A10, not in the table): the A10's compile, its own limits."""
    from dataclasses import replace

    rtx3080 = replace(targets.target("a10").sm_limits(), source="read from the device")
    assert targets.fits_device("tensor_cores/warp_tile", rtx3080) == (True, "")
    assert targets.fits_device("tensor_cores/warp_tile 4 stages", rtx3080) == \
        (False, "shared 128 KiB > 99 KiB opt-in on sm_86")
    h200 = targets.target("h200").sm_limits()
    assert targets.fits_device("littles_law/copy w16 u4 at 256 threads x 2 blocks/SM", h200) == (True, "")
    blackwell = replace(h200, compute_capability="12.0")
    assert targets.fits_device("tensor_cores/warp_tile", blackwell) == (True, "not checked for sm_120a")


def compiled_afresh(names):
    try:
        matrix.ptxas_path()
    except RuntimeError as error:
        pytest.skip(str(error))
    return matrix.compile_in_processes(list(names), workers=min(2, len(names)))


def test_a_sample_compiles_to_what_the_matrix_says(committed):
    fresh = compiled_afresh(SAMPLE)
    for name in SAMPLE:
        assert fresh[name]["compiled"] == committed["kernels"][name]["compiled"], name


def test_the_64x64_twin_compiles_to_what_the_matrix_says(committed):
    fresh = compiled_afresh([TWIN])
    assert fresh[TWIN]["compiled"] == committed["kernels"][TWIN]["compiled"]
    assert committed["kernels"][TWIN]["compiled"]["sm_90a"]["registers"] == 255


def test_the_command_prints_one_lesson_and_the_reasons(capsys):
    from gpu_lessons import cli

    assert cli.main(["targets", "tensor_cores"]) == 0
    out = capsys.readouterr().out
    assert "tensor_cores/warp_tile 4 stages" in out and "roofline/" not in out
    assert "needs sm_80 (mma.sync, TF32, cp.async)" in out
    assert "shared 144 KiB > 99 KiB opt-in on sm_89" in out
    assert cli.main(["targets", "nope"]) == 2


def test_compile_mode_runs_no_lesson():
    environment = {**os.environ, "GPU_LESSONS_MODE": "compile"}
    done = subprocess.run([sys.executable, "-m", "gpu_lessons", "run", "roofline"], capture_output=True,
                          text=True, env=environment, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("gpu-lessons: error: GPU_LESSONS_MODE=compile")
    assert "Traceback" not in done.stderr
