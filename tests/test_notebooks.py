"""Every committed notebook can be re-executed by nbval in either mode and compare equal.

nbval, in the same pytest run, re-executes each notebook: on the simulator in CI, live on a GPU (see
tests/conftest.py). With ``--nbval-lax`` only cells marked ``# NBVAL_CHECK_OUTPUT`` are compared with
their committed outputs, so those must print the same on the simulator and on any GPU at any speed:
nothing measured (a live ``load()`` / ``measure()``, ``bench``), nothing about the device or the mode.
A cell that cannot run in some mode is marked ``# NBVAL_SKIP`` with a comment line saying why. Cells
that print measurements run unchecked: an error still fails them.
"""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.rglob("*.ipynb"))  # lessons and deep_dives/
# calls whose output depends on the mode or the timing (load(live=False) reads a recording: fine)
MODE_DEPENDENT = re.compile(
    r"\.load\((?!\s*live\s*=\s*False)|\bmeasure\(|\bbench\.|\btimed_row\(|\bdescribe\(|\bdevice_info\("
    r"|\binspect_sass\(|\bget_regs_per_thread\(|\bget_(shared|local)_mem_per_(block|thread)\(|\bSIMULATED\b"
)


def code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def markers(cell) -> set[str]:
    lines = (line.strip() for line in cell.source.splitlines())
    return {line.lstrip("#").strip() for line in lines if line.startswith("#")}


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks/*.ipynb found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(NOTEBOOKS_DIR).as_posix())
def test_committed_executed_without_errors(path):
    for number, cell in enumerate(code_cells(path)):
        where = f"{path.name}, code cell {number}"
        assert cell.execution_count is not None or not cell.source.strip(), (
            f"{where} was never run: commit the notebook executed "
            "(jupyter nbconvert --to notebook --execute --inplace)")
        if "NBVAL_RAISES_EXCEPTION" not in markers(cell):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"{where} ends in {errors[0].ename}: {errors[0].evalue}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(NOTEBOOKS_DIR).as_posix())
def test_checked_cells_print_nothing_that_depends_on_mode_or_timing(path):
    for number, cell in enumerate(code_cells(path)):
        if "NBVAL_CHECK_OUTPUT" not in markers(cell):
            continue
        found = MODE_DEPENDENT.search(cell.source)
        assert not found, (
            f"{path.name}, code cell {number} is # NBVAL_CHECK_OUTPUT but calls {found.group(0)!r}: its "
            "output would differ live on a GPU; print only what does not depend on timing or mode, "
            "or drop the marker")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(NOTEBOOKS_DIR).as_posix())
def test_a_skipped_cell_says_why(path):
    for number, cell in enumerate(code_cells(path)):
        found = markers(cell)
        if "NBVAL_SKIP" in found:
            assert found - {"NBVAL_SKIP"}, (
                f"{path.name}, code cell {number} is # NBVAL_SKIP: add a comment line saying why it "
                "cannot run under nbval")
