"""The tidy table and the recordings under data/: round trips, choices, and one clear error per bad file."""

from __future__ import annotations

import csv
import json
import math

import pandas as pd
import pytest

from gpu_lessons import results
from gpu_lessons.results import (
    COLUMNS,
    LessonResult,
    MissingRecordingError,
    RecordingError,
    list_recordings,
    make_table,
    provenance,
    read_result,
    write_result,
)

LESSON = "roofline"


def write_recording(table, meta, lesson, root=None):
    """Write a table and meta as a lesson's recording; returns the CSV's path."""
    return write_result(LessonResult(lesson=lesson, table=table, meta=meta), root=root)[0]
GPU = "nvidia-h200"


def record(variant="copy_vec4", provider="gpu_lessons", size=2**20, median_ms=0.01, **extra):
    row = {
        "lesson": LESSON, "variant": variant, "provider": provider, "size": size,
        "bytes": 8 * size, "flops": 0, "runs": 25,
        "median_ms": median_ms, "min_ms": median_ms * 0.9, "max_ms": median_ms * 1.2,
    }
    row.update(extra)
    return row


def sample_records() -> list[dict]:
    return [
        record("copy_scalar", size=2**20, median_ms=0.004),
        record("copy_scalar", size=2**24, median_ms=0.040),
        record("copy_vec4", size=2**20, median_ms=0.003),
        record("copy_vec4", size=2**24, median_ms=0.035),
        record("cupy copy", provider="cupy", size=2**24, median_ms=0.036),
        record("fma", size=2**24, median_ms=0.5, param=4.0, flops=8 * 2**24),
    ]


def sample_meta(slug=GPU, lesson=LESSON, **extra) -> dict:
    meta = {
        "gpu": "NVIDIA H200", "slug": slug, "compute_capability": "9.0", "sms": 132,
        "sm_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0, "driver": "13.0",
        "cuda_runtime": "12.9", "numba": "0.61.2", "numba_cuda": "0.30.4", "python": "3.11.7",
        "date": "2026-11-29T10:00:00+00:00", "command": "gpu-lessons record roofline",
        "git_revision": "abc1234", "lesson": lesson,
    }
    meta.update(extra)
    return meta


@pytest.fixture
def recorded(tmp_path):
    """A good recording in tmp_path; returns (root, csv path, meta path)."""
    csv_path = write_recording(make_table(sample_records()), sample_meta(), LESSON, root=tmp_path)
    return tmp_path, csv_path, csv_path.with_name(f"{LESSON}.meta.json")


# ------------------------------------------------------------------------------ make_table


def test_make_table_has_the_columns_in_order_and_computes_throughput():
    table = make_table(sample_records())
    assert list(table.columns) == list(COLUMNS)
    row = table.iloc[0]
    assert row["gbps"] == pytest.approx(8 * 2**20 / (0.004e-3) / 1e9)
    assert row["gflops"] == 0
    assert math.isnan(row["param"])
    assert table["size"].dtype == "int64" and table["median_ms"].dtype == "float64"
    fma = table[table["variant"] == "fma"].iloc[0]
    assert fma["param"] == 4.0
    assert fma["gflops"] == pytest.approx(8 * 2**24 / 0.5e-3 / 1e9)


def test_make_table_keeps_consistent_given_throughput():
    given = record(gbps=8 * 2**20 / 0.01e-3 / 1e9 * 1.001, gflops=0.0)
    assert make_table([given])["gbps"].iloc[0] == given["gbps"]


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"median_ms": 0.0}, "'median_ms' must be positive"),
        ({"min_ms": -1.0}, "'min_ms' must be positive"),
        ({"median_ms": "fast"}, "column 'median_ms' has a non-numeric value 'fast'"),
        ({"size": 1.5}, "column 'size' must be a whole number"),
        ({"runs": None}, "column 'runs' is empty"),
        ({"provider": "numpy"}, "provider 'numpy' is not one of"),
        ({"gbps": 1.0}, "'gbps' is 1 but bytes / median time gives"),
        ({"min_ms": 0.02}, "times are out of order"),
        ({"variant": " "}, "column 'variant' is empty"),
        ({"median_ms": math.inf}, "must be finite"),
        ({"flops": True}, "column 'flops' has a non-numeric value True"),
    ],
)
def test_make_table_rejects_bad_records(change, problem):
    with pytest.raises(RecordingError) as error:
        make_table([record(), {**record("other"), **change}])
    assert str(error.value).startswith("table: record 1: ")
    assert problem in str(error.value)


