"""Test session setup: 8 virtual CPU devices and float64, set before JAX starts its backends.

Every test runs on CPU. Tests that need fewer devices take the first N of the 8.
"""

import jax
import pytest

N_DEVICES = 8


def pytest_configure(config):
    # The package never changes JAX settings at import; the test session does it once, up front,
    # exactly as the runtime does for a run (simulator.runtime.configure_devices).
    from simulator.runtime import configure_devices

    configure_devices(N_DEVICES, "float64")


@pytest.fixture(scope="session")
def devices():
    assert len(jax.devices()) == N_DEVICES
    return jax.devices()
