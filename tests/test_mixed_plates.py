"""Each plate its own conditions on the Chebyshev basis (simulator.walls): a no-slip plate below a free-slip one (a
free surface), free-slip plates, a fixed temperature below a fixed flux, fixed fluxes at both plates. The onset of
convection in each is checked twice, independently: the dense eigen-solver (simulator.walls.eigen) against the
published critical Rayleigh numbers, and the flow core's steps (simulator.walls.flow, the banded solves a run
uses) against the eigen-solver's growth rate, whose sign changes at the marginal Rayleigh number, in float64."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.equations.plates import growth_rate
from simulator.time import imex
from simulator.walls import chebyshev, eigen, flow

NS, FS = eigen.NO_SLIP, eigen.FREE_SLIP
FV, FF = eigen.FIXED_VALUE, eigen.FIXED_FLUX
N = 33


@pytest.mark.parametrize(("walls", "ra_c", "k_c"), [((NS, FS), 1100.65, 2.682), ((FS, NS), 1100.65, 2.682)],
                         ids=["no-slip-below", "no-slip-above"])
def test_the_onset_below_a_free_surface_is_chandrasekhars(walls, ra_c, k_c):
    """A no-slip plate and a free-slip one at fixed temperatures: Ra_c = 1100.65 at k_c = 2.682 (Chandrasekhar
    1961, table III), whichever plate is the no-slip one."""
    ra, k = eigen.rayleigh_benard_onset(walls)
    assert ra == pytest.approx(ra_c, abs=5e-3) and k == pytest.approx(k_c, abs=5e-4)


@pytest.mark.parametrize(("walls", "limit"), [(NS, 720.0), ((NS, FS), 320.0), (FS, 120.0)],
                         ids=["no-slip", "no-slip-free-slip", "free-slip"])
def test_between_fixed_flux_plates_the_onset_falls_to_its_long_wave_limit(walls, limit):
    """Fixed-flux plates: Ra(k) decreases to 720 (no-slip), 320 (no-slip below free-slip), 120 (free-slip) as
    k -> 0 (Hurle, Jakeman & Pike 1967), as 1 + O(k^2)."""
    coarse, fine = (eigen.rayleigh_number(k, walls, temperature=FF) for k in (0.1, 0.01))
    assert limit < fine < coarse
    assert fine == pytest.approx(limit, rel=5e-5) and (coarse - limit) / (fine - limit) == pytest.approx(100, rel=1e-2)


@functools.partial(jax.jit, static_argnames=("steps", "walls", "temperature"))
def _evolve(ra, kx, state, dt, steps: int, walls, temperature):
    """``steps`` RK222 steps of one linearised convection mode about the conductive state, free-fall units, Pr = 1,
    the plates ``walls`` and the temperature's ``temperature`` (each a (lower, upper) pair)."""
    fl = flow.NoSlipFlow(jnp.asarray([kx]), jnp.asarray([0.0]), N, 1.0, ra**-0.5, (ra**-0.5,),
                         flow.Plates(scalars=(temperature,), values=((0.0, 0.0),), walls=walls))
    step = fl.step(lambda x, t: flow.buoyancy(fl, x), dt, imex.RK222)
    return jax.lax.fori_loop(0, steps, lambda i, x: step(x, i * dt), state)


CASES = [((NS, FS), (FV, FV), None), ((NS, NS), (FF, FF), 1.5), ((NS, FS), (FF, FF), 1.5), ((FS, FS), (FF, FF), 1.5),
         ((NS, NS), (FV, FF), 2.5)]


@pytest.mark.parametrize(("walls", "temperature", "k"), CASES,
                         ids=lambda v: "-".join(v) if isinstance(v, tuple) else ("k_c" if v is None else str(v)))
def test_a_modes_growth_changes_sign_at_the_eigen_solvers_onset(walls, temperature, k):
    """The eigen-solver's mode at 1e-3 above and below its marginal Rayleigh number Ra(k) (k_c at fixed
    temperatures), stepped by the flow core with the same plates: it grows above and decays below, at the
    eigen-solver's rate to 2e-3 relative (RK222 at dt = 0.05), and the plates' conditions hold after the steps to
    round-off: w = 0 at both, dw/dz = 0 at a no-slip plate, d^2w/dz^2 = 0 at a free-slip one (to 1e-8: a second
    derivative's residual, N^4 times the series' last coefficients), theta = 0 at a plate of fixed temperature and
    dtheta/dz = 0 at one of fixed flux."""
    if k is None:
        _, k = eigen.rayleigh_benard_onset(walls, temperature=temperature)
    marginal = eigen.rayleigh_number(k, walls, temperature=temperature)
    for sign in (1.0, -1.0):
        ra = marginal * (1 + sign * 1e-3)
        sigma, _, w, b = eigen.rayleigh_benard_growth(ra, 1.0, k, walls, temperature=temperature)
        w_hat, b_hat = (jnp.asarray(np.asarray(chebyshev.forward(jnp.asarray(v)))[:N]) for v in (w, b))
        start = flow.State(w_hat[None], jnp.zeros((1, N)), jnp.zeros((2, N)), b_hat[None, None])
        dt, steps = 0.05, 40
        end = _evolve(ra, k, start, dt, steps, walls, temperature)
        rate = np.log(np.linalg.norm(end.scalars) / np.linalg.norm(start.scalars)) / (dt * steps)
        assert np.sign(rate) == np.sign(sigma) == sign
        assert rate == pytest.approx(sigma, rel=2e-3)
        scale = np.abs(np.asarray(end.w)).max()
        for plate, wall in enumerate(walls):
            values = [np.asarray(chebyshev.boundary_values(chebyshev.derivative(end.w, 1.0, order))[plate])
                      for order in (0, 1 if wall == NS else 2)]
            # a slope's round-off is eps N^2; a second derivative's residual (the tau method's, N^4 times the last
            # coefficients of a series resolved to about 1e-14) is measured at 2e-9
            assert abs(values[0]) < 1e-13 * scale and abs(values[1]) < (1e-12 if wall == NS else 1e-8) * scale, \
                (plate, wall, values)
            theta = chebyshev.derivative(end.scalars[0], 1.0, 0 if temperature[plate] == FV else 1)
            assert np.abs(np.asarray(chebyshev.boundary_values(theta)[plate])).max() < 1e-11 * scale


