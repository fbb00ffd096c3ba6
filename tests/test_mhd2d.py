"""The magnetised plane (``mhd2d``) against exact solutions, on every backend that takes a plane, on 1, 2 and 4
devices, in float64: the Orszag-Tang start, Alfven waves on a mean field, exact decay, the Lorentz force's work, the
ideal invariants, distributed runs."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_plane import BOX, CASES, SHAPE

from support import advance, case_id, relative_error, simulation


def plane(devices, case=("single", 1, None), **overrides):
    values = {"physics.name": "mhd2d", "grid.shape": SHAPE, "grid.box": BOX, **overrides}
    return simulation(devices, case, **values)


def fields(sim, state) -> tuple[np.ndarray, np.ndarray]:
    got = sim.fields(state, "vorticity", "potential")
    return sim.to_numpy(got["vorticity"]), sim.to_numpy(got["potential"])


def coordinates(shape=SHAPE, box=BOX) -> tuple[np.ndarray, np.ndarray]:
    return (np.arange(shape[0])[:, None] * box[0] / shape[0], np.arange(shape[1])[None, :] * box[1] / shape[1])


def test_the_orszag_tang_vortex_starts_as_published(devices):
    """u = (-sin y, sin x), B = (-sin y, sin 2x) in a 2 pi square (Orszag & Tang 1979): E_K = E_M = <u . B> = 1/2,
    <A^2> = 5/8, max |j| = 3, and the velocity and field as written."""
    sim = plane(devices, grid__box=[2 * math.pi, 2 * math.pi], grid__shape=[16, 16])
    state = sim.initial_state()
    d = {k: float(v) for k, v in sim.diagnostics(state, 0.01).items()}
    for name, value in (("kinetic_energy", 0.5), ("magnetic_energy", 0.5), ("cross_helicity", 0.5),
                        ("mean_square_potential", 0.625), ("max_current", 3.0), ("max_vorticity", 2.0)):
        assert abs(d[name] - value) < 1e-13, (name, d[name])
    x, y = coordinates([16, 16], [2 * math.pi] * 2)
    got = sim.fields(state, "velocity", "magnetic")
    u, b = sim.to_numpy(got["velocity"])[:, 0], sim.to_numpy(got["magnetic"])[:, 0]
    zero = 0 * x * y
    assert relative_error(u, np.stack([-np.sin(y) + zero, np.sin(x) + zero, zero])) < 1e-13
    assert relative_error(b, np.stack([-np.sin(y) + zero, np.sin(2 * x) + zero, zero])) < 1e-13


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_alfven_wave_on_a_mean_field_runs_at_k_dot_b0(devices, case):
    """A = a cos(phi) cos(sigma t), omega = -k^2 a sin(phi) sin(sigma t), phi = k . x, sigma = k . B0, both times
    exp(-nu k^2 t) for nu = eta: the exact Alfven wave (its nonlinear term is zero). A wrong sign of the Lorentz
    force makes it grow as cosh(sigma t) instead; a wrong sign of the induction flips omega."""
    modes, a, b0, nu = (1, 2), 0.05, (0.7, 1.3), 0.01
    sim = plane(devices, case, physics__mean_field=list(b0), physics__viscosity=nu, physics__resistivity=nu)
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    k2, sigma = kx**2 + ky**2, kx * b0[0] + ky * b0[1]
    x, y = coordinates()
    phi = (kx * x + ky * y)[None]

    def exact(t):
        decay = math.exp(-nu * k2 * t)
        return -k2 * a * np.sin(phi) * math.sin(sigma * t) * decay, a * np.cos(phi) * math.cos(sigma * t) * decay

    omega0, a0 = exact(0.0)
    end = advance(sim, sim.state_from_fields(vorticity=omega0, potential=a0), 0.002, 250)
    assert abs(sigma * 0.5) > 0.5  # a good part of a period
    assert relative_error(fields(sim, end), exact(0.5)) < 1e-10


@pytest.mark.parametrize("case", CASES[::3], ids=case_id)
def test_parallel_modes_decay_each_at_its_own_rate(devices, case):
    """omega = w cos(k x), A = a cos(k x) (u and B along y, functions of x: no nonlinear term, no mean field): omega
    decays at nu k^2 + nu_p k^4 and A at eta k^2 + eta_p k^4, four rates of their own sizes."""
    nu, eta, nu_p, eta_p = 0.011, 0.029, 0.0013, 0.0037
    sim = plane(devices, case, physics__viscosity=nu, physics__resistivity=eta, physics__hyperviscosity=nu_p,
                physics__hyperresistivity=eta_p, physics__hyperviscosity_order=2)
    k = 2 * math.pi * 2 / BOX[0]
    x, y = coordinates()
    shape = np.cos(k * x + 0 * y)[None]
    end = advance(sim, sim.state_from_fields(vorticity=0.3 * shape, potential=0.2 * shape), 0.01, 50)
    t = 0.5
    exact = (0.3 * shape * math.exp(-(nu * k**2 + nu_p * k**4) * t),
             0.2 * shape * math.exp(-(eta * k**2 + eta_p * k**4) * t))
    assert relative_error(fields(sim, end), exact) < 1e-12


def test_the_lorentz_force_does_the_work_u_dot_j_cross_b(devices):
    """dE_K/dt of the right-hand side at t = 0 (a Parseval mean of conj(psi_hat) N_omega) equals <u . (j z x B)>
    computed in real space with NumPy's FFT from the fields: the work of the Lorentz force, its sign included
    (advection does no work on E_K)."""
    sim = plane(devices, initial__name="random", physics__mean_field=[0.4, 0.0])
    eq, state = sim.equation, sim.initial_state()
    n_hat = jax.jit(lambda s: eq.nonlinear(s, jnp.zeros(()), sim.params))(state)
    rate = float(eq.ops.mean(jnp.real(jnp.conj(state[0]) * n_hat[0]) * eq.ops.inv_k2))
    omega, a = (f[0] for f in fields(sim, state))
    kx = 2 * np.pi * np.fft.fftfreq(SHAPE[0], BOX[0] / SHAPE[0])[:, None]
    ky = 2 * np.pi * np.fft.fftfreq(SHAPE[1], BOX[1] / SHAPE[1])[None, :]
    k2 = kx**2 + ky**2
    psi_hat = np.fft.fft2(omega) / np.where(k2 > 0, k2, 1.0)
    a_hat = np.fft.fft2(a)

    def real(f_hat):
        return np.real(np.fft.ifft2(f_hat))

    u, v = real(1j * ky * psi_hat), real(-1j * kx * psi_hat)
    bx, by, j = real(1j * ky * a_hat) + 0.4, real(-1j * kx * a_hat), real(k2 * a_hat)
    work = np.mean(u * (-j * by) + v * (j * bx))  # j z x B = j (-B_y, B_x)
    assert abs(work) > 1e-2 and abs(rate - work) < 1e-12 * abs(work), (rate, work)


def test_the_energy_budget_of_a_step_closes(devices):
    """d(E_K + E_M)/dt = -(viscous + ohmic dissipation) at the start, from a short step of a random field with a mean
    field: the diagnostics' dissipation rates, hyperviscous parts included, are the ones the run applies."""
    sim = plane(devices, initial__name="random", physics__viscosity=0.02, physics__resistivity=0.007,
                physics__hyperviscosity=1e-4, physics__hyperresistivity=3e-4, physics__hyperviscosity_order=2,
                physics__mean_field=[0.3, -0.2])
    state, dt = sim.initial_state(), 1e-4
    d0 = sim.diagnostics(state, dt)
    d1 = sim.diagnostics(advance(sim, state, dt, 1), dt)
    rate = (float(d1["total_energy"]) - float(d0["total_energy"])) / dt
    loss = float(d0["viscous_dissipation"]) + float(d0["ohmic_dissipation"])
    assert abs(rate + loss) < 1e-3 * loss


