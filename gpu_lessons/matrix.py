"""Every kernel the lessons launch, compiled and assembled for every target GPU, without a GPU.

    gpu-lessons targets                 # the kernel x target matrix, from data/targets.json
    gpu-lessons targets --write         # recompile what changed (needs the `targets` extra), rewrite it

Each launch of ``gpu_lessons.inventory`` is compiled by numba-cuda's own compiler (``compile`` mode: the
simulator off, no GPU needed) once, then NVVM writes its PTX for each target's compute capability and
``ptxas`` (NVIDIA's assembler, from the pinned ``nvidia-cuda-nvcc-cu12`` wheel: the ``targets`` extra)
assembles it as numba would for that GPU (sm_90a on sm_90). ``ptxas -v`` says the registers, the spills
and the static shared memory; with the launch's threads and dynamic shared memory they are held against
the target's limits (``gpu_lessons.targets``):

* fits: the kernel assembles and one block can be resident (``occupancy.occupancy(..., opt_in=True)``);
* gated, and why: ``needs sm_80 (...)`` when ptxas refuses an instruction of the PTX for this
  architecture; ``shared 144 KiB > 99 KiB opt-in on sm_89`` when static + dynamic shared memory is over
  the most a block may have; ``registers: ...`` when the block's registers do not fit.

``data/targets.json`` keeps the result: per kernel, a key (a hash of everything its PTX depends on: the
source of its module or its generated source, the intrinsics' modules, signature, threads, the
toolchain), what ptxas said per architecture, and the verdict per target. ``--write`` recompiles only
the kernels whose key changed (``--all``: every one). CI recomputes every key and the verdicts from the
recorded compile results (a stale entry fails), and recompiles a sample (``tests/test_targets_matrix.py``).
"""

from __future__ import annotations

import hashlib
import json
import linecache
import os
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from .targets import MATRIX_FILE, TARGETS, Target

NVCC_PACKAGE = "nvidia-cuda-nvcc-cu12"
NVCC_VERSION = "12.9.86"  # pinned in pyproject's `targets` extra, with NVRTC (numba-cuda looks for it)
PACKAGE = Path(__file__).resolve().parent
# modules of device code a kernel may call besides its own module: part of every key
INTRINSICS = ("ptx.py", "vector.py")
FRONT_END_CC = (7, 5)  # numba's typing and lowering: the same IR for every target here (all >= 7.5)


def arch(cc: tuple[int, int]) -> str:
    """The architecture numba compiles for on a GPU of this compute capability (sm_90a on sm_90)."""
    return f"sm_{cc[0]}{cc[1]}" + ("a" if cc >= (9, 0) else "")


def architectures() -> list[str]:
    return list(dict.fromkeys(arch(t.cc) for t in TARGETS.values()))


def _arch_cc(name: str) -> tuple:
    digits = name.removeprefix("sm_").rstrip("a")
    cc = (int(digits[:-1]), int(digits[-1]))
    return (*cc, "a") if name.endswith("a") else cc


def matrix_path(root: Path | None = None) -> Path:
    from .course import data_folder

    return (root or data_folder()) / MATRIX_FILE


def read(root: Path | None = None) -> dict:
    path = matrix_path(root)
    if not path.exists():
        return {"kernels": {}}
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------
# Keys: what a kernel's PTX depends on


def _source_of(function) -> str:
    """The text a kernel function comes from: its module's file, or its generated source."""
    filename = function.__code__.co_filename
    if filename.startswith("<"):
        return "".join(linecache.getlines(filename))
    return Path(filename).read_text()


def _py_func(kernel):
    return getattr(kernel, "py_func", None) or kernel.fn  # a dispatcher, or the simulator's kernel


def key(launch) -> str:
    """A hash of everything the launch's compiled code depends on (works in every mode)."""
    digest = hashlib.sha256()
    parts = [launch.label, launch.signature, str(launch.threads), _source_of(_py_func(launch.kernel())),
             *((PACKAGE / name).read_text() for name in INTRINSICS),
             f"numba-cuda {metadata.version('numba-cuda')}", f"{NVCC_PACKAGE} {NVCC_VERSION}"]
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Compiling (compile mode only)


def ptxas_path() -> Path:
    try:
        files = metadata.files(NVCC_PACKAGE) or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "ptxas":
            return Path(file.locate())
    raise RuntimeError(f"ptxas not found: install the targets extra (pip install -e '.[targets]': "
                       f"{NVCC_PACKAGE}=={NVCC_VERSION})")


