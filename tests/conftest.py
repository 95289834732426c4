"""The test suite runs in the mode ``gpu_lessons`` picks, the same for every test and notebook.

Mode: ``auto`` (the default) takes the GPU when the driver sees one, else numba-cuda's simulator;
``GPU_LESSONS_MODE=gpu|sim`` forces it (``GPU_LESSONS_MODE=sim python3 -m pytest`` runs the CI suite
on a GPU machine). The choice is made here, once, and pinned in the environment, so that the
notebooks nbval executes (their kernels inherit the environment) and the subprocesses tests start
use the same mode; a test that changes ``GPU_LESSONS_MODE`` or ``NUMBA_ENABLE_CUDASIM`` gets them
restored after it, so it cannot switch the mode of the tests and notebooks that follow.

numba-cuda's performance hints (a small grid's low occupancy, a host array copied implicitly) are
off for the run: they appear on a GPU only, on stderr, and nbval compares stderr too, so a
`# NBVAL_CHECK_OUTPUT` cell that launches a small checked kernel would differ between the modes.

A test that needs one mode says so, and why, in either of two equivalent ways:

    @pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="...why it needs the simulator...")
    @pytest.mark.skipif(gpu_lessons.SIMULATED, reason="...why it needs a GPU...")

    @pytest.mark.simulator_only("...why...")   # skipped on a GPU: "needs the simulator: ..."
    @pytest.mark.gpu_only("...why...")         # skipped without one: "needs a GPU: ..."

    @pytest.mark.needs_sm80             # lesson 7's mma.sync / cp.async: skipped, with the reason, on a
                                        # GPU before sm_80 (or the simulator as one: GPU_LESSONS_DEVICE=t4)

(the markers also fit a whole module: ``pytestmark = pytest.mark.simulator_only("...")``). A skip
reason says what the test checks that the other mode cannot show, never just "simulator". What the
tracer does needs no marker: ``gpu_lessons.sim.trace`` works in GPU mode too, by design. A test that
checks simulator-mode behaviour can often run in both modes through a subprocess with
``GPU_LESSONS_MODE=sim`` (a GPU machine hides its GPU from one with ``CUDA_VISIBLE_DEVICES=""``).

Notebooks: every ``notebooks/*.ipynb`` is collected by nbval and re-executed in the same mode, live on
a GPU; tests/test_notebooks.py checks that the ``# NBVAL_CHECK_OUTPUT`` cells print nothing that
depends on timing or mode, and that a ``# NBVAL_SKIP`` cell says why.
"""

import os

import pytest

for _hint in ("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "NUMBA_CUDA_WARN_ON_IMPLICIT_COPY"):
    os.environ.setdefault(_hint, "0")  # before numba.cuda reads its configuration

import gpu_lessons  # noqa: E402
from gpu_lessons.mode import MODE_VARIABLE  # noqa: E402

MODE_VARIABLES = (MODE_VARIABLE, "NUMBA_ENABLE_CUDASIM")
os.environ[MODE_VARIABLE] = gpu_lessons.MODE  # nbval's kernels and test subprocesses: the same mode
PINNED = {name: os.environ.get(name) for name in MODE_VARIABLES}
MARKERS = {
    "simulator_only": (lambda: not gpu_lessons.SIMULATED, "needs the simulator"),
    "gpu_only": (lambda: gpu_lessons.SIMULATED, "needs a GPU"),
}


def pytest_configure(config):
    for name in MARKERS:
        config.addinivalue_line("markers", f"{name}(reason): run only {name.split('_')[0]} mode; say why")
    config.addinivalue_line("markers", "needs_sm80: lesson 7's mma.sync and cp.async kernels; skipped with "
                                       "the reason on a GPU (or simulated target) before sm_80")


def _sm80_missing() -> str:
    """Why this GPU (or the simulator's target) cannot run mma.sync and cp.async ("" when it can)."""
    from gpu_lessons import gates
    from gpu_lessons.kernels.tensor_cores import MMA_NEEDS

    return gates.missing(gates.Needs(cc=MMA_NEEDS.cc, why="mma.sync .tf32 and cp.async"))


def pytest_report_header(config):
    return f"gpu_lessons: {gpu_lessons.describe()}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name, (skip, phrase) in MARKERS.items():
            marker = item.get_closest_marker(name)
            if marker is None:
                continue
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            if not reason:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs a reason (why)")
            if skip():
                item.add_marker(pytest.mark.skip(reason=f"{phrase}: {reason}"))
        if item.get_closest_marker("needs_sm80") is not None:
            why = _sm80_missing()
            if why:
                item.add_marker(pytest.mark.skip(reason=f"lesson 7's kernels cannot run here: {why}"))


@pytest.fixture(autouse=True)
def _mode_stays_pinned():
    yield
    for name, value in PINNED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
