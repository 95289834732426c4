"""gpu-lessons: GPU performance lessons with real numba.cuda kernels. Run a lesson (live on an NVIDIA
GPU; without one, its kernels checked on numba-cuda's simulator beside the measurements recorded on an
NVIDIA H200), copy the notebooks out, or compare the best kernels with CuPy and cuBLAS."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

DEFAULT_OUT = Path("gpu-lessons-out")

# The commands import gpu_lessons inside their functions, on purpose: importing it picks the mode and
# loads numba, which `--help` and `--version` do not need, and a mode error must reach main()'s
# one-line handler rather than fail the import of this module.


class CommandError(RuntimeError):
    """A one-line error for the user; the command exits with status 2."""


def _lessons():
    from . import lessons

    return lessons


def _pick(names: list[str], include_ceilings: bool) -> list:
    lessons = _lessons()
    if not names:
        return list((lessons.EXPERIMENTS if include_ceilings else lessons.LESSONS).values())
    try:
        return [lessons.get(name, include_ceilings) for name in names]
    except lessons.UnknownLesson as error:
        raise CommandError(str(error)) from None


def _cell(value) -> str:
    if not isinstance(value, float):
        return str(value)
    if value != value:  # NaN: no parameter
        return ""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _print_table(table, title: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    view = Table(title=title, title_justify="left")
    for column in table.columns:
        view.add_column(str(column), justify="right" if table[column].dtype.kind in "fiu" else "left")
    for _, row in table.iterrows():
        view.add_row(*(_cell(v) for v in row.tolist()))
    Console(width=160).print(view)


def _summary(table):
    """The columns a reader needs, one row per measurement."""
    columns = ["variant", "provider", "size", "param", "median_ms", "gbps", "gflops"]
    return table[columns].round({"median_ms": 4, "gbps": 1, "gflops": 1})


def _shown(path: Path) -> str:
    """A path as the user can type it: relative to the working folder when inside it."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def cmd_list(_args) -> int:
    from . import course

    lessons = _lessons()
    folder = course.notebooks_folder()
    here = course.in_checkout()  # else the notebooks are inside the installed package: copy them out
    shown = f"{_shown(folder)}/" if here else ""
    rows = [(f"{number}.", module.NAME, shown + module.NOTEBOOK, module.TITLE)
            for number, module in enumerate(lessons.LESSONS.values(), start=1)]
    rows.append(("", "ceilings", "(gpu-lessons ceilings)", lessons.ceilings.TITLE))
    header = ("#", "lesson", "notebook", "title")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        print("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[3]]))
    deep_dives = [p.as_posix() for p in course.notebook_files(folder)
                  if p.parts[0] == "deep_dives" and p.suffix == ".ipynb"]
    if deep_dives:
        print(f"deep dives: {', '.join(shown + p for p in deep_dives)}")
    _say_left_out(lessons)
    if here:
        print(f"open them with: jupyter lab {shown}")
    else:
        print("the notebooks come with the package: copy them out with 'gpu-lessons notebooks DIR', "
              "then 'jupyter lab DIR'")
    return 0


def _say_left_out(lessons) -> None:
    """One line per lesson that leaves kernels out on this GPU (what, and why)."""
    from . import gates
    from .lessons import runner

    for module in lessons.LESSONS.values():
        gates.say(module.NAME, runner.left_out(module))


def cmd_notebooks(args) -> int:
    from . import course

    try:
        written, backups = course.copy_notebooks(args.folder, force=args.force)
    except course.CopyError as error:
        raise CommandError(str(error)) from None
    folder = Path(args.folder).expanduser()
    notebooks = [path for path in written if path.suffix == ".ipynb"]
    deep = sum(1 for path in notebooks if "deep_dives" in path.relative_to(folder).parts)
    print(f"copied {len(notebooks)} notebooks ({len(notebooks) - deep} lessons, {deep} in deep_dives/) "
          f"to {folder}/")
    if args.force:
        kept = ", ".join(path.relative_to(folder).as_posix() for path in backups)
        note = f", each kept first as a backup: {kept}" if backups else " (none differed from the course's)"
        print(f"replaced {len(backups)} edited file(s){note}")
    print(f"open them with: jupyter lab {folder}")
    if shutil.which("jupyter-lab") is None:
        print("(JupyterLab is not installed in this environment: python3 -m pip install jupyterlab)")
    return 0


def _run_checks(module) -> bool:
    return _report_checks(module, module.check())


def _report_checks(module, checks) -> bool:
    failed = checks[~checks["passed"]]
    if checks.empty and checks.attrs.get("left_out"):
        print(f"{module.NAME}: no correctness check can run on this GPU (see the line above)")
        return True
    print(f"{module.NAME}: {len(checks) - len(failed)}/{len(checks)} correctness checks passed")
    if len(failed):
        _print_table(failed, "failed checks")
    return failed.empty


def _save_figures(module, result, roof: dict, out: Path, suffix: str = "") -> int:
    """Write the lesson's figures as PNG under out/<lesson>/; returns how many."""
    from . import plots

    figures = module.figures(result, roof)
    for name, figure in figures.items():
        path = out / module.NAME / f"{name}{suffix}.png"
        try:
            print(f"figure: {plots.save(figure, path)}")
        except OSError as error:  # a folder without write permission, a full disk
            raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    return len(figures)


def _figure_folder(out: str) -> Path:
    """The --out folder, made now: a bad one is an error before the minutes of checks, not after."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CommandError(f"--out {out}: a file is in the way; name a folder for the figures") from None
    except OSError as error:
        raise CommandError(f"--out {out}: cannot make the folder ({error.strerror})") from None
    return folder


def cmd_run(args) -> int:
    modules = _pick(args.lessons, include_ceilings=bool(args.lessons))  # ceilings when named
    from . import SIMULATED, describe, lessons, results
    from .lessons import ceilings, runner

    out = _figure_folder(args.out)
    # Without a GPU, read (and so check) every recording first: a missing one fails at once, in one line
    recorded = {m.NAME: runner.load(m, live=False) for m in modules} if SIMULATED else {}
    print(describe())
    # The roof live results are divided by: this GPU's, measured now (once); on the simulator, the
    # recording's own GPU's
    live_roof = None if SIMULATED else runner.measure(ceilings, show_progress=not args.no_progress)
    roof = None if SIMULATED else lessons.roof(live_roof)
    verdicts = []
    for module in modules:
        checks = module.check()
        passed = _report_checks(module, checks)
        measured = True
        if SIMULATED:
            result = recorded[module.NAME]
            roof = lessons.roof(gpu=result.gpu)
            print(f"No GPU: showing the reference recording {result.source}")
        else:
            result = live_roof if module is ceilings else runner.measure(module,
                                                                          show_progress=not args.no_progress)
            measured = not result.failures
        _print_table(_summary(result.table), f"{module.TITLE} ({result.provenance})")
        figures = _save_figures(module, result, roof, out)
        if not SIMULATED:  # beside a live run, the same figures from the reference recording
            try:
                reference = runner.load(module, live=False)
            except results.MissingRecordingError:
                reference = None
            if reference is not None:
                suffix = f"_reference_{reference.gpu}"
                figures += _save_figures(module, reference, lessons.roof(gpu=reference.gpu), out, suffix)
        verdicts.append({"lesson": module.NAME, "checks": f"{int(checks['passed'].sum())}/{len(checks)}",
                         "measurements": "recorded" if SIMULATED else ("live" if measured else "FAILED"),
                         "figures": figures, "verdict": "ok" if passed and measured else "FAILED"})
    _print_verdicts(verdicts, out)
    return 0 if all(v["verdict"] == "ok" for v in verdicts) else 1


def _print_verdicts(verdicts: list[dict], out: Path) -> None:
    """The run's last lines: one row per lesson, so that the verdicts are not buried in the tables."""
    import pandas as pd

    print()
    _print_table(pd.DataFrame(verdicts), f"Summary: {len(verdicts)} lesson(s), figures under {_shown(out)}/")


def _require_gpu(command: str) -> None:
    from . import SIMULATED

    if SIMULATED:
        raise CommandError(f"'gpu-lessons {command}' measures on a GPU, and none is available here "
                           "(simulator mode). 'gpu-lessons run' shows the recorded reference instead.")


def _writable_data(data: str | None) -> str | None:
    """Where a new recording goes: --data, $GPU_LESSONS_DATA, or a checkout's data/ (never the copy
    installed with the package, which a reinstall would replace)."""
    from . import course, results

    if data is None and not os.environ.get(results.DATA_VARIABLE, "").strip() and not course.in_checkout():
        raise CommandError(f"this gpu-lessons is installed, not a checkout: say where recordings go with "
                           f"--data DIR (or set {results.DATA_VARIABLE})")
    return data


def cmd_record(args) -> int:
    """Check, measure and write one recording per lesson (and, with --ncu, its counters)."""
    from . import ncu, results
    from .lessons import runner

    modules = _pick(args.lessons, include_ceilings=True)
    if args.merge and not args.section:
        raise CommandError("--merge merges the sections named by --section into a recording: name them")
    if args.merge and args.ncu:
        raise CommandError("--merge keeps the recording's ncu counters: leave out --ncu")
    _require_gpu("record")
    _writable_data(args.data)
    if args.ncu_case and not args.ncu_only:
        raise CommandError("--ncu-case profiles some cases for --ncu-only: add --ncu-only")
    if args.ncu_only:
        return _record_counters_only(modules, args.data, args.partial, args.ncu_case)
    for module in modules:
        if not _run_checks(module):
            raise CommandError(f"{module.NAME}: correctness checks failed; nothing recorded")
        partial = Path(args.partial) / module.NAME if args.partial else None
        result = runner.measure(module, sections=args.section, show_progress=not args.no_progress,
                                partial=partial)
        if result.failures:
            failed = ", ".join(f.section for f in result.failures)
            raise CommandError(f"{module.NAME}: section(s) {failed} failed; nothing recorded"
                               + (f" (rows so far in {partial})" if partial else ""))
        if args.section and not args.merge:
            raise CommandError(f"{module.NAME}: --section measured part of the lesson; a recording needs "
                               "every section, or --merge to add these sections to the recording "
                               "(nothing recorded)")
        result = runner.recorded(result)
        if args.merge:
            earlier = _this_gpus_recording(module.NAME, result.gpu, args.data)
            result = runner.merged(earlier, result, args.section)
        if args.ncu and hasattr(module, "ncu_cases"):
            work = Path(args.partial or "gpu-lessons-out") / module.NAME / "ncu"
            cases, sources = ncu.profile(ncu.launcher(module.NAME), list(module.NCU_METRICS), work)
            result = result.with_evidence(ncu=cases, sources=sources)
        else:  # keep the counters (and their provenance) of the last ncu run
            result = _with_earlier_counters(result, args.data)
        for path in results.write_result(result, root=args.data):
            print(f"recorded: {results.shown_path(path)}")
    return 0


def _record_counters_only(modules, data: str | None, partial: str | None, only: list[str] | None) -> int:
    """--ncu-only: profile each lesson's ncu cases and attach the counters to this GPU's recording of
    it (read from --data if it has one, else from the course's data/); timings, facts and kernels stay
    as recorded, and only the evidence file is written (its sources name the ncu run). With --ncu-case,
    only those cases are profiled: the recording's other cases keep their counters and sources."""
    import datetime as dt

    from . import device_info, ncu, results

    gpu = device_info().slug
    for module in modules:
        if not hasattr(module, "ncu_cases"):
            raise CommandError(f"{module.NAME}: has no ncu cases to profile (--ncu-only)")
        if only:
            unknown = [name for name in only if name not in getattr(module, "NCU_CASES", only)]
            if unknown:
                raise CommandError(f"{module.NAME}: no ncu case {', '.join(map(repr, unknown))}; its cases: "
                                   f"{', '.join(module.NCU_CASES)}")
        earlier = _this_gpus_recording(module.NAME, gpu, data)
        work = Path(partial or "gpu-lessons-out") / module.NAME / "ncu"
        source = "ncu" if not only else "ncu " + dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
        cases, sources = ncu.profile(ncu.launcher(module.NAME, only), list(module.NCU_METRICS), work, source)
        if only:  # the other cases keep their counters, and the sources those name
            cases = {**earlier.evidence.ncu, **cases}
        kept = {name: entry for name, entry in earlier.evidence.sources.items() if name not in sources}
        result = earlier.with_evidence(ncu=cases, sources={**kept, **sources})
        path = results.write_evidence(result, root=data)
        print(f"recorded: {results.shown_path(path)} (ncu counters added to {earlier.source})")
    return 0


def _this_gpus_recording(lesson: str, gpu: str, data: str | None):
    """This GPU's recording of a lesson: from --data if it has one, else from the course's data/."""
    from . import results

    for root in dict.fromkeys([data, None]):
        try:
            return results.read_result(lesson, gpu=gpu, root=root)
        except results.MissingRecordingError:
            continue
    raise CommandError(f"{lesson}: no recording on {gpu} to add to; record the whole lesson first "
                       f"('gpu-lessons record {lesson}')")


def _with_earlier_counters(result, root):
    """A recording made without --ncu keeps the earlier recording's ncu block and its sources."""
    from . import results

    try:
        earlier = results.read_result(result.lesson, gpu=result.gpu, root=root)
    except results.MissingRecordingError:
        return result
    used = {entry["source"] for entry in earlier.evidence.ncu.values()}
    sources = {name: value for name, value in earlier.evidence.sources.items() if name in used}
    return result.with_evidence(ncu=earlier.evidence.ncu, sources=sources)


def cmd_ceilings(args) -> int:
    from . import describe, device_info, results
    from .lessons import ceilings, runner

    _require_gpu("ceilings")
    if args.record:
        _writable_data(args.data)
    print(describe())
    result = runner.measure(ceilings, show_progress=not args.no_progress)
    _print_table(_summary(result.table), ceilings.TITLE)
    roof = ceilings.ceilings_from(result.table)
    info = device_info()
    print(f"bandwidth ceiling: {roof['bandwidth_gbps']:,.0f} GB/s ({roof['bandwidth_variant']}); "
          f"datasheet estimate {info.datasheet_bandwidth_gbps:,.0f} GB/s")
    print(f"FP32 ceiling: {roof['peak_gflops'] / 1e3:,.1f} TFLOP/s ({roof['peak_variant']}) = "
          f"{100 * roof['peak_gflops'] / info.peak_fp32_gflops:.1f}% of the theoretical "
          f"{info.peak_fp32_gflops / 1e3:,.1f} TFLOP/s")
    by_variant = result.table.set_index("variant")
    if "cupy copy" in by_variant.index:
        print(f"{roof['bandwidth_variant']} / CuPy copy = "
              f"{roof['bandwidth_gbps'] / by_variant.loc['cupy copy', 'gbps']:.3f}")
    if args.record:
        for path in results.write_result(runner.recorded(result), root=args.data):
            print(f"recorded: {results.shown_path(path)}")
    return 0


def cmd_scoreboard(args) -> int:
    """The scoreboard; status 1 when a row failed or nothing is recorded, 2 for no data folder."""
    from . import results
    from .scoreboard import FAILED, NOT_RECORDED, format_scoreboard, scoreboard, scoreboard_json

    root = results.data_root(args.data)
    if not root.is_dir():
        how = "--data" if args.data is not None else results.DATA_VARIABLE
        raise CommandError(f"{results.shown_path(root)}: no such data folder ({how})")
    if args.gpu is not None and args.gpu not in (recorded := results.recorded_gpus(root)):
        raise CommandError(f"no recordings for GPU '{args.gpu}' under {results.shown_path(root)}/ "
                           f"(recorded GPUs: {', '.join(recorded) or 'none'})")
    board = scoreboard(_lessons().comparisons(), gpu=args.gpu, root=root)
    print(scoreboard_json(board) if args.json else format_scoreboard(board))
    failed = int((board["status"] == FAILED).sum())
    if failed:
        print(f"gpu-lessons: {failed} of {len(board)} comparisons failed (see the problems listed)",
              file=sys.stderr)
        return 1
    if (board["status"] == NOT_RECORDED).all():
        print(f"gpu-lessons: nothing recorded under {results.shown_path(root)}/", file=sys.stderr)
        return 1
    return 0


def cmd_targets(args) -> int:
    """The kernel x target matrix: from data/targets.json, or (--write) compiled afresh where stale."""
    from . import matrix

    chosen = [module.NAME for module in _pick(args.lessons, include_ceilings=False)] if args.lessons else None
    if args.write:
        made = matrix.make(everything=args.all)
        print(f"wrote data/{matrix.MATRIX_FILE}: {len(made['kernels'])} kernels", file=sys.stderr)
    current = matrix.read()
    problems = matrix.stale(current)
    print(matrix.table(current, chosen))
    if problems and not args.write:
        print(f"gpu-lessons: {len(problems)} kernel(s) changed since data/targets.json was made "
              "(gpu-lessons targets --write)", file=sys.stderr)
        return 1
    return 0


EXAMPLES = """examples:
  gpu-lessons list                     the lessons, their notebooks and deep dives
  gpu-lessons run roofline             lesson 1: check its kernels, show its measurements, save its figures
  gpu-lessons notebooks ~/gpu-course   copy the notebooks out; then: jupyter lab ~/gpu-course
  gpu-lessons scoreboard               each lesson's best kernel against CuPy and cuBLAS
  gpu-lessons targets                  which kernels fit a T4 ... H200, and why the others do not

GPU_LESSONS_MODE=gpu|sim|auto forces the mode; GPU_LESSONS_DATA names another data folder."""


def build_parser() -> argparse.ArgumentParser:
    from . import __version__, course

    parser = argparse.ArgumentParser(prog="gpu-lessons", description=__doc__, epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"gpu-lessons {__version__} (course files: {course.root()})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="the lessons and where their notebooks are").set_defaults(func=cmd_list)

    run = sub.add_parser("run", help="run lessons: live on a GPU; without one, checks and the recorded "
                                     "measurements")
    run.add_argument("lessons", nargs="*", metavar="LESSON", help="default: every lesson")
    run.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder for figures (default {DEFAULT_OUT})")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.set_defaults(func=cmd_run)

    notebooks = sub.add_parser("notebooks", help="copy the notebooks (lessons and deep dives) into a folder")
    notebooks.add_argument("folder", metavar="DIR", help="a new or empty folder (made if missing)")
    notebooks.add_argument("--force", action="store_true",
                           help="copy into a folder that is not empty, overwriting the course's notebooks")
    notebooks.set_defaults(func=cmd_notebooks)

    data_help = "data folder (default: $GPU_LESSONS_DATA, else the checkout's data/)"
    record = sub.add_parser("record", help="measure on this GPU and write data/<gpu>/<lesson>.*")
    record.add_argument("lessons", nargs="*", metavar="LESSON", help="default: ceilings and every lesson")
    record.add_argument("--data", default=None, help=data_help)
    record.add_argument("--ncu", action="store_true",
                        help="also profile the lesson's cases with Nsight Compute (ncu on the PATH)")
    record.add_argument("--ncu-only", action="store_true",
                        help="profile with Nsight Compute and add the counters to this GPU's existing "
                             "recording (writes only <lesson>.evidence.json; no timing is re-measured)")
    record.add_argument("--ncu-case", action="append", metavar="NAME",
                        help="with --ncu-only: profile only this case (repeatable); the others keep their "
                             "counters")
    record.add_argument("--section", action="append", metavar="NAME",
                        help="measure only this section (repeatable; records nothing without --merge)")
    record.add_argument("--merge", action="store_true",
                        help="add the --section rows to this GPU's recording (replacing rows of the same "
                             "variants; the meta keeps each merged section's provenance)")
    record.add_argument("--partial", default=None, metavar="DIR",
                        help="save the rows so far after each section under DIR/<lesson>/")
    record.add_argument("--no-progress", action="store_true", help="no progress bars")
    record.set_defaults(func=cmd_record)

    ceilings = sub.add_parser("ceilings", help="measure bandwidth and FP32 ceilings beside CuPy/cuBLAS")
    ceilings.add_argument("--record", action="store_true", help="also write data/<gpu>/ceilings.*")
    ceilings.add_argument("--data", default=None, help=data_help)
    ceilings.add_argument("--no-progress", action="store_true", help="no progress bars")
    ceilings.set_defaults(func=cmd_ceilings)

    board = sub.add_parser("scoreboard", help="best variant per lesson against what a user would pick")
    board.add_argument("--gpu", default=None, help="GPU folder under data/ (default nvidia-h200)")
    board.add_argument("--data", default=None, help="data folder (default: the recordings that come with "
                                                    "gpu-lessons, or $GPU_LESSONS_DATA)")
    board.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    board.set_defaults(func=cmd_scoreboard)

    targets = sub.add_parser("targets", help="every kernel x the target GPUs (T4 to H200): fits, or why not")
    targets.add_argument("lessons", nargs="*", metavar="LESSON", help="default: every lesson")
    targets.add_argument("--write", action="store_true",
                         help="recompile the kernels whose code changed and rewrite data/targets.json "
                              "(needs the targets extra: NVIDIA's compiler and ptxas, no GPU)")
    targets.add_argument("--all", action="store_true", help="with --write: recompile every kernel")
    targets.set_defaults(func=cmd_targets)
    return parser


ANY_MODE = ("list", "notebooks", "scoreboard")  # commands that launch no kernel: the simulator will do


def main(argv: list[str] | None = None) -> int:
    """The command; every error it expects is one line on stderr (status 2), never a traceback;
    Ctrl-C is one line too (status 130, as a shell reports a command ended by SIGINT)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("gpu-lessons: interrupted", file=sys.stderr)
        return 128 + 2


def _main(argv: list[str] | None) -> int:
    from .mode import DEVICE_VARIABLE, MODE_VARIABLE, ModeError, choose_mode

    parser = build_parser()
    args = parser.parse_args(argv)  # --help and --version end here, whatever the mode variable says
    try:
        choose_mode()  # before anything imports numba.cuda; a mode it cannot have is the user's to fix
    except ModeError as error:
        if args.command not in ANY_MODE or os.environ.get(DEVICE_VARIABLE):  # a wrong switch is never ignored
            print(f"gpu-lessons: error: {error}", file=sys.stderr)
            return 2
        print(f"gpu-lessons: note: {error}; '{args.command}' needs no GPU, so it goes on in simulator mode",
              file=sys.stderr)
        os.environ[MODE_VARIABLE] = "sim"
        choose_mode()
    if choose_mode() == "compile" and args.command not in ("list", "notebooks", "targets", "scoreboard"):
        print("gpu-lessons: error: GPU_LESSONS_MODE=compile compiles kernels and runs none (gpu-lessons "
              "targets); unset it to run the lessons", file=sys.stderr)
        return 2
    from .checks import InputError
    from .results import RecordingError

    try:
        status = args.func(args)
        sys.stdout.flush()  # here, so that a closed pipe is seen below and not at interpreter exit
        return status
    except (CommandError, ModeError, RecordingError, InputError) as error:
        print(f"gpu-lessons: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `gpu-lessons ... | head`: the reader left; stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 128 + 13  # what a shell reports for a command ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
