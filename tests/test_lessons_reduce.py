"""Lesson 5's experiment module: the protocol, the readers (pure functions of a LessonResult), the
models, the tree counts against the tracer, the concept pictures and the figures, on a synthetic
result whose answers are known and on the committed recording as it is."""

import math
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gpu_lessons import lessons  # noqa: E402
from gpu_lessons.kernels import reduce as k  # noqa: E402
from gpu_lessons.lessons import reduce as lesson  # noqa: E402
from gpu_lessons.plots.style import alt_text  # noqa: E402
from gpu_lessons.results import Evidence, LessonResult, RecordingError, make_table, read_result  # noqa: E402
from gpu_lessons.scoreboard import score  # noqa: E402
from gpu_lessons.sim import trace  # noqa: E402

ROOF = {"bandwidth_gbps": 4270.0, "bandwidth_variant": "copy_vec4", "peak_gflops": 64304.0}
T0_US, BW = 6.0, 4000.0  # the synthetic table's launch cost and bandwidth
SMS = 132
META = {"gpu": "NVIDIA H200", "slug": "test-gpu", "compute_capability": "9.0", "sms": SMS,
        "sm_clock_mhz": 2000.0, "memory_clock_mhz": 3201.0, "driver": "13.0", "cuda_runtime": "13.0",
        "numba": "0.68.0", "numba_cuda": "0.30.4", "python": "3.12", "date": "2026-12-01T00:00:00+00:00",
        "command": "test", "git_revision": "abc", "lesson": "reduce", "peak_fp32_gflops": 66908.2}
RESIDENT = {"vec4": 6, "vec4_last_block": 8, "vec4_lb8": 8, "vec4_maxreg32": 8, "vec4_u2": 8, "vec4_smem4": 4}
REPS = 1024
# SM cycles per tree: the frame costs 100; the trees cost as the paths model says for interleaved (10 per
# warp instruction: 47, 12) and as the wavefront model says for strided_index (141 wavefronts, not 36).
TREE_CYCLES = {"no_tree": 100.0, "interleaved": 100 + 470.0, "strided_index": 100 + 120.0 * 141 / 36,
               "sequential": 100 + 120.0}


def row(variant, n, param=math.nan, provider="gpu_lessons", t0_us=T0_US, bw=BW, ms=None, flops=None):
    ms = (t0_us * 1e-6 + 4 * n / (bw * 1e9)) * 1e3 if ms is None else ms
    return {"lesson": lesson.NAME, "variant": variant, "provider": provider, "size": n, "param": param,
            "bytes": 4 * n, "flops": n if flops is None else flops, "runs": 25, "median_ms": ms, "min_ms": ms,
            "max_ms": ms}


def synthetic_rows():
    rows = []
    for i, name in enumerate(k.BY_NAME):
        param = lesson.DEFAULT_BLOCKS_PER_SM if k.BY_NAME[name].grid_stride else math.nan
        steps_left = max(0, len(k.PROGRESSION) - 1 - i)  # each step twice as fast; then at BW
        rows.append(row(name, lesson.BIG, param, t0_us=T0_US if not steps_left else 0.0,
                        bw=BW / 2**steps_left))
    for name in ("grid_stride", "warp_shuffle"):
        for bps in lesson.BLOCKS_PER_SM:
            if bps != lesson.DEFAULT_BLOCKS_PER_SM:
                rows.append(row(name, lesson.BIG, bps, bw=BW * min(1, bps / 4)))
    for name in lesson.WAVE_VARIANTS:
        for bps in lesson.WAVE_BLOCKS_PER_SM:
            if not (name in k.BY_NAME and bps == lesson.DEFAULT_BLOCKS_PER_SM):
                waves = bps / RESIDENT[name]
                rows.append(row(name, lesson.BIG, bps, bw=BW * waves / math.ceil(waves)))  # the tail model
    for n in lesson.SIZES:
        for name in lesson.SWEEP_VARIANTS:
            if n != lesson.BIG:
                rows.append(row(name, n, lesson.DEFAULT_BLOCKS_PER_SM))
        rows.append(row(lesson.CUPY, n, provider="cupy", t0_us=9.0))
        rows.append(row(lesson.NUMBA_REDUCE, n, bw=300.0))
    clock_ghz = META["sm_clock_mhz"] / 1e3
    for bps in lesson.TREE_BLOCKS_PER_SM:
        blocks = bps * SMS
        for kind in k.TREE_KINDS:
            tiles = lesson.BIG // k.BLOCK
            ms = TREE_CYCLES[kind] / clock_ghz * tiles / SMS / 1e6
            rows.append(row(f"tiles_{kind}", lesson.BIG, bps, ms=ms))
            trees = REPS * blocks
            rows.append(row(f"repeat_{kind}", blocks * k.BLOCK, bps, flops=trees * 255,
                            ms=2 * TREE_CYCLES[kind] / clock_ghz * trees / SMS / 1e6))
    return rows


