"""Where the course's files are: the recordings (``data/``) and the notebooks, checked out or installed.

A checkout keeps them at its top, beside ``gpu_lessons/``. A wheel carries the same two folders as
package data, ``gpu_lessons/_course/data`` and ``gpu_lessons/_course/notebooks`` (``setup.py`` copies
them in at build time, so the repository holds one copy). ``root()`` is the one this import of
``gpu_lessons`` belongs to: the checkout's when it runs from one (editable install, ``PYTHONPATH``),
else the installed copy. ``GPU_LESSONS_DATA`` still overrides the data folder (``results.data_root``).

``copy_notebooks(folder)`` copies the notebooks out (``gpu-lessons notebooks DIR``): lessons and
deep dives, with ``deep_dives/`` kept so that the links between them hold.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

from .colab import REPOSITORY  # noqa: F401 (re-exported) where the course lives (clone it to run it): written once, in colab.py

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent
SHIPPED = PACKAGE / "_course"  # in an installed wheel only
FOLDERS = ("data", "notebooks")


class CopyError(RuntimeError):
    """The notebooks cannot be copied where asked (one line for the user)."""


def in_checkout() -> bool:
    """True when this gpu_lessons is the one of a source checkout (its data/ and pyproject beside it)."""
    return (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "data").is_dir()


def root() -> Path:
    """The folder holding data/ and notebooks/: the checkout, or the installed package's copy."""
    return CHECKOUT if in_checkout() else SHIPPED


def data_folder() -> Path:
    return root() / "data"


def notebooks_folder() -> Path:
    return root() / "notebooks"


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__"  # .ipynb_checkpoints, editor files


def notebook_files(folder: Path | None = None) -> list[Path]:
    """Every file of the notebooks folder (lessons, deep dives), relative to it, in a stable order."""
    folder = notebooks_folder() if folder is None else folder
    found = []
    for parent, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if not _skipped(f))
        found += [(Path(parent) / f).relative_to(folder) for f in sorted(files) if not _skipped(f)]
    return found


BACKUP_SUFFIX = ".bak"


def backup_path(target: Path) -> Path:
    """Where ``copy_notebooks(force=True)`` keeps an edited notebook it replaces: beside it, with
    ``.bak`` (then ``.bak2``, ``.bak3``... when that exists), so that no earlier backup is lost."""
    candidate, number = target.with_name(target.name + BACKUP_SUFFIX), 1
    while candidate.exists():
        number += 1
        candidate = target.with_name(f"{target.name}{BACKUP_SUFFIX}{number}")
    return candidate


def copy_notebooks(destination: str | os.PathLike, force: bool = False) -> tuple[list[Path], list[Path]]:
    """Copy the notebooks into `destination` (made if missing); return (the files written there, the
    backups made).

    A folder that exists and is not empty is refused unless `force`; then the course's files in it
    are replaced, each one that differs from the course's copy (a learner's edits) kept first as a
    backup beside it (``backup_path``), and nothing else is touched.
    """
    source, destination = notebooks_folder(), Path(destination).expanduser()
    files = notebook_files(source)
    if not files:
        raise CopyError(f"no notebooks found under {source} (a broken install? reinstall gpu-lessons)")
    if destination.exists() and not destination.is_dir():
        raise CopyError(f"{destination} is a file, not a folder; name a new or empty folder")
    if destination.is_dir() and any(destination.iterdir()) and not force:
        raise CopyError(f"{destination} is not empty; name a new or empty folder, or pass --force to "
                        "replace the course's notebooks in it (edited ones are kept as .bak files)")
    written, backups = [], []
    try:
        for relative in files:
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_file() and not filecmp.cmp(source / relative, target, shallow=False):
                backup = backup_path(target)
                shutil.copy2(target, backup)
                backups.append(backup)
            shutil.copyfile(source / relative, target)
            written.append(target)
    except OSError as error:
        raise CopyError(f"cannot write {error.filename or destination}: {error.strerror or error}") from None
    return written, backups
