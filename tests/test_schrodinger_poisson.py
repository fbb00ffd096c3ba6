"""Schrodinger-Poisson against linear theory, conservation laws and a published soliton (float64)."""

import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft import BACKENDS
from simulator.integrators import INTEGRATORS
from simulator.physics import SchrodingerPoisson
from simulator.physics.gravity import inverse_laplacian, potential_spectrum
from simulator.physics.schrodinger_poisson import soliton_profile
from simulator.runtime import build_mesh

F64 = jnp.float64


def equation(name="single", n=1, shape=(16, 16, 16), box=(1.0, 1.0, 1.0), devices=None):
    cls = BACKENDS[name]
    return SchrodingerPoisson(cls(shape, build_mesh(cls, None, (devices or jax.devices())[:n])), box, F64)


def params(nu, G=1.0):
    return {"hbar_over_m": jnp.asarray(nu, F64), "G": jnp.asarray(G, F64)}


def options(**kw):
    base = {"density": 1.0, "amplitude": 1e-6, "wavenumber": 1, "seed": 0, "k_peak": 2.0, "core_radius": 0.1}
    return SimpleNamespace(**{**base, **kw})


def integrate(eq, state, dt, steps, p, record=None):
    """``steps`` KDK steps; with ``record`` (a function of the state), also its value after every step."""
    step = INTEGRATORS["kdk"](eq)

    @jax.jit
    def run(eq, state, p):
        def body(s, i):
            s = step(s, i * dt, jnp.asarray(dt, F64), p)
            return s, (record(eq, s) if record else 0.0)

        return jax.lax.scan(body, state, jnp.arange(steps))

    return run(eq, state, p)


def mode_amplitude(eq, state):
    """delta_k of the density contrast at mode 1 along x: 2 <(rho/rho0 - 1) cos(2 pi x / Lx)>."""
    rho = jnp.abs(state.psi) ** 2
    x = eq.fft.coordinates(eq.box, F64)[0]
    return 2 * jnp.mean((rho / jnp.mean(rho) - 1) * jnp.cos(2 * jnp.pi * x / eq.box[0]))


def test_poisson_solution_of_a_cosine_and_zero_mean():
    eq = equation(shape=(16, 8, 8), box=(2.0, 1.0, 1.0))
    x, y, _ = eq.fft.coordinates(eq.box, F64)
    kx, ky = 2 * np.pi * 3 / 2.0, 2 * np.pi * 2 / 1.0
    rho = jnp.broadcast_to(5.0 + 0.3 * jnp.cos(kx * x) * jnp.sin(ky * y), eq.fft.shape)
    v = eq.fft.irfft(potential_spectrum(eq.fft.rfft(rho), inverse_laplacian(eq.kr), 2.0))
    exact = -4 * np.pi * 2.0 * 0.3 * jnp.cos(kx * x) * jnp.sin(ky * y) / (kx**2 + ky**2)
    assert float(jnp.max(jnp.abs(v - exact))) < 1e-14
    assert abs(float(jnp.mean(v))) < 1e-15  # the mean density does not gravitate (k = 0 set to zero)


@pytest.mark.parametrize("backend, n", [("single", 1), ("slab", 4)])
def test_mass_is_conserved_to_round_off(devices, backend, n):
    eq = equation(backend, n, devices=devices)
    p = params(0.05)
    state = eq.initial("random", options(amplitude=0.5, seed=3), p)
    m0 = float(eq.diagnostics(state, 0.0, p)["mass"])
    state, _ = integrate(eq, state, 2e-3, 100, p)
    assert abs(float(eq.diagnostics(state, 0.0, p)["mass"]) / m0 - 1) < 1e-12


def test_total_energy_error_is_second_order_in_dt():
    """KDK: the total energy error after a fixed time falls 4x per halving of dt (order 2)."""
    eq = equation()
    p = params(0.05)
    state0 = eq.initial("random", options(amplitude=0.5, seed=5), p)
    e0 = float(eq.diagnostics(state0, 0.0, p)["total"])
    t_end, errors = 0.2, []
    for steps in (20, 40, 80):
        state, _ = integrate(eq, state0, t_end / steps, steps, p)
        errors.append(abs(float(eq.diagnostics(state, 0.0, p)["total"]) - e0))
    kinetic = float(eq.diagnostics(state, 0.0, p)["kinetic"])
    assert errors[0] > 1e-6 * kinetic  # the state really exchanges energy; the error is not round-off
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


