"""Test session setup: 8 virtual CPU devices and float64, set before JAX starts its backends.

Every test runs on CPU. Tests that need fewer devices take the first N of the 8.
"""

import os
import shutil
import tempfile

import jax
import pytest

N_DEVICES = 8


def pytest_configure(config):
    # The package never changes JAX settings at import; the test session does it once, up front,
    # exactly as the runtime does for a run (simulator.runtime.configure_devices).
    from simulator.runtime import configure_devices

    configure_devices(N_DEVICES, "float64")
    # FFTW's measured plans are shared through a wisdom file (simulator/fft/local.py): the session and
    # the runs it starts share one of their own instead of the user's cache
    if "SIMULATOR_FFTW_WISDOM" not in os.environ:
        config._fftw_wisdom_dir = tempfile.mkdtemp(prefix="simulator-test-wisdom-")
        os.environ["SIMULATOR_FFTW_WISDOM"] = os.path.join(config._fftw_wisdom_dir, "wisdom")


def pytest_unconfigure(config):
    if getattr(config, "_fftw_wisdom_dir", None):
        shutil.rmtree(config._fftw_wisdom_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def devices():
    assert len(jax.devices()) == N_DEVICES
    return jax.devices()


@pytest.fixture
def local_fft(request):
    """The local FFT path a test runs on (parametrize it indirectly with "xla" or "fftw").

    Where the native FFTW extension is unavailable, "fftw" tests skip and say why;
    SIMULATOR_REQUIRE_FFTW=1 (set by .ci/run: CI installs FFTW) turns that skip into a failure.
    """
    path = request.param
    if path == "fftw":
        from simulator.fft.local import native

        from support import unavailable

        module, why = native()
        if module is None:
            unavailable("FFTW-path tests", "SIMULATOR_REQUIRE_FFTW", f"the FFTW path is unavailable: {why}")
    return path
