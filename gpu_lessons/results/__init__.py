"""Measurements and recordings: the tidy table, a lesson's evidence, and ``data/<gpu>/`` on disk.

``table``     the tidy measurement table and its checks
``evidence``  facts, kernel resources and SASS, ncu counters: one layout for every lesson
``store``     one lesson's recording written and read as one ``LessonResult``; provenance
"""

from .evidence import RUN, Evidence
from .store import (
    DATA_VARIABLE,
    DEFAULT_DATA_ROOT,
    DEFAULT_GPU,
    REPOSITORY_ROOT,
    REQUIRED_META_KEYS,
    LessonResult,
    ProbeData,
    SectionFailure,
    data_root,
    list_recordings,
    provenance,
    read_probe,
    read_result,
    recorded_gpus,
    recording_paths,
    shown_path,
    to_json,
    write_evidence,
    write_result,
)
from .table import COLUMNS, OURS, MissingRecordingError, RecordingError, make_table

__all__ = [
    "COLUMNS", "DATA_VARIABLE", "DEFAULT_DATA_ROOT", "DEFAULT_GPU", "OURS", "REPOSITORY_ROOT",
    "REQUIRED_META_KEYS", "RUN", "Evidence", "LessonResult", "MissingRecordingError", "RecordingError",
    "ProbeData", "SectionFailure", "data_root", "list_recordings", "make_table", "provenance", "read_probe",
    "read_result",
    "recorded_gpus", "recording_paths", "shown_path", "to_json", "write_evidence", "write_result",
]
