"""Scoring our best variant against the reference of the same recording."""

from __future__ import annotations

import json
import math

import pytest

from gpu_lessons.results import LessonResult, make_table, read_result, write_result
from gpu_lessons.scoreboard import (
    FAILED,
    NOT_RECORDED,
    Comparison,
    ComparisonError,
    format_scoreboard,
    score,
    scoreboard,
    scoreboard_json,
)

GPU = "nvidia-h200"
LESSON = "ceilings"
MIB = 2**20


def row(variant, size, gbps, provider="gpu_lessons", param=math.nan, gflops=0.0):
    """A measurement whose GB/s (and GFLOP/s) come out exactly as given."""
    median_ms = 1.0
    return {
        "lesson": LESSON, "variant": variant, "provider": provider, "size": size, "param": param,
        "bytes": int(gbps * 1e6 * median_ms), "flops": int(gflops * 1e6 * median_ms), "runs": 25,
        "median_ms": median_ms, "min_ms": median_ms, "max_ms": median_ms,
    }


RECORDS = [
    row("copy_scalar", MIB, 1000), row("copy_scalar", 16 * MIB, 3000), row("copy_scalar", 64 * MIB, 3100),
    row("copy_vec4", MIB, 1200), row("copy_vec4", 16 * MIB, 3600), row("copy_vec4", 64 * MIB, 3900),
    # The reference was not measured at the largest size: the comparison must use 16 MiB.
    row("cupy copy", MIB, 1100, provider="cupy"), row("cupy copy", 16 * MIB, 3200, provider="cupy"),
    row("fma", 4096, 0, param=1.0, gflops=2000), row("fma", 4096, 0, param=64.0, gflops=50000),
    row("fma", 8192, 0, param=64.0, gflops=51000),
    row("cublas sgemm", 8192, 100, provider="cublas", gflops=48000),
]
META = {
    "gpu": "NVIDIA H200", "slug": GPU, "compute_capability": "9.0", "sms": 132,
    "sm_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0, "driver": "13.0", "cuda_runtime": "12.9",
    "numba": "0.61.2", "numba_cuda": "0.30.4", "python": "3.11.7",
    "date": "2026-11-29T10:00:00+00:00", "command": "gpu-lessons record", "git_revision": "abc",
    "lesson": LESSON,
}
COPY = Comparison(title="copy bandwidth", lesson=LESSON, metric="gbps", reference="cupy copy")


@pytest.fixture
def root(tmp_path):
    write_result(LessonResult(lesson=LESSON, table=make_table(RECORDS), meta=META), root=tmp_path)
    return tmp_path


@pytest.fixture
def recording(root):
    return read_result(LESSON, root=root)


def test_best_of_ours_at_the_largest_common_size(recording):
    result = score(recording, COPY)
    assert result["best_variant"] == "copy_vec4"
    assert result["size"] == result["reference_size"] == 16 * MIB
    assert result["best"] == pytest.approx(3600)
    assert result["reference"] == pytest.approx(3200)
    assert result["ratio"] == pytest.approx(3600 / 3200)
    assert (result["unit"], result["reference_variant"], result["gpu"]) == ("GB/s", "cupy copy", GPU)
    assert result["status"] == "ok" and result["param"] is None


def test_ours_limits_the_candidates(recording):
    only_scalar = Comparison("scalar copy", LESSON, "gbps", "cupy copy", ours=["copy_scalar"])
    result = score(recording, only_scalar)
    assert result["best_variant"] == "copy_scalar"
    assert result["ratio"] == pytest.approx(3000 / 3200)


def test_explicit_size(recording):
    at_1mib = Comparison("small copy", LESSON, "gbps", "cupy copy", size=MIB)
    result = score(recording, at_1mib)
    assert (result["size"], result["best"], result["reference"]) == (MIB, 1200, 1100)
    with pytest.raises(ComparisonError, match=r"size 4 was not measured for both .*common sizes"):
        score(recording, Comparison("x", LESSON, "gbps", "cupy copy", size=4))


def test_param_and_a_reference_without_one(recording):
    fma_64 = Comparison("FMA rate", LESSON, "gflops", "cublas sgemm", ours=["fma"], param=64.0)
    result = score(recording, fma_64)
    assert (result["size"], result["param"], result["best"]) == (8192, 64.0, 51000)
    assert result["ratio"] == pytest.approx(51000 / 48000)
    assert result["unit"] == "GFLOP/s"
    fma_1 = Comparison("FMA rate", LESSON, "gflops", "cublas sgemm", ours=["fma"], param=1.0)
    result = score(recording, fma_1)  # fma at k=1 has no size in common with SGEMM: each its own
    assert (result["size"], result["reference_size"], result["best"]) == (4096, 8192, 2000)


