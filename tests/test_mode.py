"""Mode selection happens at import, so each case runs in a fresh interpreter."""

import os
import subprocess
import sys

import pytest

from gpu_lessons import mode


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    ours = ("GPU_LESSONS_MODE", "NUMBA_ENABLE_CUDASIM")
    environment = {k: v for k, v in os.environ.items() if k not in ours}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          timeout=120)


def test_requested_mode_rejects_unknown_values(monkeypatch):
    monkeypatch.setenv(mode.MODE_VARIABLE, "tpu")
    with pytest.raises(mode.ModeError, match="not a mode.*auto, gpu, sim"):
        mode.requested_mode()


def test_forced_simulator_sets_numba_variable():
    result = run_python("import gpu_lessons, os; print(gpu_lessons.MODE, os.environ['NUMBA_ENABLE_CUDASIM'])",
                        GPU_LESSONS_MODE="sim")
    assert result.stdout.split() == ["sim", "1"], result.stderr


NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # the driver then reports no device: a GPU machine passes for none


def test_auto_without_gpu_picks_simulator():
    result = run_python("import gpu_lessons; print(gpu_lessons.MODE)", **NO_GPU)
    assert result.stdout.strip() == "sim", result.stderr


@pytest.mark.gpu_only("auto mode has a GPU to pick only on a machine with one")
def test_auto_with_a_gpu_picks_it():
    result = run_python("import gpu_lessons; print(gpu_lessons.MODE)")
    assert result.stdout.strip() == "gpu", result.stderr


def test_forcing_gpu_without_one_is_a_clear_error():
    """At the first use of the mode (a notebook's first cell prints describe()); the import itself
    passes, so that the gpu-lessons command, a module of the package, can say it in one line."""
    result = run_python("import gpu_lessons\nprint(gpu_lessons.describe())", GPU_LESSONS_MODE="gpu", **NO_GPU)
    assert result.returncode != 0
    assert "ModeError" in result.stderr and "no CUDA GPU is visible" in result.stderr
    code = "\n".join([  # no module of the package gets to import numba.cuda in a mode nobody chose
        "import sys, gpu_lessons",
        "try:",
        "    from gpu_lessons.kernels import gemm",
        "except gpu_lessons.ModeError as error:",
        "    print('refused:', error, '| numba.cuda imported:', 'numba.cuda' in sys.modules)",
    ])
    result = run_python(code, GPU_LESSONS_MODE="gpu", **NO_GPU)
    assert result.stdout.startswith("refused: GPU_LESSONS_MODE=gpu but no CUDA GPU is visible"), result.stderr
    assert result.stdout.strip().endswith("numba.cuda imported: False")


def test_numba_cuda_imported_first_in_the_other_mode_is_explained():
    code = "import numba.cuda\nimport gpu_lessons\ngpu_lessons.MODE"
    result = run_python(code, NUMBA_ENABLE_CUDASIM="1", GPU_LESSONS_MODE="gpu")
    assert result.returncode != 0
    assert "already imported in 'sim' mode" in result.stderr
    assert "Restart the Python kernel" in result.stderr


def test_numba_cuda_imported_first_in_the_same_mode_is_fine():
    result = run_python("import numba.cuda\nimport gpu_lessons\nprint(gpu_lessons.MODE)",
                        NUMBA_ENABLE_CUDASIM="1")
    assert result.stdout.strip() == "sim", result.stderr


def test_describe_names_the_mode():
    import gpu_lessons

    assert gpu_lessons.describe().startswith("Mode: simulator" if gpu_lessons.SIMULATED else "Mode: GPU")
    facts = gpu_lessons.device_info().as_dict()
    assert {"name", "compute_capability", "sms", "sm_clock_mhz", "numba_cuda"} <= facts.keys()


def test_the_mode_is_decided_once_per_process():
    """A script that sets GPU_LESSONS_MODE after the import (benchmarks/ncu_counters.py's dry run did)
    cannot switch numba-cuda any more; later imports and the tracer keep the first decision."""
    code = "\n".join([
        "import os, numpy as np, gpu_lessons",
        "from gpu_lessons.kernels import coalescing",
        "os.environ['GPU_LESSONS_MODE'] = 'gpu'  # too late: numba.cuda runs the simulator",
        "from gpu_lessons import mode, vector",
        "from gpu_lessons.sim.trace import trace",
        "x, out = np.arange(65, dtype=np.float32), np.zeros(64, np.float32)",
        "counts = trace(coalescing.offset_copy_kernel, 1, 64, x, out, 1)",
        "assert np.array_equal(out, x[1:])",
        "print(gpu_lessons.MODE, mode.choose_mode(), vector.SIMULATED)",
    ])
    result = run_python(code, GPU_LESSONS_MODE="sim")
    assert result.stdout.split() == ["sim", "sim", "True"], result.stderr[-2000:]