def test_make_table_rejects_unknown_and_missing_columns():
    with pytest.raises(RecordingError, match="unknown column 'notes'"):
        make_table([record(notes="warm")])
    incomplete = record()
    del incomplete["runs"]
    with pytest.raises(RecordingError, match="column 'runs' is missing"):
        make_table([incomplete])
    with pytest.raises(RecordingError, match="no records"):
        make_table([])


def test_make_table_rejects_duplicate_measurements():
    with pytest.raises(RecordingError, match="record 1: variant 'copy_vec4' .* appears twice"):
        make_table([record(), record()])


# ----------------------------------------------------------------------------- round trips


def test_round_trip(recorded):
    root, csv_path, meta_path = recorded
    assert csv_path == root / GPU / f"{LESSON}.csv"
    recording = read_result(LESSON, root=root)
    pd.testing.assert_frame_equal(recording.table, make_table(sample_records()), check_exact=True)
    assert recording.meta == sample_meta()
    assert recording.source == str(csv_path)  # outside the repository: the full path
    assert (recording.gpu, recording.lesson) == (GPU, LESSON)
    assert recording.provenance == provenance(sample_meta())


def test_a_row_may_leave_min_and_max_empty_when_the_run_kept_only_the_median(tmp_path):
    rows = [*sample_records(), record("fma_peak", size=2**10, median_ms=0.2, min_ms=None, max_ms=None)]
    write_recording(make_table(rows), sample_meta(), LESSON, root=tmp_path)
    table = read_result(LESSON, root=tmp_path).table.set_index("variant")
    assert table.loc["fma_peak", ["min_ms", "max_ms"]].isna().all()
    assert table.loc["fma_peak", "median_ms"] == 0.2
    with pytest.raises(RecordingError, match="column 'median_ms' is empty"):
        make_table([{**record(), "median_ms": None}])


def test_write_fills_in_the_lesson_and_keeps_extras(tmp_path):
    meta = sample_meta(sm_clock_now_mhz=1755)
    del meta["lesson"]
    write_recording(make_table(sample_records()), meta, LESSON, root=tmp_path)
    assert read_result(LESSON, root=tmp_path).meta["sm_clock_now_mhz"] == 1755


def test_write_checks_before_writing(tmp_path):
    bad = make_table(sample_records())
    bad.loc[0, "median_ms"] = -1.0
    with pytest.raises(RecordingError, match=r"roofline\.csv: not written: row 0: 'median_ms'"):
        write_recording(bad, sample_meta(), LESSON, root=tmp_path)
    meta = sample_meta()
    del meta["driver"]
    with pytest.raises(RecordingError, match=r"roofline\.meta\.json: not written: .*driver"):
        write_recording(make_table(sample_records()), meta, LESSON, root=tmp_path)
    with pytest.raises(RecordingError, match="meta lesson is 'roofline', not 'other'"):
        write_recording(make_table(sample_records()), sample_meta(), "other", root=tmp_path)
    with pytest.raises(RecordingError, match="row 0: lesson is 'roofline'"):
        write_recording(make_table(sample_records()), sample_meta(lesson="other"), "other",
                        root=tmp_path)
    assert not any(tmp_path.rglob("*.*"))


# ---------------------------------------------------------------------------- choosing a GPU


def write_for(root, slug, lesson=LESSON):
    records = [{**r, "lesson": lesson} for r in sample_records()]
    write_recording(make_table(records), sample_meta(slug=slug, lesson=lesson), lesson, root=root)


def test_default_gpu_is_the_h200_when_present(tmp_path):
    write_for(tmp_path, "nvidia-a100-sxm4-80gb")
    write_for(tmp_path, GPU)
    assert read_result(LESSON, root=tmp_path).gpu == GPU
    assert read_result(LESSON, gpu="nvidia-a100-sxm4-80gb", root=tmp_path).gpu != GPU


def test_default_gpu_is_the_only_one(tmp_path):
    write_for(tmp_path, "nvidia-l4")
    assert read_result(LESSON, root=tmp_path).gpu == "nvidia-l4"


