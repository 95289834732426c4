"""The one runner every lesson's experiment goes through: sections in order, failures reported
while the rest go on, partial saves, one result carrying table, facts and evidence (runs on the
simulator: the GPU timing is replaced by a fixed one)."""

from types import SimpleNamespace

import pytest

from gpu_lessons import bench, results
from gpu_lessons.lessons import runner
from gpu_lessons.lessons.runner import Section


@pytest.fixture
def fixed_timing(monkeypatch):
    monkeypatch.setattr(bench, "measure", lambda launch, input_sets=1, **_: bench.Timing(2.0, 1.5, 3.0, 25))


def _copy(run):
    run.time("copy", lambda _: None, size=1000, bytes_moved=8000, flops=0)
    run.facts["copied"] = True


def _broken(run):
    run.time("fma", lambda _: None, size=10, bytes_moved=0, flops=20)
    raise AssertionError("fma differs from NumPy")


def _shared(run):
    first = run.shared("buffer", lambda: object())
    assert run.shared("buffer", lambda: object()) is first
    run.time("triad", lambda _: None, size=10, bytes_moved=160, flops=20, param=4)


LESSON = SimpleNamespace(NAME="roofline", SECTIONS=(Section("copy", _copy), Section("broken", _broken),
                                                     Section("shared", _shared)))


def test_a_failing_section_is_reported_and_the_rest_go_on(fixed_timing, capsys):
    result = runner.measure(LESSON, show_progress=False)
    assert list(result.table["variant"]) == ["copy", "fma", "triad"]  # rows made before the failure stay
    assert result.failures == (results.SectionFailure("broken", "AssertionError: fma differs from NumPy"),)
    assert "section 'broken' failed: AssertionError: fma differs from NumPy" in capsys.readouterr().err
    assert result.facts == {"copied": True} and result.live
    assert result.table.loc[0, "gbps"] == pytest.approx(8000 / 2e-3 / 1e9)


def test_sections_can_be_chosen_by_name(fixed_timing):
    result = runner.measure(LESSON, sections=["shared"], show_progress=False)
    assert list(result.table["variant"]) == ["triad"] and not result.failures
    with pytest.raises(results.RecordingError, match="unknown section.*'nope'.*choose from: copy, broken"):
        runner.measure(LESSON, sections=["nope"], show_progress=False)


def test_partial_saves_keep_the_rows_so_far(fixed_timing, tmp_path):
    runner.measure(LESSON, show_progress=False, partial=tmp_path)
    rows = (tmp_path / "roofline.rows.csv").read_text().splitlines()
    assert len(rows) == 4 and rows[1].startswith("roofline,copy,")
    assert '"copied": true' in (tmp_path / "roofline.facts.json").read_text()


def test_a_run_that_measured_nothing_says_why(fixed_timing):
    lesson = SimpleNamespace(NAME="roofline", SECTIONS=(Section("broken", lambda run: 1 / 0),))
    with pytest.raises(results.RecordingError, match="measured nothing.*broken: ZeroDivisionError"):
        runner.measure(lesson, show_progress=False)


def test_a_recorded_result_reads_back_whole(fixed_timing, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_LESSONS_GIT_REVISION", "abc1234")
    live = runner.measure(SimpleNamespace(NAME="roofline", SECTIONS=(Section("copy", _copy),)),
                          show_progress=False)
    live = live.with_evidence(kernels={"copy": {"registers": 8, "shared_bytes": 0, "local_bytes": 0,
                                                "sass": {"counts": {"LDG.E.128": 1}}}})
    results.write_result(runner.recorded(live), root=tmp_path)
    back = runner.load(LESSON, live=False, gpu=live.gpu, root=tmp_path)
    assert not back.live and back.facts == {"copied": True}
    assert back.evidence.kernel("copy")["sass"]["counts"] == {"LDG.E.128": 1}
    assert back.table.equals(live.table) and back.meta["git_revision"] == "abc1234"