def synthetic_facts():
    variants = {name: {"kernel": name, "registers": 38 if resident == 6 else 32, "static_shared_bytes": 128,
                       "dynamic_shared_bytes": 57216 if name == "vec4_smem4" else 0,
                       "threads_per_block": 256, "resident_per_sm_driver": resident,
                       "resident_per_sm_calculator": resident}
                for name, resident in RESIDENT.items()}
    return {
        "waves": {"sms": SMS, "size": lesson.BIG, "blocks_per_sm": lesson.WAVE_BLOCKS_PER_SM,
                  "variants": variants},
        "trees": {"reps": REPS, "tile": 256, "sms": SMS, "blocks_per_sm": lesson.TREE_BLOCKS_PER_SM,
                  "tiles_size": lesson.BIG},
        "float": [
            {"variant": "atomic_per_element", "provider": "gpu_lessons", "size": 2**24, "runs": 20,
             "distinct_results": 19, "max_error": 275.0, "relative_error": 3.3e-5, "error_bound": None,
             "depth": 2**24, "blocks": 65536},
            {"variant": "vec4_last_block", "provider": "gpu_lessons", "size": 2**24, "runs": 20,
             "distinct_results": 1, "max_error": 0.5, "relative_error": 6e-8, "error_bound": 21.5,
             "depth": 43, "blocks": 1056},
            {"variant": lesson.CUPY, "provider": "cupy", "size": 2**24, "runs": 20, "distinct_results": 1,
             "max_error": 0.5, "relative_error": 6e-8, "error_bound": None, "depth": None, "blocks": None},
        ],
        "float_grids": [{"variant": "vec4_last_block", "size": lesson.BIG, "blocks_per_sm": b,
                         "blocks": b * SMS, "runs": 5, "distinct_results": 1, "value": 1.3e8 + b,
                         "bits": f"{b:08x}"} for b in lesson.FLOAT_GRID_BLOCKS_PER_SM],
        "float_grid": {"sms": SMS, "blocks_per_sm": 8, "blocks": 8 * SMS, "runs": 20},
    }


PER_TREE_INSTRUCTIONS = {"no_tree": 40, "interleaved": 40 + 47 * 6, "strided_index": 40 + 12 * 6,
                         "sequential": 40 + 12 * 6}


def synthetic_ncu():
    """Counters in the shape ncu_cases() records: the taught trees on one block, the repeat kernels
    at 8 and 16 repetitions (a fixed prologue plus a cost per repetition)."""
    cases = {}
    for name in lesson.NCU_TREES:
        metrics = {metric: 100 for metric in lesson.NCU_METRICS}
        metrics["smsp__thread_inst_executed.sum"] = 100 * 20
        cases[f"{name}/one block"] = {"kernel": name, "source": "run", "metrics": metrics}
    for kind, per_tree in PER_TREE_INSTRUCTIONS.items():
        for reps in lesson.NCU_REPS:
            metrics = {metric: 7 * reps for metric in lesson.NCU_METRICS}
            metrics["smsp__inst_executed.sum"] = 500 + per_tree * reps
            metrics["smsp__thread_inst_executed.sum"] = 16000 + 16 * per_tree * reps
            cases[f"repeat_{kind}/reps={reps}"] = {"kernel": f"repeat_{kind}", "source": "run",
                                                    "metrics": metrics}
    return cases


