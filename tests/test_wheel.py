"""gpu-lessons as a user installs it: the wheel built from this checkout, run from an empty folder.

The wheel is built once per session the way ``python3 -m build`` builds it for an index (an sdist,
then the wheel from the sdist, so that MANIFEST.in is held too) and installed with ``--target``
beside this interpreter's dependencies; every command then runs from an empty folder with the
installed copy first on the path, so nothing of the checkout can stand in for what the wheel lacks.
Skipped, with the reason, where the ``build`` module is missing, or where setuptools is too old here
and no package index is reachable for an isolated build; CI has both (the dev extra).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gpu_lessons import __version__, course

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = ("No matching distribution found", "NewConnectionError", "Temporary failure in name resolution",
           "Network is unreachable", "Could not fetch URL")


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _backend_is_here() -> bool:
    """setuptools new enough for pyproject.toml's [build-system] in this environment."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("setuptools").split(".")[0]) >= 77
    except (PackageNotFoundError, ValueError):
        return False


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.skip("the 'build' module is missing (python3 -m pip install build; the dev extra has it)")
    out = tmp_path_factory.mktemp("dist")
    # The dev extra brings the build backend: then no isolated environment (and no index) is needed
    isolation = ["--no-isolation"] if _backend_is_here() else []
    done = subprocess.run([sys.executable, "-m", "build", *isolation, "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    if done.returncode != 0 and any(sign in log for sign in OFFLINE):
        pytest.skip("no package index reachable: the isolated build cannot fetch setuptools")
    assert done.returncode == 0, _tail(log)
    [built] = out.glob("*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--target", str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, _tail(done.stdout + done.stderr)
    return target


@pytest.fixture
def gpu_lessons_command(installed, tmp_path):
    """Run the installed console script in an empty folder: (status, stdout, stderr)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in ("GPU_LESSONS_DATA", "PYTHONPATH")}
    environment.update(PYTHONPATH=str(installed), GPU_LESSONS_MODE="sim")  # run: checks, not minutes

    def command(*argv: str) -> tuple[int, str, str]:
        done = subprocess.run([str(installed / "bin" / "gpu-lessons"), *argv], cwd=empty, env=environment,
                              capture_output=True, text=True, timeout=600)
        return done.returncode, done.stdout, done.stderr

    command.cwd = empty
    return command


def _course_files(folder: str) -> set[str]:
    return {p.as_posix() for p in course.notebook_files(ROOT / folder)}


def test_the_wheel_carries_the_package_the_recordings_and_the_notebooks(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in course.FOLDERS:
        shipped = {n.removeprefix(f"gpu_lessons/_course/{folder}/") for n in names
                   if n.startswith(f"gpu_lessons/_course/{folder}/")}
        assert shipped == _course_files(folder), f"the wheel's {folder}/ differs from the checkout's"
    assert "gpu_lessons/cli.py" in names and "gpu_lessons/kernels/gemm.py" in names
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: MIT" in text and f"Version: {__version__}" in text
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_installed_command_finds_its_own_course(gpu_lessons_command, installed):
    status, out, err = gpu_lessons_command("--version")
    assert status == 0, err
    assert out.strip() == f"gpu-lessons {__version__} (course files: {installed / 'gpu_lessons' / '_course'})"

    status, out, err = gpu_lessons_command("list")
    assert status == 0, err
    assert "01_roofline.ipynb" in out and "notebooks/01_roofline.ipynb" not in out
    assert "gpu-lessons notebooks DIR" in out

    status, out, err = gpu_lessons_command("scoreboard", "--json")
    assert status == 0, err
    rows = json.loads(out)["rows"]
    assert rows and {row["status"] for row in rows} == {"ok"}


def test_installed_run_checks_the_kernels_and_draws_the_recording(gpu_lessons_command):
    status, out, err = gpu_lessons_command("run", "roofline", "--no-progress", "--out", "figures")
    assert status == 0, _tail(out + err)
    assert "correctness checks passed" in out and "NVIDIA H200" in out
    assert "gpu_lessons/_course/data/nvidia-h200/roofline.csv" in out
    figures = sorted(p.name for p in (gpu_lessons_command.cwd / "figures" / "roofline").glob("*.png"))
    assert figures == ["bandwidth_vs_size.png", "roofline.png"]


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_installed_notebooks_copy_out_with_their_links(gpu_lessons_command):
    status, out, err = gpu_lessons_command("notebooks", "course")
    assert status == 0, err
    assert "jupyter lab course" in out
    copied = gpu_lessons_command.cwd / "course"
    assert {p.as_posix() for p in course.notebook_files(copied)} == _course_files("notebooks")
    for notebook in copied.rglob("*.ipynb"):  # links between lessons and deep dives still land
        for cell in json.loads(notebook.read_text())["cells"]:
            for link in LINK.findall("".join(cell["source"])) if cell["cell_type"] == "markdown" else ():
                if "://" in link or link.startswith(("#", "mailto:")):
                    continue
                assert (notebook.parent / link.split("#")[0]).resolve().is_relative_to(copied.resolve()), link
                assert (notebook.parent / link.split("#")[0]).exists(), f"{notebook.name}: {link}"
