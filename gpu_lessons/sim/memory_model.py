"""How the GPU's L1TEX unit counts one warp-level memory instruction (a *request*).

Inputs are thread-level accesses, one entry per lane, already grouped into requests (ids 0..R-1),
with byte addresses relative to an allocation assumed 256-byte aligned (``cudaMalloc`` guarantees at
least that; shared arrays: see below). Pure NumPy, so the model can be tested on hand-made warps.

Global memory: a request costs one *sector* per distinct 32-byte segment its lanes touch
(``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}``). Duplicate addresses cost nothing extra.

Shared memory: 32 banks of 4-byte words; word ``w`` is in bank ``w % 32``. Lanes reading the same
word are served together (broadcast; for stores one write wins). The warp is processed in
*phases* of 128 bytes: all 32 lanes at once for accesses of 4 bytes or less, half-warps (lanes
0-15, 16-31) for 8-byte accesses, quarter-warps for 16-byte accesses -- or half-warps when every
lane reads what lane ``l ^ 1`` (or ``l ^ 2``) reads, since half the lanes then carry all the data
(the rule Nsight Compute's counts on the H200 follow: lesson 6's register tiles). A phase takes as many
*wavefronts* as the largest number of distinct words any one bank must deliver; a request's
wavefronts are the sum over its active phases, and its bank conflicts are the wavefronts beyond
one per active phase (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_*`` and
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_*``). For 4-byte accesses that is exactly
conflicts = wavefronts - requests. Shifting every address of a request by the same multiple of
the access size changes none of these counts, so the base address of a shared array (which the
compiler chooses) does not matter as long as it is aligned to the element size.
"""

from __future__ import annotations

import numpy as np

from ..device import WARP_SIZE

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4
PHASE_BYTES = 128


def _expand(first: np.ndarray, last: np.ndarray, *carried: np.ndarray):
    """One row per unit in [first, last] of each access (most accesses span exactly one unit)."""
    span = last - first + 1
    if span.size == 0 or span.max() == 1:
        return (first, *carried)
    owner = np.repeat(np.arange(first.size), span)
    starts = np.cumsum(span) - span
    unit = first[owner] + (np.arange(owner.size) - starts[owner])
    return (unit, *(c[owner] for c in carried))


def run_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean mask: True where any key differs from the previous row (rows already sorted)."""
    n = sorted_keys[0].size
    start = np.zeros(n, dtype=bool)
    if n:
        start[0] = True
        for key in sorted_keys:
            start[1:] |= key[1:] != key[:-1]
    return start


def global_sectors(request, address, size, n_requests: int) -> np.ndarray:
    """Distinct 32-byte sectors each request touches (array of length n_requests)."""
    request, address, size = (np.asarray(a, dtype=np.int64) for a in (request, address, size))
    sector, req = _expand(address // SECTOR_BYTES, (address + size - 1) // SECTOR_BYTES, request)
    order = np.lexsort((sector, req))
    req, sector = req[order], sector[order]
    distinct = run_starts(req, sector)
    return np.bincount(req[distinct], minlength=n_requests)


def lanes_per_phase(size: np.ndarray) -> np.ndarray:
    """32 lanes for accesses up to 4 bytes, 16 for 8 bytes, 8 for 16 bytes: 128 bytes a phase."""
    width = np.maximum(np.asarray(size, dtype=np.int64), BANK_BYTES)
    return np.maximum(PHASE_BYTES // width, 1)


def paired_16_byte(request, lane, address, size, n_requests: int) -> np.ndarray:
    """Per request: a 16-byte access whose every lane reads the same 16 bytes as lane l^1 (or l^2)."""
    paired = np.zeros(n_requests, dtype=bool)
    wide = size == 16
    if not wide.any():
        return paired
    lanes = np.full((n_requests, WARP_SIZE), -1, dtype=np.int64)  # -1: the lane made no access
    lanes[request[wide], lane[wide]] = address[wide]
    is_wide = np.zeros(n_requests, dtype=bool)
    is_wide[request[wide]] = True
    for partner in (1, 2):
        paired |= is_wide & np.all(lanes == lanes[:, np.arange(WARP_SIZE) ^ partner], axis=1)
    return paired


def shared_wavefronts(request, lane, address, size, n_requests: int) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, ideal wavefronts) per request; bank conflicts are their difference."""
    request, lane, address, size = (np.asarray(a, dtype=np.int64) for a in (request, lane, address, size))
    paired = paired_16_byte(request, lane, address, size, n_requests)
    per_phase = lanes_per_phase(size) * np.where(paired[request], 2, 1)
    phase = lane // per_phase
    word, req, phase = _expand(address // BANK_BYTES, (address + size - 1) // BANK_BYTES, request, phase)
    bank = word % BANKS
    order = np.lexsort((word, bank, phase, req))
    req, phase, bank, word = req[order], phase[order], bank[order], word[order]
    distinct = run_starts(req, phase, word)  # a word asked for twice (broadcast) is read once
    req, phase, bank = req[distinct], phase[distinct], bank[distinct]
    # distinct words each bank must deliver in each phase
    bank_runs = np.flatnonzero(run_starts(req, phase, bank))
    words_in_bank = np.diff(np.append(bank_runs, req.size))
    req, phase = req[bank_runs], phase[bank_runs]
    # a phase takes as many wavefronts as its busiest bank
    phase_runs = np.flatnonzero(run_starts(req, phase))
    if phase_runs.size == 0:
        zeros = np.zeros(n_requests, dtype=np.int64)
        return zeros, zeros.copy()
    per_phase = np.maximum.reduceat(words_in_bank, phase_runs)
    phase_request = req[phase_runs]
    wavefronts = np.bincount(phase_request, weights=per_phase, minlength=n_requests).astype(np.int64)
    ideal = np.bincount(phase_request, minlength=n_requests).astype(np.int64)
    return wavefronts, ideal