@pytest.fixture(scope="module")
def result():
    evidence = Evidence(facts=synthetic_facts(), kernels={
        "vec4": {"registers": 38, "shared_bytes": 128, "local_bytes": 0,
                 "sass": {"counts": {"LDG.E.128": 7, "LDG.E": 1, "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU": 1,
                                     "SHFL.DOWN": 15, "BAR.SYNC.DEFER_BLOCKING": 1},
                          "lines": ["LDG.E.128 R4"]}},
        "vec4_last_block": {"registers": 32, "shared_bytes": 260, "local_bytes": 0,
                            "sass": {"counts": {"LDG.E.128": 7, "LDG.E.64": 1, "ATOMG.E.ADD.STRONG.GPU": 1,
                                                "MEMBAR.SC.GPU": 2}}}}, ncu=synthetic_ncu())
    return LessonResult(lesson=lesson.NAME, table=make_table(synthetic_rows()), meta=META, evidence=evidence)


@pytest.fixture(scope="module")
def recorded():
    return read_result(lesson.NAME, gpu="nvidia-h200")


def test_registered_with_its_sections_and_ncu_cases():
    assert lessons.get("reduce") is lesson
    assert lesson.NOTEBOOK == "05_reduce.ipynb"
    assert [s.name for s in lesson.SECTIONS] == ["progression", "grid", "vec4 waves", "sizes", "references",
                                                 "trees without atomics", "floating point", "divergence"]
    assert len(set(lesson.NCU_METRICS)) == len(lesson.NCU_METRICS) == 8


def test_ncu_cases_launch_once_each_and_check_their_result():
    cases = lesson.ncu_cases()
    assert len({c.name for c in cases}) == len(cases) == 3 + 2 * len(k.TREE_KINDS)
    kernels = {**{name: k.KERNELS[name] for name in lesson.NCU_TREES},
               **{f"repeat_{kind}": kernel for kind, kernel in k.REPEATS.items()}}
    assert {c.kernel for c in cases} == set(kernels)
    for case in cases:  # the name ncu reports must contain the case's kernel name
        assert case.kernel in kernels[case.kernel].py_func.__name__
    for case in (cases[2], cases[3]):  # one taught tree, one repeat kernel (the rest are the same code)
        case.launch()
        assert case.check(), case.name


def test_comparisons_score_on_the_result(result):
    scores = [score(result, c) for c in lesson.COMPARISONS]
    assert [s["size"] for s in scores] == [lesson.BIG, lesson.MID, lesson.BIG]
    assert scores[1]["ratio"] > 1  # 6 us against CuPy's 9 us of fixed cost at 2^24
    assert scores[2]["best_variant"] in k.DETERMINISTIC


def test_progression_in_teaching_order_with_speedups(result):
    steps = lesson.progression_table(result, ROOF)
    assert list(steps.index) == list(k.BY_NAME)
    assert math.isnan(steps["speedup"].iloc[0])
    halvings = len(k.PROGRESSION) - 2  # the last step (vec4) also pays the 6 us launch cost
    assert steps["speedup"].iloc[1:1 + halvings].round(2).tolist() == [2.0] * halvings
    assert steps["of_ceiling"].iloc[-1] == pytest.approx(steps["gbps"].iloc[-1] / ROOF["bandwidth_gbps"])


def test_launch_model_recovers_cost_and_bandwidth(result):
    fits = lesson.launch_model(result, ["vec4", lesson.CUPY]).set_index("variant")
    assert fits.loc["vec4", "t0_us"] == pytest.approx(T0_US, rel=1e-6)
    assert fits.loc["vec4", "bw_gbps"] == pytest.approx(BW, rel=1e-6)
    assert fits.loc[lesson.CUPY, "t0_us"] == pytest.approx(9.0, rel=1e-6)
    assert fits["max_model_error"].max() < 1e-9


