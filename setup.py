"""One build step pyproject.toml cannot declare: the wheel carries the course as package data.

The repository keeps one copy of the recordings (data/) and the notebooks (notebooks/), at its top.
Building a wheel copies both into gpu_lessons/_course/, where ``gpu_lessons.course`` finds them once
installed; an editable install reads them where they are. Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
COURSE_FOLDERS = ("data", "notebooks")  # gpu_lessons.course.FOLDERS


class build_py_with_course(build_py):  # noqa: N801 - setuptools' command naming
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "gpu_lessons" / "_course"
        shutil.rmtree(target, ignore_errors=True)  # no file left over from an earlier build
        for name in COURSE_FOLDERS:
            if not (HERE / name).is_dir():
                raise SystemExit(f"setup.py: {HERE / name} is missing: a wheel without it lacks the course")
            shutil.copytree(HERE / name, target / name,
                            ignore=shutil.ignore_patterns(".*", "__pycache__", "*.pyc"))


setup(cmdclass={"build_py": build_py_with_course})
