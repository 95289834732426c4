"""Lesson 2's kernels against NumPy, on sizes that are not multiples of the block or the unroll,
lengths 0 and 1; bad input refused in one line."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import littles_law as k

rng = np.random.default_rng()


def random(n, dtype=np.float32):
    return rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("n", [1, 5, 1027, 2053])
@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("vector", [False, True])
def test_copies_are_exact(n, unroll, vector):
    x = random(n)
    assert np.array_equal(k.copy(x, unroll, vector, block=64), x)


@pytest.mark.parametrize("n", [3, 1027])
def test_eight_byte_copy_is_the_scalar_kernel_on_float64(n):
    x = random(n, np.float64)
    assert np.array_equal(k.copy(x, 4, block=64), x)


def test_dynamic_shared_memory_does_not_change_the_result():
    x = random(1031)
    assert np.array_equal(k.copy(x, 2, True, block=64, shared=4096), x)


@pytest.mark.parametrize("n", [1, 1027])
def test_persistent_copy_is_exact(n):
    x = random(n)
    assert np.array_equal(k.copy_persistent_host(x, 4, blocks=2, block=64), x)


def test_copy_rejects_bad_input():
    with pytest.raises(InputError, match="misaligned for 16-byte"):
        k.copy(random(1028)[1:], 1, vector=True)
    with pytest.raises(InputError, match="dtype float32, got float64"):
        k.copy(random(8, np.float64), 1, vector=True)
    with pytest.raises(InputError, match="float32 or float64, got int32"):
        k.copy(np.arange(8, dtype=np.int32))
    with pytest.raises(InputError, match="unroll must be >= 1"):
        k.copy_ilp(0)


def test_generated_source_issues_every_load_before_the_first_store():
    source = k.kernel_source(k.copy_ilp(4, vector=True))
    body = source.split("if i3 < groups:")[1].split("else:")[0]
    loads = [i for i, line in enumerate(body.splitlines()) if "load4" in line]
    stores = [i for i, line in enumerate(body.splitlines()) if "store4" in line]
    assert len(loads) == len(stores) == 4 and max(loads) < min(stores)
    assert "uint64" in source  # unsigned indices: no negative-index wrap-around code


@pytest.mark.parametrize("chains", [1, 2, 5, 8])
def test_fma_chains_match_float32_fmas(chains):
    got = k.fma_chains_host(chains, 2, 48, 1)  # 96 threads: not a multiple of 64
    assert np.array_equal(got, k.fma_chains_reference(np.arange(96), chains, 1))


def test_fma_flops_count_every_chain():
    assert k.fma_chains_flops(8, 132, 256, 10) == 2 * 8 * 16 * 10 * 132 * 256


def test_chain_is_one_cycle_over_random_lines():
    nodes = k.chain_nodes(8192, 60, seed=4)
    assert len(set(nodes.tolist())) == 60
    assert all(n % 32 == 0 for n in nodes)  # one node per 128-byte line
    chain, start = k.build_chain(8192, 60, seed=4)
    j, seen = start, []
    for _ in range(60):
        j = int(chain[j])
        seen.append(j)
    assert sorted(seen) == sorted(nodes.tolist()) and j == start


def test_pointer_chase_kernel_visits_every_node_exactly_once():
    chain, start = k.build_chain(4096, 40, seed=2)
    visited, j = [], start
    for _ in range(40):  # one step per launch: the kernel's own walk, step by step
        j = k.chase(chain, j, 1)
        visited.append(j)
    assert len(set(visited)) == 40 and j == start
    assert set(visited) == set(k.chain_nodes(4096, 40, seed=2).tolist())
    assert k.chase(chain, start, 40 * 3) == start  # whole cycles end where they began


def test_chain_rejects_bad_sizes():
    with pytest.raises(InputError, match="nodes must be <= 4"):
        k.chain_nodes(128, 5)
    with pytest.raises(InputError, match="buffer_elements must be >= 32"):
        k.chain_nodes(16, 1)


def test_littles_law_prediction():
    # 16 warps x 32 lanes x 4 loads x 16 bytes = 32 KiB per SM; at 600 ns on 132 SMs: 2 x 7.2 TB/s
    inflight = k.bytes_in_flight_per_sm(16, 4, 16)
    assert inflight == 32768
    assert k.littles_law_gbps(inflight, 600.0, 132, 4000.0) == 4000.0  # capped by the ceiling
    assert k.littles_law_gbps(1024, 600.0, 132, 4000.0) == pytest.approx(2 * 1024 * 132 / 600)


def test_fma_model_counts_warps_per_scheduler():
    # 1 warp: one scheduler of four, one chain of latency 4: 1/4 of its issue rate -> 1/16 of peak
    assert k.fma_model_fraction(1, 1, 4.0) == pytest.approx(1 / 16)
    assert k.fma_model_fraction(8, 2, 4.0) == pytest.approx(1.0)  # 2 warps x 2 chains per scheduler
    assert k.fma_model_fraction(8, 1, 4.0) == pytest.approx(0.5)
    assert k.fma_model_fraction(6, 4, 4.0) == pytest.approx(1.0)  # every scheduler has >= 1 warp
    assert k.fma_model_fraction(2, 8, 4.0) == pytest.approx(0.5)  # two schedulers idle


# ------------------------------------------------------------------- the pipelined warp queue


def queue_sizes(unroll, per_claim):
    whole = 4 * 32 * unroll * per_claim  # floats in one claim of full chunks
    return [0, 1, 5, 4 * 32 * unroll - 1, whole - 3, whole, whole + 1, whole + 5, 3 * whole + 7]


@pytest.mark.parametrize("unroll, per_claim", [(1, 1), (2, 1), (2, 3), (1, 4)])
def test_queue_copy_is_exact_and_resets_its_counters(unroll, per_claim):
    for n in queue_sizes(unroll, per_claim):
        x = random(n)
        assert np.array_equal(k.copy_queue_host(x, unroll, per_claim, blocks=2, block=64), x), n
        assert k.queue_counters(np.uint64).copy_to_host().tolist() == [0, 0], n


@pytest.mark.parametrize("blocks, block", [(1, 32), (3, 32), (2, 64), (1, 96)])
def test_queue_copy_on_other_grids(blocks, block):
    # 1 warp doing every chunk; more warps than chunks (n = 1031: 4 chunks of 2 x 32 float4 at most)
    for n in (1031, 4 * 32 * 2 * 3 + 2):
        x = random(n)
        assert np.array_equal(k.copy_queue_host(x, 2, 2, blocks=blocks, block=block), x), (n, blocks, block)
        assert k.queue_counters(np.uint64).copy_to_host().tolist() == [0, 0]


def test_queue_copy_launch_on_device_arrays_repeats():
    from numba import cuda

    x = random(2 * 4 * 32 * 3 + 9)
    d_x, d_out = cuda.to_device(x), cuda.device_array(x.size, np.float32)
    for _ in range(3):  # the counters the last warp reset serve the next launch
        k.copy_queue_launch(3, d_x, d_out, 2, 64, chunks_per_claim=2)
        assert np.array_equal(d_out.copy_to_host(), x)


def test_queue_copy_loads_the_next_chunk_before_storing_this_one():
    source = k.kernel_source(k.copy_queue(4, 2))
    loop = source.split("    while chunk < end:")[1].split("    if claim == claims:")[0]
    lines = loop.splitlines()
    next_loads = [i for i, line in enumerate(lines) if "load4(x, int64(nbase" in line]
    stores = [i for i, line in enumerate(lines) if "store4(out, int64(base" in line]
    assert len(next_loads) == len(stores) == 4 and max(next_loads) < min(stores)
    assert source.count("cuda.atomic.add(counters, 0") == 2  # the first claim, and one per claim after


def test_queue_copy_rejects_bad_input():
    with pytest.raises(InputError, match="misaligned for 16-byte"):
        k.copy_queue_host(random(1028)[1:])
    with pytest.raises(InputError, match="dtype float32, got float64"):
        k.copy_queue_host(random(8, np.float64))
    with pytest.raises(InputError, match="x must be 1-D"):
        k.copy_queue_host(random(16).reshape(4, 4))
    with pytest.raises(InputError, match="C-contiguous"):
        k.copy_queue_host(random(64)[::2])
    with pytest.raises(InputError, match="multiple of 32"):
        k.copy_queue_host(random(64), block=48)
    with pytest.raises(InputError, match="chunks_per_claim must be >= 1"):
        k.copy_queue_host(random(64), 2, 0)
    with pytest.raises(InputError, match="unroll must be >= 1"):
        k.copy_queue(0)
    with pytest.raises(InputError, match="max_registers must be >= 16"):
        k.copy_queue(4, 1, 8)


# ------------------------------------------------------------------- lengths 0 and 1, bad input


@pytest.mark.parametrize("vector", [False, True])
def test_every_copy_of_an_empty_vector_is_empty(vector):
    x = random(0)
    assert k.copy(x, 4, vector).shape == (0,)
    assert k.copy_persistent_host(x, 2).shape == (0,)
    assert k.copy_queue_host(x, 2).shape == (0,)
    assert k.copy(random(0, np.float64), 2).shape == (0,)


def test_one_float64_element_and_one_fma_thread():
    x = random(1, np.float64)
    assert np.array_equal(k.copy(x, 2, block=32), x)
    assert np.array_equal(k.fma_chains_host(3, 1, 1, 2), k.fma_chains_reference(np.arange(1), 3, 2))


def test_dynamic_shared_memory_past_48_kib_opts_the_kernel_in():
    from gpu_lessons.occupancy import sm_limits

    x = random(100)
    assert np.array_equal(k.copy(x, 1, block=64, shared=sm_limits().shared_per_block + 1), x)


@pytest.mark.parametrize("call, message", [
    (lambda: k.copy(random(8), shared=10**6), "shared must be <= "),
    (lambda: k.copy(random(8), shared=-1), "shared must be >= 0"),
    (lambda: k.copy(random(20)[::2]), "x must be C-contiguous"),
    (lambda: k.copy_persistent_host(random(20)[::2]), "x must be C-contiguous"),
    (lambda: k.copy_persistent_host(random(8), 0), "unroll must be >= 1"),
    (lambda: k.copy([1.0, 2.0]), "x must be a NumPy array, got list"),
    (lambda: k.fma_chains_host(1, 2**31, 32, 1), "blocks must be <= 2147483647"),
    (lambda: k.chase(np.zeros(0, np.uint32), 0, 1), "chain is empty"),
    (lambda: k.chain_nodes(1024, 4, seed=-1), "seed must be >= 0"),
    (lambda: k.allow_dynamic_shared(k.copy_ilp(1), (random(4), random(4)), -1), "nbytes must be >= 0"),
])
def test_bad_input_gets_one_clear_line(call, message):
    with pytest.raises(InputError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


def test_copies_take_numpy_arrays_and_say_so_for_device_arrays():
    from numba import cuda

    d = cuda.to_device(random(8))
    for call in (k.copy, k.copy_persistent_host, k.copy_queue_host):
        with pytest.raises(InputError, match="x must be a NumPy array.*_launch function"):
            call(d)