_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def assemble(ptx: str, architecture: str, max_registers: int | None = None) -> dict:
    """ptxas -v on one PTX: registers, spills and static shared memory, or its error."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        command = [str(ptxas_path()), f"-arch={architecture}", "-v", str(source),
                   "-o", str(Path(folder) / "k.cubin")]
        if max_registers:
            command.insert(1, f"-maxrregcount={max_registers}")
        done = subprocess.run(command, capture_output=True, text=True)
    text = done.stdout + done.stderr
    if done.returncode:
        errors = [line.split("error   :", 1)[1].strip() for line in text.splitlines() if "error   :" in line]
        return {"error": "; ".join(dict.fromkeys(errors)) or text.strip()[-300:]}
    used, smem, spill = _PTXAS_USED.search(text), _PTXAS_SMEM.search(text), _PTXAS_SPILL.search(text)
    return {"registers": int(used.group(1)) if used else 0,
            "static_shared": int(smem.group(1)) if smem else 0,
            "stack": int(spill.group(1)) if spill else 0,
            "spill_stores": int(spill.group(2)) if spill else 0,
            "spill_loads": int(spill.group(3)) if spill else 0}


class _FrontEndDevice:
    """What numba's device functions ask of "the current device" when they compile: its compute
    capability. Without a GPU there is none; the compile checks give them FRONT_END_CC."""

    compute_capability = FRONT_END_CC


def _without_a_device() -> None:
    """numba-cuda compiles a device function for the current device's compute capability (its
    dispatcher asks ``get_current_device()``, which needs a driver): in compile mode, answer for it."""
    from numba.cuda import dispatcher

    dispatcher.get_current_device = _FrontEndDevice


def compile_launch(launch) -> dict:
    """The launch's kernel compiled once by numba, then NVVM and ptxas per architecture."""
    from numba.core import types
    from numba.cuda.compiler import compile_cuda
    from numba.cuda.cudadrv import nvvm
    from numba.cuda.dispatcher import kernel_fixup

    _without_a_device()
    kernel = launch.kernel()
    options = kernel.targetoptions
    fastmath = options.get("fastmath", False)
    cres = compile_cuda(kernel.py_func, types.void, launch.argument_types(), debug=False, lineinfo=False,
                        forceinline=options.get("forceinline", False), fastmath=fastmath,
                        nvvm_options={"fastmath": fastmath, "opt": 3 if options.get("opt", True) else 0},
                        cc=FRONT_END_CC, max_registers=options.get("max_registers"))
    library = cres.library
    function = library.get_function(cres.fndesc.llvm_func_name)
    kernel_fixup(function, False)
    nvvm.set_launch_bounds(function, options.get("launch_bounds"))
    cap = options.get("max_registers")
    return {name: assemble(library.get_asm_str(cc=_arch_cc(name)), name, cap) for name in architectures()}


def _compile_worker(names: list[str]) -> dict:
    """In a compile-mode process: compile these launches (by name)."""
    from .inventory import launches

    chosen = {launch.name: launch for launch in launches() if launch.name in set(names)}
    results = {}
    for name in names:
        started = time.perf_counter()
        try:
            compiled = compile_launch(chosen[name])
        except Exception as error:  # noqa: BLE001 - numba's failure is this kernel's result
            message = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            failed = {"error": f"numba could not compile it ({message[:300]})"}
            compiled = dict.fromkeys(architectures(), failed)
        results[name] = {"compiled": compiled, "seconds": round(time.perf_counter() - started, 1)}
        print(f"  {name}: {results[name]['seconds']} s", file=sys.stderr, flush=True)
    return results


def compile_in_processes(names: list[str], workers: int = 2) -> dict:
    """Compile launches in ``workers`` fresh processes in compile mode (the caller may be on the
    simulator); returns name -> {"compiled": {arch: ptxas result}, "seconds": s}."""
    if not names:
        return {}
    environment = {**os.environ, "GPU_LESSONS_MODE": "compile", "NUMBA_ENABLE_CUDASIM": "0"}
    code = ("import json, sys; from gpu_lessons import matrix; "
            "print(json.dumps(matrix._compile_worker(json.loads(sys.argv[1]))))")
    shares = [names[w::workers] for w in range(min(workers, len(names)))]
    processes = [subprocess.Popen([sys.executable, "-c", code, json.dumps(share)], env=environment,
                                  stdout=subprocess.PIPE, text=True) for share in shares]
    results = {}
    for process in processes:
        out, _ = process.communicate()
        if process.returncode:
            raise RuntimeError(f"a compile worker failed (status {process.returncode})")
        results.update(json.loads(out.strip().splitlines()[-1]))
    return results


