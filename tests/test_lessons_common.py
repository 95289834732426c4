"""The provenance every recording carries, built the same way on the simulator as on a GPU."""

import pytest

from gpu_lessons.lessons import common
from gpu_lessons.results import REQUIRED_META_KEYS, make_table, read_recording, write_recording


def test_measurement_meta_has_every_key_a_recording_needs(monkeypatch):
    monkeypatch.setenv("GPU_LESSONS_GIT_REVISION", "abc1234")
    meta = common.measurement_meta("roofline", live=False)
    assert set(REQUIRED_META_KEYS) <= meta.keys()
    assert meta["git_revision"] == "abc1234" and "live" not in meta
    assert common.measurement_meta("roofline", live=True)["live"] is True


def test_a_recording_written_with_that_meta_reads_back(tmp_path):
    table = make_table([{
        "lesson": "roofline", "variant": "triad", "provider": "gpu_lessons", "size": 1000,
        "bytes": 16000, "flops": 2000, "runs": 3, "median_ms": 0.5, "min_ms": 0.4, "max_ms": 0.6,
    }])
    meta = common.measurement_meta("roofline", live=False)
    write_recording(table, meta, "roofline", root=tmp_path)
    recording = read_recording("roofline", gpu=meta["slug"], root=tmp_path)
    assert recording.table["gbps"].iloc[0] == pytest.approx(16000 / 0.5e-3 / 1e9)


def test_git_revision_names_a_commit_here():
    revision = common.git_revision()
    assert revision == "unknown" or len(revision.split("+")[0]) >= 7
