"""Exercises of lesson 7 (tensor cores and cp.async): their checks and reference solutions.

1. A warp tile's accumulators: which lane holds element [row][col] of a warp's 64x64 tile of C, and
   in which of the generated kernels' registers ``acc{i}_{j}_{q}`` (the MMA tile i, j and its c_q);
   checked on all 4,096 elements against the PTX layout and the generator's tiling.
2. A tile through shared memory with cp.async: copy, commit, wait, barrier; checked by running the
   kernel (one warp) against NumPy, and by the simulator's cp.async log: the tile must arrive by
   cp.async copies that landed (plain stores do not count). On a GPU the same kernel also runs
   through the traffic tracer (the simulator's semantics: a copy lands at the wait), and both outputs
   must be right, so a read before the wait or a missing barrier fails there as here; a plain store into
   bytes a copy still has in flight is a race too.
3. A warp tile's work per 16-deep slab of shared memory: MMAs, 16-byte loads of A, 4-byte loads of B;
   checked against the generated kernels' source for five listed tiles and one drawn at random.
4. A kernel's time from another's (the identity time = instructions / issue rate, same SMs and
   clock): one kernel's measured duration, warp instructions and issue
   slots busy, and a changed kernel's instructions and issue slots; checked against Nsight Compute's
   durations of lesson 6's kernel's cp.async pipelines and cuBLAS SGEMM at 2048^3 (from lesson 6's
   kernel, within 2%), and on made-up pairs of other GPUs (their durations made up from the same identity,
   time = instructions / issue rate). Calling the lesson's issue_time or a reference solution is refused.
5. A 3-stage cp.async pipeline's loop: the wait and the barrier; checked as exercise 2 on several
   tile counts (1, 2, 5, 7, 9, 12 and one drawn at random from 3, 4, 6, 8), and the simulator's log must
   show, for every lane, one of its copies still in flight after each of its waits but the last (a wait
   for everything at any tile but the last fails).
6. cvt.rna: one warp's MMA D = A B^T (B given transposed), A and B rounded to TF32, not cut; the
   values stored in D must be those the simulated MMA returned (bit for bit: a product summed by the
   lanes' own FMAs beside a token MMA fails), and the result is held to the rounded product within
   the MMA's sums (a cut one is 100s of times further).

Exercises 1, 3 and 4 refuse a function that calls a course helper which gives the answer, or a reference
solution: found in its code (``reach.reaches``), or, for a call reach cannot see (getattr with a built
name, importlib, ``np.vectorize(helper)``, a helper under another name), when the check runs it (the
helpers' code swapped for a stub that raises ``Refused`` meanwhile). A table filled from a helper before
the check runs is not caught.
"""

from __future__ import annotations

import math
import re
import sys

import numpy as np
from numba import cuda, float32

from .. import SIMULATED, gates, lessons, ptx
from ..kernels import tc_codegen
from ..kernels import tensor_cores as tc
from ..lessons import tensor_cores as lesson
from ..sim.ptx import c_fragment, cp_async_log, mma_outputs, mmas_completed, tf32_rna, tf32_truncate
from ..sim.trace import trace
from . import guarded, report
from .reach import answers, reaches

# ----------------------------------------------------------------------------- exercise 1

WARP_TILE_M, WARP_TILE_N = 64, 64  # warp_tile_64x64's tile: (64/16) x (64/8) = 32 MMAs per k-step


def _accumulator_owner(row: int, col: int) -> tuple[int, int, int, int]:
    """(lane, i, j, q) of element [row][col] of a warp's tile, from the PTX layout and the generator's
    tiling (MMA tile (i, j) covers rows 16i.., columns 8j..)."""
    i, j = row // 16, col // 8
    for lane in range(32):
        for q, cell in enumerate(c_fragment(lane)):
            if cell == (row % 16, col % 8):
                return lane, i, j, q
    raise AssertionError("unreachable: every element of a 16x8 tile has an owner")


def _calls_a_helper(function, helpers) -> str:
    """'' or a refusal: ``function`` can call one of ``helpers`` ((object, its name, what it does)
    triples) or a reference solution of this lesson (the solution itself, checked as itself, is not
    refused)."""
    own = getattr(function, "py_func", function)
    solutions = [(solution, f"the reference solution {solution.__name__}", "is the answer") for solution in
                 answers(sys.modules[__name__]) if getattr(solution, "py_func", solution) is not own]
    for helper, what, does in [*solutions, *helpers]:  # nearest first: _accumulator_owner calls c_fragment
        if reaches(function, helper):
            return f"your function calls {what}, which {does}: the exercise is to work it out yourself"
    return ""


