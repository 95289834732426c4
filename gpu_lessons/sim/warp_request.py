"""One warp's memory request, lane by lane: what the pictures of lessons 3 and 4 are drawn from.

``trace`` keeps every thread-level access it recorded; ``MemoryTrace.request(...)`` picks one
warp-level instruction (a *request*: the k-th execution of one source subscript by one warp) and
returns a table with a row per lane access: the byte address in its allocation, the 32-byte sector
and 128-byte line it falls in (global memory), the 4-byte word and bank (shared memory). The
request's counts are in ``table.attrs``, computed by the same ``memory_model`` the totals use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import memory_model
from .instruction_table import describe_instruction
from .recorder import SHARED, TraceError

LINE_BYTES = 128
ACCESS_COLUMNS = ["site", "warp", "k", "lane", "root", "address", "bytes", "store"]


def accesses_frame(data: np.ndarray) -> pd.DataFrame:
    """The recorder's (n, 7) int rows as named columns (``site`` is the instruction id)."""
    if data.size == 0:
        return pd.DataFrame(columns=ACCESS_COLUMNS, dtype="int64")
    instr, seen, warp, lane, root, offset, size_store = data.T
    return pd.DataFrame({"site": instr, "warp": warp, "k": seen, "lane": lane, "root": root,
                         "address": offset, "bytes": size_store >> 1, "store": size_store & 1})


def sites_frame(instructions: list[tuple], roots: list[dict], accesses: pd.DataFrame) -> pd.DataFrame:
    """One row per (instruction, array, ld/st) seen: where it is in the source, and its space."""
    keys = accesses[["site", "root", "store"]].drop_duplicates().reset_index(drop=True)
    rows = []
    for site, root, store in keys.itertuples(index=False):
        function, location, source, _ = describe_instruction(*instructions[site])
        rows.append({"site": site, "root": root, "store": store, "function": function,
                     "location": location, "source": source, "array": roots[root]["name"],
                     "space": "shared" if roots[root]["space"] == SHARED else "global",
                     "op": "st" if store else "ld"})
    return pd.DataFrame(rows, columns=["site", "root", "store", "function", "location", "source",
                                       "array", "space", "op"])


def _describe(sites: pd.DataFrame) -> str:
    return "; ".join(f"{r.op} {r.array} `{r.source}` ({r.location})" for r in sites.itertuples())


def select_request(accesses: pd.DataFrame, sites: pd.DataFrame, kernel: str, source: str | None,
                   array: str | None, op: str | None, warp: int, k: int) -> pd.DataFrame:
    """The lanes of one request: the site matching ``source``/``array``/``op``, warp, k-th run."""
    chosen = sites
    if source is not None:
        chosen = chosen[chosen["source"].str.contains(source, regex=False)]
    if array is not None:
        chosen = chosen[chosen["array"] == array]
    if op is not None:
        if op not in ("ld", "st"):
            raise TraceError(f"op must be 'ld' or 'st', got {op!r}")
        chosen = chosen[chosen["op"] == op]
    if chosen.empty:
        raise TraceError(f"no memory instruction of {kernel} matches source={source!r}, array={array!r}, "
                         f"op={op!r}; its instructions: {_describe(sites) or 'none'}")
    if len(chosen) > 1:
        raise TraceError(f"{len(chosen)} memory instructions of {kernel} match; narrow it down with "
                         f"source=, array= or op=: {_describe(chosen)}")
    site = chosen.iloc[0]
    mine = accesses[(accesses["site"] == site["site"]) & (accesses["root"] == site["root"])
                    & (accesses["store"] == site["store"])]
    lanes = mine[(mine["warp"] == warp) & (mine["k"] == k)]
    if lanes.empty:
        runs = mine[mine["warp"] == warp]["k"]
        warps = sorted(set(mine["warp"]))
        detail = (f"warp {warp} ran it {int(runs.max()) + 1} times (k = 0..{int(runs.max())})"
                  if not runs.empty else f"warps that ran it: {warps[:8]}{' ...' if len(warps) > 8 else ''}")
        raise TraceError(f"`{site['source']}` has no request for warp {warp}, k {k}: {detail}")
    return _request_table(lanes.sort_values("lane"), site)


def _distinct_bytes(address: np.ndarray, size: np.ndarray) -> int:
    """Bytes the lanes use, each counted once (lanes reading the same address share it: a broadcast)."""
    return int(np.unique(np.concatenate([np.arange(a, a + s) for a, s in zip(address, size, strict=True)]
                                        or [np.empty(0, np.int64)])).size)


def _request_table(lanes: pd.DataFrame, site: pd.Series) -> pd.DataFrame:
    address, size = lanes["address"].to_numpy(), lanes["bytes"].to_numpy()
    table = pd.DataFrame({"lane": lanes["lane"].to_numpy(), "address": address, "bytes": size})
    one = np.zeros(len(table), dtype=np.int64)
    attrs = {"kernel_function": site["function"], "location": site["location"], "source": site["source"],
             "array": site["array"], "space": site["space"], "op": site["op"],
             "warp": int(lanes["warp"].iloc[0]), "k": int(lanes["k"].iloc[0]),
             "active_lanes": len(table), "useful_bytes": _distinct_bytes(address, size)}
    if site["space"] == "global":
        table["sector"] = address // memory_model.SECTOR_BYTES
        table["last_sector"] = (address + size - 1) // memory_model.SECTOR_BYTES
        table["line"] = address // LINE_BYTES
        sectors = int(memory_model.global_sectors(one, address, size, 1)[0])
        attrs.update(sectors=sectors, moved_bytes=sectors * memory_model.SECTOR_BYTES,
                     ideal_sectors=-(-attrs["useful_bytes"] // memory_model.SECTOR_BYTES))
    else:
        table["word"] = address // memory_model.BANK_BYTES
        table["bank"] = table["word"] % memory_model.BANKS
        paired = memory_model.paired_16_byte(one, table["lane"].to_numpy(), address, size, 1)[0]
        table["phase"] = table["lane"] // (memory_model.lanes_per_phase(size) * (2 if paired else 1))
        wavefronts, ideal = memory_model.shared_wavefronts(one, table["lane"].to_numpy(), address, size, 1)
        attrs.update(wavefronts=int(wavefronts[0]), bank_conflicts=int(wavefronts[0] - ideal[0]),
                     phases=int(ideal[0]))
    table.attrs.update(attrs)
    return table
