"""What this GPU cannot run: a kernel's needs held against the device's limits, and one line saying so.

    from gpu_lessons import gates
    needs = gates.Needs(cc=(8, 0), why="mma.sync .tf32, cp.async", shared_bytes=128 * 1024)
    gates.missing(needs)          # "" when it fits, else why not, in a few words
    gates.line("tensor_cores", {"warp_tile 4 stages": why})   # the one line a lesson prints

A lesson part whose kernel needs a newer compute capability (lesson 7's ``mma.sync`` and ``cp.async``:
sm_80) or more shared memory per block than the GPU allows even after opting in (a 128 KiB tile on
sm_86/sm_89's 99 KiB) is left out on that GPU, with one line saying what and why: in the CLI, the
notebook and the tests, never a traceback and never a silent omission. The limits are the device's
(``occupancy.sm_limits()``: read from the GPU, or the target the simulator stands in for,
``GPU_LESSONS_DEVICE``); on the plain simulator, the recorded H200's, where everything fits.
The same verdicts, from the compiler for every target, are the kernel x target matrix
(``gpu_lessons.targets``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .checks import InputError

KiB = 1024


class NotOnThisGPU(InputError):
    """A kernel this GPU cannot run (one line: what and why)."""


@dataclass(frozen=True)
class Needs:
    """What a kernel needs of the GPU: a compute capability (and the instructions that need it) and the
    shared memory of one block (static + dynamic, bytes)."""

    cc: tuple[int, int] = (0, 0)
    why: str = ""  # the instructions that need ``cc``, e.g. "mma.sync .tf32, cp.async"
    shared_bytes: int = 0


def _cc(limits) -> tuple[int, int]:
    major, minor = (int(p) for p in limits.compute_capability.split("."))
    return major, minor


def sm_name(cc: tuple[int, int]) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def missing(needs: Needs, limits=None) -> str:
    """Why a kernel with these needs cannot run on this GPU ("" when it can)."""
    if limits is None:
        from .occupancy import sm_limits

        limits = sm_limits()
    have = _cc(limits)
    if have < needs.cc:
        return f"needs {sm_name(needs.cc)} for {needs.why}; this GPU is {sm_name(have)}"
    if needs.shared_bytes > limits.shared_per_block_optin:
        return (f"needs {needs.shared_bytes / KiB:g} KiB of shared memory per block; a block may have "
                f"{limits.shared_per_block_optin / KiB:g} KiB on {sm_name(have)}")
    return ""


def require(what: str, needs: Needs, limits=None) -> None:
    """Raise NotOnThisGPU (one line) when ``what`` cannot run on this GPU."""
    why = missing(needs, limits)
    if why:
        raise NotOnThisGPU(f"{what} cannot run on this GPU: it {why}")


def left_out(needs: dict, limits=None) -> dict[str, str]:
    """{name: why} of the named needs that do not fit this GPU, in their order."""
    return {name: why for name, n in needs.items() if (why := missing(n, limits))}


def line(lesson: str, gated: dict[str, str]) -> str:
    """One line: what a lesson leaves out on this GPU and why ("" when nothing), grouped by reason."""
    if not gated:
        return ""
    by_reason: dict[str, list[str]] = {}
    for name, why in gated.items():
        by_reason.setdefault(why, []).append(name)
    parts = [f"{', '.join(names)} ({why})" for why, names in by_reason.items()]
    return f"{lesson}: left out on this GPU: {'; '.join(parts)}"


_SAID: set[str] = set()  # the lines this process printed


def say(lesson: str, gated: dict[str, str], file=None, once: bool = False) -> None:
    """Print ``line`` (nothing when nothing is left out); ``once``: not if this process printed it
    already (a CLI run's checks said it before its sections)."""
    text = line(lesson, gated)
    if text and not (once and text in _SAID):
        print(text, file=file or sys.stdout)
    _SAID.add(text)