class Refused(Exception):
    """Raised by a course helper or a reference solution called while a check runs the learner's function."""


_REFUSING: dict[str, str] = {}  # a stub's code name -> the refusal it raises
_REFUSED: list[str] = []  # the refusals raised while a check ran (a learner's try/except does not hide one)


def _stub(*args, **kwargs):  # its code replaces a helper's while the learner's function runs
    raise __import__("gpu_lessons.exercises.tensor_cores", fromlist=["_refuse"])._refuse(
        __import__("sys")._getframe(0).f_code.co_name)


def _refuse(key: str) -> Refused:
    _REFUSED.append(_REFUSING[key])
    return Refused(_REFUSING[key])


def _run_refusing(function, helpers, *args):
    """``function(*args)`` with each of ``helpers`` ((object, its name, what it does) triples) and each
    reference solution (but ``function`` itself) made to raise ``Refused`` if called: the static check
    (``reach.reaches``) does not see a call through getattr, importlib or ``globals()``, or through a
    helper held by another object (``np.vectorize(helper)``). Their code is swapped, not their names, so
    a reference taken before the check is caught too; restored afterwards. A table filled from a helper
    before the check ran cannot be caught."""
    own = getattr(function, "py_func", function)
    solutions = [(solution, f"the reference solution {solution.__name__}", "is the answer") for solution in
                 answers(sys.modules[__name__]) if not hasattr(solution, "py_func") and solution is not own]
    swapped = []
    try:
        for number, (helper, what, does) in enumerate([*solutions, *helpers]):
            key = f"refused_{number}_{helper.__name__}"
            _REFUSING[key] = (f"your function calls {what}, which {does} (found when the check ran it): the "
                              "exercise is to work it out yourself")
            swapped.append((helper, helper.__code__))
            helper.__code__ = _stub.__code__.replace(co_name=key)
        del _REFUSED[:]
        got = function(*args)
        if _REFUSED:  # raised inside and caught by the learner's code
            raise Refused(_REFUSED[0])
        return got
    finally:
        for helper, code in reversed(swapped):
            helper.__code__ = code
        _REFUSING.clear()


def _c_owner_helpers() -> list:
    looks_up = "looks the owner up for you"
    return [(_accumulator_owner, "exercises._accumulator_owner (the check's own answer)", looks_up),
            (tc.fragment_owners, "the course's tc.fragment_owners() (the layout picture's table)", looks_up),
            (c_fragment, "the simulator's c_fragment (its layout table)", looks_up)]


def check_c_owner(c_owner) -> object:
    """``c_owner(row, col)`` returns (lane, i, j, q): the lane and the accumulator ``acc{i}_{j}_{q}`` of the
    generated kernels that hold element [row][col] of a warp's 64x64 tile of C. The check passes all
    4,096 rows and columns at once, as NumPy arrays: the answer is the rule, in arithmetic, not a lookup
    in a table of the layout."""
    name = "exercise 1 (who holds a warp tile's C[row][col])"
    hint = ("Hint: the warp tile is a grid of 16x8 MMA tiles, (i, j) covering rows 16i.. and columns "
            "8j..; inside one, lane (g, t) holds rows g and g+8 at columns 2t and 2t+1 in c0..c3")

    def attempt():
        refused = _calls_a_helper(c_owner, _c_owner_helpers())
        if refused:
            return report(name, False, f"{refused}, from g = lane // 4, t = lane % 4 and the tiling, in "
                                       "arithmetic")
        cells = [(row, col) for row in range(WARP_TILE_M) for col in range(WARP_TILE_N)]
        order = np.random.default_rng().permutation(len(cells))
        rows = np.array([cells[k][0] for k in order], np.int64)
        cols = np.array([cells[k][1] for k in order], np.int64)
        try:
            got = _run_refusing(c_owner, _c_owner_helpers(), rows, cols)
        except NotImplementedError:
            raise
        except Refused as refusal:
            return report(name, False, f"{refusal}, from g = lane // 4, t = lane % 4 and the tiling, in "
                                       "arithmetic")
        except Exception as error:  # noqa: BLE001 - scalar-only code meets arrays: say how to fix it
            return report(name, False, f"the check calls c_owner(rows, cols) with NumPy arrays of all "
                                       f"{len(cells):,} elements, and your code raised "
                                       f"{type(error).__name__}: {error}. Write the rule with arithmetic "
                                       "(//, %, *, +), which works on arrays as on numbers, not a lookup")
        try:
            answer = [np.broadcast_to(np.asarray(v).astype(np.int64), rows.shape) for v in got]
        except (TypeError, ValueError):
            return report(name, False, f"return (lane, i, j, q), each a number or an array like row's, "
                                       f"got {type(got).__name__}")
        if len(answer) != 4:
            return report(name, False, f"return four numbers (lane, i, j, q), got {len(answer)}")
        for k in range(len(cells)):
            row, col = int(rows[k]), int(cols[k])
            mine = tuple(int(v[k]) for v in answer)
            expected = _accumulator_owner(row, col)
            if mine == expected:
                continue
            right = [label for label, a, e in zip(("the lane", "i", "j", "q"), mine, expected, strict=True)
                     if a == e]
            said = ", ".join(right) + " right" if right else "none of the four right"
            return report(name, False, f"element [{row}][{col}]: you say {mine}: {said}. {hint}")
        return report(name, True, f"all {len(cells):,} elements: each lane holds 128 of the warp's tile "
                                  "in 32 MMA tiles x 4 registers")

    return guarded(name, attempt)


