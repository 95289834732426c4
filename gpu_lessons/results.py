"""Measurements as a tidy table, and the reference recordings under ``data/`` that lessons read.

One row per (variant, size, param) measurement, columns ``COLUMNS``. A recording is one lesson's
table measured on one GPU, stored as ``data/<gpu-slug>/<lesson>.csv`` beside
``data/<gpu-slug>/<lesson>.meta.json`` (the GPU, the software, the date and the command).

Everything read from disk is checked: a bad file raises ``RecordingError`` with one line that names
the file and the problem, never a pandas traceback, because the people reading it are learners.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = (
    "lesson", "variant", "provider", "size", "param", "bytes", "flops", "runs",
    "median_ms", "min_ms", "max_ms", "gbps", "gflops",
)
TEXT_COLUMNS = ("lesson", "variant", "provider")
INTEGER_COLUMNS = ("size", "bytes", "flops", "runs")
FLOAT_COLUMNS = ("param", "median_ms", "min_ms", "max_ms", "gbps", "gflops")
MAY_BE_EMPTY = ("param",)  # NaN: the variant has no parameter
DERIVED = ("gbps", "gflops")  # make_table computes them when a record leaves them out
POSITIVE = ("size", "runs", "median_ms", "min_ms", "max_ms")
NON_NEGATIVE = ("bytes", "flops", "gbps", "gflops")  # a pure-FMA kernel moves no bytes
PROVIDERS = ("gpu_lessons", "cupy", "cublas", "theory")
MEASUREMENT_KEY = ["variant", "size", "param"]
# Stated figures may be rounded; beyond this they contradict bytes / median (a units slip).
THROUGHPUT_TOLERANCE = 0.01

REQUIRED_META_KEYS = (
    "gpu", "slug", "compute_capability", "sms", "sm_clock_mhz", "memory_clock_mhz", "driver",
    "cuda_runtime", "numba", "numba_cuda", "python", "date", "command", "git_revision", "lesson",
)
NUMERIC_META_KEYS = ("sms", "sm_clock_mhz", "memory_clock_mhz")

DATA_VARIABLE = "GPU_LESSONS_DATA"
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_ROOT = REPOSITORY_ROOT / "data"
DEFAULT_GPU = "nvidia-h200"
META_SUFFIX = ".meta.json"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # safe as a file or folder name
MISSING_TEXT = {"", "nan", "na", "n/a", "none", "null"}


class RecordingError(ValueError):
    """A measurement table or recording that cannot be used; the message names file and problem."""


class MissingRecordingError(RecordingError):
    """The recording (or its GPU folder, or the data folder) does not exist."""


@dataclass(frozen=True, eq=False)
class Recording:
    table: pd.DataFrame
    meta: dict
    csv_path: Path
    meta_path: Path

    @property
    def gpu(self) -> str:
        return self.meta["slug"]

    @property
    def lesson(self) -> str:
        return self.meta["lesson"]

    @property
    def provenance(self) -> str:
        return provenance(self.meta)


# ---------------------------------------------------------------------------------------------
# The table


def make_table(records: list[dict]) -> pd.DataFrame:
    """Build a checked measurement table; gbps and gflops are computed when a record lacks them."""
    records = list(records)
    if not records:
        raise RecordingError("table: no records")
    frame = pd.DataFrame.from_records(records)
    for name in MAY_BE_EMPTY + DERIVED:
        if name not in frame.columns:
            frame[name] = np.nan
    return _checked_table(
        frame, "table", lambda i: f"record {i}", may_be_empty=MAY_BE_EMPTY + DERIVED
    )


def _checked_table(
    frame: pd.DataFrame,
    source: str,
    where: Callable[[int], str],
    may_be_empty: tuple[str, ...] = MAY_BE_EMPTY,
) -> pd.DataFrame:
    """Parse and check every column; `where(i)` names row i in messages (a CSV line, a record)."""
    _check_column_names(list(frame.columns), source)
    if frame.empty:
        raise RecordingError(f"{source}: the table has no rows")
    table = pd.DataFrame(
        {name: _parsed_column(frame[name], name, source, where, name in may_be_empty)
         for name in COLUMNS}
    )
    _fill_throughput(table)
    _check_values(table, source, where)
    return table


def _check_column_names(present: list, source: str) -> None:
    missing = [name for name in COLUMNS if name not in present]
    if missing:
        raise RecordingError(f"{source}: {_columns_phrase(missing, verb=True)} missing")
    unknown = [str(name) for name in present if name not in COLUMNS]
    if unknown:
        raise RecordingError(
            f"{source}: unknown {_columns_phrase(unknown)} (expected: {', '.join(COLUMNS)})"
        )


def _columns_phrase(names: list[str], verb: bool = False) -> str:
    """Names columns for a message: column 'a', or columns 'a', 'b'; then is/are when `verb`."""
    quoted = ", ".join(f"'{name}'" for name in names)
    phrase = f"column {quoted}" if len(names) == 1 else f"columns {quoted}"
    return phrase + (" is" if len(names) == 1 else " are") * verb


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in MISSING_TEXT
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    return value is pd.NA or value is pd.NaT


def _as_number(value) -> int | float | None:
    """The number a cell holds (int when written as one), or None when it is not a number."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        for parse in (int, float):
            try:
                return parse(text)
            except ValueError:
                pass
    return None


