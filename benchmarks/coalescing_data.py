"""Turn a GPU job's raw outputs into the lesson-3 reference files under data/<gpu>/.

    python benchmarks/coalescing_data.py JOB_OUT data/nvidia-h200 --revision abc1234

JOB_OUT holds what ``benchmarks/probe_coalescing.py`` and its ncu run wrote: ``ncu.csv`` (ncu
``--csv --page raw``), ``ncu_app.log`` (the line ``NCU_ORDER a|b|...`` naming each profiled launch
in order), ``sass/*.sass`` and ``resources.csv``. Writes

    coalescing_ncu.csv     case, kernel, metric, unit, value (one row per metric and launch)
    coalescing_ncu.json    provenance: which job (git revision, date) recorded which cases
    coalescing_sass.json   per kernel: registers and the SASS of its main body, with provenance

With ``--append`` the cases of this job replace same-named ones of the files already there and
join the others (the SASS of kernels this job dumped replaces theirs).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path

import pandas as pd

KEEP = re.compile(r"^((dram__bytes_(read|write)|lts__t_sectors_srcunit_tex_op_(read|write)|gpu__time_duration"
                  r"|l1tex__t_(sectors|requests)_pipe_lsu_mem_global_op_(ld|st)|smsp__inst_executed)\.sum"
                  r"|sm__cycles_active\.(min|avg|max)|lts__t_sector_hit_rate\.pct"
                  r"|(dram__throughput|sm__warps_active)\.avg\.pct_of_peak_sustained_(elapsed|active)"
                  r"|launch__(registers_per_thread|grid_size|block_size|waves_per_multiprocessor)"
                  r"|smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio"
                  r"|smsp__issue_active\.avg\.per_cycle_active)$")


def read_ncu(job: Path) -> pd.DataFrame:
    text = (job / "ncu.csv").read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, data = rows[0], rows[1], rows[2:]
    order = None
    for line in (job / "ncu_app.log").read_text(errors="replace").splitlines():
        if line.startswith("NCU_ORDER "):
            order = line[len("NCU_ORDER "):].split("|")
    order = [name for name in order or [] if name != "cupy copyto"]  # a cudaMemcpy: ncu profiles no kernel
    if len(order) != len(data):
        raise SystemExit(f"{len(data)} profiled launches but NCU_ORDER names {len(order or [])}")
    out = []
    kernel_column = header.index("Kernel Name")
    for case, values in zip(order, data, strict=True):
        for name, unit, value in zip(header, units, values, strict=True):
            try:
                number = float(value.replace(",", ""))
            except ValueError:  # text attributes (e.g. a launch's scheduling policy)
                continue
            if KEEP.match(name):
                kernel = values[kernel_column].split("[")[0]  # without the mangled signature
                out.append({"case": case, "kernel": kernel, "metric": name, "unit": unit, "value": number})
    return pd.DataFrame(out)


INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]*[ ;]")


def kernel_text(sass: str) -> str:
    """The instructions of the kernel's .text section (no headers, no data, no trailing NOPs)."""
    lines, inside = [], False
    for line in sass.splitlines():
        if line.lstrip().startswith(".section") or line.startswith("//---"):
            inside = ".text." in line
            continue
        if inside and INSTRUCTION.match(line) and " NOP" not in line:
            lines.append(line.strip())
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("job", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--revision", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("--append", action="store_true")
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    csv_path, ncu_meta_path = args.data / "coalescing_ncu.csv", args.data / "coalescing_ncu.json"
    sass_path = args.data / "coalescing_sass.json"
    ncu = read_ncu(args.job)
    source = {"git_revision": args.revision, "date": args.date, "cases": list(dict.fromkeys(ncu["case"]))}
    sources, kernels = [source], {}
    if args.append:
        old = pd.read_csv(csv_path)
        ncu = pd.concat([old[~old["case"].isin(set(ncu["case"]))], ncu], ignore_index=True)
        sources = json.loads(ncu_meta_path.read_text())["sources"] + sources
        kernels = json.loads(sass_path.read_text())["kernels"]
    ncu.to_csv(csv_path, index=False, lineterminator="\n")
    ncu_meta = {"gpu": "NVIDIA H200", "command": "ncu --clock-control none --csv --page raw "
                "--profile-from-start off --section WarpStateStats --metrics ... "
                "python benchmarks/probe_coalescing.py ncu",
                "sources": sources}
    ncu_meta_path.write_text(json.dumps(ncu_meta, indent=1) + "\n")
    resources = pd.read_csv(args.job / "resources.csv").set_index("kernel")["registers"].to_dict()
    for path in sorted((args.job / "sass").glob("*.sass")):
        kernels[path.stem] = {"registers": resources.get(path.stem), "sass": kernel_text(path.read_text()),
                              "git_revision": args.revision, "date": args.date}
    meta = {"gpu": "NVIDIA H200", "command": "kernel.inspect_sass() in benchmarks/probe_coalescing.py",
            "numba_cuda": "0.30.4", "date": args.date}
    sass_path.write_text(json.dumps({"meta": meta, "kernels": kernels}, indent=1) + "\n")
    print(f"{len(ncu)} ncu rows for {ncu['case'].nunique()} launches; SASS of {len(kernels)} kernels")


if __name__ == "__main__":
    main()
