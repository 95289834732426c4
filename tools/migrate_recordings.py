"""One-off: move the H200 recordings of 2026-11-29..12-01 into the one evidence layout (run once).

    python tools/migrate_recordings.py data/nvidia-h200

Before, each lesson kept what its runs learned besides timings in a file of its own shape:
``littles_law.meta.json`` facts, ``ncu_littles_law.csv/.json``, ``coalescing_ncu.csv/.json``,
``coalescing_sass.json``, ``bank_conflicts_gpu.json``, ``reduce_extras.json``, ``gemm_evidence.json``.
This rewrites each into ``<lesson>.evidence.json`` (``gpu_lessons.results.evidence``), keeping every
number and the provenance of each run as a source; nothing is re-timed. The simulator's and the
calculator's reference recordings move to ``checks/``, ``gemm_probe.*`` to ``probes/``. Idempotent:
files already moved are left alone.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_lessons.results.evidence import Evidence, check_evidence  # noqa: E402
from gpu_lessons.results.store import to_json  # noqa: E402

DEVICE_KEYS = ("gpu", "driver", "numba_cuda", "numba", "python")


def finite(value):
    """JSON keeps no infinity: an infinite bound becomes null (no bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def number(text: str):
    value = float(text)
    return int(value) if value.is_integer() else value


def dims(text: str) -> list[int]:
    return [int(v) for v in text.strip().strip("()[]").replace(" ", "").split(",") if v]


def write(folder: Path, lesson: str, evidence: Evidence) -> None:
    check_evidence(evidence, lesson)
    (folder / f"{lesson}.evidence.json").write_text(to_json(evidence.as_json(lesson)))
    print(f"wrote {folder / f'{lesson}.evidence.json'}")


def littles_law(folder: Path) -> None:
    meta_path = folder / "littles_law.meta.json"
    meta = json.loads(meta_path.read_text())
    if "facts" not in meta:
        return
    facts = meta.pop("facts")
    kernels = {}
    for name, res in facts.pop("kernels").items():
        entry = {"registers": res["registers_per_thread"], "shared_bytes": res["shared_bytes_per_block"],
                 "local_bytes": res["local_bytes_per_thread"]}
        sass = {}
        if "sass" in res:
            sass["counts"] = res["sass"]
        excerpt = facts.get("sass_excerpts", {}).get(name)
        if excerpt:
            sass["lines"] = [line.strip() for line in excerpt.splitlines() if line.strip()]
        if sass:
            entry["sass"] = sass
        kernels[name] = entry
    facts.pop("sass_excerpts", None)
    ncu_meta = json.loads((folder / "ncu_littles_law.json").read_text())
    source = f"ncu {ncu_meta['git_revision']}"
    ncu = {}
    with open(folder / "ncu_littles_law.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            case = ncu.setdefault(row["case"], {"kernel": row["kernel"], "source": source, "metrics": {}})
            case["metrics"][row["metric"]] = number(row["value"])
    sources = {source: {**ncu_meta, "note": "an ncu run of an earlier revision (the launch shapes the lesson "
                                            "still uses); the timings were re-recorded after it"}}
    write(folder, "littles_law", Evidence(facts=facts, kernels=kernels, ncu=ncu, sources=sources))
    meta_path.write_text(to_json(meta))
    for name in ("ncu_littles_law.csv", "ncu_littles_law.json"):
        (folder / name).unlink()


def coalescing(folder: Path) -> None:
    if not (folder / "coalescing_ncu.json").exists():
        return
    ncu_meta = json.loads((folder / "coalescing_ncu.json").read_text())
    case_source, sources = {}, {}
    for run in ncu_meta["sources"]:
        name = f"ncu {run['git_revision']}"
        sources[name] = {"gpu": ncu_meta["gpu"], "command": ncu_meta["command"], "date": run["date"],
                         "git_revision": run["git_revision"]}
        for case in run["cases"]:
            case_source[case] = name
    ncu = {}
    with open(folder / "coalescing_ncu.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            case = ncu.setdefault(row["case"], {"kernel": row["kernel"], "source": case_source[row["case"]],
                                                "metrics": {}, "units": {}})
            case["metrics"][row["metric"]] = number(row["value"])
            case["units"][row["metric"]] = row["unit"]
    sass_file = json.loads((folder / "coalescing_sass.json").read_text())
    kernels = {}
    for name, entry in sass_file["kernels"].items():
        source = f"sass {entry['git_revision']}"
        sources.setdefault(source, {"gpu": sass_file["meta"]["gpu"], "command": sass_file["meta"]["command"],
                                    "numba_cuda": sass_file["meta"]["numba_cuda"], "date": entry["date"],
                                    "git_revision": entry["git_revision"]})
        lines = [line.strip() for line in entry["sass"].splitlines() if line.strip()]
        kernels[name] = {"registers": entry["registers"], "sass": {"lines": lines}, "source": source}
    write(folder, "coalescing", Evidence(kernels=kernels, ncu=ncu, sources=sources))
    for name in ("coalescing_ncu.csv", "coalescing_ncu.json", "coalescing_sass.json"):
        (folder / name).unlink()


def bank_conflicts(folder: Path) -> None:
    path = folder / "bank_conflicts_gpu.json"
    if not path.exists():
        return
    data = json.loads(path.read_text())
    provenance = data["provenance"]
    source = f"ncu {provenance['git_revision']}"
    device = provenance["device"]
    sources = {source: {"tool": provenance["ncu"], "date": provenance["date_utc"],
                        "git_revision": provenance["git_revision"],
                        "command": "python benchmarks/bank_conflicts_gpu.py record",
                        "metrics": provenance["metrics"], "wrong_results": provenance["wrong_results"],
                        **{key: device.get("name" if key == "gpu" else key) for key in DEVICE_KEYS}}}
    ncu = {}
    for row in data["ncu"]:
        case = ncu.setdefault(row["case"], {"kernel": row["kernel"], "grid": dims(row["grid"]),
                                            "block": dims(row["block"]), "source": source, "metrics": {}})
        case["metrics"][row["metric"]] = row["value"]
    kernels = {}
    for name, res in data["resources"].items():
        entry = {"registers": res["registers_per_thread"], "shared_bytes": res["shared_bytes_per_block"],
                 "local_bytes": res["local_bytes_per_thread"], "source": source}
        sass = data["sass"].get(name)
        if sass:
            entry["sass"] = {"counts": sass["opcodes"], "lines": sass["lines"]}
        kernels[name] = entry
    write(folder, "bank_conflicts", Evidence(kernels=kernels, ncu=ncu, sources=sources))
    path.unlink()


def reduce(folder: Path) -> None:
    path = folder / "reduce_extras.json"
    if not path.exists():
        return
    data = json.loads(path.read_text())
    recording = json.loads((folder / "reduce.meta.json").read_text())
    key = ("date", "git_revision")
    same_run = [data["meta"][k] for k in key] == [recording[k] for k in key]
    assert same_run, "reduce_extras.json is not from the recording's run"
    kernels = {}
    for res in data["resources"]:
        resources = ("kernel", "registers", "shared_bytes", "local_bytes")
        counts = {op: n for op, n in res.items() if op not in resources}
        entry = {"registers": res["registers"], "shared_bytes": res["shared_bytes"],
                 "local_bytes": res["local_bytes"], "sass": {"counts": counts}}
        if res["kernel"] in data["sass"]:
            entry["sass"]["lines"] = [line.strip() for line in data["sass"][res["kernel"]]]
        kernels[res["kernel"]] = entry
    write(folder, "reduce", Evidence(facts={"float": finite(data["float"])}, kernels=kernels))
    path.unlink()


def gemm(folder: Path) -> None:
    path = folder / "gemm_evidence.json"
    if not path.exists():
        return
    data = json.loads(path.read_text())
    recording = json.loads((folder / "gemm.meta.json").read_text())
    assert data["meta"]["date"] == recording["date"], "gemm_evidence.json is not from the recording's run"
    sources = {}
    for key in ("ncu_meta", "ncu_meta_earlier"):
        m = data[key]
        sources[f"ncu {m['git_revision']}"] = {
            "date": m["date_utc"], "git_revision": m["git_revision"], "command": m["command"],
            "shape": m["shape"], "profiled_launches": m["profiled_launches"],
            "expected_launches": m["expected_launches"], "gpu": recording["gpu"]}
    probe = data["probe_meta"]
    probe_source = f"probe {probe['git_revision']}"
    sources[probe_source] = {k: v for k, v in probe.items() if k != "columns"}
    ncu = {}
    for case, metrics in data["ncu"].items():
        ncu[case] = {"kernel": metrics["kernel"], "source": f"ncu {metrics['run']}",
                     "metrics": {m: v for m, v in metrics.items() if m not in ("kernel", "run")}}
    kernels = {}
    for name, res in data["kernels"].items():
        entry = {"registers": res["registers"], "shared_bytes": res["shared_bytes"],
                 "local_bytes": res["local_bytes"], "sass": {"summary": res["sass"]}}
        if name in data.get("sass_excerpts", {}):
            entry["sass"]["lines"] = [line.strip() for line in data["sass_excerpts"][name]]
        if res.get("from", "").startswith("probe"):
            entry["source"] = probe_source
        kernels[name] = entry
    write(folder, "gemm", Evidence(facts={"errors": finite(data["errors"])}, kernels=kernels, ncu=ncu,
                                   sources=sources))
    path.unlink()


def move(folder: Path, names: list[str], to: str) -> None:
    target = folder / to
    target.mkdir(exist_ok=True)
    for name in names:
        if (folder / name).exists():
            (folder / name).rename(target / name)
            print(f"moved {name} -> {to}/")


def main(folder: Path) -> None:
    for migrate in (littles_law, coalescing, bank_conflicts, reduce, gemm):
        migrate(folder)
    move(folder, ["warp_primitives.npz", "warp_primitives.json", "ncu_counters.csv", "ncu_counters.json",
                  "occupancy_driver.csv", "occupancy_driver.json"], "checks")
    move(folder, ["gemm_probe.csv", "gemm_probe.meta.json"], "probes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