def _parsed_column(
    values: pd.Series, name: str, source: str, where: Callable[[int], str], may_be_empty: bool
) -> pd.Series:
    parsed = []
    for position, value in enumerate(values):
        if _is_missing(value):
            if not may_be_empty:
                raise RecordingError(f"{source}: {where(position)}: column '{name}' is empty")
            parsed.append(math.nan)
        else:
            parsed.append(_parsed_cell(value, name, f"{source}: {where(position)}"))
    if name in TEXT_COLUMNS:
        return pd.Series(parsed, dtype=object)
    return pd.Series(parsed, dtype="int64" if name in INTEGER_COLUMNS else "float64")


def _parsed_cell(value, name: str, place: str):
    if name in TEXT_COLUMNS:
        if not isinstance(value, str):
            raise RecordingError(f"{place}: column '{name}' must be text, got {value!r}")
        return value.strip()
    number = _as_number(value)
    if number is None:
        raise RecordingError(f"{place}: column '{name}' has a non-numeric value {value!r}")
    if not math.isfinite(number):
        raise RecordingError(f"{place}: column '{name}' must be finite, got {value!r}")
    if name in INTEGER_COLUMNS:
        if not float(number).is_integer():
            raise RecordingError(f"{place}: column '{name}' must be a whole number, got {value!r}")
        if abs(number) >= 2**63:
            raise RecordingError(f"{place}: column '{name}' is too large: {value!r}")
        return int(number)
    return float(number)


def _throughput(amount: pd.Series, median_ms: pd.Series) -> pd.Series:
    """Units per second / 1e9 (GB/s from bytes, GFLOP/s from FLOPs) at the median time."""
    return amount / (median_ms / 1e3) / 1e9


def _fill_throughput(table: pd.DataFrame) -> None:
    for rate, amount in (("gbps", "bytes"), ("gflops", "flops")):
        table[rate] = table[rate].fillna(_throughput(table[amount], table["median_ms"]))


def _first_bad(mask: pd.Series) -> int | None:
    positions = np.flatnonzero(mask.to_numpy())
    return int(positions[0]) if positions.size else None


