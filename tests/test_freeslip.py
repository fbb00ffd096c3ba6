"""The bounded direction (simulator.fft.bases, simulator.fft.walls): the free-slip basis's sine and cosine
transforms through the distributed FFT, against scipy's, and the config's refusals of walls it cannot run."""

from __future__ import annotations

import math
import re

import jax
import numpy as np
import pytest
import scipy.fft

from simulator.fft import BACKENDS, build_mesh
from simulator.fft.layouts import LAYOUTS

from support import case_id, command

#: (backend, devices) of every layout that takes walls, on 1, 2 and 4 devices where it splits
WALL_CASES = [(name, n, None) for name, layout in sorted(LAYOUTS.items()) if layout.takes_walls
              for n in ((1, 2, 4) if layout.real_axes != (None, None, None) else (1,))]
#: a plane's box (1, Nx, Nz) and a box, each dividing over 4 devices
SHAPES = [(1, 8, 16), (4, 8, 8)]


def takes(case, shape) -> bool:
    """Whether the backend of ``case`` lays out ``shape``: a plane's box splits over a layout that takes a plane."""
    return shape[0] > 1 or case[1] == 1 or LAYOUTS[case[0]].takes_plane


def backend(devices, case, shape):
    name, n, _ = case
    cls = BACKENDS[name]
    fft = cls(shape, build_mesh(cls, None, devices[:n]))
    fft.walls = True  # as a walled run's backend is made (simulator.runtime.make_fft): its spectra are walled ones
    return fft


def scipy_spectrum(x: np.ndarray, parity: str) -> np.ndarray:
    """The walled spectrum by scipy and NumPy: DCT-II (even) or DST-II (odd; entry n holds mode n, entry 0 zero,
    mode N dropped) along z, NumPy's FFT along x and y."""
    if parity == "even":
        z = scipy.fft.dct(x, 2, axis=-1)
    else:
        d = scipy.fft.dst(x, 2, axis=-1)
        z = np.concatenate([np.zeros_like(d[..., :1]), d[..., :-1]], -1)
    return np.fft.fftn(z, axes=(-3, -2))


@pytest.mark.parametrize(("shape", "case"), [(shape, case) for shape in SHAPES for case in WALL_CASES
                                             if takes(case, shape)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v[0], int) else case_id(v))
def test_the_walled_transforms_are_scipys_dct_and_dst(devices, case, shape):
    """Forward: scipy's unnormalised DCT-II/DST-II along the bounded axis, NumPy's FFT across; inverse: scipy's
    idct/idst (the sine's mode N, dropped, zero), on every device count, float64 round-off."""
    fft = backend(devices, case, shape)
    x = np.random.default_rng(1).standard_normal((2, *shape))
    field = jax.device_put(x, fft.real_sharding(1))
    for parity in ("odd", "even"):
        expected = scipy_spectrum(x, parity)
        spectrum = fft.forward_walls(field, parity)
        assert spectrum.sharding.is_equivalent_to(fft.spectral_sharding(1), 5)
        np.testing.assert_allclose(np.asarray(spectrum), expected, rtol=0, atol=1e-13 * np.abs(expected).max())
        back = np.asarray(fft.inverse_walls(jax.device_put(expected, fft.spectral_sharding(1)), parity))
        if parity == "odd":
            d = scipy.fft.dst(x, 2, axis=-1)
            d[..., -1] = 0.0
            x_expected = scipy.fft.idst(d, 2, axis=-1)
        else:
            x_expected = x
        np.testing.assert_allclose(back, x_expected, rtol=0, atol=1e-14 * math.prod(shape))