def test_versus_and_ratio_range(result, recorded):
    ratios = lesson.versus(result)
    assert ratios.loc[2**10, "vec4"] > 1.3 and ratios.loc[lesson.BIG, "vec4"] == pytest.approx(1.0, abs=0.02)
    # the H200, from CUB's switch to two launches (2^13) to 2^20: both one-launch kernels win there
    ranges = {v: tuple(round(r, 2) for r in lesson.ratio_range(recorded, v, 2**13, 2**20))
              for v in lesson.BEST}
    assert ranges == {"vec4": (1.19, 1.23), "vec4_last_block": (1.02, 1.07), "vec4_two_pass": (0.92, 0.96)}
    with pytest.raises(RecordingError, match="no sizes of vec4 between"):
        lesson.ratio_range(recorded, "vec4", 2**29, 2**30)


def test_grid_rows_and_in_flight(result, recorded):
    for source in (result, recorded):
        grid = lesson.grid_rows(source)
        assert set(grid["variant"]) == set(lesson.GRID_VARIANTS)
        assert set(grid["param"]) == set(lesson.BLOCKS_PER_SM)
    view = lesson.in_flight(result).set_index(["variant", "param"])
    vec4 = view.loc[("vec4", 1.0)]
    assert vec4["bytes_in_flight_per_sm"] == 256 * 64
    assert vec4["implied_latency_ns"] == pytest.approx(256 * 64 * SMS / vec4["gbps"])
    eight = lesson.in_flight(recorded).set_index(["variant", "param"]).loc[("vec4", 8.0)]
    assert eight["resident_per_sm"] == 6  # 38 registers: 6 blocks of 256 fit, not the 8 requested
    assert eight["bytes_in_flight_per_sm"] == 6 * 256 * 64


def test_waves_from_the_driver_residency(result):
    waves = lesson.waves_table(result).set_index(["variant", "blocks_per_sm"])
    assert waves.loc[("vec4", 8), "waves"] == pytest.approx(8 / 6)
    assert waves.loc[("vec4", 8), "last_wave_fill"] == pytest.approx(1 / 3)
    assert waves.loc[("vec4", 12), "last_wave_fill"] == 1.0
    assert waves.loc[("vec4_smem4", 8), "waves"] == 2.0
    assert waves.loc[("vec4_lb8", 12), "of_best"] == pytest.approx(1.5 / 2, rel=0.01)  # the tail model
    assert list(dict.fromkeys(waves.index.get_level_values("variant"))) == lesson.WAVE_VARIANTS


def older(recorded, facts=(), kernels=None, ncu=None):
    """The recording as a run without some of today's sections would have written it."""
    evidence = recorded.evidence
    return replace(recorded, evidence=replace(
        evidence, facts={k: v for k, v in evidence.facts.items() if k not in facts},
        kernels=evidence.kernels if kernels is None else kernels, ncu=evidence.ncu if ncu is None else ncu))


def test_readers_name_what_an_older_recording_lacks(recorded):
    for reader, key in ((lesson.waves_table, "facts.waves"), (lesson.tree_costs, "facts.trees"),
                        (lesson.float_grids, "facts.float_grids")):
        assert len(reader(recorded))  # today's recording has it
        with pytest.raises(RecordingError, match=key.replace(".", r"\.")):
            reader(older(recorded, facts=("waves", "trees", "float_grids")))


