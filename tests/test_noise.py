"""The white noise random initial conditions start from (simulator/equations/noise.py)."""

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.noise import white_noise
from simulator.fft import BACKENDS
from simulator.runtime import build_mesh


def backend(name, n, devices):
    return BACKENDS[name]((8, 24, 16), build_mesh(BACKENDS[name], None, devices[:n]), local_fft="xla")


def test_noise_is_standard_normal_the_same_on_every_layout_and_in_both_precisions(devices):
    key = jax.random.key(7)
    reference = np.asarray(white_noise(backend("single", 1, devices), key, jnp.float64, 3))
    assert reference.shape == (3, 8, 24, 16)
    assert abs(reference.mean()) < 0.1 and abs(reference.std() - 1) < 0.05
    # fourth moment of a Gaussian is 3: Box-Muller's transform, not a uniform
    assert abs(np.mean(reference**4) - 3) < 0.4
    for name, n in (("slab", 8), ("pencil", 4), ("slab", 2)):
        np.testing.assert_array_equal(np.asarray(white_noise(backend(name, n, devices), key, jnp.float64, 3)),
                                      reference)
    single = np.asarray(white_noise(backend("slab", 8, devices), key, jnp.float32, 3))
    np.testing.assert_allclose(single, reference, rtol=0, atol=1e-5)  # same uniforms, float32 round-off
    other = np.asarray(white_noise(backend("single", 1, devices), jax.random.key(8), jnp.float64, 3))
    assert np.corrcoef(other.ravel(), reference.ravel())[0, 1] < 0.1
