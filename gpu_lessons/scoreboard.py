"""How our kernels compare with what a user would reach for instead (CuPy, cuBLAS, theory).

A ``Comparison`` names a lesson, a metric, the reference variant and (optionally) which of our
variants compete. ``score`` picks our best variant and divides by the reference measured in the
same recording (same GPU, same run), at one size. The lessons define their comparison lists; this
module only scores them.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .results import LessonResult, MissingRecordingError, RecordingError, read_result

UNITS = {"gbps": "GB/s", "gflops": "GFLOP/s"}
OURS = "gpu_lessons"
OK = "ok"
NOT_RECORDED = "not recorded"
FAILED = "failed"  # a broken recording, or a comparison that does not fit it: see `problem`
SCOREBOARD_COLUMNS = [
    "lesson", "title", "gpu", "best_variant", "best", "reference_variant", "reference", "ratio",
    "unit", "size", "reference_size", "param", "status", "problem",
]


class ComparisonError(ValueError):
    """A comparison that does not fit its recording (unknown variant, no common size...)."""


@dataclass(frozen=True)
class Comparison:
    title: str
    lesson: str
    metric: str  # "gbps" or "gflops"
    reference: str  # variant name of the reference row, e.g. "cupy copy"
    ours: tuple[str, ...] | None = None  # None: every row whose provider is gpu_lessons
    size: int | None = None  # None: the largest size where both were measured
    param: float | None = None  # None: best over params; else ours at this param

    def __post_init__(self):
        if self.metric not in UNITS:
            raise ComparisonError(
                f"{self.title}: metric must be one of {', '.join(UNITS)}, got {self.metric!r}"
            )
        if self.ours is not None:
            if isinstance(self.ours, str) or not self.ours:
                raise ComparisonError(f"{self.title}: ours must be a non-empty list of variants")
            object.__setattr__(self, "ours", tuple(self.ours))  # frozen: keep it hashable


def _at_param(rows: pd.DataFrame, param: float | None) -> pd.DataFrame:
    if param is None:
        return rows
    return rows[np.isclose(rows["param"], param)]


def _variants_phrase(table: pd.DataFrame) -> str:
    return ", ".join(repr(v) for v in dict.fromkeys(table["variant"]))


def _our_rows(table: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    if comparison.ours is None:
        rows = table[table["provider"] == OURS]
        if rows.empty:
            raise ComparisonError(f"{comparison.title}: the recording has no {OURS} rows")
    else:
        unknown = [v for v in comparison.ours if v not in set(table["variant"])]
        if unknown:
            raise ComparisonError(
                f"{comparison.title}: variant(s) {', '.join(map(repr, unknown))} are not in the "
                f"'{comparison.lesson}' recording (variants: {_variants_phrase(table)})"
            )
        rows = table[table["variant"].isin(comparison.ours)]
    rows = _at_param(rows, comparison.param)
    if rows.empty:
        raise ComparisonError(f"{comparison.title}: none of our rows has param {comparison.param}")
    return rows


def _reference_rows(table: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    rows = table[table["variant"] == comparison.reference]
    if rows.empty:
        raise ComparisonError(
            f"{comparison.title}: reference {comparison.reference!r} is not in the "
            f"'{comparison.lesson}' recording (variants: {_variants_phrase(table)})"
        )
    # A reference without a parameter (a library call) stands against ours at any param.
    at_param = _at_param(rows, comparison.param)
    return at_param if not at_param.empty else rows[rows["param"].isna()]


def _comparison_sizes(
    ours: pd.DataFrame, reference: pd.DataFrame, comparison: Comparison
) -> tuple[int, int]:
    """(our size, reference size): the largest common size, or comparison.size.

    With no size in common (a peak-FMA kernel against SGEMM: sizes count different things),
    each side is taken at its own largest size.
    """
    common = set(ours["size"]) & set(reference["size"])
    if comparison.size is not None:
        if comparison.size not in common:
            raise ComparisonError(
                f"{comparison.title}: size {comparison.size} was not measured for both ours and "
                f"{comparison.reference!r} (common sizes: {sorted(common) or 'none'})"
            )
        return comparison.size, comparison.size
    if not common:
        return int(ours["size"].max()), int(reference["size"].max())
    return max(common), max(common)


def _best_row(rows: pd.DataFrame, metric: str) -> pd.Series:
    return rows.loc[rows[metric].idxmax()]  # ties: the first listed


THEORY_PREFIX = "theory:"  # reference="theory:peak_fp32_gflops" reads that key of the meta
THEORY_LABELS = {"peak_fp32_gflops": "theoretical FP32 peak", "datasheet_bandwidth_gbps": "datasheet DRAM"}


def _reference_label(reference: str) -> str:
    if reference.startswith(THEORY_PREFIX):
        key = reference[len(THEORY_PREFIX):]
        return THEORY_LABELS.get(key, f"theoretical {key}")
    return reference


def _theoretical(recording: LessonResult, comparison: Comparison) -> float:
    key = comparison.reference[len(THEORY_PREFIX):]
    value = recording.meta.get(key)
    if not isinstance(value, int | float) or value <= 0:
        raise ComparisonError(f"{comparison.title}: the recording's meta has no positive {key!r}")
    return float(value)


def score(recording: LessonResult, comparison: Comparison) -> dict:
    """Our best variant against the reference, both from this recording, at one size."""
    if recording.lesson != comparison.lesson:
        raise ComparisonError(
            f"{comparison.title}: is about lesson '{comparison.lesson}', "
            f"but the recording is of '{recording.lesson}'"
        )
    table, metric = recording.table, comparison.metric
    ours = _our_rows(table, comparison)
    if comparison.reference.startswith(THEORY_PREFIX):
        # A figure computed from the device's facts (kept in the meta), not measured
        size = reference_size = int(ours["size"].max())
        best = _best_row(ours[ours["size"] == size], metric)
        best_value, reference_value = float(best[metric]), _theoretical(recording, comparison)
    else:
        reference = _reference_rows(table, comparison)
        size, reference_size = _comparison_sizes(ours, reference, comparison)
        best = _best_row(ours[ours["size"] == size], metric)
        reference_row = _best_row(reference[reference["size"] == reference_size], metric)
        best_value, reference_value = float(best[metric]), float(reference_row[metric])
    return {
        "lesson": comparison.lesson,
        "title": comparison.title,
        "gpu": recording.gpu,
        "best_variant": best["variant"],
        "best": best_value,
        "reference_variant": _reference_label(comparison.reference),
        "reference": reference_value,
        "ratio": best_value / reference_value if reference_value > 0 else math.nan,
        "unit": UNITS[metric],
        "size": int(size),
        "reference_size": int(reference_size),
        "param": None if pd.isna(best["param"]) else float(best["param"]),
        "status": OK,
        "problem": "",
    }


def _unscored(comparison: Comparison, status: str, problem: str = "") -> dict:
    return {
        "lesson": comparison.lesson, "title": comparison.title, "gpu": None,
        "best_variant": None, "best": math.nan,
        "reference_variant": _reference_label(comparison.reference),
        "reference": math.nan, "ratio": math.nan, "unit": UNITS[comparison.metric],
        "size": None, "reference_size": None, "param": None, "status": status,
        "problem": problem,
    }


def _scored(comparison: Comparison, recording: LessonResult | RecordingError | None) -> dict:
    if recording is None:
        return _unscored(comparison, NOT_RECORDED)
    if isinstance(recording, RecordingError):
        return _unscored(comparison, FAILED, str(recording))
    try:
        return score(recording, comparison)
    except ComparisonError as error:
        return {**_unscored(comparison, FAILED, str(error)), "gpu": recording.gpu}


def scoreboard(
    comparisons: list[Comparison], gpu: str | None = None, root: str | os.PathLike | None = None
) -> pd.DataFrame:
    """Score every comparison, one row each; nothing here raises for bad data.

    status is "ok", "not recorded" (the lesson has no recording), or "failed" with the one-line
    reason in `problem` (a broken recording, an unknown variant...), so one bad file does not
    hide the other rows. ``df.attrs["provenance"]`` maps each GPU slug used to its caption line.
    """
    recordings: dict[str, LessonResult | RecordingError | None] = {}
    for lesson in dict.fromkeys(c.lesson for c in comparisons):
        try:
            recordings[lesson] = read_result(lesson, gpu, root)
        except MissingRecordingError:
            recordings[lesson] = None
        except RecordingError as error:
            recordings[lesson] = error
    rows = [_scored(c, recordings[c.lesson]) for c in comparisons]
    board = pd.DataFrame(rows, columns=SCOREBOARD_COLUMNS)
    for column in ("size", "reference_size"):
        board[column] = board[column].astype("Int64")
    board["param"] = board["param"].astype("float64")
    board.attrs["provenance"] = {
        r.gpu: r.provenance for r in recordings.values() if isinstance(r, LessonResult)
    }
    # Lessons are recorded on different days: each caption with the lessons it covers.
    captions: dict[str, list[str]] = {}
    for lesson, r in recordings.items():
        if isinstance(r, LessonResult):
            captions.setdefault(r.provenance, []).append(lesson)
    board.attrs["captions"] = captions
    return board


# ---------------------------------------------------------------------------------------------
# Output: a markdown table for the CLI and the README, and JSON


def _figure(value: float, unit: str) -> str:
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:,.{digits}f} {unit}"


def _row_cells(row: pd.Series) -> list[str]:
    if row["status"] != OK:
        return [row["lesson"], row["title"], row["status"], str(row["reference_variant"]), "", ""]
    param = "" if pd.isna(row["param"]) else f", param {row['param']:g}"
    size = f"{int(row['size']):,}"
    if row["reference_size"] != row["size"]:
        size = f"{size} vs {int(row['reference_size']):,}"
    return [
        row["lesson"],
        row["title"],
        f"{row['best_variant']}: {_figure(row['best'], row['unit'])}",
        f"{row['reference_variant']}: {_figure(row['reference'], row['unit'])}",
        "n/a" if pd.isna(row["ratio"]) else f"{row['ratio']:.2f}x",
        size + param,
    ]


def format_scoreboard(board: pd.DataFrame) -> str:
    """A markdown table (readable as plain text too), then the problems, then the provenance."""
    header = ["Lesson", "Comparison", "Ours (best)", "Reference", "Ours / ref.", "Size"]
    right_aligned = {4, 5}
    body = [_row_cells(row) for _, row in board.iterrows()]
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if i in right_aligned else c.ljust(w)
                  for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "| " + " | ".join(padded) + " |"

    rule = [("-" * (w - 1) + ":") if i in right_aligned else "-" * w for i, w in enumerate(widths)]
    lines = [line(header), line(rule), *map(line, body)]
    problems = [p for p in dict.fromkeys(board["problem"]) if p]
    if problems:
        lines += ["", "Problems:", *(f"- {p}" for p in problems)]
    captions = board.attrs.get("captions") or dict.fromkeys(board.attrs.get("provenance", {}).values(), [])
    for text, lessons in captions.items():
        which = f" ({', '.join(lessons)})" if len(captions) > 1 else ""
        lines.append(f"\nMeasured on {text}{which}.")
    return "\n".join(lines)


def _plain(value):
    """JSON-ready: NumPy scalars to Python, NaN and pandas' NA to None."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def scoreboard_json(board: pd.DataFrame, indent: int | None = 2) -> str:
    """{"rows": [one object per comparison], "provenance": {gpu slug: caption line}}."""
    rows = [{key: _plain(value) for key, value in record.items()}
            for record in board.to_dict(orient="records")]
    return json.dumps(
        {"rows": rows, "provenance": board.attrs.get("provenance", {})}, indent=indent
    )
