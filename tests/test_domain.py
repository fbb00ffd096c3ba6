"""The domain a run is built on (simulator.fft.bases, simulator.fft.domain): one basis per axis, built by the backend
from the grid, and the operators' wavenumbers, 2/3 rule and Parseval weights taken from it, periodic or walled."""

from __future__ import annotations

import numpy as np
import pytest

import simulator
from simulator.fft import BACKENDS, build_mesh
from simulator.fft.bases import Chebyshev, Fourier, SinCos

#: (config, overrides, the bounded basis's class or None): a run of each kind of domain, small
RUNS = [("configs/convection_2d.yaml", {"grid.shape": [12, 8]}, SinCos),
        ("configs/convection_2d_noslip.yaml", {"grid.shape": [12, 9]}, Chebyshev),
        ("configs/taylor_green.yaml", {"grid.shape": 12, "fft.layout": "full"}, None)]


def flat(x) -> np.ndarray:
    return np.asarray(x).ravel()


@pytest.mark.parametrize("path, overrides, bounded", RUNS, ids=["sincos", "chebyshev", "periodic"])
def test_a_runs_backend_builds_the_domain_of_its_grid(devices, path, overrides, bounded):
    """The backend of a run holds the bases of its grid: Fourier along the periodic axes, the basis the plates take
    across them, each of the grid's size and length; its points are the grid's."""
    sim = simulator.Simulation(simulator.load_config(path, {**overrides, "fft.backend": "single"}), devices[:1])
    grid = sim.cfg.grid
    bases = sim.fft.domain(grid.lengths)
    assert [b.size for b in bases] == list(grid.cells) and [b.length for b in bases] == list(grid.lengths)
    assert all(isinstance(b, Fourier) for b in bases[:2])
    assert type(bases[2]) is (bounded or Fourier) and bases[2].bounded == (bounded is not None)
    n, h = grid.cells[2], grid.lengths[2]
    want = {SinCos: (np.arange(n) + 0.5) * h / n, Chebyshev: h / 2 * (1 - np.cos(np.pi * np.arange(n) / (n - 1))),
            None: np.arange(n) * h / n}[bounded]
    assert np.allclose(bases[2].points(), want, rtol=0, atol=1e-15)
    assert sim.fft.domain(list(grid.lengths)) is bases  # built once per box
    assert grid.domain() == bases  # what the outputs and the planner ask of the grid, without JAX, is the same


@pytest.mark.parametrize("path, overrides, bounded", [RUNS[0], RUNS[2]], ids=["sincos", "periodic"])
def test_the_operators_numbers_are_the_domains(devices, path, overrides, bounded):
    """The equation's operators take their wavenumbers, 2/3 rule and Parseval weights from the bases: 2 pi m / L and
    |m| < N/3 along a Fourier axis, n pi / H and n < 2N/3 across free-slip plates, a mean by Parseval's weights."""
    cfg = simulator.load_config(path, {**overrides, "precision": "float64", "fft.backend": "slab"})
    sim = simulator.Simulation(cfg, devices[:2])
    ops, fft, box = sim.equation.ops, sim.fft, sim.cfg.grid.lengths
    modes, keep = [], []
    for axis, n in enumerate(fft.shape):
        m = np.arange(n) if bounded and axis == 2 else np.fft.fftfreq(n, 1 / n)
        if not bounded and axis == 2:
            m = m[:n // 2] if fft.has_real_transform else m
        modes.append(m)
        keep.append(m < 2 * n / 3 if bounded and axis == 2 else np.abs(m) < n / 3)
        factor = np.pi / box[2] if bounded and axis == 2 else 2 * np.pi / box[axis]
        assert np.allclose(flat(ops.k[axis]), m * factor, rtol=1e-15, atol=0)
    mask = np.asarray(ops.dealias)
    want = np.einsum("i,j,k->ijk", *keep).astype(float)
    assert np.array_equal(mask, want if bounded else np.transpose(want, fft.perm))
    field = np.random.default_rng(0).standard_normal(fft.shape)
    hat = fft.forward_walls(field, "even") if bounded else fft.rfft(field)
    back = np.asarray(fft.inverse_walls(hat, "even") if bounded else fft.irfft(hat))  # the half spectrum drops Nyquist
    assert abs(float(ops.mean(np.abs(np.asarray(hat)) ** 2)) - np.mean(back**2)) < 1e-13


def test_each_basis_keeps_its_own_two_thirds():
    """The 2/3 rule per axis: |m| < N/3 of a Fourier axis, n < 2N/3 of the sine and cosine series (their 2N-point
    extension's rule) and of the Chebyshev degrees."""
    assert sorted(Fourier(12, 1.0).modes()[Fourier(12, 1.0).keep()]) == [-3, -2, -1, 0, 1, 2, 3]
    assert list(np.flatnonzero(SinCos(12, 1.0).keep())) == list(range(8))
    assert list(np.flatnonzero(Chebyshev(10, 1.0).keep())) == list(range(7))
    assert np.allclose(SinCos(4, 2.0).wavenumbers(), np.arange(4) * np.pi / 2)
    assert list(Fourier(4, 1.0).parseval_weights(np.arange(3), half=True)) == [1, 2, 2]


def test_a_walled_backend_names_its_basis(devices):
    """A walled backend without its bounded basis has no domain to build, and says so; with it, the basis named."""
    cls = BACKENDS["single"]
    fft = cls((2, 4, 5), build_mesh(cls, None, devices[:1]), walls=True)
    with pytest.raises(ValueError, match="names its bounded basis"):
        fft.domain((1.0, 1.0, 1.0))
    fft = cls((2, 4, 5), build_mesh(cls, None, devices[:1]), walls=True, basis="chebyshev")
    assert isinstance(fft.domain((1.0, 1.0, 1.0))[2], Chebyshev)


@pytest.mark.parametrize("overrides", [{"grid.shape": [12, 9], "grid.box": [3.0, 1.0]},
                                       {"grid.shape": [12, 12, 9], "grid.box": [6.0, 3.0, 1.0]}],
                         ids=["plane", "box"])
def test_the_no_slip_equations_drop_the_mode_at_a_third_of_the_points(devices, overrides):
    """The no-slip equations' 2/3 mask is their bases' rule in integers: along x of 12 points over 3 (or 6) the mode
    |m| = 4 = N/3 is dropped. Formed in floating point from the wavenumbers, (2 pi m / L) (L / 2 pi) < N/3, it kept
    that mode at these lengths, where the product rounds to just below 4."""
    cfg = simulator.load_config("configs/convection_2d_noslip.yaml" if len(overrides["grid.shape"]) == 2
                                else "configs/convection_3d_noslip.yaml", {**overrides, "fft.backend": "single"})
    eq = simulator.Simulation(cfg, devices[:1]).equation
    mask = np.asarray(eq._dealias())  # what the explicit terms are multiplied by
    axes = [a for a in range(3) if cfg.grid.cells[a] > 1 and a < 2]
    for a in axes:
        m = np.rint(np.fft.fftfreq(cfg.grid.cells[a], 1.0 / cfg.grid.cells[a]))
        kept = np.moveaxis(mask, a, 0).reshape(cfg.grid.cells[a], -1).max(axis=1) > 0
        assert np.array_equal(kept, 3 * np.abs(m) < cfg.grid.cells[a]), a
    degrees = np.moveaxis(mask, 2, 0).reshape(cfg.grid.cells[2], -1).max(axis=1) > 0
    assert np.array_equal(degrees, 3 * np.arange(cfg.grid.cells[2]) < 2 * cfg.grid.cells[2])
