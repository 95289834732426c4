"""The provenance every recording carries, built the same way on the simulator as on a GPU."""

import subprocess
from pathlib import Path

import pytest

from gpu_lessons import provenance
from gpu_lessons.results import REQUIRED_META_KEYS, LessonResult, make_table, read_result, write_result

ROOT = Path(provenance.__file__).resolve().parents[1]


def test_measurement_meta_has_every_key_a_recording_needs(monkeypatch):
    monkeypatch.setenv("GPU_LESSONS_GIT_REVISION", "abc1234")
    meta = provenance.measurement_meta("roofline", live=False)
    assert set(REQUIRED_META_KEYS) <= meta.keys()
    assert meta["git_revision"] == "abc1234" and "live" not in meta
    assert provenance.measurement_meta("roofline", live=True)["live"] is True


def test_a_recording_written_with_that_meta_reads_back(tmp_path):
    table = make_table([{
        "lesson": "roofline", "variant": "triad", "provider": "gpu_lessons", "size": 1000,
        "bytes": 16000, "flops": 2000, "runs": 3, "median_ms": 0.5, "min_ms": 0.4, "max_ms": 0.6,
    }])
    meta = provenance.measurement_meta("roofline", live=False)
    write_result(LessonResult(lesson="roofline", table=table, meta=meta), root=tmp_path)
    recording = read_result("roofline", gpu=meta["slug"], root=tmp_path)
    assert recording.table["gbps"].iloc[0] == pytest.approx(16000 / 0.5e-3 / 1e9)


def test_git_revision_names_this_checkout(monkeypatch):
    monkeypatch.delenv("GPU_LESSONS_GIT_REVISION", raising=False)
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (a copy of the tree, as on a lent GPU machine)")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert provenance.git_revision().split("+")[0] == head


def test_git_revision_says_unknown_outside_a_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv("GPU_LESSONS_GIT_REVISION", raising=False)
    monkeypatch.setattr(provenance, "REPOSITORY", tmp_path)
    assert provenance.git_revision() == "unknown"