def test_float_table_says_when_there_is_no_bound(recorded, result):
    table = lesson.float_table(recorded).set_index(["size", "variant"])
    atomic = table.loc[(2**24, "atomic_per_element")]  # 2^24 - 1 additions that can round, not 2^24
    assert atomic["depth"] == 2**24 - 1 and atomic["bound"] == "none (gamma_d >= 1)"
    assert math.isnan(atomic["error_over_bound"])  # not 0.0: a bound of sum|x| or more says nothing
    atomic = table.loc[(2**28, "atomic_per_element")]
    assert atomic["bound"] == "none (d u >= 1)" and atomic["error_bound"] == math.inf
    chain = table.loc[(2**24, "sequential float32 (cumsum)")]  # 2^24 - 1 adds: gamma_d is 1.7e7, finite
    assert chain["bound"] == "none (gamma_d >= 1)" and math.isnan(chain["error_over_bound"])
    cub = table.loc[(2**24, lesson.CUPY)]
    assert cub["bound"].startswith("not derived") and math.isnan(cub["error_over_bound"])
    assert pd.isna(cub["depth"]) and pd.isna(cub["relative_bound"])  # no depth 0 for a library
    vec4 = table.loc[(2**28, "vec4_last_block")]
    assert vec4["bound"] == "derived" and 0 < vec4["error_over_bound"] < 1
    assert vec4["relative_bound"] == pytest.approx(k.gamma(int(vec4["depth"])))
    assert vec4["blocks"] == 1056 and vec4["blocks_source"] == "recorded"
    rows = [{key: v for key, v in row.items() if key != "blocks"} for row in recorded.evidence.fact("float")]
    facts = {**recorded.evidence.facts, "float": rows}  # a recording from before the grid was kept
    before = replace(recorded, evidence=replace(recorded.evidence, facts=facts))
    filled = lesson.float_table(before).set_index(["size", "variant"]).loc[(2**28, "vec4_last_block")]
    assert filled["blocks"] == 1056 and filled["blocks_source"].startswith("8 blocks/SM x 132 SMs")
    new = lesson.float_table(result).set_index("variant")
    assert new.loc["atomic_per_element", "depth"] == 2**24 - 1  # today's strict count, not the row's 2^24
    assert new.loc["atomic_per_element", "bound"] == "none (gamma_d >= 1)"  # finite, but says nothing
    assert new.loc["vec4_last_block", "blocks_source"] == "recorded"
    assert new.loc[lesson.CUPY, "bound"].startswith("not derived")


def test_same_bits_for_the_same_grid(result):
    grids = lesson.float_grids(result)
    assert (grids["distinct_results"] == 1).all() and grids["value"].nunique() == len(grids)
    assert lesson.float_grid(result)["blocks"] == 8 * SMS


def test_resources_and_sass_markers_read_old_and_new_counts(recorded, result):
    old = lesson.resources_table(recorded)
    assert old.loc["vec4", "blocks_per_sm"] == 6 and old.loc["vec4_last_block", "blocks_per_sm"] == 8
    assert old.loc["vec4_lb8", "blocks_per_sm"] == 8 and old.loc["vec4_lb8", "local_bytes"] == 8  # it spills
    assert old.loc["vec4_last_block", "MEMBAR"] == 2 and old.loc["atomic_per_element", "REDG.E.ADD.F32"] == 1
    assert old.loc["vec4", "LDG.E.128"] == 7 and old.loc["vec4_u2", "LDG.E.128"] == 3
    new = lesson.resources_table(result, limits=lesson.sm_limits())
    assert new.loc["vec4", "REDG.E.ADD.F32"] == 1 and new.loc["vec4", "LDG.E"] == 1
    assert new.loc["vec4_last_block", "LDG.E"] == 0 and new.loc["vec4_last_block", "MEMBAR"] == 2
    excerpt = lesson.sass_excerpt(recorded, "vec4")
    assert sum("LDG.E.128" in line for line in excerpt[:4]) == 4  # four 16-byte loads before any add
    # the taught tree branches around its add; the same levels in the repeat kernel are predicated
    def tree_loads(kernel):  # the levels' shared loads (not the final read of word 0 through UR4)
        return [line.split()[1] for line in lesson.sass_excerpt(recorded, kernel) if "LDS" in line
                and "UR4" not in line]

    branched, predicated = tree_loads("tree_sequential"), tree_loads("repeat_sequential")
    assert len(branched) == len(predicated) == 16  # 8 levels x (load dst, load src)
    assert not any(w.startswith("@") for w in branched) and all(w.startswith("@") for w in predicated)
    kernels = {**recorded.evidence.kernels, "tree_sequential": {"registers": 14}}
    with pytest.raises(RecordingError, match="kernels.tree_sequential.sass.lines"):
        lesson.sass_excerpt(older(recorded, kernels=kernels), "tree_sequential")