def test_default_gpu_ambiguous_lists_the_choices(tmp_path):
    write_for(tmp_path, "nvidia-l4")
    write_for(tmp_path, "nvidia-a100")
    with pytest.raises(RecordingError, match="choose one with gpu=: nvidia-a100, nvidia-l4"):
        read_result(LESSON, root=tmp_path)


def test_data_root_from_environment(tmp_path, monkeypatch):
    write_for(tmp_path, GPU)
    monkeypatch.setenv(results.DATA_VARIABLE, str(tmp_path))
    assert results.data_root() == tmp_path
    assert read_result(LESSON).source == str(tmp_path / GPU / f"{LESSON}.csv")


def test_default_data_root_is_the_repository_data_folder(monkeypatch):
    monkeypatch.delenv(results.DATA_VARIABLE, raising=False)
    assert results.data_root() == results.REPOSITORY_ROOT / "data"
    assert (results.REPOSITORY_ROOT / "pyproject.toml").exists()


# ------------------------------------------------------------------------------ bad files


def edit_csv(path, edit):
    """Rewrite the CSV through `edit(rows)`, rows being lists of cells (header first)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    edit(rows)
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def set_cell(column, value, line=2):
    def edit(rows):
        rows[line - 1][rows[0].index(column)] = value
    return edit


def drop_column(column):
    def edit(rows):
        index = rows[0].index(column)
        for row in rows:
            del row[index]
    return edit


def add_column(name, value):
    def edit(rows):
        rows[0].append(name)
        for row in rows[1:]:
            row.append(value)
    return edit


CSV_PROBLEMS = [
    (drop_column("median_ms"), "column 'median_ms' is missing"),
    (add_column("notes", "warm"), "unknown column 'notes' (expected: lesson, variant,"),
    (set_cell("median_ms", "fast"), "line 2: column 'median_ms' has a non-numeric value 'fast'"),
    (set_cell("bytes", "lots", line=4), "line 4: column 'bytes' has a non-numeric value 'lots'"),
    (set_cell("min_ms", "-0.001"), "line 2: 'min_ms' must be positive"),
    (set_cell("max_ms", "0"), "line 2: 'max_ms' must be positive"),
    (set_cell("median_ms", ""), "line 2: column 'median_ms' is empty"),
    (set_cell("gbps", "nan"), "line 2: column 'gbps' is empty"),
    (set_cell("size", "1.5"), "line 2: column 'size' must be a whole number"),
    (set_cell("lesson", "bandwidth", line=3),
     "line 3: lesson is 'bandwidth', but the file is for lesson 'roofline'"),
    (set_cell("provider", "torch"), "line 2: provider 'torch' is not one of"),
    (set_cell("gbps", "2.1"), "line 2: 'gbps' is 2.1 but bytes / median time gives"),
    (set_cell("variant", "copy_scalar", line=4),
     "line 4: variant 'copy_scalar' at size 1048576, param nan appears twice"),
    (lambda rows: rows[2].extend(["extra", "more"]), "not a readable CSV"),
    (lambda rows: rows.__delitem__(slice(1, None)), "the table has no rows"),
]


@pytest.mark.parametrize("edit, problem", CSV_PROBLEMS, ids=[p for _, p in CSV_PROBLEMS])
def test_bad_csv(recorded, edit, problem):
    root, csv_path, _ = recorded
    edit_csv(csv_path, edit)
    with pytest.raises(RecordingError) as error:
        read_result(LESSON, root=root)
    message = str(error.value)
    assert message.startswith(f"{csv_path}: ")  # outside the repository: the full path
    assert problem in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "roofline.csv: file is empty"),
        (b"\xff\xfe\x00bad", "roofline.csv: not UTF-8 text"),
        (b'lesson,variant\n"unterminated', "roofline.csv: not a readable CSV"),
    ],
)
def test_unreadable_csv(recorded, content, problem):
    root, csv_path, _ = recorded
    csv_path.write_bytes(content)
    with pytest.raises(RecordingError, match=problem.replace(".", r"\.")):
        read_result(LESSON, root=root)


def meta_without(key):
    def edit(meta):
        del meta[key]
        return meta
    return edit


def meta_with(**changes):
    return lambda meta: {**meta, **changes}


META_PROBLEMS = [
    (meta_without("driver"), "meta key missing: driver"),
    (meta_with(slug="nvidia-a100"), "slug is 'nvidia-a100', but the folder is 'nvidia-h200'"),
    (meta_with(lesson="bandwidth"), "lesson is 'bandwidth', but the file is for 'roofline'"),
    (meta_with(sms="many"), "meta 'sms' must be a number"),
    (meta_with(date="last tuesday"), "meta 'date' is not an ISO date"),
    (lambda meta: [meta], "must hold a JSON object, got list"),
]


@pytest.mark.parametrize("edit, problem", META_PROBLEMS, ids=[p for _, p in META_PROBLEMS])
def test_bad_meta(recorded, edit, problem):
    root, _, meta_path = recorded
    meta_path.write_text(json.dumps(edit(json.loads(meta_path.read_text()))))
    with pytest.raises(RecordingError) as error:
        read_result(LESSON, root=root)
    assert str(error.value).startswith(f"{meta_path}: {problem}")


def test_meta_not_json(recorded):
    root, _, meta_path = recorded
    meta_path.write_text("{'gpu': 'H200'}")
    with pytest.raises(RecordingError, match=r"roofline\.meta\.json: not valid JSON \(.* line 1"):
        read_result(LESSON, root=root)


def test_half_a_recording(recorded):
    root, csv_path, meta_path = recorded
    meta_path.unlink()
    with pytest.raises(RecordingError, match=r"roofline\.meta\.json: file is missing") as error:
        read_result(LESSON, root=root)
    assert not isinstance(error.value, MissingRecordingError)  # broken, not merely absent
    meta_path.write_text("{}")
    csv_path.unlink()
    with pytest.raises(RecordingError, match=r"roofline\.csv: file is missing"):
        read_result(LESSON, root=root)


def test_missing_recordings(recorded, tmp_path):
    root, _, _ = recorded
    with pytest.raises(MissingRecordingError, match="bandwidth.csv: no recording of lesson "
                       r"'bandwidth' on this GPU \(recorded lessons: roofline\)"):
        read_result("bandwidth", gpu=GPU, root=root)
    with pytest.raises(MissingRecordingError, match=r"no GPU has a recording of lesson 'bandwidth'"):
        read_result("bandwidth", root=root)
    with pytest.raises(MissingRecordingError, match=r"nvidia-l4: no recordings for GPU 'nvidia-l4' "
                       r"\(recorded GPUs: nvidia-h200\)"):
        read_result(LESSON, gpu="nvidia-l4", root=root)
    with pytest.raises(MissingRecordingError, match="the data folder does not exist"):
        read_result(LESSON, root=tmp_path / "nowhere")


def test_messages_inside_the_repository_are_relative(monkeypatch):
    monkeypatch.delenv(results.DATA_VARIABLE, raising=False)
    assert results.shown_path(results.DEFAULT_DATA_ROOT / GPU / "roofline.csv") == (
        "data/nvidia-h200/roofline.csv"
    )


# ------------------------------------------------------------------------ listing, provenance


def test_list_recordings(recorded):
    root, _, _ = recorded
    write_for(root, "nvidia-l4", lesson="ceilings")
    (root / "nvidia-l4" / "broken.csv").write_text("lesson\n")
    listing = list_recordings(root)
    assert list(listing.columns) == ["gpu", "lesson", "date", "rows", "problem"]
    good = listing[listing["problem"] == ""]
    assert set(zip(good["gpu"], good["lesson"], strict=True)) == {
        (GPU, LESSON), ("nvidia-l4", "ceilings")}
    assert (good["rows"] == len(sample_records())).all()
    broken = listing[listing["lesson"] == "broken"].iloc[0]
    assert "broken.meta.json: file is missing" in broken["problem"]
    assert list_recordings(root / "nowhere").empty


def test_provenance_recorded_and_live():
    assert provenance(sample_meta()) == (
        "NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz), driver CUDA 13.0, "
        "numba-cuda 0.30.4, recorded 2026-11-29"
    )
    assert provenance(sample_meta(live=True)) == (
        "measured live on NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz), driver CUDA 13.0, "
        "numba-cuda 0.30.4"
    )