# ---------------------------------------------------------------------------------------------
# Verdicts: a compiled kernel against a target's limits


def kib(nbytes: int) -> str:
    value = nbytes / 1024
    return f"{value:.0f} KiB" if value == int(value) else f"{value:.1f} KiB"


_NEEDS = re.compile(r"(?:Feature|Instruction) '([^']+)' requires \.target (sm_\d+)")


# ptxas names the parts of an instruction it refuses; the matrix names the instruction
FEATURES = {".tf32": "TF32", ".m16n8k8": "mma.sync", "cp.async": "cp.async",  # .tf32: mma.sync or cvt.rna
            "cp.async.commit_group": "cp.async", "cp.async.wait_group": "cp.async"}


def _refusal(error: str) -> str:
    """ptxas's refusal in a few words: 'needs sm_80 (mma.sync, TF32, cp.async)'."""
    needs = _NEEDS.findall(error)
    if needs:
        arch_needed = max((a for _, a in needs), key=lambda a: int(a[3:]))
        features = sorted({FEATURES.get(f, f) for f, _ in needs}, key=lambda f: (not f.startswith("mma"), f))
        return f"needs {arch_needed} ({', '.join(features)})"
    return error[:200]


def verdict(compiled: dict, threads: int, dynamic_shared: int, target: Target) -> dict:
    """fits or not, why not, and what the kernel takes on this target."""
    return judge(compiled[arch(target.cc)], threads, dynamic_shared, target.sm_limits(), arch(target.cc))


def judge(result: dict, threads: int, dynamic_shared: int, limits, architecture: str) -> dict:
    """One compile result (ptxas's for ``architecture``) against SM limits (a target's, or a GPU's
    read live: ``occupancy.SMLimits``)."""
    from .occupancy import occupancy

    if "error" in result:
        return {"fits": False, "reason": _refusal(result["error"])}
    shared = result["static_shared"] + dynamic_shared
    cell = {"registers": result["registers"], "spill_bytes": result["spill_stores"],
            "shared": shared, "dynamic_shared": dynamic_shared}
    sm = architecture.rstrip("a")
    if threads > limits.max_threads_per_block:
        return {**cell, "fits": False,
                "reason": f"{threads} threads > {limits.max_threads_per_block} a block"}
    if shared > limits.shared_per_block_optin:
        return {**cell, "fits": False,
                "reason": f"shared {kib(shared)} > {kib(limits.shared_per_block_optin)} opt-in on {sm}"}
    occ = occupancy(threads, result["registers"], shared, limits, opt_in=True)
    if occ.blocks_per_sm == 0:
        return {**cell, "fits": False, "reason": f"registers: {occ.detail}"}
    return {**cell, "fits": True, "reason": "", "blocks_per_sm": occ.blocks_per_sm}


def verdicts(compiled: dict, launch) -> dict:
    return {t.key: verdict(compiled, launch.threads, launch.dynamic_shared(t), t) for t in TARGETS.values()}


# ---------------------------------------------------------------------------------------------
# The matrix: make, check, show


def entry(launch, compiled: dict, launch_key: str) -> dict:
    return {"lesson": launch.lesson, "part": launch.part, "label": launch.label,
            "function": _py_func(launch.kernel()).__name__, "signature": launch.signature,
            "threads": launch.threads, "key": launch_key,
            "compiled": compiled, "targets": verdicts(compiled, launch)}


def stale(matrix: dict) -> dict[str, str]:
    """Launches whose entry no longer matches the code: name -> why (a new kernel, a changed key,
    verdicts that differ from the recorded compile results and today's limits, a gone kernel)."""
    from .inventory import launches

    problems = {}
    current = {launch.name: launch for launch in launches()}
    kernels = matrix.get("kernels", {})
    for name, launch in current.items():
        recorded = kernels.get(name)
        if recorded is None:
            problems[name] = "not in the matrix"
        elif recorded["key"] != key(launch):
            problems[name] = "its code changed (key)"
        elif recorded["threads"] != launch.threads or \
                recorded["targets"] != verdicts(recorded["compiled"], launch):
            problems[name] = "its launch or the targets' limits changed"
    problems.update({name: "no longer launched" for name in kernels if name not in current})
    return problems