def test_ideal_invariants_are_conserved_to_the_schemes_order(devices):
    """nu = eta = 0, no mean field: the 2/3 rule conserves E, <u . B> and <A^2> of the semi-discrete equations
    exactly, so what changes is RK4's time error: halving dt divides it by about 2^4."""
    sim = plane(devices, initial__name="random", physics__viscosity=0.0, physics__resistivity=0.0)
    state = sim.initial_state()
    names = ("total_energy", "cross_helicity", "mean_square_potential")
    d0 = sim.diagnostics(state, 0.02)
    drift = []
    for dt, steps in ((0.02, 25), (0.01, 50)):
        d = sim.diagnostics(advance(sim, state, dt, steps), dt)
        drift.append([abs(float(d[q]) - float(d0[q])) / abs(float(d0[q])) for q in names])
    drift = np.array(drift)
    assert np.all(drift[0] < 1e-4) and np.all(drift[0] > 0), drift
    assert np.all(drift[0] / drift[1] > 10), drift


@pytest.fixture(scope="module")
def reference(devices):
    """A nonlinear resistive run with a mean field on one device (the reference of the distributed ones)."""
    sim = plane(devices, initial__name="random", physics__mean_field=[0.2, 0.5])
    return fields(sim, advance(sim, sim.initial_state(), 0.005, 12))


@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_magnetised_plane_equals_the_single_device_one(devices, case, reference):
    sim = plane(devices, case, initial__name="random", physics__mean_field=[0.2, 0.5])
    assert relative_error(fields(sim, advance(sim, sim.initial_state(), 0.005, 12)), reference) < 1e-12