def test_mistakes_in_a_comparison_are_named(recording):
    with pytest.raises(ComparisonError, match=r"'copy_wide' are not in the 'ceilings' recording "
                       r"\(variants: 'copy_scalar', 'copy_vec4'"):
        score(recording, Comparison("t", LESSON, "gbps", "cupy copy", ours=["copy_wide"]))
    with pytest.raises(ComparisonError, match="reference 'torch copy' is not in"):
        score(recording, Comparison("t", LESSON, "gbps", "torch copy"))
    with pytest.raises(ComparisonError, match="metric must be one of gbps, gflops"):
        Comparison("t", LESSON, "tflops", "cupy copy")
    with pytest.raises(ComparisonError, match="is about lesson 'roofline'"):
        score(recording, Comparison("t", "roofline", "gbps", "cupy copy"))


def test_scoreboard_rows_and_not_recorded(root):
    comparisons = [
        COPY,
        Comparison("GEMM", "gemm", "gflops", "cublas sgemm", ours=["gemm_tiled"]),
    ]
    board = scoreboard(comparisons, root=root)
    assert list(board["status"]) == ["ok", NOT_RECORDED]
    assert board.loc[0, "ratio"] == pytest.approx(3600 / 3200)
    missing = board.iloc[1]
    assert missing["lesson"] == "gemm" and math.isnan(missing["ratio"])
    assert board.attrs["provenance"] == {GPU: read_result(LESSON, root=root).provenance}


def test_scoreboard_without_any_data(tmp_path):
    board = scoreboard([COPY], root=tmp_path / "nowhere")
    assert list(board["status"]) == [NOT_RECORDED]


def test_format_scoreboard(root):
    board = scoreboard([COPY, Comparison("GEMM", "gemm", "gflops", "cublas sgemm")], root=root)
    text = format_scoreboard(board)
    lines = text.splitlines()
    assert lines[0].startswith("| Lesson") and set(lines[1]) <= {"|", "-", ":", " "}
    assert "copy_vec4: 3,600 GB/s" in lines[2] and "cupy copy: 3,200 GB/s" in lines[2]
    assert "1.12x" in lines[2] and "16,777,216" in lines[2]
    assert NOT_RECORDED in lines[3]
    assert len({len(line) for line in lines[:4]}) == 1  # columns line up as plain text too
    assert text.endswith("Measured on NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz), "
                         "driver CUDA 13.0, numba-cuda 0.30.4, recorded 2026-11-29.")


def test_scoreboard_json(root):
    board = scoreboard([COPY, Comparison("GEMM", "gemm", "gflops", "cublas sgemm")], root=root)
    data = json.loads(scoreboard_json(board))
    first, missing = data["rows"]
    assert first["best_variant"] == "copy_vec4" and first["size"] == 16 * MIB
    assert missing["ratio"] is None and missing["size"] is None
    assert missing["status"] == NOT_RECORDED
    assert GPU in data["provenance"]


def test_scoreboard_reports_broken_recordings_and_bad_comparisons_as_rows(root):
    (root / GPU / "gemm.csv").write_text("lesson,variant\n")
    (root / GPU / "gemm.meta.json").write_text("{}")
    comparisons = [
        COPY,
        Comparison("GEMM", "gemm", "gflops", "cublas sgemm"),
        Comparison("typo", LESSON, "gbps", "cupy copy", ours=["copy_vec8"]),
    ]
    board = scoreboard(comparisons, root=root)
    assert list(board["status"]) == ["ok", FAILED, FAILED]
    assert board.loc[0, "problem"] == ""
    assert "gemm.meta.json: meta keys missing" in board.loc[1, "problem"]
    assert "'copy_vec8' are not in the 'ceilings' recording" in board.loc[2, "problem"]
    text = format_scoreboard(board)
    assert "Problems:" in text and "- " + board.loc[2, "problem"] in text


def test_theoretical_reference_reads_the_meta(tmp_path):
    from gpu_lessons.lessons import ceilings
    from gpu_lessons.results import read_result
    from gpu_lessons.scoreboard import Comparison, ComparisonError, score

    recording = read_result("ceilings")
    theory = next(c for c in ceilings.COMPARISONS if c.reference.startswith("theory:"))
    row = score(recording, theory)
    assert row["reference"] == recording.meta["peak_fp32_gflops"]
    assert row["reference_variant"] == "theoretical FP32 peak"
    assert row["ratio"] == pytest.approx(row["best"] / row["reference"])
    missing = Comparison(title="x", lesson="ceilings", metric="gflops", ours=["fma_peak"],
                         reference="theory:no_such_key")
    with pytest.raises(ComparisonError, match="no positive 'no_such_key'"):
        score(recording, missing)


def test_each_recording_date_is_captioned_with_its_lessons():
    import pandas as pd

    from gpu_lessons.scoreboard import SCOREBOARD_COLUMNS

    board = pd.DataFrame(columns=SCOREBOARD_COLUMNS)
    board.attrs["captions"] = {"GPU A, recorded day 1": ["ceilings"], "GPU A, recorded day 2": ["reduce"]}
    text = format_scoreboard(board)
    assert "Measured on GPU A, recorded day 1 (ceilings)." in text
    assert "Measured on GPU A, recorded day 2 (reduce)." in text