def test_jeans_unstable_mode_grows_at_the_linear_rate():
    """delta(t) = eps cosh(gamma t), gamma^2 = 4 pi G rho0 - nu^2 k^4 / 4 (here gamma = 3.52)."""
    eq = equation(shape=(32, 4, 4))
    nu, eps, dt, steps = 0.02, 1e-6, 2e-3, 800
    p = params(nu)
    k = 2 * np.pi
    gamma = math.sqrt(4 * math.pi - nu**2 * k**4 / 4)
    state = eq.initial("jeans", options(amplitude=eps), p)
    _, amp = integrate(eq, state, dt, steps, p, mode_amplitude)
    t = dt * np.arange(1, steps + 1)
    amp = np.asarray(amp)
    assert np.max(np.abs(amp / (eps * np.cosh(gamma * t)) - 1)) < 0.01
    late = t > 1.0  # pure exponential growth: the decaying branch is below 1e-3 of the growing one
    rate = np.polyfit(t[late], np.log(amp[late]), 1)[0]
    assert rate == pytest.approx(gamma, rel=0.01)
    assert amp[-1] > 100 * eps  # it did grow (gamma t = 5.6)


def test_stable_mode_oscillates_at_the_predicted_frequency():
    """Below the Jeans length: delta(t) = eps cos(omega t), omega^2 = nu^2 k^4 / 4 - 4 pi G rho0."""
    eq = equation(shape=(32, 4, 4))
    nu, eps, dt, steps = 0.5, 1e-6, 1e-3, 1500
    p = params(nu)
    k = 2 * np.pi
    omega = math.sqrt(nu**2 * k**4 / 4 - 4 * math.pi)
    state = eq.initial("jeans", options(amplitude=eps), p)
    _, amp = integrate(eq, state, dt, steps, p, mode_amplitude)
    t, amp = dt * np.arange(1, steps + 1), np.asarray(amp) / eps
    crossing = np.nonzero(np.diff(np.sign(amp)))[0]
    zeros = t[crossing] - amp[crossing] * dt / (amp[crossing + 1] - amp[crossing])
    assert len(zeros) >= 4  # two full periods
    measured = np.pi / np.mean(np.diff(zeros))
    assert measured == pytest.approx(omega, rel=1e-3)
    assert np.max(np.abs(amp - np.cos(omega * t))) < 0.01  # stable: no growth, right amplitude


def test_soliton_profile_matches_schive_2014():
    """Ground state by shooting vs the fit rho_c / (1 + 0.091 (r/r_c)^2)^8 (Schive et al. 2014, PRL 113,
    261302) and its normalisation rho_c = 1.9 (m / 1e-23 eV)^-2 (r_c / kpc)^-4 Msun/pc^3."""
    r, phi, r0 = soliton_profile()
    rho = phi**2
    fit = 1 / (1 + 0.091 * (r / r0) ** 2) ** 8
    core = r < 2 * r0
    assert np.max(np.abs(rho[core] - fit[core])) < 0.01  # the fit is good to a few % of rho_c
    # rho_c = (nu^2 / G) r0^4 / r_c^4 in SI, for m = 1e-23 eV and r_c = 1 kpc
    nu = 1.054571817e-34 / (1e-23 * 1.602176634e-19 / 299792458.0**2)
    rho_c = nu**2 / 6.6743e-11 * r0**4 / 3.0856775814913673e19**4
    assert rho_c / (1.98847e30 / 3.0856775814913673e16**3) == pytest.approx(1.9, rel=0.03)


def test_soliton_initial_condition_is_close_to_stationary():
    """The ground state barely moves: central density within 1% over 3 dynamical times (r_c = L/20;
    a more compact box lets the periodic images and the subtracted mean density perturb it more)."""
    eq = equation(shape=(64, 64, 64), box=(2.0, 2.0, 2.0))
    p = params(0.02)
    state = eq.initial("soliton", options(core_radius=0.1, density=0.0), p)
    d0 = eq.diagnostics(state, 0.0, p)
    rho_c = (0.02**2 / 1.0) * (soliton_profile()[2] / 0.1) ** 4
    assert float(d0["max_density"]) == pytest.approx(rho_c, rel=1e-9)  # the box centre is a grid point
    t_dyn = 1 / math.sqrt(4 * math.pi * rho_c)
    state, _ = integrate(eq, state, t_dyn / 50, 150, p)
    assert float(eq.diagnostics(state, 0.0, p)["max_density"]) == pytest.approx(float(d0["max_density"]), rel=0.01)


@pytest.mark.slow
def test_distributed_equals_single_device(devices):
    """50 KDK steps of the random collapse on single, slab and jaxdecomp with 1, 2 and 8 devices."""
    p = params(0.05)
    results = {}
    for backend, n in [("single", 1), ("slab", 1), ("slab", 2), ("slab", 8), ("jaxdecomp", 2), ("jaxdecomp", 8)]:
        eq = equation(backend, n, devices=devices)
        state, _ = integrate(eq, eq.initial("random", options(amplitude=0.5, seed=7), p), 2e-3, 50, p)
        results[(backend, n)] = np.asarray(state.psi)
    ref = results[("single", 1)]
    for key, psi in results.items():
        assert np.max(np.abs(psi - ref)) / np.max(np.abs(ref)) < 1e-12, key