def test_tree_model_counts():
    counts = lesson.tree_model_table()
    assert counts["warp_instructions"].to_dict() == {"interleaved": 47, "strided_index": 12, "sequential": 12}
    assert counts["wavefronts_load_src"].to_dict() == {"interleaved": 47, "strided_index": 47,
                                                       "sequential": 12}
    assert counts["worst_conflict_ways"].to_dict() == {"interleaved": 1, "strided_index": 8, "sequential": 1}
    # per access, the slowest warp of each level: 8 x 1, or 2 + 4 + 8 + 8 + 8 + 4 + 2 + 1 = 37
    assert counts["critical_path_wavefronts"].to_dict() == {"interleaved": 24, "strided_index": 111,
                                                            "sequential": 24}
    assert (counts["active_lanes"] == 255).all() and (counts["levels"] == 8).all()


def traced_add(kernel, *args):
    x = np.random.default_rng(0).random(k.BLOCK, dtype=np.float32)
    return lesson.traced_add(trace.trace(kernel, 1, k.BLOCK, x, *args))


@pytest.mark.parametrize("kind", ["interleaved", "strided_index", "sequential"])
def test_the_tracer_counts_what_the_tree_model_counts(kind):
    """One block of 256, traced: the taught kernel's add and the repeat kernel's (one repetition) have
    the warp instructions, lanes and wavefronts tree_model_counts derives from the indices alone.
    Interleaved: 8 warps busy until s >= 32 (8*5 + 4 + 2 + 1 = 47 instructions, few lanes each);
    strided index: 12 packed instructions, 47 wavefronts (up to 8-way conflicts); sequential: 12, 12."""
    model = lesson.tree_model_counts(kind)
    taught = traced_add(k.KERNELS[lesson.TREE_OF_KIND[kind]], np.zeros(1, np.float32))
    repeated = traced_add(k.REPEATS[kind], np.zeros(1, np.float32), np.int32(1))
    for add in (taught, repeated):
        assert add["instructions"].tolist() == [model["warp_instructions"]] * 3
        assert add["threads"].tolist() == [model["active_lanes"]] * 3
        assert add["wavefronts"].tolist() == [model["wavefronts_load_dst"], model["wavefronts_load_src"],
                                              model["wavefronts_store"]]


def test_ncu_readers(result, recorded):
    per_tree = lesson.ncu_per_tree(result)
    assert per_tree["warp_instructions"].to_dict() == PER_TREE_INSTRUCTIONS
    assert per_tree.loc["interleaved", "tree_warp_instructions"] == 47 * 6
    assert (per_tree["lanes_per_instruction"] == 16).all() and (per_tree["shared_wavefronts"] == 14).all()
    counts = lesson.ncu_tree_counts(result)
    assert list(counts.index) == list(lesson.NCU_TREES) and (counts["lanes_per_instruction"] == 20).all()
    # the H200: per tree, the shared wavefronts the model counts (141 / 141 / 36), and as many warp
    # instructions with every lane active in each tree (the compiler predicates the add)
    recorded_per_tree = lesson.ncu_per_tree(recorded)
    model = lesson.tree_model_table()
    kinds = list(model.index)
    assert recorded_per_tree.loc[kinds, "tree_shared_wavefronts"].tolist() == model["wavefronts"].tolist()
    assert (recorded_per_tree["lanes_per_instruction"] == 32).all()
    assert recorded_per_tree.loc[kinds, "tree_warp_instructions"].tolist() == [382, 390, 390]
    taught = lesson.ncu_tree_counts(recorded)  # one block of 256 through each taught tree (branches)
    assert taught["shared_load_conflicts"].tolist() == [0, 70, 0]
    instructions = taught["warp_instructions"]
    assert instructions["tree_interleaved"] > 2 * instructions["tree_sequential"]
    with pytest.raises(RecordingError, match="ncu.tree_interleaved/one block is missing"):
        lesson.ncu_tree_counts(older(recorded, ncu={}))


