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
    summary = out[out.index("Summary: 1 lesson(s)"):]  # the verdicts close the output, one row each
    assert "roofline" in summary and "recorded" in summary and "ok" in summary
    assert len(summary.splitlines()) <= 8


@pytest.mark.simulator_only("without a GPU, run shows the recording; on a GPU it measures first")
def test_run_ceilings_shows_the_roof(tmp_path, capsys, monkeypatch):
    import pandas as pd

    from gpu_lessons.lessons import ceilings

    monkeypatch.setattr(ceilings, "check", lambda: pd.DataFrame(
        {"check": ["stand-in"], "passed": [True], "detail": [""]}))
    status, out, err = on_the_simulator(["run", "ceilings", "--out", str(tmp_path), "--no-progress"], capsys)
    assert status == 0, err
    assert "unknown lesson" not in err and "Summary: 1 lesson(s)" in out and "ceilings" in out


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
    board = format_scoreboard(scoreboard(comparisons()))
    assert readme.count(board) == 1, "regenerate the README scoreboard (once)"
    for line in (line for line in board.splitlines() if line.startswith("Measured on")):
        assert readme.count(line) == 1, f"the README prints this provenance line more than once: {line}"


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


def _command(argv, env: dict, timeout: float = 120):
    """The command in a fresh process, with the mode variables ``env`` sets (and none of this one's)."""
    import os
    import subprocess
    import sys

    ours = ("GPU_LESSONS_MODE", "NUMBA_ENABLE_CUDASIM")
    environment = {k: v for k, v in os.environ.items() if k not in ours}
    return subprocess.run([sys.executable, "-m", "gpu_lessons", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=DATA.parent, env={**environment, **env})


NO_GPU = {"GPU_LESSONS_MODE": "gpu", "CUDA_VISIBLE_DEVICES": ""}  # asks for a GPU it cannot have


@pytest.mark.parametrize("env", [{"GPU_LESSONS_MODE": "bogus"}, NO_GPU])
def test_a_mode_that_cannot_be_had_is_one_line(env):
    """Checked before anything else (numba.cuda is not even imported): the user's setting to fix."""
    done = _command(["run", "roofline"], env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("gpu-lessons: error: GPU_LESSONS_MODE=") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("env, argv", [(NO_GPU, ["--help"]), (NO_GPU, ["run", "--help"]),
                                       (NO_GPU, ["--version"]), ({"GPU_LESSONS_MODE": "bogus"}, ["--help"])])
def test_help_and_version_work_whatever_the_mode_variable_says(env, argv):
    done = _command(argv, env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("gpu-lessons ") or "usage: gpu-lessons" in done.stdout


@pytest.mark.parametrize("env", [{"GPU_LESSONS_MODE": "bogus"}, NO_GPU])
def test_list_needs_no_gpu_whatever_the_mode_variable_says(env):
    """It launches no kernel: it lists, after one line saying what was wrong with the setting."""
    done = _command(["list"], env)
    assert done.returncode == 0 and "notebooks/01_roofline.ipynb" in done.stdout
    assert done.stderr.startswith("gpu-lessons: note: GPU_LESSONS_MODE=") and done.stderr.count("\n") == 1
    assert "goes on in simulator mode" in done.stderr


def test_ctrl_c_is_one_line_and_status_130(tmp_path):
    """SIGINT while a lesson runs (here on the simulator, seconds into its checks): no traceback."""
    import os
    import signal
    import subprocess
    import sys

    environment = {**os.environ, "GPU_LESSONS_MODE": "sim"}
    argv = [sys.executable, "-m", "gpu_lessons", "run", "reduce", "--no-progress", "--out", str(tmp_path)]
    command = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=DATA.parent, env=environment)
    try:
        assert command.stdout.readline().startswith("Mode: ")  # started: the checks run next
        command.send_signal(signal.SIGINT)
        _, err = command.communicate(timeout=60)
    finally:
        command.kill()
    assert command.returncode == 130 and err == "gpu-lessons: interrupted\n", err


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
    capsys.readouterr()
    assert main(["notebooks", str(folder), "--force"]) == 0
    assert mine.read_bytes() == (course.notebooks_folder() / "01_roofline.ipynb").read_bytes()
    assert (folder / "notes.txt").read_text() == "kept"
    assert (folder / "01_roofline.ipynb.bak").read_text() == "my answers"  # the edited copy, kept
    out = capsys.readouterr().out
    assert "replaced 1 edited file(s), each kept first as a backup: 01_roofline.ipynb.bak" in out
    mine.write_text("my second answers")
    assert main(["notebooks", str(folder), "--force"]) == 0
    assert (folder / "01_roofline.ipynb.bak2").read_text() == "my second answers"  # the first backup stays
    assert (folder / "01_roofline.ipynb.bak").read_text() == "my answers"
    assert main(["notebooks", str(folder), "--force"]) == 0
    assert "replaced 0 edited file(s) (none differed" in capsys.readouterr().out
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


def test_ncu_only_adds_counters_to_the_recording_and_leaves_its_timings(tmp_path, monkeypatch, capsys):
    """`record LESSON --ncu-only`: the profile's counters replace the evidence's ncu block; the CSV and
    meta are not rewritten, and the earlier sources other than the ncu run are kept."""
    from gpu_lessons import cli, ncu
    from gpu_lessons import device as device_module

    gpu = "nvidia-h200"
    shutil.copytree(DATA / gpu, tmp_path / gpu, ignore=shutil.ignore_patterns("checks", "probes"))
    csv_before = (tmp_path / gpu / "reduce.csv").read_bytes()
    fresh = {"case one": {"kernel": "k", "source": "ncu", "metrics": {"m": 7}, "grid": [1, 1, 1],
                          "block": [32, 1, 1]}}
    calls = []

    def fake_profile(launcher, metrics, workdir, source="ncu", ncu="ncu"):
        calls.append(launcher)
        return fresh, {"ncu": {"tool": "fake", "date": "2026-12-05T00:00:00+00:00"}}

    class FakeInfo:
        slug = gpu

    monkeypatch.setattr(cli, "_require_gpu", lambda command: None)
    monkeypatch.setattr(ncu, "profile", fake_profile)
    monkeypatch.setattr(gpu_lessons, "device_info", lambda: FakeInfo(), raising=False)
    monkeypatch.setattr(device_module, "device_info", lambda: FakeInfo())
    assert main(["record", "reduce", "--ncu-only", "--data", str(tmp_path),
                 "--partial", str(tmp_path / "work")]) == 0
    assert "ncu counters added" in capsys.readouterr().out
    evidence = json.loads((tmp_path / gpu / "reduce.evidence.json").read_text())
    assert evidence["ncu"] == fresh and evidence["sources"]["ncu"]["tool"] == "fake"
    assert evidence["kernels"]  # the recording's own evidence stays
    assert (tmp_path / gpu / "reduce.csv").read_bytes() == csv_before
    assert calls == [["-m", "gpu_lessons.ncu_launch", "reduce"]]


def test_ncu_case_profiles_some_cases_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    """`record LESSON --ncu-only --ncu-case NAME`: only that case is launched under ncu; the recording's
    other cases keep their counters and sources; an unknown case is one line."""
    from gpu_lessons import cli, ncu
    from gpu_lessons import device as device_module
    from gpu_lessons.lessons import tensor_cores

    gpu = "nvidia-h200"
    (tmp_path / gpu).mkdir()
    for suffix in (".csv", ".meta.json", ".evidence.json"):
        shutil.copy(DATA / gpu / f"tensor_cores{suffix}", tmp_path / gpu)
    before = json.loads((tmp_path / gpu / "tensor_cores.evidence.json").read_text())
    case = tensor_cores.ROOF_NCU_CASES[0]
    calls = []

    def fake_profile(launcher, metrics, workdir, source="ncu", ncu="ncu"):
        calls.append(launcher)
        return ({case: {"kernel": "k", "source": source, "metrics": {"m": 7}}},
                {source: {"tool": "fake"}})

    class FakeInfo:
        slug = gpu

    monkeypatch.setattr(cli, "_require_gpu", lambda command: None)
    monkeypatch.setattr(ncu, "profile", fake_profile)
    monkeypatch.setattr(gpu_lessons, "device_info", lambda: FakeInfo(), raising=False)
    monkeypatch.setattr(device_module, "device_info", lambda: FakeInfo())
    assert main(["record", "tensor_cores", "--ncu-only", "--ncu-case", case, "--data", str(tmp_path),
                 "--partial", str(tmp_path / "work")]) == 0
    assert calls == [["-m", "gpu_lessons.ncu_launch", "tensor_cores", f"--case={case}"]]
    after = json.loads((tmp_path / gpu / "tensor_cores.evidence.json").read_text())
    assert set(after["ncu"]) == set(before["ncu"]) | {case}
    assert all(after["ncu"][name] == entry for name, entry in before["ncu"].items())
    assert set(after["sources"]) == set(before["sources"]) | {after["ncu"][case]["source"]}
    capsys.readouterr()
    assert main(["record", "tensor_cores", "--ncu-only", "--ncu-case", "nope", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no ncu case 'nope'" in err


def test_ncu_only_needs_a_recording_of_this_gpu(tmp_path, monkeypatch, capsys):
    from gpu_lessons import cli
    from gpu_lessons import device as device_module

    class FakeInfo:
        slug = "nvidia-tesla-t4"

    monkeypatch.setattr(cli, "_require_gpu", lambda command: None)
    monkeypatch.setattr(gpu_lessons, "device_info", lambda: FakeInfo(), raising=False)
    monkeypatch.setattr(device_module, "device_info", lambda: FakeInfo())
    assert main(["record", "reduce", "--ncu-only", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no recording on nvidia-tesla-t4" in err


def test_merge_adds_a_sections_rows_to_the_recording_with_their_provenance(tmp_path, monkeypatch, capsys):
    """`record LESSON --section S --merge`: the section's rows join the recording (rows of the same
    variant are replaced), the other rows stay byte for byte, and the meta names the merged run."""
    import pandas as pd

    from gpu_lessons import cli, results
    from gpu_lessons.lessons import runner

    gpu = "nvidia-h200"
    shutil.copytree(DATA / gpu, tmp_path / gpu, ignore=shutil.ignore_patterns("checks", "probes"))
    before = results.read_result("reduce", gpu=gpu, root=tmp_path)
    replaced = before.table["variant"].iloc[0]
    first = before.table[before.table["variant"] == replaced].head(1)
    rows = pd.concat([first.assign(median_ms=1.0, min_ms=1.0, max_ms=1.0),
                      first.assign(variant="two_paths", median_ms=2.0, min_ms=2.0, max_ms=2.0)])
    fresh = results.make_table(rows.drop(columns=["gbps", "gflops"]).to_dict("records"))
    meta = {**before.meta, "date": "2026-12-05T09:00:00+00:00", "git_revision": "abc1234",
            "command": "gpu-lessons record reduce --section s --merge"}
    live = results.LessonResult(lesson="reduce", table=fresh, meta=meta,
                                evidence=results.Evidence(facts={"new fact": 1}), live=True)
    monkeypatch.setattr(cli, "_require_gpu", lambda command: None)
    monkeypatch.setattr(cli, "_run_checks", lambda module: True)
    monkeypatch.setattr(runner, "measure", lambda module, **kwargs: live)
    assert main(["record", "reduce", "--section", "s", "--merge", "--data", str(tmp_path)]) == 0
    after = results.read_result("reduce", gpu=gpu, root=tmp_path)
    others = before.table[before.table["variant"] != replaced]
    assert len(after.table) == len(others) + 2
    assert set(after.table["variant"]) == set(before.table["variant"]) | {"two_paths"}
    assert (after.rows("two_paths")["median_ms"] == 2.0).all()
    assert (after.rows(replaced)["median_ms"] == 1.0).all() and len(after.rows(replaced)) == 1
    assert after.meta["date"] == before.meta["date"]  # the recording's own provenance stays
    assert after.meta["sections"]["s"]["git_revision"] == "abc1234"
    assert after.meta["sections"]["s"]["variants"] == sorted({replaced, "two_paths"})
    assert after.facts["new fact"] == 1 and after.evidence.ncu == before.evidence.ncu


def test_merge_needs_a_section(capsys):
    assert main(["record", "reduce", "--merge"]) == 2
    assert "name them" in capsys.readouterr().err