def _check_values(table: pd.DataFrame, source: str, where: Callable[[int], str]) -> None:
    def fail_at(mask: pd.Series, problem: Callable[[pd.Series], str]) -> None:
        position = _first_bad(mask)
        if position is not None:
            raise RecordingError(f"{source}: {where(position)}: {problem(table.iloc[position])}")

    for name in TEXT_COLUMNS:
        fail_at(table[name] == "", lambda row, name=name: f"column '{name}' is empty")
    fail_at(
        ~table["provider"].isin(PROVIDERS),
        lambda row: f"provider {row['provider']!r} is not one of: {', '.join(PROVIDERS)}",
    )
    for name in POSITIVE:
        fail_at(table[name] <= 0, lambda row, name=name: f"'{name}' must be positive: {row[name]}")
    for name in NON_NEGATIVE:
        fail_at(table[name] < 0, lambda row, name=name: f"'{name}' is negative: {row[name]}")
    fail_at(
        (table["min_ms"] > table["median_ms"]) | (table["median_ms"] > table["max_ms"]),
        lambda row: "times are out of order: min_ms <= median_ms <= max_ms is false "
        f"({row['min_ms']}, {row['median_ms']}, {row['max_ms']})",
    )
    for rate, amount, unit in (("gbps", "bytes", "GB/s"), ("gflops", "flops", "GFLOP/s")):
        expected = _throughput(table[amount], table["median_ms"])
        fail_at(
            (table[rate] - expected).abs() > THROUGHPUT_TOLERANCE * expected + 1e-9,
            lambda row, rate=rate, amount=amount, unit=unit: (
                f"'{rate}' is {row[rate]:g} but {amount} / median time gives "
                f"{row[amount] / row['median_ms'] / 1e6:g} {unit}"
            ),
        )
    fail_at(
        table.duplicated(MEASUREMENT_KEY),
        lambda row: f"variant {row['variant']!r} at size {row['size']}, param {row['param']} "
        "appears twice (one row per variant, size and param)",
    )


# ---------------------------------------------------------------------------------------------
# Where recordings live


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: `root` if given, else $GPU_LESSONS_DATA, else data/ in the repository."""
    if root is not None:
        return Path(root)
    from_environment = os.environ.get(DATA_VARIABLE, "").strip()
    return Path(from_environment).expanduser() if from_environment else DEFAULT_DATA_ROOT


def shown_path(path: Path) -> str:
    """A path for messages: relative to the repository when inside it (data/...), else as is."""
    try:
        return Path(path).resolve().relative_to(REPOSITORY_ROOT).as_posix()
    except ValueError:
        return str(path)


def recording_paths(root: Path, gpu: str, lesson: str) -> tuple[Path, Path]:
    folder = Path(root) / gpu
    return folder / f"{lesson}.csv", folder / f"{lesson}{META_SUFFIX}"


def _recorded_gpus(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def recorded_gpus(root: str | os.PathLike | None = None) -> list[str]:
    """The GPU folders under the data folder (empty when there is none)."""
    root = data_root(root)
    return _recorded_gpus(root) if root.is_dir() else []


def _recorded_lessons(folder: Path) -> list[str]:
    stems = {p.name.removesuffix(META_SUFFIX) for p in folder.glob(f"*{META_SUFFIX}")}
    stems |= {p.stem for p in folder.glob("*.csv")}
    return sorted(stems)


def _choose_gpu(root: Path, lesson: str) -> str:
    """The reference GPU for a lesson: nvidia-h200 if it has it, else the only GPU that has it."""
    having = [gpu for gpu in _recorded_gpus(root) if lesson in _recorded_lessons(root / gpu)]
    if DEFAULT_GPU in having:
        return DEFAULT_GPU
    if len(having) == 1:
        return having[0]
    if not having:
        recorded = ", ".join(_recorded_gpus(root)) or "none"
        raise MissingRecordingError(
            f"{shown_path(root)}: no GPU has a recording of lesson '{lesson}' (GPUs: {recorded})"
        )
    raise RecordingError(
        f"{shown_path(root)}: lesson '{lesson}' is recorded on several GPUs and none is "
        f"{DEFAULT_GPU}; choose one with gpu=: {', '.join(having)}"
    )


# ---------------------------------------------------------------------------------------------
# Reading and writing recordings


def read_recording(
    lesson: str, gpu: str | None = None, root: str | os.PathLike | None = None
) -> Recording:
    """Load and check one lesson's recording (gpu: a folder name; None = the reference GPU)."""
    root = data_root(root)
    if not root.is_dir():
        raise MissingRecordingError(
            f"{shown_path(root)}: the data folder does not exist "
            f"(set {DATA_VARIABLE} or pass root=)"
        )
    gpu = gpu or _choose_gpu(root, lesson)
    folder = root / gpu
    if not folder.is_dir():
        recorded = ", ".join(_recorded_gpus(root)) or "none"
        raise MissingRecordingError(
            f"{shown_path(folder)}: no recordings for GPU '{gpu}' (recorded GPUs: {recorded})"
        )
    csv_path, meta_path = recording_paths(root, gpu, lesson)
    if not csv_path.exists() and not meta_path.exists():
        recorded = ", ".join(_recorded_lessons(folder)) or "none"
        raise MissingRecordingError(
            f"{shown_path(csv_path)}: no recording of lesson '{lesson}' on this GPU "
            f"(recorded lessons: {recorded})"
        )
    for path in (csv_path, meta_path):
        if not path.exists():
            raise RecordingError(f"{shown_path(path)}: file is missing (half a recording)")
    meta = _read_meta(meta_path, gpu, lesson)
    table = _read_table(csv_path, lesson)
    return Recording(table=table, meta=meta, csv_path=csv_path, meta_path=meta_path)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordingError(f"{shown_path(path)}: not UTF-8 text") from None
    except OSError as error:
        raise RecordingError(f"{shown_path(path)}: cannot be read ({error.strerror})") from None


