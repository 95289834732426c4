"""Download the wheels the test suite needs on a GPU machine that cannot reach a package registry.

    python benchmarks/gpu_test_wheels.py DIR [--python-version 3.12]

Run it where pip reaches the registry; carry DIR to the GPU machine and install there with

    python3 -m pip install --no-index --no-deps --no-compile --target /tmp/site2 DIR/*.whl
    export PYTHONPATH=$PYTHONPATH:/tmp/site2     # after anything already on it (a numpy fix, say)

The GPU image of this project's H200 (Python 3.12) has numba-cuda, CuPy, pandas, matplotlib, rich,
pytest and coverage but none of the notebook stack the `dev` extra brings: nbval executes the
notebooks through a Jupyter kernel (ipykernel, jupyter_client, pyzmq...), and tests/test_exercises.py
reads them with nbformat. These are exactly those packages, with the versions CI uses, and nothing
that the image already has (no numpy: it would shadow the numpy the image needs). debugpy, which
ipykernel imports only for its debugger, is left out (4 MB). The script checks that every requirement
of every wheel is either downloaded or in ON_THE_MACHINE.
"""

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

WHEELS = {
    # the test run's own needs
    "nbval": "0.11.0", "nbformat": "5.11.1", "ipykernel": "7.4.0", "jupyter_client": "8.10.0",
    # nbformat
    "fastjsonschema": "2.22.3", "jsonschema": "4.26.0", "jsonschema-specifications": "2025.9.1",
    "referencing": "0.37.0", "rpds-py": "2026.9.1", "jupyter_core": "5.9.1", "platformdirs": "4.14.9",
    "traitlets": "5.16.1",
    # the kernel: ipykernel, IPython, the messaging
    "pyzmq": "27.3.0", "tornado": "6.6.1", "comm": "0.2.3", "matplotlib-inline": "0.2.2",
    "nest-asyncio2": "1.7.4", "ipython": "9.18.1", "ipython-pygments-lexers": "1.1.1", "jedi": "0.20.1",
    "parso": "0.8.7", "pexpect": "4.9.0", "ptyprocess": "0.7.0", "prompt_toolkit": "3.0.53",
    "wcwidth": "0.9.4", "stack_data": "0.6.3", "executing": "2.3.0", "asttokens": "3.0.2",
    "pure_eval": "0.2.4",
}
# requirements the GPU image already satisfies (its package list), or that are deliberately skipped
ON_THE_MACHINE = {"pytest", "coverage", "psutil", "pygments", "packaging", "typing-extensions",
                  "python-dateutil", "attrs", "debugpy"}
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (28, 27, 17)] + ["manylinux2014_x86_64"]


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def download(folder: Path, python_version: str) -> None:
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--implementation", "cp", *platforms,
                    "-d", str(folder), *(f"{name}=={version}" for name, version in WHEELS.items())],
                   check=True)


def unmet_requirements(folder: Path, python_version: str) -> list[str]:
    """Requirements of the downloaded wheels that neither the folder nor the machine satisfies."""
    from packaging.requirements import Requirement

    environment = {"python_version": python_version, "python_full_version": f"{python_version}.0",
                   "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython",
                   "platform_machine": "x86_64", "extra": ""}
    have = {canonical(name) for name in WHEELS} | {canonical(name) for name in ON_THE_MACHINE}
    unmet = []
    for wheel in sorted(folder.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            lines = archive.read(metadata).decode().splitlines()
        for line in lines:
            if not line.startswith("Requires-Dist:"):
                continue
            requirement = Requirement(line.split(":", 1)[1].strip())
            if requirement.marker and not requirement.marker.evaluate(environment):
                continue
            if canonical(requirement.name) not in have:
                unmet.append(f"{wheel.name}: {requirement}")
    return unmet


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    download(args.folder, args.python_version)
    wheels = sorted(args.folder.glob("*.whl"))
    unexpected = [w.name for w in wheels if canonical(w.name.split("-")[0]) not in map(canonical, WHEELS)]
    unmet = unmet_requirements(args.folder, args.python_version)
    size = sum(w.stat().st_size for w in wheels) / 2**20
    print(f"{len(wheels)} wheels, {size:.1f} MiB in {args.folder}")
    for problem in [*(f"not in the list (remove it): {name}" for name in unexpected), *unmet]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if unexpected or unmet else 0


if __name__ == "__main__":
    sys.exit(main())
