"""Navier-Stokes against exact solutions and conservation laws (float64)."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft import BACKENDS
from simulator.fft.check import collective_counts
from simulator.integrators import INTEGRATORS
from simulator.physics import NavierStokes
from simulator.runtime import build_mesh

F64 = jnp.float64
BOX = (2 * np.pi,) * 3


def equation(name="single", n=1, shape=(16, 16, 16), devices=None, mesh=None):
    cls = BACKENDS[name]
    fft = cls(shape, build_mesh(cls, mesh, (devices or jax.devices())[:n]))
    return NavierStokes(fft, BOX, F64)


def integrate(eq, u, scheme, dt, steps, nu):
    step = INTEGRATORS[scheme](eq)
    params = {"viscosity": jnp.asarray(nu, F64)}

    @jax.jit
    def run(u):
        return jax.lax.fori_loop(0, steps, lambda i, u: step(u, i * dt, jnp.asarray(dt, F64), params), u)

    return run(u)


@pytest.mark.parametrize("scheme", ["rk4", "lsrk4"])
@pytest.mark.parametrize("backend, n", [("single", 1), ("slab", 4)])
def test_abc_flow_decays_exactly(devices, scheme, backend, n):
    eq = equation(backend, n, devices=devices)
    m, nu, dt = 2, 0.05, 0.01
    u0 = eq.initial("abc", SimpleNamespace(amplitude=1.0, wavenumber=m))
    u = integrate(eq, u0, scheme, dt, 100, nu)
    exact = u0 * np.exp(-nu * m**2 * 100 * dt)
    assert float(jnp.max(jnp.abs(u - exact)) / jnp.max(jnp.abs(exact))) < 1e-10


@pytest.mark.parametrize("backend, n", [("single", 1), ("slab", 8), ("jaxdecomp", 8)])
def test_nonlinear_term_conserves_energy(devices, backend, n):
    eq = equation(backend, n, shape=(16, 16, 32), devices=devices)
    u_hat = eq.initial("random", SimpleNamespace(amplitude=1.0, seed=3, k_peak=4.0))
    n_hat = eq.nonlinear(u_hat, 0.0, {"viscosity": 0.0})
    transfer = jnp.sum(eq.weight * jnp.real(jnp.conj(u_hat) * n_hat))
    assert abs(float(transfer / jnp.sum(eq.weight * jnp.abs(u_hat) ** 2))) < 1e-13
    d = eq.diagnostics(u_hat, 0.01, {"viscosity": 0.0})
    assert float(d["max_div"]) < 1e-13 * float(jnp.sqrt(2 * d["energy"])) * 16


def test_taylor_green_initial_decay_rate():
    """dE/dt(0) = -2 nu Z(0), with E(0) = 1/8 and Z(0) = 3/8 exactly for u = (sin x cos y cos z, ...)."""
    eq = equation(shape=(32, 32, 32))
    nu, h = 1 / 1600, 1e-3
    u0 = eq.initial("taylor_green", SimpleNamespace(amplitude=1.0))
    d0 = eq.diagnostics(u0, h, {"viscosity": nu})
    assert float(d0["energy"]) == pytest.approx(1 / 8, rel=1e-14)
    assert float(d0["enstrophy"]) == pytest.approx(3 / 8, rel=1e-14)
    e_plus = eq.diagnostics(integrate(eq, u0, "rk4", h, 1, nu), h, {"viscosity": nu})["energy"]
    e_minus = eq.diagnostics(integrate(eq, u0, "rk4", -h, 1, nu), h, {"viscosity": nu})["energy"]
    rate = (float(e_plus) - float(e_minus)) / (2 * h)
    assert rate == pytest.approx(-2 * nu * 3 / 8, rel=1e-6)


@pytest.mark.parametrize("scheme", ["rk4", "lsrk4"])
def test_time_integrators_are_fourth_order(scheme):
    eq = equation(shape=(16, 16, 16))
    u0 = eq.initial("random", SimpleNamespace(amplitude=1.0, seed=1, k_peak=2.0))
    t_end, nu = 0.4, 0.02
    ref = integrate(eq, u0, scheme, t_end / 256, 256, nu)
    errors = [float(jnp.max(jnp.abs(integrate(eq, u0, scheme, t_end / s, s, nu) - ref))) for s in (8, 16, 32)]
    slopes = np.diff(np.log(errors)) / np.diff(np.log([t_end / s for s in (8, 16, 32)]))
    assert np.all(slopes > 3.7) and np.all(slopes < 4.5), (errors, slopes)


@pytest.mark.slow
def test_distributed_equals_single_device(devices):
    """50 RK4 steps of a random field on single, slab and jaxdecomp with 1, 2 and 8 devices."""
    opts = SimpleNamespace(amplitude=1.0, seed=7, k_peak=3.0)
    results = {}
    for backend, n in [("single", 1), ("slab", 1), ("slab", 2), ("slab", 8), ("jaxdecomp", 2), ("jaxdecomp", 8)]:
        eq = equation(backend, n, shape=(16, 16, 16), devices=devices)
        u = integrate(eq, eq.initial("random", opts), "rk4", 0.01, 50, 0.01)
        results[(backend, n)] = np.asarray(eq.fft.irfft(u))
    ref = results[("single", 1)]
    for key, u in results.items():
        assert np.max(np.abs(u - ref)) / np.max(np.abs(ref)) < 1e-12, key


@pytest.mark.parametrize("forcing", ["linear", "band"])
def test_forcing_injects_exactly_its_power(forcing):
    """With constant-power forcing dE/dt = P - 2 nu Z at every instant; here at t = 0."""
    cls = BACKENDS["single"]
    eq = NavierStokes(cls((16, 16, 16), build_mesh(cls, None, jax.devices()[:1])), BOX, F64, forcing, 2.5)
    nu, power, h = 0.02, 0.3, 1e-3
    p = {"viscosity": jnp.asarray(nu, F64), "forcing_power": jnp.asarray(power, F64)}
    u0 = eq.initial("random", SimpleNamespace(amplitude=1.0, seed=2, k_peak=3.0))
    d0 = eq.diagnostics(u0, h, p)
    assert float(d0["injection"]) == pytest.approx(power, rel=1e-12)
    step = INTEGRATORS["rk4"](eq)
    e_plus = eq.diagnostics(step(u0, 0.0, jnp.asarray(h, F64), p), h, p)["energy"]
    e_minus = eq.diagnostics(step(u0, 0.0, jnp.asarray(-h, F64), p), h, p)["energy"]
    rate = (float(e_plus) - float(e_minus)) / (2 * h)
    assert rate == pytest.approx(power - float(d0["dissipation"]), rel=1e-5)
    assert float(d0["dissipation"]) > 0.1 * power  # both terms matter in the balance


@pytest.mark.parametrize("backend, n", [("single", 1), ("slab", 8), ("jaxdecomp", 8)])
def test_energy_spectrum_sums_to_the_energy_without_gathering(devices, backend, n):
    eq = equation(backend, n, shape=(16, 16, 32), devices=devices)
    u_hat = eq.initial("random", SimpleNamespace(amplitude=1.0, seed=3, k_peak=4.0))
    spectrum_fn = jax.jit(lambda eq, u: eq.spectra(u)["energy"])
    spectrum = spectrum_fn(eq, u_hat)
    energy = float(eq.diagnostics(u_hat, 0.01, {"viscosity": 0.0})["energy"])
    assert float(jnp.sum(spectrum)) == pytest.approx(energy, rel=1e-12)
    assert float(spectrum[0]) < 1e-30  # no mean flow
    counts = collective_counts(spectrum_fn.lower(eq, u_hat).compile().as_text())
    assert counts["all-gather"] == 0, counts


def test_taylor_green_energy_sits_in_one_shell():
    """TGV modes have |k| = sqrt(3): all of E = 1/8 in shell round(sqrt 3) = 2."""
    eq = equation(shape=(16, 16, 16))
    spectrum = np.asarray(eq.spectra(eq.initial("taylor_green", SimpleNamespace(amplitude=1.0)))["energy"])
    assert spectrum[2] == pytest.approx(1 / 8, rel=1e-14)
    assert np.sum(np.abs(np.delete(spectrum, 2))) < 1e-30
