"""Recorded thread-level accesses -> one row per memory instruction of the source, with its counts.

A *site* is (instruction, array, ld/st); a *request* is one warp's k-th execution of a site (SIMT:
the k-th execution by each lane of a warp is the same warp-level instruction). ``memory_model``
prices each request; this module adds them up per site and says where the site is in the source.
"""

from __future__ import annotations

import dis
import linecache
import os

import numpy as np
import pandas as pd

from . import memory_model
from .recorder import SHARED

# One row per traced instruction (source position) of a kernel, in this order.
INSTRUCTION_COLUMNS = [
    "kernel", "function", "location", "source", "array", "space", "op", "bytes", "instructions",
    "threads", "sectors", "sectors_per_request", "wavefronts", "bank_conflicts",
]


def _runs(*sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start mask, run number) of runs of equal keys in sorted rows."""
    start = memory_model.run_starts(*sorted_keys)
    return start, np.cumsum(start) - 1


def instruction_table(data: np.ndarray, roots: list[dict], instructions: list[tuple],
                      kernel: str) -> pd.DataFrame:
    """Per-site counts from ``Recorder.counted_accesses()`` rows."""
    if data.size == 0:
        return pd.DataFrame(columns=INSTRUCTION_COLUMNS)
    instr, seen, warp, lane, root, offset, size_store = data.T
    size, store = size_store >> 1, size_store & 1
    order = np.lexsort((seen, warp, store, root, instr))
    instr, seen, warp, lane, root, offset, size, store = (
        column[order] for column in (instr, seen, warp, lane, root, offset, size, store)
    )
    site_start, site = _runs(instr, root, store)
    request_start, request = _runs(site, warp, seen)
    n_sites, n_requests = int(site[-1]) + 1, int(request[-1]) + 1
    request_site = site[request_start]

    shared = np.array([r["space"] == SHARED for r in roots], dtype=bool)[root]
    sectors = np.zeros(n_requests, dtype=np.int64)
    wavefronts = np.zeros(n_requests, dtype=np.int64)
    ideal = np.zeros(n_requests, dtype=np.int64)
    g, s = ~shared, shared
    if g.any():
        sectors += memory_model.global_sectors(request[g], offset[g], size[g], n_requests)
    if s.any():
        w, i = memory_model.shared_wavefronts(request[s], lane[s], offset[s], size[s], n_requests)
        wavefronts += w
        ideal += i

    def per_site(values):
        return np.bincount(request_site, weights=values, minlength=n_sites).astype(np.int64)

    first = np.flatnonzero(site_start)
    is_shared = shared[first]
    table = pd.DataFrame({
        "bytes": size[first],
        "op": np.where(store[first] == 1, "st", "ld"),
        "space": np.where(is_shared, "shared", "global"),
        "instructions": np.bincount(request_site, minlength=n_sites),
        "threads": np.bincount(site, minlength=n_sites),
        "sectors": pd.array(per_site(sectors), dtype="Int64"),
        "wavefronts": pd.array(per_site(wavefronts), dtype="Int64"),
        "bank_conflicts": pd.array(per_site(wavefronts - ideal), dtype="Int64"),
    })
    table["sectors"] = table["sectors"].where(~is_shared)
    table["wavefronts"] = table["wavefronts"].where(is_shared)
    table["bank_conflicts"] = table["bank_conflicts"].where(is_shared)
    table["sectors_per_request"] = (table["sectors"].astype("Float64") / table["instructions"]).round(2)
    described = [describe_instruction(*instructions[i]) for i in instr[first]]
    table["function"], table["location"], table["source"], order_key = zip(*described, strict=True)
    table["array"] = [roots[r]["name"] for r in root[first]]
    table["kernel"] = kernel
    table["_order"] = list(order_key)
    table = table.sort_values(["_order", "op"], kind="stable").reset_index(drop=True)
    return table[INSTRUCTION_COLUMNS]


def describe_instruction(code, offset: int) -> tuple[str, str, str, tuple]:
    """(function, 'file:line', the subscript's source text, sort key) of a bytecode offset."""
    line = start = end = None
    positions = getattr(code, "co_positions", None)
    if positions is not None:  # Python 3.11+: the exact columns of the subscript expression
        for k, position in enumerate(positions()):
            if k == offset // 2:
                line, end_line, start, end = position
                if end_line != line:
                    start = end = None
                break
    if line is None:
        starts = sorted(dis.findlinestarts(code), reverse=True)
        line = next((ln for off, ln in starts if off <= offset), code.co_firstlineno)
    text = linecache.getline(code.co_filename, line).rstrip("\n")
    source = text[start:end] if start is not None and end is not None else text.strip()
    location = f"{os.path.basename(code.co_filename)}:{line}"
    return code.co_name, location, source, (code.co_filename, line, offset)
