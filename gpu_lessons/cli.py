"""``gpu-lessons``: list, run, record, ceilings, scoreboard."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_OUT = Path("gpu-lessons-out")


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


def cmd_list(_args) -> int:
    lessons = _lessons()
    for number, module in enumerate(lessons.LESSONS.values(), start=1):
        print(f"{number}. {module.NAME:<10} notebooks/{module.NOTEBOOK:<22} {module.TITLE}: {module.SUMMARY}")
    print(f"   {'ceilings':<10} (gpu-lessons ceilings)        {lessons.ceilings.TITLE}")
    return 0


def _run_checks(module) -> bool:
    checks = module.check()
    failed = checks[~checks["passed"]]
    print(f"{module.NAME}: {len(checks) - len(failed)}/{len(checks)} correctness checks passed")
    if len(failed):
        _print_table(failed, "failed checks")
    return failed.empty


def _save_figures(module, result, roof: dict, out: Path, suffix: str = "") -> None:
    from . import plots

    for name, figure in module.figures(result, roof).items():
        print(f"figure: {plots.save(figure, out / module.NAME / f'{name}{suffix}.png')}")


def cmd_run(args) -> int:
    modules = _pick(args.lessons, include_ceilings=False)
    from . import SIMULATED, describe, lessons, results
    from .lessons import ceilings, runner

    print(describe())
    out = Path(args.out)
    ok = True
    for module in modules:
        ok = _run_checks(module) and ok
        if SIMULATED:
            result, roof = runner.load(module, live=False), lessons.roof()
            print(f"No GPU: showing the reference recording {result.source}")
        else:
            roof = lessons.roof(runner.measure(ceilings, show_progress=not args.no_progress))
            result = runner.measure(module, show_progress=not args.no_progress)
            ok = not result.failures and ok
        _print_table(_summary(result.table), f"{module.TITLE} ({result.provenance})")
        _save_figures(module, result, roof, out)
        if not SIMULATED:  # beside a live run, the same figures from the reference recording
            try:
                reference = runner.load(module, live=False)
            except results.MissingRecordingError:
                continue
            _save_figures(module, reference, lessons.roof(), out, f"_reference_{reference.gpu}")
    return 0 if ok else 1


def _require_gpu(command: str) -> None:
    from . import SIMULATED

    if SIMULATED:
        raise CommandError(f"'gpu-lessons {command}' measures on a GPU, and none is available here "
                           "(simulator mode). 'gpu-lessons run' shows the recorded reference instead.")


def cmd_record(args) -> int:
    """Check, measure and write one recording per lesson (and, with --ncu, its counters)."""
    from . import ncu, results
    from .lessons import runner

    modules = _pick(args.lessons, include_ceilings=True)
    _require_gpu("record")
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
        if args.section:
            raise CommandError(f"{module.NAME}: --section measured part of the lesson; a recording needs "
                               "every section (nothing recorded)")
        result = runner.recorded(result)
        if args.ncu and hasattr(module, "ncu_cases"):
            work = Path(args.partial or "gpu-lessons-out") / module.NAME / "ncu"
            cases, sources = ncu.profile(["-m", "gpu_lessons.ncu", "launch", module.NAME],
                                         list(module.NCU_METRICS), work)
            result = result.with_evidence(ncu=cases, sources=sources)
        else:  # keep the counters (and their provenance) of the last ncu run
            result = _with_earlier_counters(result, args.data)
        for path in results.write_result(result, root=args.data):
            print(f"recorded: {results.shown_path(path)}")
    return 0


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
    from . import results
    from .scoreboard import format_scoreboard, scoreboard, scoreboard_json

    if args.gpu is not None and args.gpu not in (recorded := results.recorded_gpus(args.data)):
        folder = results.shown_path(results.data_root(args.data))
        raise CommandError(f"no recordings for GPU '{args.gpu}' under {folder}/ "
                           f"(recorded GPUs: {', '.join(recorded) or 'none'})")
    board = scoreboard(_lessons().comparisons(), gpu=args.gpu, root=args.data)
    if args.json:
        print(scoreboard_json(board))
    else:
        print(format_scoreboard(board))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-lessons", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="the lessons and their notebooks").set_defaults(func=cmd_list)

    run = sub.add_parser("run", help="run lessons: live on a GPU; checks + recorded reference without one")
    run.add_argument("lessons", nargs="*", metavar="LESSON", help="default: every lesson")
    run.add_argument("--out", default=str(DEFAULT_OUT), help=f"folder for figures (default {DEFAULT_OUT})")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.set_defaults(func=cmd_run)

    record = sub.add_parser("record", help="measure on this GPU and write data/<gpu>/<lesson>.*")
    record.add_argument("lessons", nargs="*", metavar="LESSON", help="default: ceilings and every lesson")
    record.add_argument("--data", default=None, help="data folder (default: the repository's data/)")
    record.add_argument("--ncu", action="store_true",
                        help="also profile the lesson's cases with Nsight Compute (ncu on the PATH)")
    record.add_argument("--section", action="append", metavar="NAME",
                        help="measure only this section (repeatable; for trying, records nothing)")
    record.add_argument("--partial", default=None, metavar="DIR",
                        help="save the rows so far after each section under DIR/<lesson>/")
    record.add_argument("--no-progress", action="store_true")
    record.set_defaults(func=cmd_record)

    ceilings = sub.add_parser("ceilings", help="measure bandwidth and FP32 ceilings beside CuPy/cuBLAS")
    ceilings.add_argument("--record", action="store_true", help="also write data/<gpu>/ceilings.csv")
    ceilings.add_argument("--data", default=None)
    ceilings.add_argument("--no-progress", action="store_true")
    ceilings.set_defaults(func=cmd_ceilings)

    board = sub.add_parser("scoreboard", help="best variant per lesson against what a user would pick")
    board.add_argument("--gpu", default=None, help="GPU folder under data/ (default nvidia-h200)")
    board.add_argument("--data", default=None)
    board.add_argument("--json", action="store_true")
    board.set_defaults(func=cmd_scoreboard)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .checks import InputError
    from .mode import ModeError
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
