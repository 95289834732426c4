"""CI: lessons 2, 4 and 7 on the simulator standing in for one target GPU (``GPU_LESSONS_DEVICE``).

    GPU_LESSONS_DEVICE=t4 python3 tools/check_as_target.py

Runs lessons 2 and 4's ``check()`` and ``gpu-lessons run tensor_cores`` (its checks, the recording, its
figures) as that GPU, and holds the gating to what the target's limits say: one line names what lesson 7
leaves out there and why (a T4: every mma.sync and cp.async kernel, sm_80; an RTX 4090: the two tiles
over its 99 KiB of shared memory per block), the rest runs, nothing fails. Exit status 0 when all holds.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile


def main() -> int:
    from gpu_lessons import cli, device
    from gpu_lessons.lessons import bank_conflicts, littles_law
    from gpu_lessons.lessons import tensor_cores as lesson

    info = device.device_info()
    if not info.target:
        print("check_as_target: set GPU_LESSONS_DEVICE to a target (t4, rtx4090, ...)", file=sys.stderr)
        return 2
    problems = []
    for module in (littles_law, bank_conflicts):
        checks = module.check()
        if checks.empty or not checks["passed"].all():
            problems.append(f"{module.NAME}: {int((~checks['passed']).sum())} of {len(checks)} checks failed")
    gated = lesson.left_out()
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(out):
        status = cli.main(["run", "tensor_cores", "--out", folder])
    text = out.getvalue()
    said = [line for line in text.splitlines() if "left out on this GPU" in line]
    if status != 0:
        problems.append(f"gpu-lessons run tensor_cores exited {status}")
    if gated and (len(said) != 1 or not all(name in said[0] for name in gated)):
        problems.append(f"lesson 7 must say in one line what it leaves out ({', '.join(gated)}); "
                        f"said: {said}")
    if not gated and said:
        problems.append(f"lesson 7 left out something on a GPU that runs it all: {said}")
    runs = len(lesson.runnable())
    print(f"{info.target}: lessons 2 and 4 checked; lesson 7 runs {runs} of {len(lesson.VARIANTS)} "
          f"variants here, leaves out {len(gated)} kernels in one line")
    for problem in problems:
        print(f"  FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