def make(everything: bool = False, workers: int = 2, root: Path | None = None) -> dict:
    """Recompile the stale launches (or all), write data/targets.json; returns the matrix."""
    from .inventory import launches

    old = read(root)
    problems = stale(old)
    recompile = ("not in the matrix", "its code changed (key)")
    todo = [launch.name for launch in launches() if everything or problems.get(launch.name) in recompile]
    fresh = compile_in_processes(todo, workers)
    kernels = {}
    for launch in launches():
        if launch.name in fresh:
            compiled, seconds = fresh[launch.name]["compiled"], fresh[launch.name]["seconds"]
        else:
            before = old["kernels"][launch.name]
            compiled, seconds = before["compiled"], before.get("seconds")
        kernels[launch.name] = {**entry(launch, compiled, key(launch)), "seconds": seconds}
    targets = {t.key: {"name": t.name, "arch": arch(t.cc)} for t in TARGETS.values()}
    matrix = {"about": about(), "targets": targets, "kernels": kernels}
    write(matrix, root)
    return matrix


def write(matrix: dict, root: Path | None = None) -> None:
    """One kernel a line (diffs show which kernels changed)."""
    lines = ["{", f' "about": {json.dumps(matrix["about"])},',
             f' "targets": {json.dumps(matrix["targets"])},', ' "kernels": {']
    rows = [f"  {json.dumps(name)}: {json.dumps(k)}" for name, k in matrix["kernels"].items()]
    lines += [",\n".join(rows), " }", "}"]
    matrix_path(root).write_text("\n".join(lines) + "\n")


def about() -> dict:
    return {"made_by": "gpu-lessons targets --write", "numba_cuda": metadata.version("numba-cuda"),
            "assembler": f"ptxas from {NVCC_PACKAGE}=={NVCC_VERSION}",
            "front_end_cc": "{}.{}".format(*FRONT_END_CC)}


def table(matrix: dict, lessons: list[str] | None = None) -> str:
    """The matrix as text: one row per kernel, one column per target (ok, or a short why-not)."""
    keys = list(matrix.get("targets", {t.key: None for t in TARGETS.values()}))
    rows = [(name, k) for name, k in matrix["kernels"].items() if not lessons or k["lesson"] in lessons]
    width = max([len(name) for name, _ in rows] + [6])
    lines = [f"{'kernel':<{width}}  " + "  ".join(f"{t:>7}" for t in keys)]
    reasons: dict[str, int] = {}
    for name, k in rows:
        cells = []
        for t in keys:
            cell = k["targets"][t]
            if cell["fits"]:
                cells.append("ok")
            else:
                number = reasons.setdefault(cell["reason"], len(reasons) + 1)
                cells.append(f"no ({number})")
        lines.append(f"{name:<{width}}  " + "  ".join(f"{c:>7}" for c in cells))
    lines.append("")
    lines += [f"({n}) {reason}" for reason, n in reasons.items()]
    return "\n".join(lines)


def summary_markdown(matrix: dict) -> str:
    """The README's tables: per lesson, how many of its kernels fit each target; then the kernels that
    do not fit somewhere, by where and why."""
    keys = list(matrix["targets"])
    names = [matrix["targets"][k]["name"].replace("NVIDIA ", "") for k in keys]
    heads = [f"{n} ({matrix['targets'][k]['arch']})" for k, n in zip(keys, names, strict=True)]
    lines = ["| lesson | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(keys)]
    lessons = list(dict.fromkeys(k["lesson"] for k in matrix["kernels"].values()))
    for lesson in lessons:
        rows = [k for k in matrix["kernels"].values() if k["lesson"] == lesson]
        cells = []
        for t in keys:
            fit = sum(k["targets"][t]["fits"] for k in rows)
            cells.append(f"{fit}/{len(rows)}")
        lines.append(f"| {lesson} | " + " | ".join(cells) + " |")
    groups: dict[tuple[str, str], list[str]] = {}  # (targets, why) -> kernels
    for name, k in matrix["kernels"].items():
        why: dict[str, list[str]] = {}
        for t in keys:
            if not k["targets"][t]["fits"]:
                why.setdefault(k["targets"][t]["reason"], []).append(t)
        for reason, where in why.items():
            groups.setdefault((", ".join(where), reason), []).append(name)
    lines += ["", "| does not fit on | why | kernels (lesson/part) |", "| --- | --- | --- |"]
    lines += [f"| {where} | {reason} | {', '.join(f'`{n}`' for n in names)} |"
              for (where, reason), names in groups.items()]
    return "\n".join(lines)
