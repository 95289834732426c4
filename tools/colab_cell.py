"""Write the Colab cell (``gpu_lessons.colab.cell_source()``) as every notebook's first code cell.

    python3 tools/colab_cell.py           # lessons and deep dives: insert the cell, or update it
    python3 tools/colab_cell.py --check   # exit 1 naming each notebook whose cell is missing or old

Idempotent: the cell is found by its id (``colab-setup``) and rewritten in place; where there is
none it goes right before the notebook's first code cell. Nothing else in a notebook changes, so the
tool can run again after merges that edit other cells. The cell prints nothing outside Colab, so it
is stored executed with no output (no notebook needs re-running), and the site leaves it out
(tag ``remove-cell``: a page has its own "Open in Colab" link).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu_lessons import colab  # noqa: E402  (this checkout's; it needs no mode)

CELL_ID = "colab-setup"


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every lesson and deep dive (what the site and `gpu-lessons notebooks` ship)."""
    folder = root / "notebooks"
    return sorted(folder.glob("[0-9]*.ipynb")) + sorted((folder / "deep_dives").glob("[0-9]*.ipynb"))


def cell() -> dict:
    lines = colab.cell_source().splitlines(keepends=True)
    return {"cell_type": "code", "execution_count": 1, "id": CELL_ID,
            "metadata": {"tags": ["remove-cell"]}, "outputs": [], "source": lines}


def with_cell(notebook: dict) -> dict:
    """The notebook with the Colab cell in place (a new dict; the same one if it is already there)."""
    cells = list(notebook["cells"])
    wanted = cell()
    found = [i for i, c in enumerate(cells) if c.get("id") == CELL_ID]
    if found:
        cells[found[0]] = wanted
    else:
        first_code = next((i for i, c in enumerate(cells) if c["cell_type"] == "code"), len(cells))
        cells.insert(first_code, wanted)
    return {**notebook, "cells": cells}


def _text(notebook: dict) -> str:
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"  # as nbformat


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a cell is old")
    options = parser.parse_args(argv)
    stale = []
    for path in notebooks():
        text = path.read_text(encoding="utf-8")
        updated = _text(with_cell(json.loads(text)))
        if updated == text:
            continue
        stale.append(path.relative_to(ROOT).as_posix())
        if not options.check:
            path.write_text(updated, encoding="utf-8")
    if options.check and stale:
        print(f"colab_cell: the Colab cell is missing or old in {', '.join(stale)}: "
              "run python3 tools/colab_cell.py", file=sys.stderr)
        return 1
    print(f"colab_cell: {len(notebooks())} notebooks, {len(stale)} "
          f"{'to update' if options.check else 'updated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
