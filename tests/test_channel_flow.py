"""The plane channel stepped on the no-slip flow core (float64): laminar Couette and Poiseuille flow steady under
every drive, the start-up of Couette flow against its exact series, the Tollmien-Schlichting wave's growth against
the Orr-Sommerfeld eigenvalue with divergence and no-slip held at every step, and the bulk velocity held under a
fixed flux."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.walls import channel, channel_flow as cf, chebyshev, eigen
from simulator.walls.flow import State, velocity

jax.config.update("jax_enable_x64", True)


@functools.cache
def _stepper(ch: cf.Channel, dt: float):
    """One compiled step per channel and dt, shared by the tests that step it."""
    return cf.stepper(ch, dt)


def _run(ch: cf.Channel, state, dt: float, steps: int, each=None):
    step = _stepper(ch, dt)
    gradient = None
    for i in range(steps):
        state, gradient = step(state, i * dt)
        if each is not None:
            each(state)
    return state, gradient


@pytest.mark.parametrize("drive", ["couette", "pressure", "flux"])
def test_laminar_flow_is_steady_to_round_off(drive):
    re = 100.0
    ch = cf.Channel(4, 17, 2 * math.pi, re, drive, plate_velocity=1.5,
                         gradient=channel.poiseuille_gradient(1 / re), flux=2 / 3)
    y = ch.z - 1
    profile = channel.couette(y, 1.5) if drive == "couette" else channel.poiseuille(y)
    start = cf.from_physical(ch, (np.tile(profile, (4, 1)), np.zeros((4, 17))))
    state, gradient = _run(ch, start, 0.05, 10)
    u, w = cf.to_physical(ch, state)
    assert np.abs(u - profile).max() < 1e-14 and np.abs(w).max() == 0.0
    expected = 0.0 if drive == "couette" else 2 / re
    # under a fixed flux G is a ratio over one step's response (of order dt): its round-off, relative 1e-13
    assert float(gradient) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_the_start_up_of_couette_flow_against_its_exact_series():
    """Plates set moving from rest: the mean flow against channel.couette_startup at t = 0.5, the error falling
    as dt^2 (RK222)."""
    ch = cf.Channel(4, 33, 2 * math.pi, 1.0, "couette")
    rest = cf.from_physical(ch, (np.zeros((4, 33)), np.zeros((4, 33))))
    exact = channel.couette_startup(ch.z - 1, 0.5, 1.0)
    errors = []
    for dt in (0.02, 0.01):
        state, _ = _run(ch, rest, dt, round(0.5 / dt))
        errors.append(np.abs(cf.to_physical(ch, state)[0][0] - exact).max())
    assert errors[1] < 2e-5 and 3.6 < errors[0] / errors[1] < 4.4


def _held_to_round_off(ch: cf.Channel, amplitude: float):
    """A check of each step: divergence, w and dw/dz at the plates, u at the plates (at rest)."""
    flow = ch.flow

    @jax.jit
    def worst(state):
        u, _, w = velocity(flow, state)
        divergence = 1j * flow.kx[:, None] * u + chebyshev.derivative(w, 2.0)
        plates = [chebyshev.boundary_values(f) for f in (u, w, chebyshev.derivative(w, 2.0))]
        return jnp.maximum(jnp.abs(chebyshev.backward(divergence)).max(), jnp.abs(jnp.stack(
            [jnp.stack(p) for p in plates])).max())

    found = []
    return found, lambda state: found.append(float(worst(state)) / amplitude)


def test_a_tollmien_schlichting_wave_grows_at_the_orr_sommerfeld_rate():
    """Re = 10^4, alpha = 1, amplitude 10^-5 in the nonlinear run: the wave's growth rate over t = 10 equals
    alpha Im c of the eigen-solver to 1e-5 relative; divergence and no-slip at round-off at every step."""
    amplitude, dt, t_end = 1e-5, 0.02, 10.0
    ch = cf.Channel(8, 65, 2 * math.pi, 1e4, "pressure", gradient=channel.poiseuille_gradient(1e-4))
    x, y = np.arange(8) * 2 * math.pi / 8, ch.z - 1
    _, u, v = channel.tollmien_schlichting(x, y, 1e4, 1.0, amplitude)
    start = cf.from_physical(ch, (channel.poiseuille(y)[None, :] + u, v))
    found, check = _held_to_round_off(ch, amplitude)
    end, _ = _run(ch, start, dt, round(t_end / dt), check)
    rate = math.log(float(jnp.linalg.norm(end.w[1]) / jnp.linalg.norm(start.w[1]))) / t_end
    c = eigen.orr_sommerfeld(1e4, 1.0, "poiseuille", channel.TS_DEGREE)[0][0]
    assert rate == pytest.approx(c.imag, rel=1e-5)
    assert max(found) < 1e-10


def test_a_fixed_flux_holds_the_bulk_velocity_exactly():
    """A Tollmien-Schlichting wave of finite amplitude under a fixed flux: the bulk velocity after every step
    is the one set, to round-off; divergence and no-slip held."""
    ch = cf.Channel(8, 33, 2 * math.pi, 2000.0, "flux", flux=0.6)
    x, y = np.arange(8) * 2 * math.pi / 8, ch.z - 1
    _, u, v = channel.tollmien_schlichting(x, y, 2000.0, 1.0, 0.05)
    start = cf.from_physical(ch, (channel.poiseuille(y)[None, :] + u, v))
    bulks = []
    found, check = _held_to_round_off(ch, 0.05)
    _run(ch, start, 0.02, 20, lambda state: (bulks.append(float(cf.bulk_velocity(state.mean))), check(state)))
    assert np.abs(np.array(bulks) - 0.6).max() < 1e-15
    assert max(found) < 1e-12


def test_a_box_holds_a_laminar_flux_and_steps_a_plane_wave_as_the_plane_does():
    """A box: laminar Poiseuille flow under a fixed flux stays to round-off; a Tollmien-Schlichting wave uniform
    along y steps as in the plane to round-off, with no spanwise velocity made."""
    nx, n = 8, 17
    box = cf.Channel(nx, n, 2 * math.pi, 2000.0, "flux", ny=4, width=math.pi)
    plane = cf.Channel(nx, n, 2 * math.pi, 2000.0, "flux")
    x, y = np.arange(nx) * 2 * math.pi / nx, plane.z - 1
    laminar = np.broadcast_to(channel.poiseuille(y), (nx, 4, n))
    state, _ = _run(box, cf.from_physical(box, (laminar, 0 * laminar, 0 * laminar)), 0.02, 5)
    assert max(np.abs(a - b).max() for a, b in zip(cf.to_physical(box, state), (laminar, 0, 0), strict=True)) < 1e-14
    _, u, w = channel.tollmien_schlichting(x, y, 2000.0, 1.0, 1e-3)
    u = channel.poiseuille(y)[None, :] + u
    flat, _ = _run(plane, cf.from_physical(plane, (u, w)), 0.02, 10)
    spread = [np.repeat(f[:, None], 4, 1) for f in (u, 0 * u, w)]
    deep, _ = _run(box, cf.from_physical(box, spread), 0.02, 10)
    (u1, w1), (u3, v3, w3) = cf.to_physical(plane, flat), cf.to_physical(box, deep)
    assert np.abs(u1[:, None] - u3).max() < 1e-15 and np.abs(w1[:, None] - w3).max() < 1e-15
    assert np.abs(v3).max() == 0.0



def test_a_restart_from_the_saved_state_is_bitwise(tmp_path):
    """Under a fixed flux, six steps equal three steps, the state written to a file and read back, and three
    more: the state holds all a step needs (the pressure gradient is found again from it)."""
    ch = cf.Channel(8, 17, 2 * math.pi, 2000.0, "flux")
    x, y = np.arange(8) * 2 * math.pi / 8, ch.z - 1
    _, u, w = channel.tollmien_schlichting(x, y, 2000.0, 1.0, 0.05)
    start = cf.from_physical(ch, (channel.poiseuille(y)[None, :] + u, w))
    step = _stepper(ch, 0.02)
    straight = start
    for i in range(6):
        straight, _ = step(straight, i * 0.02)
    half = start
    for i in range(3):
        half, _ = step(half, i * 0.02)
    np.savez(tmp_path / "state.npz", **{name: np.asarray(getattr(half, name)) for name in ("w", "zeta", "mean",
                                                                                         "scalars")})
    saved = np.load(tmp_path / "state.npz")
    resumed = type(half)(*(jnp.asarray(saved[name]) for name in ("w", "zeta", "mean", "scalars")))
    for i in range(3, 6):
        resumed, _ = step(resumed, i * 0.02)
    for name in ("w", "zeta", "mean"):
        assert np.array_equal(np.asarray(getattr(straight, name)), np.asarray(getattr(resumed, name)))


def test_an_oblique_wave_decays_at_squires_rate():
    """An Orr-Sommerfeld mode (alpha, beta) = (1, 1/2) of amplitude 1e-5 in a box at Re = 10^4: its wall-normal
    velocity decays at alpha Im c of the two-dimensional problem at k = |(alpha, beta)| and Re alpha / k
    (Squire 1933), solved at the run's Chebyshev degree."""
    alpha, beta, re, n, dt, t_end = 1.0, 0.5, 1e4, 65, 0.04, 4.0
    k = math.hypot(alpha, beta)
    c, _, phi = eigen.orr_sommerfeld(re * alpha / k, k, "poiseuille", n - 1)
    box = cf.Channel(8, n, 2 * math.pi / alpha, re, "pressure", gradient=channel.poiseuille_gradient(1 / re), ny=4,
                     width=2 * math.pi / beta)
    laminar = np.broadcast_to(channel.poiseuille(box.z - 1), (8, 4, n))
    start = cf.from_physical(box, (laminar, 0 * laminar, 0 * laminar))
    mode = np.polynomial.chebyshev.chebval(box.z - 1, np.asarray(chebyshev.forward(phi[0])))
    start = State(start.w.at[1, 1].set(chebyshev.forward(jnp.asarray(1e-5 * mode / np.abs(mode).max()))),
                  start.zeta, start.mean, start.scalars)
    end, _ = _run(box, start, dt, round(t_end / dt))
    rate = math.log(float(jnp.linalg.norm(end.w[1, 1]) / jnp.linalg.norm(start.w[1, 1]))) / t_end
    # RK222's error in this slowly decaying rate at dt = 0.04: 7e-5 relative (measured), falling as dt^2
    assert rate == pytest.approx(alpha * c[0].imag, rel=2e-4)
