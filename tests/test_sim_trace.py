"""The memory tracer against hand-computed counts, and against Nsight Compute where a recording exists.

Hand counts: 32 float32 lanes of a warp span 128 bytes, 4 sectors of 32 bytes when aligned; shared
memory has 32 banks of 4-byte words (word w in bank w % 32).
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpu_lessons.kernels import bank_conflicts as bc
from gpu_lessons.kernels import coalescing as co
from gpu_lessons.sim import memory_model as mm
from gpu_lessons.sim import trace as tr
from gpu_lessons.sim.trace_result import METRICS

# after gpu_lessons picked the mode; kernels need ``cuda`` as a module global for the simulator
cuda = importlib.import_module("numba.cuda")
float32 = np.float32

REPO = Path(__file__).resolve().parent.parent
GLD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GLD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
GST_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
SLD_INST = "smsp__inst_executed_op_shared_ld.sum"
SLD_WAVE = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SLD_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SST_INST = "smsp__inst_executed_op_shared_st.sum"
SST_WAVE = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SST_CONF = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"


def floats(n):
    return np.arange(n, dtype=np.float32)


# -- the model on hand-made warps ------------------------------------------------------------------

LANES = np.arange(32)


def one_warp_sectors(addresses, size=4):
    return int(mm.global_sectors(np.zeros(32, int), addresses, np.full(32, size), 1)[0])


def one_warp_wavefronts(addresses, size=4, lanes=LANES):
    n = lanes.size
    wavefronts, ideal = mm.shared_wavefronts(np.zeros(n, int), lanes, addresses, np.full(n, size), 1)
    return int(wavefronts[0]), int(ideal[0])


@pytest.mark.parametrize(
    "addresses, sectors",
    [(4 * LANES, 4), (4 * LANES + 4, 5), (4 * LANES + 32, 4), (8 * LANES, 8), (128 * LANES, 32),
     (np.zeros(32, int), 1), (4 * LANES[::-1], 4)],
    ids=["contiguous", "offset 1", "offset 8", "stride 2", "stride 32", "broadcast", "reversed"],
)
def test_model_global_sectors(addresses, sectors):
    assert one_warp_sectors(addresses) == sectors


def test_model_counts_a_16_byte_access_once_per_sector():
    assert one_warp_sectors(16 * LANES, size=16) == 16  # a float4 per lane: 512 bytes


@pytest.mark.parametrize("stride, wavefronts", [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 32), (33, 1)])
def test_model_shared_stride(stride, wavefronts):
    assert one_warp_wavefronts(4 * stride * LANES) == (wavefronts, 1)


def test_model_shared_broadcast_and_two_words_in_one_bank():
    assert one_warp_wavefronts(np.zeros(32, int)) == (1, 1)
    assert one_warp_wavefronts(np.where(LANES < 16, 0, 128)) == (2, 1)  # words 0 and 32: bank 0


def test_model_shared_wide_accesses_go_by_128_byte_phases():
    assert one_warp_wavefronts(8 * LANES, size=8) == (2, 2)  # two half-warps, conflict-free
    assert one_warp_wavefronts(16 * LANES, size=16) == (4, 4)  # four quarter-warps
    assert one_warp_wavefronts(16 * LANES, size=8) == (4, 2)  # 8-byte at 16-byte stride: 2-way


def test_model_partial_warp_has_fewer_phases():
    assert one_warp_wavefronts(8 * LANES[:8], size=8, lanes=LANES[:8]) == (1, 1)


# -- the tracer on the lesson kernels --------------------------------------------------------------


def traced_copy(kernel, n, *scalars, x=None, block=256):
    x = floats(4096) if x is None else x
    out = np.zeros(n, np.float32)
    counts = tr.trace(kernel, -(-n // block), block, x, out, *scalars)
    return counts, out, x


def test_contiguous_copy_is_4_sectors_per_request():
    counts, out, x = traced_copy(co.offset_copy_kernel, 512, 0)
    assert np.array_equal(out, x[:512])
    assert counts[GLD_REQ] == counts[GST_REQ] == 16
    assert counts[GLD_SEC] == counts[GST_SEC] == 64
    assert counts["smsp__inst_executed_op_global_ld.sum"] == 16
    assert counts.sectors_per_request("ld") == 4.0


@pytest.mark.parametrize("offset, sectors", [(1, 5), (4, 5), (7, 5), (8, 4)])
def test_offset_copy_adds_a_sector_per_warp(offset, sectors):
    counts, out, x = traced_copy(co.offset_copy_kernel, 256, offset)
    assert np.array_equal(out, x[offset:offset + 256])
    assert counts.sectors_per_request("ld") == sectors
    assert counts.sectors_per_request("st") == 4


@pytest.mark.parametrize("stride, sectors", [(2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_copy(stride, sectors):
    counts, out, x = traced_copy(co.strided_copy_kernel, 256, stride, x=floats(256 * stride))
    assert np.array_equal(out, x[::stride])
    assert counts.sectors_per_request("ld") == sectors


@pytest.mark.parametrize("fields, sectors", [(2, 8), (4, 16), (16, 32)])
def test_aos_field_read_is_strided_soa_is_not(fields, sectors):
    records = np.arange(256 * fields, dtype=np.float32).reshape(256, fields)
    out = np.zeros(256, np.float32)
    aos = tr.trace(co.aos_field_kernel, 1, 256, records, out, 1)
    assert np.array_equal(out, records[:, 1])
    assert aos.sectors_per_request("ld") == sectors
    soa = tr.trace(co.soa_field_kernel, 1, 256, np.ascontiguousarray(records.T), out, 1)
    assert np.array_equal(out, records[:, 1])
    assert soa.sectors_per_request("ld") == 4


def test_partial_and_idle_warps():
    # 1000 elements, 5 blocks of 256: warps 0-30 full, warp 31 has 8 lanes, warps 32-39 idle
    counts, out, x = traced_copy(co.offset_copy_kernel, 1000, 0, block=256)
    assert np.array_equal(out, x[:1000])
    assert counts[GLD_REQ] == 32
    assert counts[GLD_SEC] == 31 * 4 + 1


# The probe on an H200: one launch of 2,048 shared-load requests, word stride s.
H200_PROBE = {1: (0, 2048), 2: (2048, 4096), 32: (63488, 65536), 33: (0, 2048)}


@pytest.mark.parametrize("stride", sorted(H200_PROBE))
def test_shared_stride_matches_the_h200_probe(stride):
    x = floats(256)
    out = np.zeros(256, np.float32)
    counts = tr.trace(bc.shared_stride_kernel, 1, 256, x, out, stride)
    assert np.array_equal(out, x)
    requests = counts[SLD_INST]
    assert requests == counts[SST_INST] == 8
    conflicts, wavefronts = H200_PROBE[stride]
    scale = 2048 // requests  # every request of the probe looks like these: counts scale exactly
    assert (counts[SLD_CONF] * scale, counts[SLD_WAVE] * scale) == (conflicts, wavefronts)
    assert (counts[SST_CONF], counts[SST_WAVE]) == (counts[SLD_CONF], counts[SLD_WAVE])


def launch_transpose(kernel, a, trace=True):
    out = np.zeros(a.shape[::-1], np.float32)
    grid = bc.transpose_grid(a.shape, bc.TRANSPOSE_BLOCK)
    if kernel is not bc.transpose_naive_kernel:
        grid = bc.tiled_transpose_grid(a.shape)
    if trace:
        return tr.trace(kernel, grid, bc.TRANSPOSE_BLOCK, a, out), out
    kernel[grid, bc.TRANSPOSE_BLOCK](a, out)
    return None, out


def test_transposes_naive_tiled_padded():
    a = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    naive, out = launch_transpose(bc.transpose_naive_kernel, a)
    assert np.array_equal(out, a.T)
    assert (naive.sectors_per_request("ld"), naive.sectors_per_request("st")) == (4, 32)
    assert naive[SLD_INST] == 0
    for kernel, conflicts_per_load in ((bc.transpose_tiled_kernel, 31), (bc.transpose_padded_kernel, 0)):
        counts, out = launch_transpose(kernel, a)
        assert np.array_equal(out, a.T)
        assert (counts.sectors_per_request("ld"), counts.sectors_per_request("st")) == (4, 4)
        assert counts[SLD_INST] == counts[SST_INST] == 2 * 8 * 4  # 2 tiles x 8 warps x 4 rows each
        assert counts[SLD_CONF] == conflicts_per_load * counts[SLD_INST]
        assert counts[SST_CONF] == 0


def sectors_of(spans):
    """Distinct 32-byte sectors of each (first byte, end byte) span, summed: the hand count."""
    return sum(len({b // 32 for b in range(start, end, 4)}) for start, end in spans)


def test_transpose_with_partial_tiles_counts_only_active_lanes():
    a = np.arange(45 * 70, dtype=np.float32).reshape(45, 70)
    counts, out = launch_transpose(bc.transpose_padded_kernel, a)
    assert np.array_equal(out, a.T)
    # loads: each row of a (280 bytes) is read by warps of 32, 32 and 6 lanes; rows 45-63 of the
    # last tile row have no active lane, so no request
    loads = [(280 * r + 128 * w, 280 * r + min(128 * (w + 1), 280)) for r in range(45) for w in range(3)]
    assert counts[GLD_REQ] == len(loads) == 135
    assert counts[GLD_SEC] == sectors_of(loads)
    # stores: each row of out (180 bytes) is written by warps of 32 and 13 lanes
    stores = [(180 * r + 128 * w, 180 * r + min(128 * (w + 1), 180)) for r in range(70) for w in range(2)]
    assert counts[GST_REQ] == len(stores) == 140
    assert counts[GST_SEC] == sectors_of(stores)
    assert counts[SLD_CONF] == counts[SST_CONF] == 0


def test_tracing_leaves_results_identical():
    a = np.random.default_rng(1).standard_normal((40, 33), dtype=np.float32)
    _, plain = launch_transpose(bc.transpose_tiled_kernel, a, trace=False)
    _, traced = launch_transpose(bc.transpose_tiled_kernel, a)
    assert np.array_equal(plain, traced)
    x = np.random.default_rng(2).standard_normal(300, dtype=np.float32)
    plain_out, traced_out = np.zeros(300, np.float32), np.zeros(300, np.float32)
    bc.shared_stride_kernel[2, 256](x, plain_out, 33)
    tr.trace(bc.shared_stride_kernel, 2, 256, x, traced_out, 33)
    assert np.array_equal(plain_out, traced_out)


def test_broadcast_read_has_no_conflict():
    @cuda.jit
    def broadcast(x, out):
        cell = cuda.shared.array(1, float32)
        if cuda.threadIdx.x == 0:
            cell[0] = x[0]
        cuda.syncthreads()
        out[cuda.threadIdx.x] = cell[0]

    out = np.zeros(64, np.float32)
    counts = tr.trace(broadcast, 1, 64, floats(64) + 5, out)
    assert np.all(out == 5)
    assert (counts[SLD_INST], counts[SLD_WAVE], counts[SLD_CONF]) == (2, 2, 0)
    assert counts[SST_INST] == 1  # only warp 0 has a lane that stores
    assert counts[GLD_REQ] == 1 and counts[GLD_SEC] == 1


def test_negative_indices_views_and_names():
    @cuda.jit
    def reversed_copy(x, out):
        i = cuda.grid(1)
        out[i] = x[i - x.shape[0]]  # negative: the same element as x[i]

    x = floats(256 + 1)
    device_x = cuda.to_device(x)
    out = np.zeros(256, np.float32)
    counts = tr.trace(reversed_copy, 1, 256, device_x[1:], out)  # a view: one float past an aligned start
    assert np.array_equal(out, x[1:])
    assert counts.sectors_per_request("ld") == 5  # the view's offset is kept
    rows = counts.by_instruction
    assert list(rows["array"]) == ["x", "out"]
    assert list(rows["source"]) == ["x[i - x.shape[0]]", "out[i]"]
    assert rows["location"].str.startswith("test_sim_trace.py:").all()
    by_array = counts.by_array.set_index("array")
    assert by_array.loc["x", "sectors"] == 8 * 5 and by_array.loc["out", "sectors"] == 8 * 4


def test_device_functions_and_loops_count_per_execution():
    @cuda.jit(device=True)
    def load(x, i):
        return x[i]

    @cuda.jit
    def sum_columns(m, out):
        j = cuda.grid(1)
        total = 0.0
        for row in range(m.shape[0]):
            total += load(m, (row, j))
        out[j] = total

    m = np.arange(3 * 64, dtype=np.float32).reshape(3, 64)
    out = np.zeros(64, np.float32)
    counts = tr.trace(sum_columns, 1, 64, m, out)
    assert np.array_equal(out, m.sum(axis=0))
    assert counts[GLD_REQ] == 3 * 2 and counts[GLD_SEC] == 3 * 2 * 4
    assert counts.by_instruction.loc[0, "function"] == "load"


def test_vector_access_counts_as_one_16_byte_access():
    from gpu_lessons.vector import load4, store4

    @cuda.jit
    def copy4(x, out):
        i = cuda.grid(1)
        a, b, c, d = load4(x, i)
        store4(out, i, a, b, c, d)

    x = floats(4 * 64)
    out = np.zeros_like(x)
    counts = tr.trace(copy4, 1, 64, x, out)
    assert np.array_equal(out, x)
    assert counts[GLD_REQ] == 2 and counts[GLD_SEC] == 2 * 16
    assert counts[GST_REQ] == 2 and counts[GST_SEC] == 2 * 16
    assert set(counts.by_instruction["bytes"]) == {16}
    tr.note_vector_access(x, 0, 4, False)  # not tracing: nothing happens


def test_warp_shuffles_still_work_under_the_tracer():
    from gpu_lessons.sim import warp

    if not hasattr(warp, "shfl_down_sync"):
        pytest.skip("warp primitives not installed yet")

    @cuda.jit
    def warp_sum(x, out):
        i = cuda.grid(1)
        value = x[i]
        for delta in (16, 8, 4, 2, 1):
            value += cuda.shfl_down_sync(0xFFFFFFFF, value, delta)
        if cuda.threadIdx.x % 32 == 0:
            out[i // 32] = value

    x = floats(64)
    out = np.zeros(2, np.float32)
    counts = tr.trace(warp_sum, 1, 64, x, out)
    assert np.array_equal(out, [x[:32].sum(), x[32:].sum()])
    assert counts[GLD_REQ] == 2 and counts[GST_REQ] == 2 and counts[GST_SEC] == 2


def test_report_and_errors():
    counts, _, _ = traced_copy(co.offset_copy_kernel, 64, 1)
    text = repr(counts)
    assert "offset_copy_kernel[(1, 1, 1), (256, 1, 1)]" in text and "x[i + offset]" in text
    assert "<table" in counts._repr_html_()
    assert set(counts.totals) == set(METRICS)
    assert not tr.is_tracing()
    with pytest.raises(tr.TraceError, match="launch dimensions"):
        tr.trace(co.offset_copy_kernel, 0, 64, floats(65), np.zeros(64, np.float32), 1)


def test_gpu_mode_runs_the_python_function_through_the_simulator(tmp_path):
    """numba.cuda in GPU mode (no GPU needed to import it): trace() simulates ``kernel.py_func``."""
    module = tmp_path / "gpu_mode_kernels.py"
    module.write_text(textwrap.dedent("""
        from numba import cuda, float32

        @cuda.jit(device=True)
        def twice(v):
            return 2 * v

        @cuda.jit
        def scale_via_shared(x, out):
            tile = cuda.shared.array(64, float32)
            i = cuda.grid(1)
            tile[cuda.threadIdx.x] = x[i + 1]
            cuda.syncthreads()
            out[i] = twice(tile[cuda.threadIdx.x])

        def make_closure_kernel():
            from gpu_lessons.vector import load4, store4  # closure cells, not module globals

            @cuda.jit(device=True)
            def add_one(v):
                return v + 1

            @cuda.jit
            def bump_first(x, out):
                i = cuda.grid(1)
                a, b, c, d = load4(x, i)
                store4(out, i, add_one(a), b, c, d)

            return bump_first
    """))
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
        os.environ.pop("GPU_LESSONS_MODE", None)
        sys.path[:0] = [{str(tmp_path)!r}, {str(REPO)!r}]
        from numba import cuda
        import numpy as np
        import gpu_lessons
        assert gpu_lessons.MODE == "gpu", gpu_lessons.MODE
        from gpu_lessons.sim.trace import trace
        import gpu_mode_kernels as k
        x = np.arange(65, dtype=np.float32)
        out = np.zeros(64, np.float32)
        counts = trace(k.scale_via_shared, 1, 64, x, out)
        assert np.array_equal(out, 2 * x[1:]), out
        assert k.twice.__class__.__name__ == "CUDADispatcher"  # restored after the trace
        print(counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
              counts.totals["smsp__inst_executed_op_shared_st.sum"])

        class StandInDeviceArray:  # what trace() uses of a device array: pointer, copies
            def __init__(self, host, pointer):
                self.host = host.copy()
                self.__cuda_array_interface__ = {{"data": (pointer, False), "shape": host.shape,
                                                 "typestr": "<f4", "version": 3}}
            def copy_to_host(self):
                return self.host.copy()
            def copy_to_device(self, host):
                self.host[...] = host

        d_x = StandInDeviceArray(x, 0x7F0000000000 + 28)  # 28 bytes past a 256-byte boundary
        d_out = StandInDeviceArray(np.zeros(64, np.float32), 0x7F0000001000)
        counts = trace(k.scale_via_shared, 1, 64, d_x, d_out)
        assert np.array_equal(d_out.host, 2 * x[1:]), d_out.host  # written back to the "device"
        print(counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])

        # device functions and float4 twins reached through a closure are simulated too
        bump = k.make_closure_kernel()
        x4 = np.arange(256, dtype=np.float32)
        out4 = np.zeros_like(x4)
        counts = trace(bump, 1, 64, x4, out4)
        expected = x4.copy()
        expected[::4] += 1
        assert np.array_equal(out4, expected), out4
        print(counts.totals["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
              counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("GPU_LESSONS_MODE", "NUMBA_ENABLE_CUDASIM")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # x[i + 1]: 5 sectors per warp; one shared store per warp; then, with x starting 28 bytes
    # past a 256-byte boundary, x[i + 1] is sector-aligned: 4 sectors per warp
    # the float4 kernel: 2 warps x one 16-byte load each, 16 sectors per request
    assert result.stdout.split() == ["10", "2", "8", "2", "32"]


# -- against Nsight Compute on an H200 -------------------------------------------------------------

# GPU_LESSONS_NCU_COUNTERS points the comparison at another recording (e.g. a dry run's)
H200_RECORDING = REPO / "data" / "nvidia-h200" / "checks" / "ncu_counters.csv"
RECORDING = Path(os.environ.get("GPU_LESSONS_NCU_COUNTERS", H200_RECORDING))


def _ncu_script():
    path = REPO / "benchmarks" / "record_ncu_counters.py"
    spec = importlib.util.spec_from_file_location("record_ncu_counters", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ncu_counters = _ncu_script()
RECORDED = ncu_counters.read_counters(RECORDING) if RECORDING.exists() else {}


@pytest.mark.skipif(not RECORDED, reason=f"no hardware recording at {RECORDING} "
                    "(python benchmarks/record_ncu_counters.py --out data/nvidia-h200/checks, on the H200)")
@pytest.mark.parametrize("case", [c for c in ncu_counters.CASES if c.name in RECORDED] or [None],
                         ids=lambda c: c.name if c else "none")
def test_tracer_matches_nsight_compute(case):
    recorded = RECORDED[case.name]
    assert (recorded["grid"], recorded["block"]) == (case.grid, case.block), (
        f"{case.name}: the recording's launch config differs from the case's; record again")
    traced = ncu_counters.trace_case(case)
    for recorded_metric, hardware in recorded["metrics"].items():
        metric = ncu_counters.tracer_metric(recorded_metric)
        known = ncu_counters.KNOWN_DIFFERENCES.get((case.name, metric))
        expected = known[0](traced[metric]) if known else traced[metric]
        assert hardware == expected, f"{case.name} {metric}: ncu {hardware}, tracer {traced[metric]}"


def test_every_recorded_case_is_still_defined():
    unknown = set(RECORDED) - {c.name for c in ncu_counters.CASES}
    assert not unknown, f"recorded cases no longer in benchmarks/record_ncu_counters.py: {sorted(unknown)}"


def test_a_16_byte_shared_load_read_by_lane_pairs_takes_half_warps():
    """Nsight Compute on the H200 counts 2 phases, not 4, when lanes l and l^1 (or l^2) read the same
    16 bytes (lesson 6's register tiles: 12 wavefronts per warp per k-step for step 11, not 16)."""
    from gpu_lessons.sim import memory_model as mm

    def wavefronts(addresses):
        lanes = np.arange(32)
        return mm.shared_wavefronts(np.zeros(32, int), lanes, np.asarray(addresses), np.full(32, 16), 1)

    distinct = np.arange(32) * 16
    assert tuple(int(v[0]) for v in wavefronts(distinct)) == (4, 4)  # 512 bytes: four quarter-warps
    pairs = np.repeat(np.arange(16) * 16, 2)  # lane l reads what lane l^1 reads
    assert tuple(int(v[0]) for v in wavefronts(pairs)) == (2, 2)
    strided_pairs = np.array([(lane // 4 * 2 + lane % 2) * 16 for lane in range(32)])  # l and l^2
    assert tuple(int(v[0]) for v in wavefronts(strided_pairs)) == (2, 2)
    almost = pairs.copy()
    almost[31] = 16 * 16  # one lane breaks the pairs (to banks no other lane of its phase uses)
    assert int(wavefronts(almost)[0][0]) == 4



@cuda.jit
def _read_one_past(out):
    tile = cuda.shared.array(33, float32)
    tile[cuda.threadIdx.x] = 1.0  # 32 threads write entries 0..31; entry 32 is never written
    cuda.syncthreads()
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x + 1]


def test_poisoned_shared_memory_shows_a_read_no_thread_wrote():
    out = np.zeros(32, np.float32)
    tr.trace(_read_one_past, 1, 32, out, poison_shared=True)
    assert np.isnan(out[31]) and (out[:31] == 1).all()