def _read_table(path: Path, lesson: str) -> pd.DataFrame:
    source = shown_path(path)
    text = _read_text(path)
    if not text.strip():
        raise RecordingError(f"{source}: file is empty")
    try:
        # As text: the checks then see exactly what was written, and report it.
        raw = pd.read_csv(StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else "parse error"
        raise RecordingError(f"{source}: not a readable CSV ({first_line})") from None
    raw.columns = [str(name).strip() for name in raw.columns]
    table = _checked_table(raw, source, lambda i: f"line {i + 2}")  # line 1 is the header
    _check_lesson_column(table, lesson, source, lambda i: f"line {i + 2}")
    return table


def _check_lesson_column(
    table: pd.DataFrame, lesson: str, source: str, where: Callable[[int], str]
) -> None:
    position = _first_bad(table["lesson"] != lesson)
    if position is not None:
        raise RecordingError(
            f"{source}: {where(position)}: lesson is '{table['lesson'].iloc[position]}', "
            f"but the file is for lesson '{lesson}'"
        )


def _read_meta(path: Path, gpu: str, lesson: str) -> dict:
    source = shown_path(path)
    try:
        meta = json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise RecordingError(
            f"{source}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    _check_meta(meta, source)
    if meta["slug"] != gpu:
        raise RecordingError(f"{source}: slug is '{meta['slug']}', but the folder is '{gpu}'")
    if meta["lesson"] != lesson:
        raise RecordingError(
            f"{source}: lesson is '{meta['lesson']}', but the file is for '{lesson}'"
        )
    return meta


def _check_meta(meta, source: str) -> None:
    if not isinstance(meta, dict):
        raise RecordingError(f"{source}: must hold a JSON object, got {type(meta).__name__}")
    missing = [key for key in REQUIRED_META_KEYS if key not in meta]
    if missing:
        noun = "key" if len(missing) == 1 else "keys"
        raise RecordingError(f"{source}: meta {noun} missing: {', '.join(missing)}")
    for key in NUMERIC_META_KEYS:
        value = meta[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordingError(f"{source}: meta '{key}' must be a number, got {value!r}")
    for key in ("slug", "lesson"):
        if not isinstance(meta[key], str) or not NAME_PATTERN.fullmatch(meta[key]):
            raise RecordingError(
                f"{source}: meta '{key}' must be a simple name (letters, digits, - and _), "
                f"got {meta[key]!r}"
            )
    try:
        datetime.fromisoformat(str(meta["date"]).replace("Z", "+00:00"))
    except ValueError:
        date = meta["date"]
        raise RecordingError(f"{source}: meta 'date' is not an ISO date: {date!r}") from None


def _json_value(value):
    """JSON for what meta dicts hold besides plain values: NumPy scalars, dates, paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_recording(
    table: pd.DataFrame, meta: dict, lesson: str, root: str | os.PathLike | None = None
) -> Path:
    """Check table and meta, write data/<slug>/<lesson>.csv and .meta.json; return the CSV path.

    meta["lesson"] is filled in from `lesson` when absent; overwrites an earlier recording.
    """
    meta = {**meta}
    meta.setdefault("lesson", lesson)
    if not NAME_PATTERN.fullmatch(str(lesson)):
        raise RecordingError(
            f"lesson name {lesson!r} is not a simple name (letters, digits, - and _)"
        )
    slug = meta.get("slug") or "<no slug>"
    csv_path, meta_path = recording_paths(data_root(root), str(slug), lesson)
    _check_meta(meta, f"{shown_path(meta_path)}: not written")
    if meta["lesson"] != lesson:
        raise RecordingError(
            f"{shown_path(meta_path)}: not written: "
            f"meta lesson is '{meta['lesson']}', not '{lesson}'"
        )
    source = f"{shown_path(csv_path)}: not written"
    if not isinstance(table, pd.DataFrame):
        raise RecordingError(f"{source}: expected a pandas DataFrame, got {type(table).__name__}")
    checked = _checked_table(table.reset_index(drop=True), source, lambda i: f"row {i}")
    _check_lesson_column(checked, lesson, source, lambda i: f"row {i}")
    try:
        meta_text = json.dumps(meta, indent=2, ensure_ascii=False, default=_json_value)
    except (TypeError, ValueError) as error:
        raise RecordingError(f"{source}: meta cannot be written as JSON ({error})") from None

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    checked.to_csv(csv_path, index=False, lineterminator="\n")
    meta_path.write_text(meta_text + "\n", encoding="utf-8")
    return csv_path


def list_recordings(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per recording: gpu, lesson, date, rows, and `problem` (empty when it reads well)."""
    root = data_root(root)
    rows = []
    for gpu in _recorded_gpus(root) if root.is_dir() else []:
        for lesson in _recorded_lessons(root / gpu):
            try:
                recording = read_recording(lesson, gpu, root)
            except RecordingError as error:
                rows.append({"gpu": gpu, "lesson": lesson, "date": "", "rows": None,
                             "problem": str(error)})
            else:
                rows.append({"gpu": gpu, "lesson": lesson, "date": str(recording.meta["date"]),
                             "rows": len(recording.table), "problem": ""})
    listing = pd.DataFrame(rows, columns=["gpu", "lesson", "date", "rows", "problem"])
    listing["rows"] = listing["rows"].astype("Int64")
    return listing


# ---------------------------------------------------------------------------------------------
# Provenance


def _device_phrase(meta: dict) -> str:
    """'NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz)'; facts the meta lacks are left out."""
    name = meta.get("gpu") or meta.get("name") or "unknown device"
    facts = []
    capability = str(meta.get("compute_capability") or "")
    if capability and capability != "0.0":  # 0.0: the simulator
        facts.append(f"CC {capability}")
    if meta.get("sms"):
        facts.append(f"{meta['sms']} SMs")
    if meta.get("sm_clock_mhz"):
        facts.append(f"SM clock <= {float(meta['sm_clock_mhz']):.0f} MHz")
    return f"{name} ({', '.join(facts)})" if facts else str(name)


def provenance(meta: dict) -> str:
    """One line for a figure caption: the device, the driver and numba-cuda, and when."""
    parts = [_device_phrase(meta)]
    if str(meta.get("driver") or "none") != "none":
        parts.append(f"driver CUDA {meta['driver']}")
    if meta.get("numba_cuda"):
        parts.append(f"numba-cuda {meta['numba_cuda']}")
    if meta.get("live"):
        return "measured live on " + ", ".join(parts)
    if meta.get("date"):
        parts.append(f"recorded {str(meta['date'])[:10]}")
    return ", ".join(parts)
