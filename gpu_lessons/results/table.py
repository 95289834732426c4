"""The tidy measurement table: one row per (variant, size, param), columns ``COLUMNS``, every cell checked.

A bad table raises ``RecordingError`` with one line naming the source (a file, a record) and the
problem, never a pandas traceback: the people reading it are learners.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

COLUMNS = (
    "lesson", "variant", "provider", "size", "param", "bytes", "flops", "runs",
    "median_ms", "min_ms", "max_ms", "gbps", "gflops",
)
TEXT_COLUMNS = ("lesson", "variant", "provider")
INTEGER_COLUMNS = ("size", "bytes", "flops", "runs")
FLOAT_COLUMNS = ("param", "median_ms", "min_ms", "max_ms", "gbps", "gflops")
MAY_BE_EMPTY = ("param", "min_ms", "max_ms")  # param NaN: the variant has no parameter; min/max NaN:
# not recorded (a run converted from one that kept only the median, e.g. lesson 7's first GPU run)
DERIVED = ("gbps", "gflops")  # make_table computes them when a record leaves them out
POSITIVE = ("size", "runs", "median_ms", "min_ms", "max_ms")
NON_NEGATIVE = ("bytes", "flops", "gbps", "gflops")  # a pure-FMA kernel moves no bytes
PROVIDERS = ("gpu_lessons", "cupy", "cublas", "theory")
OURS = "gpu_lessons"
MEASUREMENT_KEY = ["variant", "size", "param"]
# Stated figures may be rounded; beyond this they contradict bytes / median (a units slip).
THROUGHPUT_TOLERANCE = 0.01
MISSING_TEXT = {"", "nan", "na", "n/a", "none", "null"}


class RecordingError(ValueError):
    """A measurement table or recording that cannot be used; the message names file and problem."""


class MissingRecordingError(RecordingError):
    """The recording (or its GPU folder, or the data folder) does not exist."""



def make_table(records: list[dict]) -> pd.DataFrame:
    """Build a checked measurement table; gbps and gflops are computed when a record lacks them."""
    records = list(records)
    if not records:
        raise RecordingError("table: no records")
    frame = pd.DataFrame.from_records(records)
    for name in ("param", *DERIVED):  # a record may leave these out; every other column it must give
        if name not in frame.columns:
            frame[name] = np.nan
    return checked_table(
        frame, "table", lambda i: f"record {i}", may_be_empty=MAY_BE_EMPTY + DERIVED
    )


def checked_table(
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


def check_lesson_column(
    table: pd.DataFrame, lesson: str, source: str, where: Callable[[int], str]
) -> None:
    position = _first_bad(table["lesson"] != lesson)
    if position is not None:
        raise RecordingError(
            f"{source}: {where(position)}: lesson is '{table['lesson'].iloc[position]}', "
            f"but the file is for lesson '{lesson}'"
        )