@pytest.mark.parametrize("case", [c for c in WALL_CASES if c[1] in (1, 2)], ids=case_id)
def test_the_walled_transforms_differentiate_in_both_modes(devices, case):
    """Reverse mode is the transpose (the dot-product test <ct, W x> = <W^T ct, x>, JAX's unconjugated pairing of
    a complex cotangent), forward mode the transform of the tangent."""
    shape = (1, 8, 16) if takes(case, (1, 8, 16)) else (2, 8, 16)
    fft = backend(devices, case, shape)
    rng = np.random.default_rng(2)
    x = jax.device_put(rng.standard_normal(shape), fft.real_sharding())
    ct = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    for parity in ("odd", "even"):
        forward = np.asarray(fft.forward_walls(x, parity))
        _, pull = jax.vjp(lambda u, p=parity: fft.forward_walls(u, p), x)
        (x_bar,) = pull(jax.device_put(ct, fft.spectral_sharding()))
        assert np.sum(np.asarray(x_bar) * np.asarray(x)) == pytest.approx(np.real(np.sum(ct * forward)), rel=1e-12)
        k = jax.device_put(forward, fft.spectral_sharding())
        real_ct = rng.standard_normal(shape)
        _, pull = jax.vjp(lambda s, p=parity: fft.inverse_walls(s, p), k)
        (k_bar,) = pull(jax.device_put(real_ct, fft.real_sharding()))
        inverse = np.asarray(fft.inverse_walls(k, parity))
        assert np.real(np.sum(np.asarray(k_bar) * forward)) == pytest.approx(np.sum(real_ct * inverse), rel=1e-12)
        _, tangent = jax.jvp(lambda u, p=parity: fft.forward_walls(u, p), (x,), (x,))
        np.testing.assert_allclose(np.asarray(tangent), forward, rtol=0, atol=1e-13 * np.abs(forward).max())


def test_a_walled_spectrum_keeps_parseval(devices):
    """sum(w |c|^2) / N^2 is the mean square of the field, for either parity (a sine without its dropped mode)."""
    shape = (1, 8, 16)
    fft = backend(devices, ("slab", 2, None), shape)
    z = (np.arange(16) + 0.5) / 16
    x = np.sin(np.pi * 3 * z) * np.cos(2 * np.pi * np.arange(8) / 8)[:, None] + 0.5 * np.cos(np.pi * z)
    field = jax.device_put(x[None], fft.real_sharding())
    for parity, f in (("odd", np.sin(np.pi * 3 * z)[None, None] * np.ones((1, 8, 1))), ("even", field)):
        f = jax.device_put(np.asarray(f), fft.real_sharding())
        c = np.asarray(fft.forward_walls(f, parity))
        weight = np.asarray(fft.wall_parseval_weight(np.float64))
        assert np.sum(weight * np.abs(c) ** 2) / fft.size**2 == pytest.approx(np.mean(np.asarray(f) ** 2), rel=1e-13)
    kx, ky, kz = (np.asarray(k).ravel() for k in fft.wall_wavenumbers((1.0, 2 * np.pi, 1.0), np.float64))
    assert kz == pytest.approx(np.pi * np.arange(16)) and ky == pytest.approx(np.fft.fftfreq(8, 1 / 8))


BAD = [
    ("physics: {name: ns2d}\ngrid: {shape: [16, 16], walls: {axis: x}}\n",
     r"^error: grid\.walls\.axis = 'x' is not a direction that can lie between plates; z, the last direction"),
    ("grid: {shape: [16, 16, 16], walls: {axis: y}}\n",
     r"^error: grid\.walls\.axis = 'y' is not a direction .*; z, the last direction of the box"),
    ("physics: {name: ns2d}\ngrid: {shape: [16, 16], walls: {axis: y}}\n",  # read as z: the refusal alone
     r"^error: grid\.walls\.axis = 'z' cannot be used with this equation; null for physics\.name = ns2d, which is "
     r"periodic only"),
    ("grid: {shape: [16, 16, 16], walls: {axis: z}}\n",
     r"^error: grid\.walls\.axis = 'z' cannot be used with this equation; null for physics\.name = navier_stokes"),
]


@pytest.mark.parametrize(("text", "pattern"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_walls_are_one_line_exit_2_and_nothing_written(tmp_path, capfd, text, pattern):
    config = tmp_path / "walls.yaml"
    config.write_text(text)
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()
