"""The no-slip basis of the bounded direction (simulator.fft.bases.Chebyshev, the ``chebyshev`` series of
simulator.fft.walls): its transforms through the distributed FFT against the Chebyshev series by NumPy, in both
differentiation modes, on every layout that takes walls and 1, 2 and 4 devices."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from simulator.fft import BACKENDS, build_mesh
from simulator.fft.bases import Chebyshev
from simulator.fft.layouts import LAYOUTS

from support import case_id

#: (backend, devices) of every layout that takes walls, on 1, 2 and 4 devices where it splits
WALL_CASES = [(name, n, None) for name, layout in sorted(LAYOUTS.items()) if layout.takes_walls
              for n in ((1, 2, 4) if layout.real_axes != (None, None, None) else (1,))]
#: a plane's box (1, Nx, Nz) and a box, each dividing over 4 devices
SHAPES = [(1, 8, 16), (4, 8, 8)]


def backend(devices, case, shape):
    name, n, _ = case
    cls = BACKENDS[name]
    return cls(shape, build_mesh(cls, None, devices[:n]))


def numpy_spectrum(x: np.ndarray, height: float) -> np.ndarray:
    """The Chebyshev coefficients along z by NumPy's interpolation at the Gauss-Lobatto points (mapped to
    [-1, 1]), NumPy's FFT along x and y."""
    nz = x.shape[-1]
    xi = 2.0 * Chebyshev(nz, height).points() / height - 1.0
    vander = np.polynomial.chebyshev.chebvander(xi, nz - 1)  # values = vander @ coefficients
    return np.fft.fftn(np.einsum("kj,...j->...k", np.linalg.inv(vander), x), axes=(-3, -2))


def test_the_chebyshev_points_run_from_plate_to_plate():
    """The Gauss-Lobatto points ascend from the lower plate (0) to the upper (H), both plates grid points."""
    z = Chebyshev(9, 2.5).points()
    assert z[0] == 0.0 and z[-1] == pytest.approx(2.5, rel=1e-15) and np.all(np.diff(z) > 0)
    np.testing.assert_allclose(z + z[::-1], 2.5, rtol=0, atol=1e-15)


@pytest.mark.parametrize("case", WALL_CASES, ids=case_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_chebyshev_transforms_are_numpys_series(devices, case, shape):
    """Forward: the Chebyshev coefficients (NumPy's, by interpolation at the points) along the bounded axis and
    NumPy's FFT across; inverse: the field back, on every device count, float64 round-off."""
    fft = backend(devices, case, shape)
    x = np.random.default_rng(1).standard_normal((2, *shape))
    field = jax.device_put(x, fft.real_sharding(1))
    expected = numpy_spectrum(x, 1.0)
    spectrum = fft.forward_walls(field, "chebyshev")
    assert spectrum.sharding.is_equivalent_to(fft.spectral_sharding(1), 5)
    np.testing.assert_allclose(np.asarray(spectrum), expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    back = np.asarray(fft.inverse_walls(jax.device_put(expected, fft.spectral_sharding(1)), "chebyshev"))
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in WALL_CASES if c[1] in (1, 2)], ids=case_id)
def test_the_chebyshev_transforms_differentiate_in_both_modes(devices, case):
    """Reverse mode is the transpose (the dot-product test <ct, W x> = <W^T ct, x>), forward mode the transform
    of the tangent."""
    shape = (1, 8, 8)
    fft = backend(devices, case, shape)
    rng = np.random.default_rng(2)
    x = jax.device_put(rng.standard_normal(shape), fft.real_sharding())
    ct = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    forward = np.asarray(fft.forward_walls(x, "chebyshev"))
    _, pull = jax.vjp(lambda u: fft.forward_walls(u, "chebyshev"), x)
    (x_bar,) = pull(jax.device_put(ct, fft.spectral_sharding()))
    assert np.sum(np.asarray(x_bar) * np.asarray(x)) == pytest.approx(np.real(np.sum(ct * forward)), rel=1e-12)
    k = jax.device_put(forward, fft.spectral_sharding())
    real_ct = rng.standard_normal(shape)
    _, pull = jax.vjp(lambda s: fft.inverse_walls(s, "chebyshev"), k)
    (k_bar,) = pull(jax.device_put(real_ct, fft.real_sharding()))
    inverse = np.asarray(fft.inverse_walls(k, "chebyshev"))
    assert np.real(np.sum(np.asarray(k_bar) * forward)) == pytest.approx(np.sum(real_ct * inverse), rel=1e-12)
    _, tangent = jax.jvp(lambda u: fft.forward_walls(u, "chebyshev"), (x,), (x,))
    np.testing.assert_allclose(np.asarray(tangent), forward, rtol=0, atol=1e-13 * np.abs(forward).max())
