import json
import shutil
from pathlib import Path

import pytest

import gpu_lessons
from gpu_lessons.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


def test_list_names_lessons_and_notebooks(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "roofline" in out and "notebooks/01_roofline.ipynb" in out and "ceilings" in out


@pytest.mark.parametrize("argv", [["run", "rooflin"], ["record", "nope"]])
def test_unknown_lesson_is_one_line_listing_choices(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "unknown lesson" in err and "roofline" in err


def test_bad_option_exits_non_zero(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--colour"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --colour" in capsys.readouterr().err


def on_the_simulator(argv, capsys):
    """(status, stdout, stderr) of the command in simulator mode: here when the tests run there, else in
    a subprocess with GPU_LESSONS_MODE=sim (this process's numba.cuda is on the GPU for good)."""
    if gpu_lessons.SIMULATED:
        status = main(argv)
        captured = capsys.readouterr()
        return status, captured.out, captured.err
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gpu_lessons", *argv], capture_output=True, text=True,
                          timeout=300, cwd=DATA.parent, env={**os.environ, "GPU_LESSONS_MODE": "sim"})
    return done.returncode, done.stdout, done.stderr


def test_record_and_ceilings_need_a_gpu(capsys):
    for command in ("record", "ceilings"):
        status, _, err = on_the_simulator([command], capsys)
        assert status == 2 and "none is available here" in err, err


def test_record_merge_needs_sections_and_keeps_the_counters(capsys):
    for argv, says in ((["record", "reduce", "--merge"], "name them"),
                       (["record", "reduce", "--section", "divergence", "--merge", "--ncu"],
                        "leave out --ncu")):
        status, _, err = on_the_simulator(argv, capsys)
        assert status == 2 and says in err, err


def test_run_on_simulator_checks_and_plots_the_recording(tmp_path, capsys, monkeypatch):
    if gpu_lessons.SIMULATED:  # the checks themselves: test_kernels_roofline, and test_wheel runs them here
        import pandas as pd

        from gpu_lessons.lessons import roofline

        monkeypatch.setattr(roofline, "check", lambda: pd.DataFrame(
            {"check": ["stand-in"], "passed": [True], "detail": [""]}))
    status, out, err = on_the_simulator(["run", "roofline", "--out", str(tmp_path), "--no-progress"], capsys)
    assert status == 0, err
    assert "correctness checks passed" in out and "NVIDIA H200" in out
    figures = sorted(p.name for p in (tmp_path / "roofline").glob("*.png"))
    assert figures == ["bandwidth_vs_size.png", "roofline.png"]


def test_broken_recording_is_a_clear_error(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "nvidia-h200"
    shutil.copytree(DATA / "nvidia-h200", broken)
    csv = broken / "roofline.csv"
    csv.write_text(csv.read_text().replace("median_ms", "median"))
    monkeypatch.setenv("GPU_LESSONS_DATA", str(tmp_path))
    assert main(["scoreboard"]) == 1  # the ceilings rows still show, the roofline rows say why not
    captured = capsys.readouterr()
    assert "median_ms" in captured.out and "copy_vec4" in captured.out
    from gpu_lessons.lessons import comparisons, roofline

    failed = f"{len(roofline.COMPARISONS)} of {len(comparisons())} comparisons failed"
    assert captured.err.count("\n") == 1 and failed in captured.err
    if gpu_lessons.SIMULATED:
        assert main(["run", "roofline", "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert "roofline.csv" in err and "median_ms" in err


def test_scoreboard_text_and_json(capsys):
    assert main(["scoreboard"]) == 0
    text = capsys.readouterr().out
    assert "copy_vec4" in text and "cupy copy" in text
    assert main(["scoreboard", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    bandwidth = next(r for r in rows if r["title"] == "memory bandwidth (copy)")
    assert bandwidth["ratio"] > 0.9


def test_readme_shows_the_current_scoreboard():
    from gpu_lessons.lessons import comparisons
    from gpu_lessons.scoreboard import format_scoreboard, scoreboard

    readme = (DATA.parent / "README.md").read_text()
    assert format_scoreboard(scoreboard(comparisons())) in readme, "regenerate the README scoreboard"


def test_scoreboard_for_an_unrecorded_gpu_is_one_line_naming_the_recorded_ones(capsys):
    assert main(["scoreboard", "--gpu", "no-such-gpu"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().count("\n") == 0
    assert "'no-such-gpu'" in captured.err and "recorded GPUs: nvidia-h200" in captured.err


def test_a_closed_pipe_ends_the_command_quietly():
    """`gpu-lessons scoreboard --json | head`: the reader is gone before the command writes (every
    command prints through the same handler in main: one command shows it)."""
    argv = ["scoreboard", "--json"]
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # no reader at all: the first write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "gpu_lessons", *argv], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              cwd=DATA.parent, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [str(DATA.parent), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])})
    finally:
        os.close(write)
    assert done.stderr == "", done.stderr
    assert done.returncode == 141  # 128 + SIGPIPE, as a shell reports for `cat` in the same place


def test_scoreboard_without_its_data_folder_is_one_line(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "nonexistent"
    assert main(["scoreboard", "--data", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"{missing}: no such data folder (--data)" in captured.err
    monkeypatch.setenv("GPU_LESSONS_DATA", str(missing))
    assert main(["scoreboard"]) == 2
    assert "no such data folder (GPU_LESSONS_DATA)" in capsys.readouterr().err


def test_scoreboard_with_nothing_recorded_fails(tmp_path, capsys):
    assert main(["scoreboard", "--data", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "not recorded" in captured.out
    assert captured.err == f"gpu-lessons: nothing recorded under {tmp_path}/\n"


def test_run_with_a_file_for_the_figure_folder_is_one_line_before_any_check(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("")
    for out in (afile, afile / "below"):
        assert main(["run", "roofline", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""  # before anything else
        assert captured.err.count("\n") == 1 and f"--out {out}: " in captured.err


def test_record_from_an_installed_package_asks_where_to_write(monkeypatch):
    from gpu_lessons import cli, course

    monkeypatch.delenv("GPU_LESSONS_DATA", raising=False)
    monkeypatch.setattr(course, "in_checkout", lambda: False)
    with pytest.raises(cli.CommandError, match="--data DIR"):
        cli._writable_data(None)
    assert cli._writable_data("mine") == "mine"


@pytest.mark.parametrize("env, argv", [({"GPU_LESSONS_MODE": "bogus"}, ["list"]),
                                       ({"GPU_LESSONS_MODE": "bogus"}, ["--help"]),
                                       ({"GPU_LESSONS_MODE": "gpu", "CUDA_VISIBLE_DEVICES": ""}, ["list"])])
def test_a_mode_that_cannot_be_had_is_one_line(env, argv):
    """Checked before anything else (numba.cuda is not even imported): the user's setting to fix."""
    import os
    import subprocess
    import sys

    ours = ("GPU_LESSONS_MODE", "NUMBA_ENABLE_CUDASIM")
    environment = {k: v for k, v in os.environ.items() if k not in ours}
    done = subprocess.run([sys.executable, "-m", "gpu_lessons", *argv], capture_output=True, text=True,
                          timeout=120, cwd=DATA.parent, env={**environment, **env})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("gpu-lessons: error: GPU_LESSONS_MODE=") and done.stderr.count("\n") == 1


def test_version_and_help_are_plain_text(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"gpu-lessons {gpu_lessons.__version__} (course files: ")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "notebooks" in text and "examples:" in text


def test_list_lines_up_its_columns(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[:8]  # the header, six lessons, the ceilings
    starts = {line.rindex("  ") + 2 for line in table}
    assert len(starts) == 1, table  # every title starts in the same column


def test_notebooks_copy_out_and_refuse_to_overwrite(tmp_path, capsys):
    from gpu_lessons import course

    folder = tmp_path / "course"
    assert main(["notebooks", str(folder)]) == 0
    assert f"open them with: jupyter lab {folder}" in capsys.readouterr().out
    expected = course.notebook_files()
    assert course.notebook_files(folder) == expected
    assert Path("deep_dives/01_roofline.ipynb") in expected and Path("01_roofline.ipynb") in expected
    mine = folder / "01_roofline.ipynb"
    mine.write_text("my answers")
    assert main(["notebooks", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "is not empty" in captured.err and "--force" in captured.err
    assert mine.read_text() == "my answers"
    (folder / "notes.txt").write_text("kept")
    assert main(["notebooks", str(folder), "--force"]) == 0
    assert mine.read_bytes() == (course.notebooks_folder() / "01_roofline.ipynb").read_bytes()
    assert (folder / "notes.txt").read_text() == "kept"
    afile = tmp_path / "afile"
    afile.write_text("")
    assert main(["notebooks", str(afile)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


@pytest.mark.simulator_only("without a GPU, run shows the recording; on a GPU it measures first")
def test_run_without_its_recording_fails_before_the_checks(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPU_LESSONS_DATA", str(tmp_path / "nonexistent"))
    assert main(["run", "roofline", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # at once, not after the minutes of checking
    assert captured.err.count("\n") == 1 and "the data folder does not exist" in captured.err
