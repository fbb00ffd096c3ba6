"""Navier-Stokes against exact solutions and conservation laws (float64), on every backend.

Backends come from the registry (tests/support.py): every one on 1 device and on several. One
simulation per backend case is shared by the tests (initial states and traced parameters vary), so
each compiles its chunk once.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft.check import collective_counts
from simulator.time.schemes import SCHEMES, SEMILINEAR, compatible

from support import (
    advance,
    backend_cases,
    case_id,
    distributed_cases,
    nonlinear_field,
    relative_error,
    shared,
    simulation,
)

CASES = backend_cases()
GRID = [16, 16, 32]


def ns(case=("single", 1, None), **kw):
    return shared(case, grid__shape=GRID, **kw)


def velocity(sim, state):
    return sim.to_numpy(sim.fields(state, "velocity")["velocity"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_abc_flow_decays_exactly(case):
    """ABC is a Beltrami field: the nonlinear term vanishes and u(t) = u(0) exp(-nu m^2 t) exactly."""
    m, nu, dt = 2, 0.05, 0.01
    sim = ns(case)
    u0 = sim.initial_state({"name": "abc", "wavenumber": m})
    u = advance(sim, u0, dt, 100, sim.parameters(viscosity=nu))
    assert relative_error(velocity(sim, u), velocity(sim, u0) * np.exp(-nu * m**2 * 100 * dt)) < 1e-10


def test_abc_flow_decays_exactly_with_low_storage_rk4(devices):
    m, nu, dt = 2, 0.05, 0.01
    for case in (("single", 1, None), ("slab", 4, None)):
        sim = ns(case, time__integrator="lsrk4")
        u0 = sim.initial_state({"name": "abc", "wavenumber": m})
        u = advance(sim, u0, dt, 100, sim.parameters(viscosity=nu))
        assert relative_error(velocity(sim, u), velocity(sim, u0) * np.exp(-nu * m**2 * 100 * dt)) < 1e-10, case


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_nonlinear_term_conserves_energy(case):
    """<u . N(u)> = 0 for the dealiased, projected rotational-form term (inviscid, unforced)."""
    sim = ns(case)
    eq, u_hat = sim.equation, sim.initial_state({"name": "random", "seed": 3})
    n_hat = jax.jit(lambda e, u, p: e.nonlinear(u, 0.0, p))(eq, u_hat, sim.params)
    transfer = jnp.sum(eq.ops.weight * jnp.real(jnp.conj(u_hat) * n_hat))
    assert abs(float(transfer / jnp.sum(eq.ops.weight * jnp.abs(u_hat) ** 2))) < 1e-13
    d = sim.report(u_hat)
    assert d["max_div"] < 1e-13 * np.sqrt(2 * d["energy"]) * 16


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_the_sign_of_the_nonlinear_term(devices, layout):
    """Shear u = (sin y, 0, sin x): (u.grad)u = (0, 0, sin y cos x), already divergence-free, so
    N = -(u.grad)u - grad p has N_z = -sin y cos x exactly (a flipped sign or a missing term fails), in either
    spectral layout."""
    sim = ns(fft__layout=layout)
    n = GRID
    x, y = (np.arange(k) * 2 * np.pi / k for k in n[:2])
    X, Y = np.meshgrid(x, y, indexing="ij")
    u = np.zeros((3, *n))
    u[0] = np.sin(Y)[..., None]
    u[2] = np.sin(X)[..., None]
    state = sim.state_from_fields(velocity=u)
    out = nonlinear_field(sim, state, sim.parameters(viscosity=0.0))
    np.testing.assert_allclose(out[2], np.broadcast_to(-(np.sin(Y) * np.cos(X))[..., None], n), atol=1e-13)
    np.testing.assert_allclose(out[:2], 0.0, atol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_taylor_green_initial_decay_rate(case):
    """dE/dt(0) = -2 nu Z(0), with E(0) = 1/8 and Z(0) = 3/8 exactly for u = (sin x cos y cos z, ...)."""
    nu, h = 1 / 1600, 1e-3
    sim = ns(case)
    p = sim.parameters(viscosity=nu)
    u0 = sim.initial_state({"name": "taylor_green"})
    d0 = sim.report(u0, h)
    assert d0["energy"] == pytest.approx(1 / 8, rel=1e-14)
    assert d0["enstrophy"] == pytest.approx(3 / 8, rel=1e-14)
    e_plus = sim.report(advance(sim, u0, h, 1, p))["energy"]
    e_minus = sim.report(advance(sim, u0, -h, 1, p))["energy"]
    assert (e_plus - e_minus) / (2 * h) == pytest.approx(-2 * nu * 3 / 8, rel=1e-6)


@pytest.mark.parametrize("scheme", compatible(SEMILINEAR))
def test_time_integrators_converge_at_their_order(scheme):
    """A random turbulent field (the full advection), against 256 steps of the same scheme."""
    sim = ns(time__integrator=scheme)
    p = sim.parameters(viscosity=0.02)
    u0 = sim.initial_state({"name": "random", "seed": 1, "k_peak": 2.0})
    t_end = 0.4
    ref = advance(sim, u0, t_end / 256, 256, p)
    errors = [float(jnp.max(jnp.abs(advance(sim, u0, t_end / s, s, p) - ref))) for s in (8, 16, 32)]
    slopes = np.diff(np.log(errors)) / np.diff(np.log([t_end / s for s in (8, 16, 32)]))
    order = SCHEMES[scheme].order
    assert np.all(slopes > order - 0.3) and np.all(slopes < order + 0.5), (errors, slopes)


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case):
    """50 RK4 steps of a random field: every decomposition equals one device to 1e-12."""
    results = []
    for c in (("single", 1, None), case):
        sim = ns(c)
        u0 = sim.initial_state({"name": "random", "seed": 7, "k_peak": 3.0})
        results.append(velocity(sim, advance(sim, u0, 0.01, 50, sim.parameters(viscosity=0.01))))
    assert relative_error(results[1], results[0]) < 1e-12


@pytest.mark.parametrize("forcing,dealias", [("linear", "two_thirds"), ("band", "two_thirds"), ("linear", "hou_li")])
def test_forcing_injects_exactly_its_power(devices, forcing, dealias):
    """With constant-power forcing dE/dt = P - epsilon + sum_k T(k) at every instant (the transfer sums to 0
    under the 2/3 rule, to the filter's loss under Hou-Li); here at t = 0, with hyperviscosity. The injected
    power is P to round-off after every one of 10 steps (the forced modes are a 0/1 set under the filter too)."""
    nu, nu_p, power, h = 0.02, 3e-7, 0.3, 1e-3
    sim = simulation(devices, grid__shape=16, physics__forcing=forcing, physics__dealias=dealias,
                     physics__hyperviscosity_order=4)
    p = sim.parameters(viscosity=nu, hyperviscosity=nu_p, forcing_power=power)
    u0 = sim.initial_state({"name": "random", "seed": 2, "k_peak": 3.0})
    d0 = {k: float(v) for k, v in sim.diagnostics(u0, h, p).items()}
    assert d0["injection"] == pytest.approx(power, rel=1e-12)
    e_plus = float(sim.diagnostics(advance(sim, u0, h, 1, p), h, p)["energy"])
    e_minus = float(sim.diagnostics(advance(sim, u0, -h, 1, p), h, p)["energy"])
    transfer = float(jnp.sum(sim.spectra(u0, params=p)["transfer_energy"]))
    assert (e_plus - e_minus) / (2 * h) == pytest.approx(power - d0["dissipation"] + transfer, abs=1e-5 * power)
    assert d0["dissipation"] > 0.1 * power  # both terms matter in the balance
    u = u0
    for _ in range(10):
        u = advance(sim, u, 0.01, 1, p)
        assert float(sim.diagnostics(u, 0.01, p)["injection"]) == pytest.approx(power, rel=1e-13)


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_energy_spectrum_sums_to_the_energy_without_gathering(case):
    sim = ns(case)
    u_hat = sim.initial_state({"name": "random", "seed": 3})
    spectrum_fn = jax.jit(lambda eq, u, p: eq.spectra(u, p)["energy"])
    spectrum = spectrum_fn(sim.equation, u_hat, sim.params)
    assert float(jnp.sum(spectrum)) == pytest.approx(sim.report(u_hat)["energy"], rel=1e-12)
    assert float(spectrum[0]) < 1e-30  # no mean flow
    counts = collective_counts(spectrum_fn.lower(sim.equation, u_hat, sim.params).compile().as_text())
    assert counts["all-gather"] == 0, counts


def test_taylor_green_energy_sits_in_one_shell():
    """TGV modes have |k| = sqrt(3): all of E = 1/8 in shell round(sqrt 3) = 2."""
    sim = ns()
    spectrum = np.asarray(sim.spectra(sim.initial_state({"name": "taylor_green"}))["energy"])
    assert spectrum[2] == pytest.approx(1 / 8, rel=1e-14)
    assert np.sum(np.abs(np.delete(spectrum, 2))) < 1e-30



def test_a_random_field_has_its_rms_speed_and_peaks_at_its_mode_number_in_any_box():
    """initial.name random in a 4 pi box: rms speed <|u|^2>^(1/2) = amplitude (energy amplitude^2 / 2, all three
    components together), zero mean, divergence-free, and E(k) ~ k^4 exp(-2 (k/k_peak)^2) peaks at the mode number
    k_peak = 3, |k| = 3 (2 pi / L) = 1.5: shell 3 of dk = 1/2 (sampled: shells 2 to 4), not at |k| = 3 (shell 6),
    with the mean mode number of that shape."""
    sim = shared(grid__shape=[32] * 3, grid__box=[4 * np.pi] * 3)
    state = sim.initial_state({"name": "random", "amplitude": 0.7, "k_peak": 3.0, "seed": 2})
    u = sim.to_numpy(sim.fields(state, "velocity")["velocity"])
    assert np.sqrt(np.mean(np.sum(u**2, axis=0))) == pytest.approx(0.7, rel=1e-12)
    assert np.max(np.abs(u.mean(axis=(1, 2, 3)))) < 1e-14
    report = sim.report(state, 0.01)
    assert report["energy"] == pytest.approx(0.7**2 / 2, rel=1e-12) and report["max_div"] < 1e-12
    spectrum = np.asarray(sim.spectra(state)["energy"])
    assert np.argmax(spectrum) in (2, 3, 4) and spectrum.sum() == pytest.approx(0.7**2 / 2, rel=1e-12)
    # its mean mode number, Gamma(3) / Gamma(5/2) k_peak / 2^(1/2) = 3.19 for the continuous spectrum (measured
    # 3.03 on the grid's shells; exp(-(k/k_peak)^2) would give 4.5)
    mean = np.sum(np.arange(spectrum.size) * spectrum) / spectrum.sum()
    assert mean == pytest.approx(math.gamma(3) / math.gamma(2.5) * 3 / math.sqrt(2), abs=0.3)

def test_random_field_is_the_same_in_float32_and_float64(devices):
    """One seed, one flow: the noise is drawn in float32 and cast, so precisions agree to float32 round-off."""
    u = {}
    for precision in ("float32", "float64"):
        sim = simulation(devices, grid__shape=16, initial__name="random", initial__seed=5, precision=precision)
        u[precision] = sim.to_numpy(sim.fields(sim.initial_state(), "velocity")["velocity"]).astype(np.float64)
    assert relative_error(u["float32"], u["float64"]) < 1e-5
    assert relative_error(u["float32"], u["float64"]) > 1e-12  # it really was float32
