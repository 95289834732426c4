"""Google Colab: every notebook's first code cell installs the course there and does nothing elsewhere;
the README and the package name one repository (we cannot run Colab here: this is what can be held)."""

import json
import sys
import tomllib
import types
from pathlib import Path

import pytest

import gpu_lessons
from gpu_lessons import colab

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab_cell  # noqa: E402


@pytest.mark.parametrize("path", colab_cell.notebooks(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_notebook_starts_with_the_colab_cell(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert first_code == colab_cell.cell(), (
        f"{path.name}: its first code cell is not the Colab cell: run python3 tools/colab_cell.py")


def test_the_tool_is_idempotent():
    notebook = json.loads(colab_cell.notebooks()[0].read_text(encoding="utf-8"))
    once = colab_cell.with_cell(notebook)
    assert colab_cell.with_cell(once) == once
    assert sum(c.get("id") == colab_cell.CELL_ID for c in once["cells"]) == 1


def test_outside_colab_the_cell_installs_and_prints_nothing(capsys, monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    ran = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: ran.append(a))
    exec(colab.cell_source(), {})
    assert ran == [] and capsys.readouterr().out == ""


def test_in_colab_it_installs_from_the_repository_and_says_what_runs_live(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # not installed yet
    ran = []
    monkeypatch.setattr("subprocess.run", lambda command, **k: ran.append(command))
    exec(colab.cell_source(), {})
    assert ran == [[sys.executable, "-m", "pip", "install", "-q",
                    f"gpu-lessons[cu12] @ git+{colab.REPOSITORY}"]]
    out = capsys.readouterr().out
    assert out.startswith(f"gpu-lessons {gpu_lessons.__version__} installed")
    assert gpu_lessons.describe() in out and out.rstrip().endswith(colab.live_parts()[-1])


def test_a_package_replaced_under_the_session_asks_for_a_restart(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.0.1")
    colab.setup()
    out = capsys.readouterr().out
    assert "Restart session" in out and out.count("\n") == 1


def test_pyproject_and_readme_name_the_one_repository():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"]["Repository"] == colab.REPOSITORY
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in colab_cell.notebooks():
        url = colab.notebook_url(path.relative_to(ROOT).as_posix())
        assert f"]({url})" in readme, f"README: no 'Open in Colab' link for {path.name}"
