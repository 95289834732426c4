"""A fixture for the kernel input tests: the simulator refuses a launch of 0 blocks, as a GPU does.

On a GPU, numba-cuda refuses a grid or block with a 0 in it ("LaunchConfig.grid values must be >= 1");
its simulator runs such a launch as nothing at all, so a wrapper that launches on an empty input would
pass on the simulator and fail on a GPU. With ``refuse_empty_launches`` the simulator refuses it too.

    from kernel_launches import refuse_empty_launches  # noqa: F401 - a fixture, used by name
"""

import pytest

import gpu_lessons


@pytest.fixture(autouse=True)
def refuse_empty_launches(monkeypatch):
    if not gpu_lessons.SIMULATED:  # the GPU refuses them itself
        yield
        return
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    configure = FakeCUDAKernel.__getitem__

    def checked(kernel, configuration):
        configured = configure(kernel, configuration)
        if min(kernel.grid_dim) < 1 or min(kernel.block_dim) < 1:
            raise ValueError(f"{kernel.fn.__name__}[{kernel.grid_dim}, {kernel.block_dim}]: "
                             "LaunchConfig grid and block values must be >= 1")
        return configured

    monkeypatch.setattr(FakeCUDAKernel, "__getitem__", checked)
    yield