def solution_c_owner(row, col):
    i, j, r, c = row // 16, col // 8, row % 16, col % 8
    g, t = r % 8, c // 2
    return 4 * g + t, i, j, 2 * (r // 8) + c % 2


# ----------------------------------------------------------------------------- exercise 2

TILE_FLOATS = 128  # one warp, 16 bytes a lane


def _run_tile_kernel(kernel, x: np.ndarray, *extra) -> np.ndarray:
    y = np.full(x.size, np.nan, np.float32)
    d_y = cuda.to_device(y)
    kernel[1, 32](cuda.to_device(x), d_y, *extra)
    return d_y.copy_to_host()


def _outputs_and_log(kernel, x: np.ndarray, *extra):
    """Run the one-warp kernel through the tracer (the simulator's cp.async: a copy lands at the wait),
    and on a GPU compiled too: [(where, y)], the cp.async log (with the barriers and shared reads that
    order the copies) and the traced memory counts."""
    traced = np.full(x.size, np.nan, np.float32)
    with cp_async_log() as log:
        counts = trace(kernel, 1, 32, x, traced, *extra)
    outputs = [("" if SIMULATED else "traced on the simulator (copies land at the wait): ", traced)]
    cannot = "" if SIMULATED else gates.missing(gates.Needs(cc=(8, 0), why="cp.async"))
    if cannot:  # a GPU before sm_80 cannot run it: the simulator's run is the check
        print(f"the kernel {cannot}: checked on the simulator only")
    elif not SIMULATED:
        outputs.insert(0, ("on the GPU: ", _run_tile_kernel(kernel, x, *extra)))
    return outputs, log, counts


def _seen(value: float) -> str:
    if np.isnan(value):
        return "NaN: the tile's poison, no copy had landed there when it was read"
    if value == 0:
        return "0: a copy that read fewer bytes than it wrote (the rest is zero-filled)"
    return "a value from the wrong place or an earlier tile"


def _race(log) -> str:
    """'' or what a read of (or plain store to) the tile races with: a cp.async to the same bytes, no
    barrier between, or a lane's store into the bytes its own copy has in flight."""
    found = log.race()
    if found is None:
        return ""
    reader, copier, what = found
    stored = "on a GPU the bytes may end up the copy's or the store's"
    if reader == copier and what.startswith("stores"):  # a plain store into its own copy in flight
        return f"lane {reader} {what}: {stored}"
    if "the write and" in what:
        return f"lane {reader} stores to bytes that lane {copier}'s cp.async writes, {what}: {stored}"
    return (f"lane {reader} reads bytes that lane {copier}'s cp.async writes, {what}: on a GPU it may see "
            "the old bytes or the new")


def _plain_global_loads(counts) -> int:
    """Global loads other than cp.async's 16-byte copies (the tracer counts each copy as one)."""
    table = counts.by_instruction
    plain = table[(table["space"] == "global") & (table["op"] == "ld") & (table["bytes"] != 16)]
    return int(plain["threads"].sum())


COPY_HINT = ("Hint (section 5): a cp.async copy is in flight until a wait covers its committed group, and "
             "the bytes one lane's copy landed are visible to the other lanes only across a barrier that "
             "comes after that wait")


def _misplaced(log) -> str:
    """'' or a hint naming the first lane whose cp.async did not write its own 16 bytes of the tile."""
    for lane, offset, size, _ in sorted(log.issued):
        if offset != 16 * lane:
            first, last = offset // 4, (offset + size) // 4 - 1
            return (f"Hint: lane {lane}'s cp.async wrote tile[{first} .. {last}], not its own "
                    f"tile[{4 * lane} .. {4 * lane + 3}]: check the copy's destination index")
    return ""


def check_cp_async_tile(kernel) -> object:
    """``kernel(x, y)``, one block of 32 threads: y[i] = x[127 - i], x staged in shared memory by cp.async."""
    name = "exercise 2 (a tile through shared memory with cp.async)"

    def attempt():
        x = np.random.default_rng().standard_normal(TILE_FLOATS, dtype=np.float32)
        outputs, log, counts = _outputs_and_log(kernel, x)
        expected = x[::-1]
        race = _race(log)
        if race:
            return report(name, False, f"{race}. {COPY_HINT}")
        for where, y in outputs:
            wrong = np.flatnonzero(~(y == expected))
            if len(wrong):
                i = int(wrong[0])
                return report(name, False, f"{where}{len(wrong)} of {TILE_FLOATS} outputs wrong; y[{i}] is "
                                           f"{_seen(y[i])}. {_misplaced(log) or COPY_HINT}")
        missing = set(range(4 * TILE_FLOATS)) - log.landed_bytes()
        if missing:
            how = "no cp.async was issued" if not log.issued else f"{len(log.issued)} cp.async issued"
            return report(
                name,
                False,
                f"the outputs are right, but {len(missing)} of the tile's {4 * TILE_FLOATS} bytes did not "
                f"arrive by a cp.async that landed ({how}): they were stored by plain writes. Hint: the "
                "exercise is the asynchronous copy: let cp.async bring every byte, with no store of your "
                "own into the tile",
            )
        own = sorted((lane, offset) for lane, offset, _, _ in log.issued)
        if own != [(lane, 16 * lane) for lane in range(32)]:
            lanes = sorted({lane for lane, _ in own})
            return report(name, False, f"the outputs are right, but {len(own)} cp.async came from "
                                       f"{len(lanes)} lane(s), not one from each lane into its own 16 bytes "
                                       "of the tile: each lane copies its own part, x[4t .. 4t+3]")
        plain = _plain_global_loads(counts)
        if plain:
            return report(name, False, f"the outputs are right, but the kernel also reads x with {plain} "
                                       "plain loads: each output must come from the tile in shared memory, "
                                       "copied there by another lane")
        landed = f"{len(log.issued)} cp.async copies landed the tile's {4 * TILE_FLOATS} bytes"
        return report(name, True, f"{landed}, each lane's read by another lane")

    return guarded(name, attempt)


@cuda.jit
def solution_cp_async_tile(x, y):
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = float32(np.nan)
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


# ----------------------------------------------------------------------------- exercise 3

SLAB_TILES = ((48, 16), (32, 40), (80, 24), (16, 8), (64, 56))  # (wm, wn): none the lesson counts
# and one more, drawn at random from this family (not one of the five), which the text does not list
SLAB_FAMILY = tuple((wm, wn) for wm in range(16, 129, 16) for wn in range(8, 65, 8)  # less the lesson's
                    if (wm, wn) not in (*SLAB_TILES, (64, 32), (64, 64)))  # two, whose counts it prints


def _random_slab_tile(rng=None) -> tuple[int, int]:
    rng = np.random.default_rng() if rng is None else rng
    return SLAB_FAMILY[int(rng.integers(len(SLAB_FAMILY)))]


def _counted_per_slab(wm: int, wn: int) -> tuple[int, int, int]:
    """Counted in the generated source of a tile with this warp tile and one 16-deep slab: MMAs, 16-byte
    shared loads (of A) and 4-byte shared loads (of B), per warp."""
    slabs = 2  # a 32-deep tile (two slabs): its copies spread evenly over the block's threads
    bn = math.lcm(32, wn)  # a multiple of 32 (the B swizzle) that the warp tile divides
    tile = tc_codegen.TcTile(bm=wm, bn=bn, bk=16 * slabs, wm=wm, wn=wn, stages=2)
    source = tc_codegen.kernel_source(tile)
    loop = source[source.index("for tile in range(tiles):") : source.index("# write the accumulators")]
    b_loads = len(re.findall(r"smem\[sb \+ cb", loop))
    return loop.count("mma_tf32(") // slabs, loop.count("load4_shared(") // slabs, b_loads // slabs


def check_per_slab(per_slab) -> object:
    """``per_slab(wm, wn)`` returns (MMAs, 16-byte A loads, 4-byte B loads) of one warp per 16-deep slab.
    The check passes its five tiles at once, as NumPy arrays of wm and wn: the answer is the count in
    arithmetic, held to the generated source of each tile; then one more tile, drawn at random from the
    family (wm a multiple of 16 up to 128, wn of 8 up to 64), that the text does not list."""
    name = "exercise 3 (a warp tile's work per slab)"
    hint = ("Hint: a slab is 16 deep, two k-steps of 8; an MMA tile is 16x8; a lane's one 16-byte load of "
            "A covers 4 k of one row (rows g and g+8), a 4-byte load of B one k of one column")

    def attempt():
        counts = "counts the generated kernel for you"
        helpers = [
            (_counted_per_slab, "exercises._counted_per_slab (the check's own count)", counts),
            (tc_codegen.kernel_source, "the generator's kernel_source (the code the check counts)", counts)]
        refused = _calls_a_helper(per_slab, helpers)
        tiling = "from the tiling: MMA tiles of 16x8, slabs two k-steps deep"
        if refused:
            return report(name, False, f"{refused}, {tiling}")
        wms = np.array([wm for wm, _ in SLAB_TILES], np.int64)
        wns = np.array([wn for _, wn in SLAB_TILES], np.int64)
        try:
            got = _run_refusing(per_slab, helpers, wms, wns)
        except NotImplementedError:
            raise
        except Refused as refusal:
            return report(name, False, f"{refusal}, {tiling}")
        except Exception as error:  # noqa: BLE001 - scalar-only code meets arrays: say how to fix it
            return report(name, False, f"the check calls per_slab(wm, wn) with NumPy arrays of {len(wms)} "
                                       f"tiles, and your code raised {type(error).__name__}: {error}. Count "
                                       "with arithmetic (//, *, +), which works on arrays as on numbers")
        try:
            answer = [np.broadcast_to(np.asarray(v).astype(np.int64), wms.shape) for v in got]
        except (TypeError, ValueError):
            return report(name, False, f"return (MMAs, A loads, B loads), got {type(got).__name__}")
        if len(answer) != 3:
            return report(name, False, f"return three counts (MMAs, A loads, B loads), got {len(answer)}")
        labels = ("MMAs", "16-byte loads of A", "4-byte loads of B")
        for k, (wm, wn) in enumerate(SLAB_TILES):
            mine = tuple(int(v[k]) for v in answer)
            expected = _counted_per_slab(wm, wn)
            if mine != expected:
                wrong = [label for label, a, e in zip(labels, mine, expected, strict=True) if a != e]
                return report(name, False, f"warp tile {wm}x{wn}: you say {mine}; the generated kernel's "
                                           f"{' and '.join(wrong)} differ. {hint}")
        hidden = ("on one more warp tile, drawn at random (wm a multiple of 16 up to 128, wn of 8 up to 64) "
                  "and not listed in the text,")
        wm, wn = _random_slab_tile()
        try:
            got = _run_refusing(per_slab, helpers, np.array([wm], np.int64), np.array([wn], np.int64))
            mine = tuple(int(np.ravel(np.asarray(v))[0]) for v in got)
        except NotImplementedError:
            raise
        except Refused as refusal:
            return report(name, False, f"{refusal}, {tiling}")
        except Exception as error:  # noqa: BLE001 - a table of the five tiles meets a sixth
            return report(name, False, f"the five listed tiles are right, but {hidden} your code raised "
                                       f"{type(error).__name__}: the counts must follow from wm and wn, not "
                                       f"from a table of the five. {hint}")
        expected = _counted_per_slab(wm, wn)
        if len(mine) != 3 or mine != expected:
            wrong = [label for label, a, e in zip(labels, mine, expected, strict=False) if a != e]
            return report(name, False, f"the five listed tiles are right, but {hidden} your "
                                       f"{' and '.join(wrong) or 'counts'} differ from the generated "
                                       f"kernel's: the counts must follow from wm and wn. {hint}")
        mmas, a, b = _counted_per_slab(64, 64)
        narrow = _counted_per_slab(64, 32)
        return report(name, True, f"e.g. 64x64: {mmas} MMAs from {a + b} shared loads "
                                  f"({mmas / (a + b):.2f} MMAs per load; 64x32: "
                                  f"{narrow[0] / sum(narrow[1:]):.2f})")

    return guarded(name, attempt)


def solution_per_slab(wm, wn):
    m_tiles, n_tiles = wm // 16, wn // 8
    return 2 * m_tiles * n_tiles, 2 * m_tiles, 4 * n_tiles


# ----------------------------------------------------------------------------- exercise 4

PREDICT_TOLERANCE = 0.02
# Made-up pairs (base kernel, changed kernel) on other GPUs: (SMs busy, clock in MHz, base instructions,
# base issue %, instructions, issue %); both durations are made up from the identity there, not measured.
MADE_UP = ((100, 1410.0, 180_000_000, 64.0, 205_000_000, 52.5),
           (46, 2520.0, 90_000_000, 81.0, 72_000_000, 77.0))


def _cases(result) -> list[tuple]:
    """(label, base_us, base instructions, base issue %, instructions, issue %, duration to compute)."""
    truth = lesson.issue_time_model(result)
    base_name = lesson.LESSON6
    base = truth.loc[base_name]
    cases = [(f"{name} from {base_name}", base.measured_us, base.instructions, base.issue_active,
              row.instructions, row.issue_active, row.measured_us)
             for name, row in truth.iterrows() if name != base_name]
    for number, (sms, clock, n0, p0, n1, p1) in enumerate(MADE_UP, start=1):
        label = f"made-up pair {number} ({sms} SMs at {clock:.0f} MHz)"
        cases.append((label, lesson.issue_time(n0, p0, sms, clock), n0, p0, n1, p1,
                      lesson.issue_time(n1, p1, sms, clock)))
    return cases


def check_issue_time(predicted_us) -> object:
    """``predicted_us(base_us, base_instructions, base_issue_pct, instructions, issue_pct)``: the changed
    kernel's duration in microseconds, computed from the base kernel's measured one and both kernels'
    counters (an identity on the same SMs at the same clock, not a forecast); held to Nsight
    Compute's durations at 2048^3 in the H200 recording (within 2%) and to made-up pairs on other GPUs."""
    name = "exercise 4 (a changed kernel's time from its counters)"
    hint = ("Hint: both kernels run on the same SMs at the same clock, one block per SM; section 7: on "
            "them, a kernel lasts its warp instructions over the rate its schedulers issue them")

    def attempt():
        model = "computes the duration from the counters for you"
        helpers = [
            (lesson.issue_time, "the course's lesson.issue_time (section 7's identity)", model),
            (lesson.issue_time_model, "the course's lesson.issue_time_model (the recorded durations)",
             "looks the measured durations up"),
            (_cases, "exercises._cases (the check's own cases)", "holds the answers")]
        refused = _calls_a_helper(predicted_us, helpers)
        if refused:
            return report(name, False, f"{refused}, as a ratio of the two kernels' counters")
        cases = _cases(lessons.load(lesson.NAME, live=False))
        for label, base_us, n0, p0, n1, p1, expected in cases:
            try:
                got = _run_refusing(predicted_us, helpers, base_us, n0, p0, n1, p1)
            except Refused as refusal:
                return report(name, False, f"{refusal}, as a ratio of the two kernels' counters")
            try:
                value = float(got)
            except (TypeError, ValueError):
                value = float("nan")
            if not np.isfinite(value):
                return report(name, False, f"{label}: return microseconds (a number), got {got!r}. {hint}")
            if abs(value / expected - 1) > PREDICT_TOLERANCE:
                measured = "measured" if "made-up" not in label else "made-up"
                return report(name, False, f"{label}: you compute {value:.1f} us, more than "
                                           f"{PREDICT_TOLERANCE:.0%} from the {measured} duration. {hint}")
        return report(name, True, f"within {PREDICT_TOLERANCE:.0%} on all {len(cases)} pairs: same SMs, same "
                                  "clock, so each ratio of durations splits into a ratio of instructions "
                                  "times one of issue rates (an identity, not a cause)")

    return guarded(name, attempt)


def solution_issue_time(base_us, base_instructions, base_issue_pct, instructions, issue_pct):
    return base_us * (instructions / base_instructions) * (base_issue_pct / issue_pct)


# ----------------------------------------------------------------------------- exercise 5

PIPELINE_STAGES = 3
# tile counts the check runs (9: a wait chosen by `tiles <= 8` fails; 12: one chosen by `tile < 8`,
# which stops overlapping after tile 8, fails)
PIPELINE_TILES = (1, 2, 5, 7, 9, 12)
PIPELINE_RANDOM_TILES = tuple(n for n in range(3, 9) if n not in PIPELINE_TILES)  # and one of 3..8 not run


def _idle_waits(log, tiles: int) -> tuple[int, int, int] | None:
    """(thread, which wait (from 1), its waits) of the first wait, other than a thread's last, after
    which none of that thread's copies was in flight; or None. Waits past one a tile that land nothing
    (a drain after the loop, say) are left out: the loop's last wait is then the last."""
    waits: dict[int, list[tuple[int, int]]] = {}
    for thread, _groups, copies, before in log.waits:
        waits.setdefault(thread, []).append((copies, before))
    for both in waits.values():
        while len(both) > tiles and both[-1][1] == 0:
            both.pop()
    for thread, both in sorted(waits.items()):
        copies = [after for after, _ in both]
        for number, in_flight in enumerate(copies[:-1], start=1):
            if not in_flight:
                return thread, number, len(copies)
    return None


def check_pipeline(kernel) -> object:
    """``kernel(x, y, tiles)``, one block of 32 threads: y = x reversed tile by tile (128 floats a tile),
    the tiles streamed through a 3-stage cp.async pipeline."""
    name = "exercise 5 (a 3-stage cp.async pipeline: the wait and the barrier)"
    hint = ("Hint: before a lane reads tile `tile`, every lane's copies of it must have landed and be "
            "visible to it; before a lane's next copy overwrites a stage, every lane must be done reading "
            "it; and a pipeline waits only for what it reads now")

    def run(tiles: int, rng) -> tuple[str, str]:
        """('', '') if right with this many tiles, else (the message, what kind of slip, in words that do
        not depend on the tile count)."""
        x = rng.standard_normal(TILE_FLOATS * tiles, dtype=np.float32)
        outputs, log, _ = _outputs_and_log(kernel, x, np.int64(tiles))
        expected = x.reshape(tiles, TILE_FLOATS)[:, ::-1].ravel()
        race = _race(log)
        if race:
            return f"{tiles} tile(s): {race}. {hint}", "a read or store of shared memory races a copy"
        for where, y in outputs:
            wrong = np.flatnonzero(~(y == expected))
            if len(wrong):
                i = int(wrong[0])
                return (f"{tiles} tile(s), {where}{len(wrong)} of {y.size} outputs wrong; y[{i}] (tile "
                        f"{i // TILE_FLOATS}) is {_seen(y[i])}. {hint}", f"{where}outputs are wrong")
        copies = len(log.landed)
        if copies < 32 * tiles or len(log.issued) != copies:
            return (f"{tiles} tile(s): {copies} of {32 * tiles} cp.async copies landed (plain stores do "
                    "not count). Hint: keep the copies as given", "not every cp.async copy landed")
        idle = _idle_waits(log, tiles)
        if idle:
            thread, number, count = idle
            return (f"{tiles} tile(s): the outputs are right, but lane {thread}'s wait {number} of {count} "
                    "left none of its copies in flight: every wait but the last must leave the next tile's "
                    "copy coming while the lane works on this one (a wait for everything overlaps nothing). "
                    f"{hint}", "a wait but the last left no copy in flight")
        return "", ""

    def attempt():
        rng = np.random.default_rng()
        for tiles in PIPELINE_TILES:
            message, _ = run(tiles, rng)
            if message:
                return report(name, False, message)
        drawn = int(rng.choice(PIPELINE_RANDOM_TILES))
        message, slip = run(drawn, rng)
        if message:
            drawn_from = ", ".join(map(str, PIPELINE_RANDOM_TILES[:-1])) + f" or {PIPELINE_RANDOM_TILES[-1]}"
            return report(name, False, f"{', '.join(map(str, PIPELINE_TILES))} tiles pass, but with a tile "
                                       f"count drawn at random ({drawn_from}), {slip}: the loop must be "
                                       f"right for any count. {hint}")
        return report(name, True, f"{len(PIPELINE_TILES) + 1} runs ({', '.join(map(str, PIPELINE_TILES))} "
                                  "tiles and a count drawn at random) right, the next tile in flight at "
                                  "every wait but the last, every read ordered by a barrier with the copies "
                                  "to its bytes")

    return guarded(name, attempt)


@cuda.jit
def solution_pipeline(x, y, tiles):
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = float32(np.nan)
    cuda.syncthreads()
    for s in range(2):  # prologue: tiles 0 and 1 in flight
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        ptx.cp_async_wait_group(1)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


# ----------------------------------------------------------------------------- exercise 6


def check_mma_rounded(kernel) -> object:
    """``kernel(a, bt, d)``, one warp: D = A B with B given transposed (``bt`` 8x8, bt[n][k] = B[k][n]),
    A and B rounded to TF32 (``cvt.rna``), C = 0."""
    name = "exercise 6 (cvt.rna: round, do not cut)"

    def attempt():
        rng = np.random.default_rng()
        a = rng.standard_normal((16, 8), dtype=np.float32)
        bt = rng.standard_normal((8, 8), dtype=np.float32)
        d = np.full((16, 8), np.nan, np.float32)
        cannot = "" if SIMULATED else gates.missing(gates.Needs(cc=(8, 0), why="mma.sync .tf32"))
        simulated = d.copy()  # the simulator's run: its MMAs are counted and their D kept
        mmas = mmas_completed()
        if cannot:  # a GPU before sm_80 cannot run it: the simulator runs it
            print(f"{name}: the kernel {cannot}: checked on the simulator only")
            trace(kernel, 1, 32, a, bt, simulated)
            d = simulated
        else:
            d_d = cuda.to_device(d)
            kernel[1, 32](cuda.to_device(a), cuda.to_device(bt), d_d)
            d = d_d.copy_to_host()
            if SIMULATED:
                simulated = d
            else:  # the MMAs are counted on the simulator
                trace(kernel, 1, 32, a, bt, simulated)
        mmas = mmas_completed() - mmas
        if np.isnan(d).any():
            return report(name, False, f"{int(np.isnan(d).sum())} of D's 128 elements never written (NaN). "
                                       "Hint: each lane stores its four d's at rows g, g+8, columns 2t, 2t+1")
        scale = np.abs(a.astype(np.float64)) @ np.abs(bt.T.astype(np.float64))
        unit = 2.0**-21  # the MMA's sums, within 2^-21 |A||B| of exact (the simulator's model, the H200)

        def off(convert):
            exact = convert(a).astype(np.float64) @ convert(bt).T.astype(np.float64)
            return float(np.max(np.abs(d - exact) / scale))

        if mmas != 1:
            return report(name, False, f"the warp ran {mmas} mma_tf32, not one: the exercise is one "
                                       "tensor-core MMA of the whole warp, each lane bringing its fragments")
        from_mma = mma_outputs(1)[0]
        foreign = int(np.sum(~np.isin(simulated, from_mma)))  # placed wrong is not foreign: see below
        if foreign:
            some = "none" if foreign == 128 else "not all"
            return report(name, False, f"the warp ran its MMA, but {some} of the values stored in d are "
                                       "what the MMA returned: the product must come from the "
                                       "tensor cores. Hint: store each lane's d0..d3 from mma_tf32 as they "
                                       "are, at rows g, g+8, columns 2t, 2t+1, with no arithmetic of your "
                                       "own")
        if off(tf32_rna) <= unit:
            return report(name, True, "D is A B with A and B rounded to nearest TF32, not cut")
        if off(tf32_truncate) <= unit:
            return report(name, False, "D is A B with A and B *cut* to TF32: the tensor cores read the 13 "
                                       "low bits as zeros. Hint: round each operand with cvt.rna before the "
                                       "MMA")
        if off(lambda v: v) <= 2.0**-10:
            return report(name, False, "D is near A B but neither rounded nor cut as a whole: is every one "
                                       "of the six operands converted the same way?")
        right = tf32_rna(a).astype(np.float64) @ tf32_rna(bt).T.astype(np.float64)
        if np.all(np.abs(np.sort(d.ravel()) - np.sort(right.ravel())) <= unit * scale.max()):
            return report(name, False, "D holds the rounded product's 128 values, but not each in its place: "
                                       "check where each lane stores d0..d3 (section 1's layout of C)")
        return report(name, False, "D is not A B: check each lane's fragments against section 1's layout: "
                                   "which elements of A its a0..a3 hold, and which element of bt its b0 and "
                                   "b1 read (bt[n][k] = B[k][n])")

    return guarded(name, attempt)


@cuda.jit
def solution_mma_rounded(a, bt, d):
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4
    a0 = ptx.cvt_rna_tf32(a[g, t])
    a1 = ptx.cvt_rna_tf32(a[g + 8, t])
    a2 = ptx.cvt_rna_tf32(a[g, t + 4])
    a3 = ptx.cvt_rna_tf32(a[g + 8, t + 4])
    b0 = ptx.cvt_rna_tf32(bt[g, t])
    b1 = ptx.cvt_rna_tf32(bt[g, t + 4])
    zero = float32(0)
    d0, d1, d2, d3 = ptx.mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
    d[g, 2 * t] = d0
    d[g, 2 * t + 1] = d1
    d[g + 8, 2 * t] = d2
    d[g + 8, 2 * t + 1] = d3
