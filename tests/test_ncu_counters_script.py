"""benchmarks/record_ncu_counters.py without a GPU: the dry run, ncu's CSV parsing, launch matching, and the
whole ``record`` path with a stand-in ``ncu`` executable."""

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load():
    path = REPO / "benchmarks" / "record_ncu_counters.py"
    spec = importlib.util.spec_from_file_location("record_ncu_counters", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


nc = _load()
TWO = ["strided_copy/stride=2", "shared_stride/stride=32"]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dry")
    assert nc.main(["--dry-run", "--out", str(out), *(f"--case={c}" for c in TWO)]) == 0
    return out


def test_dry_run_writes_counters_and_provenance(dry_run):
    counters = nc.read_counters(dry_run / nc.CSV_NAME)
    assert list(counters) == TWO
    strided = counters["strided_copy/stride=2"]
    assert strided["grid"] == (4, 1, 1) and strided["block"] == (256, 1, 1)
    assert strided["metrics"]["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 32 * 8
    shared = counters["shared_stride/stride=32"]["metrics"]
    assert shared["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 32 * 31
    assert set(shared) == set(nc.METRICS)
    assert json.loads((dry_run / nc.PROVENANCE_NAME).read_text())["source"].startswith("dry-run")


def test_a_dry_run_leaves_the_mode_alone(tmp_path, monkeypatch):
    """Under pytest gpu_lessons is imported already, maybe in GPU mode: the tracer needs no switch."""
    monkeypatch.setenv("GPU_LESSONS_MODE", "auto")
    assert nc.main(["--dry-run", "--out", str(tmp_path), "--case", TWO[0]]) == 0
    assert os.environ["GPU_LESSONS_MODE"] == "auto"


def test_parse_skips_noise_and_reads_thousands():
    text = textwrap.dedent('''\
        ==PROF== Connected to process 42
        some output of the application
        "ID","Kernel Name","Grid Size","Block Size","m.sum"
        "","","","","sector"
        "0","_ZN6cudapy3foo6kernelE","(2, 1, 1)","(64, 1, 1)","65,536"
        ==PROF== Disconnected from process 42
    ''')
    (record,) = nc.ncu.parse_ncu_csv(text)
    assert nc.ncu.number(record["m.sum"]) == 65536
    cases = nc.ncu.match_launches([record], [{"case": "c", "kernel": "kernel"}], ["m.sum"], "ncu")
    assert cases == {"c": {"kernel": "kernel", "source": "ncu", "grid": [2, 1, 1], "block": [64, 1, 1],
                           "metrics": {"m.sum": 65536}}}


@pytest.mark.parametrize("launch, metrics, message", [
    ({"kernel": "other"}, ["m.sum"], "expected kernel other"),
    ({}, ["missing.sum"], "lacks metrics"),
])
def test_match_launches_says_what_is_wrong(launch, metrics, message):
    record = {"ID": "0", "Kernel Name": "_ZN6kernelE", "Grid Size": "(2, 1, 1)", "Block Size": "(64, 1, 1)",
              "m.sum": "1"}
    expected = {"case": "c", "kernel": "kernel", **launch}
    with pytest.raises(nc.ncu.NcuError, match=message):
        nc.ncu.match_launches([record], [expected], metrics, "ncu")
    with pytest.raises(nc.ncu.NcuError, match="profiled 1 launches but 2"):
        nc.ncu.match_launches([record], [expected, expected], ["m.sum"], "ncu")


def test_no_csv_at_all():
    with pytest.raises(nc.ncu.NcuError, match="no CSV header"):
        nc.ncu.parse_ncu_csv("==ERROR== the application crashed\n")


def test_a_dry_run_never_overwrites_a_real_recording(tmp_path):
    (tmp_path / nc.PROVENANCE_NAME).write_text(json.dumps({"source": "ncu"}))
    assert nc.main(["--dry-run", "--out", str(tmp_path), "--case", TWO[0]]) == 1


FAKE_NCU = """#!{python}
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1 (stand-in)")
    sys.exit(0)
if os.environ.get("FAKE_NCU_FAIL"):
    print("==ERROR== ERR_NVGPUCTRPERM - no permission", file=sys.stderr)
    sys.exit(1)
manifest = args[args.index("--manifest") + 1]
with open(manifest, "w") as handle:
    handle.write(os.environ["FAKE_NCU_MANIFEST"])
sys.stdout.write(open(os.environ["FAKE_NCU_RAW"]).read())
"""


def test_record_with_a_stand_in_ncu(dry_run, tmp_path, monkeypatch, capsys):
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    launches = [{"case": c.name, "kernel": c.function} for c in nc.select(TWO)]
    monkeypatch.setenv("FAKE_NCU_MANIFEST", json.dumps({"launches": launches, "device": {"name": "stand-in"},
                                                        "wrong_results": []}))
    monkeypatch.setenv("FAKE_NCU_RAW", str(dry_run / nc.RAW_NAME))
    out = tmp_path / "out"
    assert nc.main(["--out", str(out), "--ncu", str(ncu), *(f"--case={c}" for c in TWO)]) == 0
    assert nc.read_counters(out / nc.CSV_NAME) == nc.read_counters(dry_run / nc.CSV_NAME)
    provenance = json.loads((out / nc.PROVENANCE_NAME).read_text())
    assert provenance["source"] == "ncu" and "2099.1" in provenance["tool"]
    assert provenance["gpu"] == "stand-in"

    monkeypatch.setenv("FAKE_NCU_FAIL", "1")
    assert nc.main(["--out", str(tmp_path / "failed"), "--ncu", str(ncu)]) == 1
    error = capsys.readouterr().err
    assert "FAILED: ncu exited with status 1" in error and "performance counters" in error


def test_missing_ncu_is_named(tmp_path, capsys):
    assert nc.main(["--out", str(tmp_path), "--ncu", str(tmp_path / "no-such-ncu")]) == 1
    assert "is not on the PATH" in capsys.readouterr().err


def test_every_case_names_a_lesson_kernel():
    for case in nc.CASES:
        assert case.kernel.py_func.__name__ == case.function
        assert os.path.basename(case.kernel.py_func.__code__.co_filename) == f"{case.module}.py"