def test_tree_costs_and_the_divergence_models(result):
    costs = lesson.tree_costs(result).set_index(["setting", "blocks_per_sm", "kind"])
    assert costs.loc[("tiles", 8, "no_tree"), "cycles_per_tree_per_sm"] == pytest.approx(100.0)
    assert costs.loc[("repeat", 1, "interleaved"), "extra_cycles"] == pytest.approx(2 * 470.0)
    model = lesson.divergence_model(result).set_index(["kind", "setting", "blocks_per_sm"]).sort_index()
    assert model.loc["interleaved", "measured / paths_model"].to_numpy() == pytest.approx(1.0)
    assert model.loc["interleaved", "measured / wavefronts_model"].to_numpy() == pytest.approx(1.0)
    assert model.loc["strided_index", "measured / paths_model"].to_numpy() == pytest.approx(141 / 36)
    assert model.loc["strided_index", "measured / wavefronts_model"].to_numpy() == pytest.approx(1.0)
    predicted = model.loc[("strided_index", "tiles", 8), "wavefronts_model_cycles"]
    assert predicted == pytest.approx(120 * 141 / 36)
    critical = model.loc[("strided_index", "tiles", 8), "critical_path_model_cycles"]
    assert critical == pytest.approx(120 + (111 - 24) * lesson.CYCLES_PER_WAVEFRONT)
    assert model.loc["interleaved", "critical_path_model_cycles"].to_numpy() == pytest.approx(
        model.loc["sequential", "extra_cycles"].to_numpy())  # no conflict: sequential's cycles


def test_the_h200s_trees_follow_the_critical_path_not_the_paths(recorded):
    """Without atomics, on the H200: the divergent tree costs within 6% of sequential's (the source's
    path count says 3.9x), and at one block per SM the conflicted tree costs sequential's cycles plus
    one per extra critical-path wavefront, within 1%."""
    model = lesson.divergence_model(recorded).set_index(["kind", "setting", "blocks_per_sm"]).sort_index()
    assert model.loc["interleaved", "measured / paths_model"].between(0.25, 0.28).all()
    assert model.loc["interleaved", "measured / critical_path_model"].between(1.0, 1.07).all()
    one_block = model.xs(1, level="blocks_per_sm").loc["strided_index", "measured / critical_path_model"]
    assert one_block.between(0.99, 1.01).all()


def test_shuffle_pictures_are_functions_of_lane_indices():
    down, xor = lesson.lane_contributions("down"), lesson.lane_contributions("xor")
    assert down.shape == (5, 32, 32)
    assert (down[-1][0] == 1).all()  # lane 0: every value once
    assert down[-1][31][31] == 32 and down[-1][31].sum() == 32  # past the end: its own value, doubled 5 times
    assert (xor[-1] == 1).all()  # the butterfly: every lane, every value once
    steps = lesson.shuffle_steps("down")
    assert not steps[(steps["offset"] == 16) & (steps["lane"] == 16)]["in_range"].item()
    with pytest.raises(ValueError, match="down' or 'xor"):
        lesson.shuffle_steps("up")


def test_adds_per_read_in_one_unit():
    ratio = lesson.adds_per_read(ROOF["bandwidth_gbps"], META["peak_fp32_gflops"])
    assert ratio == pytest.approx(31.3, abs=0.05)  # float adds per float read: not 16


def test_host_orders_show_the_order_of_additions():
    x = np.random.default_rng(1).random(2**20, dtype=np.float32)
    orders = lesson.host_orders(x)
    exact = float(np.sum(x, dtype=np.float64))
    sequential, pairwise = orders["sequential float32 (cumsum)"], orders["numpy pairwise float32"]
    assert abs(sequential - exact) > 10 * abs(pairwise - exact)


