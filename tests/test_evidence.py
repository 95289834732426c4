"""The evidence layout: every lesson's facts, kernels, ncu counters and sources, checked when read
(an error names the file and the field) and when written."""

import json

import pytest

from gpu_lessons.results import Evidence, LessonResult, RecordingError, make_table, read_result, write_result
from gpu_lessons.results.evidence import evidence_from_json

GOOD = {
    "format": 1, "lesson": "gemm", "facts": {"errors": [{"variant": "naive", "relative_error": 1e-6}]},
    "kernels": {"naive": {"registers": 28, "shared_bytes": 0, "local_bytes": 0,
                          "sass": {"counts": {"FFMA": 4}, "summary": {"loop_ffma": 4}, "lines": ["FFMA R1"]}},
                "probe kernel": {"registers": 40, "source": "probe abc1234"}},
    "ncu": {"naive 2048": {"kernel": "gemm_naive", "source": "ncu abc1234", "grid": [64, 256, 1],
                           "block": [32, 8, 1], "metrics": {"smsp__inst_executed.sum": 9677045760}}},
    "sources": {"ncu abc1234": {"date": "2026-12-01", "git_revision": "abc1234"},
                "probe abc1234": {"command": "python probe.py"}},
}


def test_a_good_file_reads_as_evidence():
    evidence = evidence_from_json(GOOD, "gemm.evidence.json", "gemm")
    assert evidence.kernel("naive")["registers"] == 28
    assert evidence.ncu_value("naive 2048", "smsp__inst_executed.sum") == 9677045760
    assert evidence.fact("errors")[0]["variant"] == "naive"
    assert evidence.source("ncu abc1234")["git_revision"] == "abc1234"
    assert list(evidence.ncu_table()["case"]) == ["naive 2048"]


def edited(path: str, value):
    data = json.loads(json.dumps(GOOD))
    *parents, last = path.split("/")
    target = data
    for key in parents:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("format", 2, "format must be 1"),
    ("lesson", "reduce", "lesson is 'reduce', but the file is for lesson 'gemm'"),
    ("extra", 1, "unknown keys ['extra']"),
    ("kernels/naive/registers", -1, "kernels.naive.registers must be a whole number >= 0, got -1"),
    ("kernels/naive/registers", "28", "kernels.naive.registers must be a whole number >= 0, got '28'"),
    ("kernels/naive/colour", "red", "kernels.naive has unknown keys ['colour']"),
    ("kernels/naive/sass/counts", {"FFMA": 1.5}, "kernels.naive.sass.counts must map opcodes"),
    ("kernels/naive/sass/lines", "FFMA", "kernels.naive.sass.lines must be a list of text lines"),
    ("kernels/probe kernel/source", "probe 0000000", "kernels.probe kernel.source names 'probe 0000000'"),
    ("ncu/naive 2048/metrics", {"m": "fast"}, "ncu.naive 2048.metrics.m must be a finite number"),
    ("ncu/naive 2048/source", None, "ncu.naive 2048.source is missing"),
    ("ncu/naive 2048/grid", "(64, 256, 1)", "ncu.naive 2048.grid must be a list of whole numbers"),
    ("facts", [], "facts must be a JSON object"),
    ("sources/run", {}, "sources.run 'run' is the recording's own run"),
])
def test_each_problem_is_one_line_naming_file_and_field(path, value, message):
    with pytest.raises(RecordingError) as error:
        evidence_from_json(edited(path, value), "data/x/gemm.evidence.json", "gemm")
    assert str(error.value).startswith("data/x/gemm.evidence.json: ")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_missing_entries_are_named():
    evidence = evidence_from_json(GOOD, "gemm.evidence.json", "gemm")
    with pytest.raises(RecordingError, match=r"gemm.evidence.json: kernels.nope is missing \(kernels: naive"):
        evidence.kernel("nope")
    with pytest.raises(RecordingError, match=r"facts.occupancy is missing \(facts: errors\)"):
        evidence.fact("occupancy")
    with pytest.raises(RecordingError, match="ncu.naive 2048.metrics has no nope"):
        evidence.ncu_value("naive 2048", "nope")


META = {"gpu": "NVIDIA H200", "slug": "nvidia-h200", "compute_capability": "9.0", "sms": 132,
        "sm_clock_mhz": 1980.0, "memory_clock_mhz": 3201.0, "driver": "13.0", "cuda_runtime": "13.0",
        "numba": "0.68", "numba_cuda": "0.30.4", "python": "3.12", "date": "2026-12-01T00:00:00+00:00",
        "command": "gpu-lessons record gemm", "git_revision": "abc1234", "lesson": "gemm"}
TABLE = make_table([{"lesson": "gemm", "variant": "naive", "provider": "gpu_lessons", "size": 8, "bytes": 48,
                     "flops": 16, "runs": 3, "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0}])


def test_written_evidence_reads_back_and_a_bad_one_is_not_written(tmp_path):
    good = evidence_from_json(GOOD, "memory", "gemm")
    write_result(LessonResult("gemm", TABLE, META, good), root=tmp_path)
    back = read_result("gemm", root=tmp_path)
    assert back.evidence.kernels == GOOD["kernels"] and back.evidence.sources == GOOD["sources"]
    bad = Evidence(kernels={"naive": {"registers": 1.5}})
    with pytest.raises(RecordingError, match="gemm.evidence.json: not written: kernels.naive.registers"):
        write_result(LessonResult("gemm", TABLE, META, bad), root=tmp_path)
    assert read_result("gemm", root=tmp_path).evidence.kernels == GOOD["kernels"]  # the old files stay


def test_a_result_without_evidence_writes_no_evidence_file(tmp_path):
    paths = write_result(LessonResult("gemm", TABLE, META), root=tmp_path)
    assert [p.name for p in paths] == ["gemm.csv", "gemm.meta.json"]
    assert not read_result("gemm", root=tmp_path).evidence


def test_the_committed_recordings_all_read():
    for lesson in ("ceilings", "roofline", "littles_law", "coalescing", "bank_conflicts", "reduce", "gemm"):
        assert len(read_result(lesson).table)


def test_retired_probes_read_with_their_provenance():
    from gpu_lessons.results import MissingRecordingError, read_probe

    assert "command" in read_probe("gemm_probe").meta and len(read_probe("gemm_probe").data)
    assert isinstance(read_probe("bench_spin_check").data, dict)
    with pytest.raises(MissingRecordingError, match="probes/nope.csv: no such probe recording"):
        read_probe("nope")