# ---- runs: convection2d_noslip with each plate's own conditions (grid.walls) --------------------------------------

RUN_CASES = [((NS, FS), (FV, FV), None), ((NS, FS), (FF, FF), 1.5), ((NS, NS), (FV, FF), 2.5),
             ((FS, FS), (FV, FV), None), ((FS, FS), (FF, FF), 1.5)]


def _run(devices, walls, temperature, k, rayleigh, case=("single", 1, None), **overrides):
    """A plane one wavelength 2 pi / k wide, 8 x 17 points, Pr = 1, the plates ``walls`` holding ``temperature``, on
    the Chebyshev basis (``grid.walls.basis``: free-slip plates too)."""
    from support import simulation

    values = {"physics__name": "convection", "grid__shape": [8, 17], "grid__box": [2 * np.pi / k, 1.0],
              "grid__walls__velocity": list(walls), "grid__walls__temperature": list(temperature),
              "grid__walls__basis": "chebyshev", "time__integrator": "rk222",
              "physics__rayleigh": rayleigh, "physics__prandtl": 1.0, **overrides}
    return simulation(devices, case, **values)


@pytest.mark.parametrize(("walls", "temperature", "k"), RUN_CASES,
                         ids=lambda v: "-".join(v) if isinstance(v, tuple) else ("k_c" if v is None else str(v)))
def test_a_runs_mode_changes_growth_at_the_onset_of_its_plates(devices, walls, temperature, k):
    """A run of ``physics.name: convection`` on the Chebyshev basis whose plates are given each its own conditions
    (``grid.walls.velocity`` and ``.temperature``; a free surface above a no-slip plate, fixed fluxes, a fixed flux
    above a fixed temperature, and free-slip plates on ``grid.walls.basis: chebyshev``) from the eigen-solver's mode
    (``initial.name: mode``, its plates' own), at 1e-3 above and below the marginal Rayleigh number of its
    wavenumber (k_c where the temperatures are fixed: 1100.65 below a free surface, 27 pi^4/4 at pi/sqrt(2) between
    free-slip plates): its kinetic energy grows above and decays below, at twice the eigen-solver's rate to 2e-3
    relative (RK222, dt = 0.05 over t = 1); between free-slip plates of fixed temperature at the exact rate of linear
    theory (Chandrasekhar 1961, ch. II) too."""
    from support import advance

    if k is None:
        _, k = eigen.rayleigh_benard_onset(walls, temperature=temperature)
    marginal = eigen.rayleigh_number(k, walls, temperature=temperature)
    exact = walls == (FS, FS) and temperature == (FV, FV)
    if exact:
        assert marginal == pytest.approx(27 * np.pi**4 / 4, rel=1e-9)
        assert k == pytest.approx(np.pi / np.sqrt(2), rel=1e-6)
    for sign in (1.0, -1.0):
        ra = marginal * (1 + sign * 1e-3)
        sim = _run(devices, walls, temperature, k, ra, initial__name="mode", initial__amplitude=1e-8)
        assert sim.cfg.physics.name == "convection2d_noslip"
        start = sim.initial_state()
        end = advance(sim, start, 0.05, 20)
        before, after = (float(sim.diagnostics(s, 0.05)["kinetic_energy"]) for s in (start, end))
        rate = np.log(after / before) / (2 * 0.05 * 20)
        sigma = eigen.rayleigh_benard_growth(ra, 1.0, k, walls, temperature=temperature)[0]
        assert np.sign(rate) == np.sign(sigma) == sign
        assert rate == pytest.approx(sigma, rel=2e-3)
        if exact:
            assert rate == pytest.approx(growth_rate(ra, 1.0, k, 1), rel=2e-3)


def test_a_distributed_run_below_a_free_surface_equals_the_single_device_one(devices):
    """No-slip below, free-slip above, a fixed flux above a fixed temperature, from noise at Ra = 2e4: 10 steps on
    a slab of 2 equal one device's to 1e-12 in float64."""
    from support import advance

    ends = []
    for case in (("single", 1, None), ("slab", 2, None)):
        sim = _run(devices, (NS, FS), (FV, FF), 3.0, 2e4, case, grid__shape=[8, 16], initial__name="conductive",
                   initial__amplitude=1e-2)
        end = advance(sim, sim.initial_state(), 0.02, 10)
        ends.append({k: np.asarray(v) for k, v in sim.fields(end, "velocity", "theta").items()})
    for name in ends[0]:
        np.testing.assert_allclose(ends[1][name], ends[0][name], rtol=0, atol=1e-12 * np.abs(ends[0][name]).max())