def test_figures_render_with_alt_text(result, recorded):
    always = {"progression", "size", "grid", "floating_point", "reduction_tree", "tree_activity",
              "shuffle_butterflies"}
    every = always | {"vec4_waves", "trees_without_atomics"}
    assert set(lesson.figures(recorded, ROOF)) == every  # today's recording has the waves and trees
    before = lesson.figures(older(recorded, facts=("waves", "trees")), ROOF)
    assert set(before) == always  # a recording made before those sections: the rest still draws
    new = lesson.figures(result, ROOF)
    assert set(new) == every
    for figure in [*before.values(), *new.values()]:
        assert alt_text(figure)
    without_cupy = replace(result, table=result.table[result.table["provider"] != "cupy"])
    assert set(lesson.figures(without_cupy, ROOF)) == set(new)  # a GPU without CuPy: no reference rows
    labels = [t.get_text() for t in new["progression"].axes[0].get_yticklabels()]
    # the teaching steps only (the deterministic variants come later in the lesson), then the references
    assert labels[:len(k.PROGRESSION)] == k.PROGRESSION
    assert labels[len(k.PROGRESSION):] == [lesson.CUPY, lesson.NUMBA_REDUCE]


# ------------------------------------------------------- the notes' two-path warp, merged as a section


def test_divergence_section_runs_and_merges_into_a_recording(monkeypatch):
    """The divergence section on the simulator (one SM, a stand-in clock), then merged into an earlier
    recording as ``gpu-lessons record reduce --section divergence --merge`` does: its rows replace only
    its own, the recording's meta stays and the section's own provenance is kept beside it."""
    from types import SimpleNamespace

    from gpu_lessons import bench
    from gpu_lessons.lessons import runner

    def measure(launch, input_sets=1, **_):
        launch(0)
        return bench.Timing(2.0, 1.5, 3.0, 25)

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(runner.Run, "kernel", lambda run, name, kernel, args, sass_pattern=None: None)
    monkeypatch.setattr(lesson, "device_info", lambda: SimpleNamespace(sms=1))
    monkeypatch.setattr(lesson, "DIVERGENCE_BLOCKS_PER_SM", 1)
    monkeypatch.setattr(lesson, "DIVERGENCE_REPS", [2, 5])
    monkeypatch.setattr(lesson, "poison", lambda array: None)
    section = [s for s in lesson.SECTIONS if s.name == "divergence"]
    new = runner.measure(SimpleNamespace(NAME=lesson.NAME, SECTIONS=section), show_progress=False)
    assert not new.failures, new.failures
    assert sorted(set(new.table["variant"])) == ["two_paths_divergent", "two_paths_uniform"]
    earlier = LessonResult(lesson=lesson.NAME, table=make_table(synthetic_rows()), meta=META,
                           evidence=Evidence(facts=synthetic_facts()))
    new = replace(new, meta={**META, "date": "2026-12-05T09:00:00+00:00", "command": "merge test"})
    both = runner.merged(earlier, new, ["divergence"])
    assert len(both.table) == len(earlier.table) + 4
    assert both.meta["date"] == META["date"] and both.facts["divergence"]["reps"] == [2, 5]
    assert runner.section_meta(both, "divergence")["command"] == "merge test"
    assert runner.section_meta(both, "trees without atomics")["command"] == "test"
    pair = lesson.two_paths(both)
    assert list(pair.index) == [2, 5] and (pair["divergent / uniform"] == 1.0).all()
    again = runner.merged(both, new, ["divergence"])  # measured again: replaced, not added twice
    assert len(again.table) == len(both.table)
    with pytest.raises(RecordingError, match="two-path"):
        lesson.two_paths(earlier)
    with pytest.raises(RecordingError, match="cannot merge"):
        runner.merged(earlier, replace(new, meta={**new.meta, "slug": "other-gpu"}), ["divergence"])


def test_the_two_path_pair_refuses_a_partial_block_in_one_line():
    from gpu_lessons.checks import InputError
    from gpu_lessons.kernels import divergence as dv

    seeds = np.zeros(300, np.float32)
    for size in (0, 300):
        with pytest.raises(InputError, match="positive multiple of 256"):
            dv.launch("two_paths_divergent", seeds, np.zeros(size, np.float32), 1)
    with pytest.raises(ValueError, match="unknown kernel"):
        dv.launch("three_paths", seeds, np.zeros(256, np.float32), 1)
