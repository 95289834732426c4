"""MemoryTrace.request: one warp's request lane by lane, consistent with the totals."""

import numpy as np
import pytest

from gpu_lessons.kernels import bank_conflicts as b
from gpu_lessons.kernels import coalescing as c
from gpu_lessons.sim import trace
from gpu_lessons.sim.recorder import TraceError

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("offset, sectors", [(0, 4), (1, 5), (8, 4)])
def test_offset_copy_request(offset, sectors):
    x = RNG.standard_normal(300, dtype=np.float32)
    out = np.zeros(256, np.float32)
    counts = trace.trace(c.offset_copy_kernel, 1, 256, x, out, offset)
    request = counts.request(source="x[i + offset]", warp=3)
    assert list(request["lane"]) == list(range(32))
    assert list(request["address"]) == [4 * (96 + lane + offset) for lane in range(32)]
    assert request.attrs["sectors"] == sectors == request["sector"].nunique()
    assert request.attrs["useful_bytes"] == 128 and request.attrs["moved_bytes"] == 32 * sectors


@pytest.mark.parametrize("stride, conflicts", [(1, 0), (2, 1), (32, 31), (33, 0)])
def test_shared_request_banks(stride, conflicts):
    x = RNG.standard_normal(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    counts = trace.trace(b.shared_stride_kernel, 1, 256, x, out, stride)
    request = counts.request(array="buffer", op="ld", warp=2)
    assert list(request["bank"]) == [(lane * stride) % 32 for lane in range(32)]
    assert request.attrs["bank_conflicts"] == conflicts
    total = counts["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
    assert total == 8 * conflicts  # 8 warps, each the same pattern


def test_request_errors_name_the_choices():
    x = RNG.standard_normal(256, dtype=np.float32)
    counts = trace.trace(b.shared_stride_kernel, 1, 256, x, np.zeros(256, np.float32), 1)
    with pytest.raises(TraceError, match="2 memory instructions"):
        counts.request(array="buffer")
    with pytest.raises(TraceError, match="no memory instruction"):
        counts.request(array="nothing")
    with pytest.raises(TraceError, match="no request for warp 99"):
        counts.request(array="buffer", op="ld", warp=99)
    with pytest.raises(TraceError, match="op must be"):
        counts.request(array="buffer", op="load")
