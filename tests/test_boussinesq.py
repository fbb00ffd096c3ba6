"""Rotating stratified Boussinesq flow against exact solutions, signs and conservation laws (float64),
on every backend from the registry (1 and several devices).

Exact solutions: a gravity-inertia plane wave (any amplitude: its advection vanishes) and an inertial
oscillation; the signs of buoyancy, stratification, Coriolis and advection are pinned pointwise; the
dealiased advection conserves kinetic energy and buoyancy variance to round-off (each transfer
spectrum sums to zero); the shell-by-shell budgets dE(k)/dt = T(k) + C(k) + F(k) - 2 nu k^2 E(k) of
kinetic and potential energy hold on every backend; the exact propagator is stable and exact at N dt >> 1.
With hyperviscosity nu_p = kappa_p (p = 4): the propagator against the matrix exponential, a wave decaying
at exp(-(nu k^2 + nu_p k^8) t) while oscillating at omega (one device and a slab of 4), the budgets and
dissipation diagnostics with the hyperviscous losses, k_max eta, and the keys' one-line refusals.
One simulation per backend case is shared (states and traced parameters vary), so each compiles once.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

from simulator.equations.boussinesq.waves import propagate
from simulator.fft.check import collective_counts
from simulator.observables import spectra

import support
from support import advance, backend_cases, case_id, distributed_cases, nonlinear_field, relative_error, shared

CASES = backend_cases()
GRID = [16, 8, 16]
SPECTRA = jax.jit(lambda eq, state, p: eq.spectra(state, p))


def bq(case=("single", 1, None)):
    return shared(case, physics__name="boussinesq", grid__shape=GRID)


def grid():
    return np.meshgrid(*(np.arange(n) * 2 * np.pi / n for n in GRID), indexing="ij")


def exact_wave(m, amplitude, n, f, nu, t, nu_p=0.0, order=4):
    """The gravity-inertia wave of mode numbers m (box 2 pi) at time t, written out here independently
    of the code: u = A (e2 cos phi + (f c/omega) e1 sin phi), b = A (N^2 s/omega) sin phi, phi = k.x - omega t,
    omega^2 = N^2 s^2 + f^2 c^2, s = k_h/k, c = k_z/k, e1 = (k_y, -k_x, 0)/k_h, e2 = e1 x k/k; decaying as
    exp(-(nu k^2 + nu_p k^(2p)) t) (nu = kappa, nu_p = kappa_p)."""
    kx, ky, kz = (float(v) for v in m)
    kh, kk = np.hypot(kx, ky), np.sqrt(kx**2 + ky**2 + kz**2)
    s, c = kh / kk, kz / kk
    omega = np.sqrt(n**2 * s**2 + f**2 * c**2)
    e1 = np.array([ky, -kx, 0.0]) / kh
    e2 = np.cross(e1, [kx, ky, kz]) / kk
    x = grid()
    phase = kx * x[0] + ky * x[1] + kz * x[2] - omega * t
    decay = amplitude * np.exp(-(nu * kk**2 + nu_p * kk ** (2 * order)) * t)
    u = decay * (e2[:, None, None, None] * np.cos(phase) + f * c / omega * e1[:, None, None, None] * np.sin(phase))
    return u, decay * n**2 * s / omega * np.sin(phase), omega


def random_state(sim):
    """A random stratified flow from NumPy (states of any layout without compiling an initial condition)."""
    rng = np.random.default_rng(11)
    return sim.state_from_fields(velocity=rng.standard_normal((3, *GRID)), buoyancy=rng.standard_normal(GRID))


def linear_operator(k, n, f, nu, kappa):
    """The 4x4 matrix of the linear terms at wavevector k, built here from the equations: the Leray
    projection of (f v, -f u, b) (Coriolis and buoyancy), -N^2 w, and the diffusion."""
    k = np.asarray(k, float)
    projection = np.eye(3) - np.outer(k, k) / k.dot(k)
    m = np.zeros((4, 4))
    m[:3, :3] = projection @ np.array([[0.0, f, 0.0], [-f, 0.0, 0.0], [0.0, 0.0, 0.0]])
    m[:3, 3] = projection @ [0.0, 0.0, 1.0]
    m[3, 2] = -(n**2)
    return m - np.diag([nu, nu, nu, kappa]) * k.dot(k)


def test_propagator_against_the_matrix_exponential():
    """For random wavevectors and solenoidal states, propagate() equals expm(L tau) of the matrix built
    from the equations to 1e-13 when nu = kappa, at omega tau up to ~50; with nu != kappa it equals the
    Strang product expm(-D tau/2) expm(A tau) expm(-D tau/2), whose error against expm(L tau) falls as
    tau^3 (a second-order splitting)."""
    rng = np.random.default_rng(1)
    ks = rng.normal(size=(3, 6)) * 3
    ks[:, 0] = [0.0, 0.0, 2.0]  # k along z: omega = f
    x = rng.normal(size=(4, 6)) + 1j * rng.normal(size=(4, 6))
    x[:3] -= ks * np.sum(ks * x[:3], axis=0) / np.sum(ks**2, axis=0)  # solenoidal
    n, f = 7.0, 2.5
    for nu, kappa, tau in ((0.1, 0.1, 3.0), (0.0, 0.0, 0.01), (0.3, 0.05, 0.5)):
        out = np.asarray(propagate(jnp.asarray(x), tau, [jnp.asarray(v) for v in ks], nu, kappa, n**2, f))
        for j in range(ks.shape[1]):
            a = linear_operator(ks[:, j], n, f, 0.0, 0.0)
            half = np.diag(np.exp(-0.5 * tau * np.array([nu, nu, nu, kappa]) * ks[:, j].dot(ks[:, j])))
            np.testing.assert_allclose(out[:, j], half @ expm(a * tau) @ half @ x[:, j], rtol=0, atol=1e-12)
            if nu == kappa:
                np.testing.assert_allclose(out[:, j], expm(linear_operator(ks[:, j], n, f, nu, kappa) * tau) @ x[:, j],
                                           rtol=0, atol=1e-12)
    errors = []
    for tau in (0.02, 0.01):
        out = np.asarray(propagate(jnp.asarray(x), tau, [jnp.asarray(v) for v in ks], 0.3, 0.05, n**2, f))
        errors.append(max(np.max(np.abs(out[:, j] - expm(linear_operator(ks[:, j], n, f, 0.3, 0.05) * tau) @ x[:, j]))
                          for j in range(ks.shape[1])))
    assert 2**3 * 0.9 < errors[0] / errors[1] < 2**3 * 1.1, errors


def fields(sim, state):
    f = sim.fields(state, "velocity", "buoyancy")
    return sim.to_numpy(f["velocity"]), sim.to_numpy(f["buoyancy"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gravity_inertia_wave_is_exact(case):
    """A finite-amplitude wave (2, 1, 1) at N dt = 1.1: velocity and buoyancy equal the exact wave to
    1e-10 after 40 steps (four periods), so omega and the direction of its phase are right."""
    sim = bq(case)
    n, f, nu, dt, steps = 3.0, 1.3, 0.02, 0.37, 40
    p = sim.parameters(brunt_vaisala=n, coriolis=f, viscosity=nu, diffusivity=nu)
    state = sim.initial_state({"name": "wave", "modes": [2, 1, 1], "amplitude": 0.3}, p)
    u, b = fields(sim, advance(sim, state, dt, steps, p))
    u_exact, b_exact, omega = exact_wave((2, 1, 1), 0.3, n, f, nu, dt * steps)
    assert omega * dt * steps > 4 * 2 * np.pi * 0.9
    assert relative_error(u, u_exact) < 1e-10 and relative_error(b, b_exact) < 1e-10


def test_wave_frequency_and_energy_exchange():
    """The measured frequency of w at mode k (phase of its Fourier coefficient) is omega to 1e-10; the
    wave holds E_K + E_P = A^2/2; a state with w = b = cos x has <w b> = 1/2 and converts potential into
    kinetic energy at that rate (dE_K/dt = -dE_P/dt = 1/2 at t = 0, inviscid)."""
    sim = bq()
    n, f, t = 2.0, 0.7, 0.9
    p = sim.parameters(brunt_vaisala=n, coriolis=f, viscosity=0.0, diffusivity=0.0)
    state = sim.initial_state({"name": "wave", "modes": [1, 1, 2], "amplitude": 0.2}, p)
    d = {k: float(v) for k, v in sim.diagnostics(state, 0.1, p).items()}
    assert d["total_energy"] == pytest.approx(0.2**2 / 2, rel=1e-13)
    w0 = np.fft.fftn(fields(sim, state)[0][2])[1, 1, 2]
    w1 = np.fft.fftn(fields(sim, advance(sim, state, t / 10, 10, p))[0][2])[1, 1, 2]
    omega = np.sqrt((n**2 * 2 + f**2 * 4) / 6)
    assert -np.angle(w1 / w0) / t == pytest.approx(omega, rel=1e-10)

    x = grid()
    u = np.zeros((3, *GRID))
    u[2] = np.cos(x[0])
    state = sim.state_from_fields(velocity=u, buoyancy=np.cos(x[0]))
    h = 1e-4
    plus, minus = (sim.diagnostics(advance(sim, state, s * h, 1, p), h, p) for s in (1, -1))
    assert float(sim.diagnostics(state, h, p)["buoyancy_flux"]) == pytest.approx(0.5, rel=1e-13)
    rate = {k: (float(plus[k]) - float(minus[k])) / (2 * h) for k in ("kinetic_energy", "potential_energy")}
    assert rate["kinetic_energy"] == pytest.approx(0.5, rel=1e-6)
    assert rate["potential_energy"] == pytest.approx(-0.5, rel=1e-6)


def test_without_stratification_a_pure_inertial_wave_is_exact_and_reported_finitely():
    """N = 0, rotation only: the wave (1, 1, 2) is a pure inertial wave, omega = f k_z/k, exact to 1e-10
    after 20 steps; the potential energy and the Froude number (undefined without stratification) are
    reported as 0, every diagnostic finite. Values the config refuses are refused by parameters() too,
    and a mode that has no wave without stratification is refused by the config."""
    from simulator.errors import ConfigError

    sim = bq()
    f, nu, dt, steps = 1.3, 0.01, 0.25, 20
    p = sim.parameters(brunt_vaisala=0.0, coriolis=f, viscosity=nu, diffusivity=nu)
    state = sim.initial_state({"name": "wave", "modes": [1, 1, 2], "amplitude": 0.3}, p)
    end = advance(sim, state, dt, steps, p)
    u, b = fields(sim, end)
    u_exact, _, omega = exact_wave((1, 1, 2), 0.3, 0.0, f, nu, dt * steps)
    assert omega == pytest.approx(f * 2 / np.sqrt(6)) and omega * dt * steps > np.pi
    assert relative_error(u, u_exact) < 1e-10 and np.max(np.abs(b)) < 1e-14
    d = {k: float(v) for k, v in sim.diagnostics(end, dt, p).items()}
    assert all(np.isfinite(v) for v in d.values()), d
    assert d["potential_energy"] == 0 and d["froude"] == 0 and d["total_energy"] == d["kinetic_energy"] > 0
    for bad in ({"brunt_vaisala": -1.0}, {"viscosity": -0.1}, {"coriolis": float("nan")}):
        with pytest.raises(ConfigError, match=rf"^physics\.{next(iter(bad))} = .* is out of range"):
            sim.parameters(**bad)
    with pytest.raises(ConfigError, match=r"^initial\.modes = \[1, 1, 0\] has frequency 0 here"):
        support.load_config(None, {"physics.name": "boussinesq", "physics.brunt_vaisala": 0.0,
                                   "physics.coriolis": 1.0, "initial.modes": [1, 1, 0]})


def test_inertial_oscillation():
    """k along z: u = U cos(2z) x at rest otherwise turns clockwise at f, u = U cos(2z) (cos ft, -sin ft, 0)
    exp(-4 nu t), whatever N (w = 0, no buoyancy coupling)."""
    sim = bq()
    f, nu, dt, steps = 1.7, 0.01, 0.2, 20
    p = sim.parameters(brunt_vaisala=5.0, coriolis=f, viscosity=nu, diffusivity=nu)
    x = grid()
    u = np.zeros((3, *GRID))
    u[0] = np.cos(2 * x[2])
    t = dt * steps
    u1, b1 = fields(sim, advance(sim, sim.state_from_fields(velocity=u, buoyancy=0 * x[0]), dt, steps, p))
    exact = np.stack([np.cos(f * t) * u[0], -np.sin(f * t) * u[0], 0 * u[0]]) * np.exp(-4 * nu * t)
    assert relative_error(u1, exact) < 1e-12 and np.max(np.abs(b1)) < 1e-14


def test_signs_of_buoyancy_stratification_and_coriolis_pointwise():
    """Rates at t = 0 (central differences of one step): b = cos x (k horizontal, so P(b z) = b z) makes
    dw/dt = +cos x: a positive anomaly rises; w = cos x makes db/dt = -N^2 cos x: rising fluid is heavier
    than its new surroundings; u = (cos z, sin z, 0) makes du/dt = f v, dv/dt = -f u."""
    sim = bq()
    n, f, h = 2.0, 0.5, 1e-4
    p = sim.parameters(brunt_vaisala=n, coriolis=f, viscosity=0.0, diffusivity=0.0)
    x = grid()
    c = np.cos(x[0])
    zero = np.zeros((3, *GRID))

    def rates(u, b):
        state = sim.state_from_fields(velocity=u, buoyancy=b)
        (u1, b1), (u0, b0) = (fields(sim, advance(sim, state, s * h, 1, p)) for s in (1, -1))
        return (u1 - u0) / (2 * h), (b1 - b0) / (2 * h)

    du, db = rates(zero, c)
    np.testing.assert_allclose(du[2], c, atol=1e-7)
    np.testing.assert_allclose(du[:2], 0, atol=1e-12)
    w = zero.copy()
    w[2] = c
    du, db = rates(w, 0 * c)
    np.testing.assert_allclose(db, -(n**2) * c, atol=1e-7)
    uv = zero.copy()
    uv[0], uv[1] = np.cos(x[2]), np.sin(x[2])  # a Beltrami field: no advection, no pressure
    du, db = rates(uv, 0 * c)
    np.testing.assert_allclose(du[0], f * uv[1], atol=1e-7)
    np.testing.assert_allclose(du[1], -f * uv[0], atol=1e-7)


def test_the_sign_of_advection():
    """u = (sin y, 0, sin x), b = sin x: N_b = -u.grad b = -sin y cos x and N_u = P[u x w] = -(0, 0,
    sin y cos x) exactly (the advection of Navier-Stokes); a flipped sign or a missing term fails."""
    sim = bq()
    x = grid()
    u = np.zeros((3, *GRID))
    u[0], u[2] = np.sin(x[1]), np.sin(x[0])
    state = sim.state_from_fields(velocity=u, buoyancy=np.sin(x[0]))
    n = nonlinear_field(sim, state)
    expected = -np.sin(x[1]) * np.cos(x[0])
    np.testing.assert_allclose(n[3], expected, atol=1e-13)
    np.testing.assert_allclose(n[2], expected, atol=1e-13)
    np.testing.assert_allclose(n[:2], 0.0, atol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_advection_conserves_energy_and_the_transfers_sum_to_zero(case):
    """<u . N_u> = 0 and <b N_b> = 0 for the dealiased terms (kinetic and potential energy separately);
    the transfer spectra T_K and T_P each sum to zero over shells and the conversions cancel shell by
    shell (C_K + C_P = 0: kinetic plus potential energy is conserved), computed without gathering."""
    sim = bq(case)
    eq = sim.equation
    p = sim.parameters(coriolis=1.0)
    state = random_state(sim)
    rates = jax.jit(lambda eq, x: [jnp.sum(eq.ops.weight * jnp.real(jnp.conj(x[rows]) * eq.advection(x)[rows]))
                                   / jnp.sum(eq.ops.weight * jnp.abs(x) ** 2) for rows in (slice(0, 3), slice(3, 4))])
    assert max(abs(float(r)) for r in rates(eq, state)) < 1e-14
    out = SPECTRA(eq, state, p)
    transfer = np.asarray(out["transfer_energy"]), np.asarray(out["transfer_potential_energy"])
    assert np.max(np.abs(transfer[0])) > 0.1 * np.max(np.abs(transfer[1])) > 0
    for t in transfer:
        assert abs(np.sum(t)) < 1e-14 * np.max(np.abs(t))
    assert np.array_equal(np.asarray(out["conversion_energy"]), -np.asarray(out["conversion_potential_energy"]))
    counts = collective_counts(SPECTRA.lower(eq, state, p).compile().as_text())
    assert counts["all-gather"] == 0, counts


def test_spectra_sum_to_the_energies_and_the_buoyancy_flux():
    """sum_k E_K(k) (by |k|, k_h or |k_z|) = E_K, likewise E_P; sum_k C_K = <w b> = -sum_k C_P."""
    sim = bq()
    p = sim.parameters(coriolis=1.0)
    state = sim.initial_state({"name": "random", "seed": 3, "buoyancy": 2.0, "k_peak": 3.0}, p)
    d = {k: float(v) for k, v in sim.diagnostics(state, 0.1, p).items()}
    out = {k: float(np.sum(v)) for k, v in sim.spectra(state).items()}
    for suffix in ("", "_kh", "_kz"):
        assert out["energy" + suffix] == pytest.approx(d["kinetic_energy"], rel=1e-12)
        assert out["potential_energy" + suffix] == pytest.approx(d["potential_energy"], rel=1e-12)
    assert out["conversion_energy"] == pytest.approx(d["buoyancy_flux"], rel=1e-10)
    assert out["conversion_potential_energy"] == pytest.approx(-d["buoyancy_flux"], rel=1e-10)
    assert d["kinetic_energy"] == pytest.approx(0.5, rel=1e-12) and d["potential_energy"] == pytest.approx(2.0 / 16)
    assert out["energy_kh_kz"] == pytest.approx(d["kinetic_energy"], rel=1e-12)
    assert out["potential_energy_kh_kz"] == pytest.approx(d["potential_energy"], rel=1e-12)



def test_froude_and_rossby_numbers_of_a_single_shear_mode():
    """u = (A sin 2z, 0, 0), b = B cos y in a 2 pi box: E_K = A^2/4, E_P = B^2/(4 N^2), the integral scale
    L = 2 pi sum_k E(k)/k / E = pi (every mode at |k| = 2), U = (2 E_K)^(1/2) = A / 2^(1/2), so Fr = U / (L N)
    and Ro = U / (L f); the dissipation rates nu <|w|^2> = 2 nu A^2 (|w| = 2 A |cos 2z|) and
    kappa <|grad b|^2> / N^2 = kappa B^2 / (2 N^2)."""
    sim = bq()
    p = sim.parameters(brunt_vaisala=2.0, coriolis=0.5, viscosity=0.01, diffusivity=0.03)
    x, y, z = grid()
    a, amp_b = 0.6, 0.8
    state = sim.state_from_fields(velocity=np.stack([a * np.sin(2 * z), 0 * x, 0 * x]), buoyancy=amp_b * np.cos(y))
    d = {k: float(v) for k, v in sim.diagnostics(state, 0.01, p).items()}
    speed_over_scale = a / np.sqrt(2) / np.pi
    assert d["kinetic_energy"] == pytest.approx(a**2 / 4, rel=1e-13)
    assert d["potential_energy"] == pytest.approx(amp_b**2 / 16, rel=1e-13)
    assert d["froude"] == pytest.approx(speed_over_scale / 2.0, rel=1e-13)
    assert d["rossby"] == pytest.approx(speed_over_scale / 0.5, rel=1e-13)
    assert d["kinetic_dissipation"] == pytest.approx(2 * 0.01 * a**2, rel=1e-13)
    assert d["potential_dissipation"] == pytest.approx(0.03 * amp_b**2 / 8, rel=1e-13)

@pytest.mark.parametrize("case", [("single", 1, None), distributed_cases()[0]], ids=case_id)
def test_the_kh_kz_spectrum_bins_each_mode_and_its_marginals_are_the_1d_spectra(case):
    """E(k_h, |k_z|) (simulator.observables.spectra.cylinder_sum) summed over k_z is E(k_h), over k_h is E(|k_z|); a
    single mode of wavevector (3, 2, 5) (k_h = 13^(1/2), |k| = 38^(1/2)) lands in bin (4, 5) alone; the same on a
    decomposition."""
    sim = bq(case)
    p = sim.parameters()
    state = sim.initial_state({"name": "random", "seed": 5, "buoyancy": 1.0, "k_peak": 3.0}, p)
    out = {k: np.asarray(v) for k, v in sim.spectra(state).items()}
    for name in ("energy", "potential_energy"):
        two = out[name + "_kh_kz"]
        assert two.shape == (out[name].size,) * 2
        np.testing.assert_allclose(two.sum(axis=1), out[name + "_kh"], rtol=1e-12, atol=1e-15 * two.max())
        np.testing.assert_allclose(two.sum(axis=0), out[name + "_kz"], rtol=1e-12, atol=1e-15 * two.max())
    box = sim.cfg.grid.box  # a mode of wavevector (3, 2, 5) in units of 2 pi / L (the grid is 16 x 8 x 16)
    x, y, z = (2 * np.pi / np.asarray(L) * c for c, L in zip(np.meshgrid(*(np.arange(n) / n * L for n, L in
                                                                         zip(sim.cfg.grid.shape, box)),
                                                                       indexing="ij"), box))
    power = jnp.abs(sim.fft.rfft(jnp.asarray(np.cos(3 * x + 2 * y + 5 * z)))) ** 2
    two = np.asarray(spectra.cylinder_sum(power, sim.equation.ops.k, sim.fft.shape, box))
    assert {(int(i), int(j)) for i, j in zip(*np.nonzero(two > 1e-20 * two.max()))} == {(4, 5)}


def shell_budget(sim, p):
    """The budgets of E_K and E_P (:func:`support.shell_budget`) from a random state."""
    n2 = float(p["brunt_vaisala"]) ** 2
    return support.shell_budget(sim, random_state(sim), p, (("energy", slice(0, 3), p["viscosity"], 1.0),
                                                            ("potential_energy", slice(3, 4), p["diffusivity"], n2)))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_spectral_budget_shell_by_shell(case):
    """dE_K(k)/dt = T_K(k) + C_K(k) - 2 nu k^2 E_K(k) and dE_P(k)/dt = T_P(k) + C_P(k) - 2 kappa k^2 E_P(k)
    in every shell at t = 0, with rotation and nu != kappa, to 1e-8 of the largest rate."""
    sim = bq(case)
    s0 = shell_budget(sim, sim.parameters(coriolis=0.8, viscosity=0.003, diffusivity=0.001))
    assert "injection_energy" not in s0


def test_forced_spectral_budget_shell_by_shell():
    """With band forcing, + F(k) in the kinetic budget; sum_k F(k) = the injected power."""
    sim = shared(physics__name="boussinesq", grid__shape=GRID, physics__forcing="band")
    s0 = shell_budget(sim, sim.parameters(coriolis=0.8, viscosity=0.003, diffusivity=0.001, forcing_power=0.01))
    assert float(np.sum(s0["injection_energy"])) == pytest.approx(0.01, rel=1e-12)


# ---- hyperviscosity nu_p (-lap)^p u and hyperdiffusivity kappa_p (-lap)^p b ------------------------------

#: the order p: structure (a run without it compiles no hyperviscous term)
HYPER = {"physics__hyperviscosity_order": 4}


def bq_hyper(case=("single", 1, None)):
    return shared(case, physics__name="boussinesq", grid__shape=GRID, **HYPER)


def test_the_hyperviscous_propagator_is_the_matrix_exponential():
    """With nu = kappa and nu_p = kappa_p, propagate() equals expm(L tau) of the matrix built from the
    equations with the diffusion nu k^2 + nu_p k^(2p) (p = 4) on every row, to 1e-12, at random
    wavevectors where the hyperviscous rate is up to 30 times the viscous one; a sign or power error of
    either new factor fails."""
    rng = np.random.default_rng(2)
    ks = rng.normal(size=(3, 6)) * 3
    x = rng.normal(size=(4, 6)) + 1j * rng.normal(size=(4, 6))
    x[:3] -= ks * np.sum(ks * x[:3], axis=0) / np.sum(ks**2, axis=0)  # solenoidal
    n, f, nu, nu_p, tau = 7.0, 2.5, 0.05, 1e-4, 0.7
    out = np.asarray(propagate(jnp.asarray(x), tau, [jnp.asarray(v) for v in ks], nu, nu, n**2, f,
                               hyper=(nu_p, nu_p, 4)))
    k2 = np.sum(ks**2, axis=0)
    assert np.max(nu_p * k2**3 / nu) > 30
    for j in range(ks.shape[1]):
        exact = expm(linear_operator(ks[:, j], n, f, nu + nu_p * k2[j] ** 3, nu + nu_p * k2[j] ** 3) * tau) @ x[:, j]
        np.testing.assert_allclose(out[:, j], exact, rtol=0, atol=1e-12 * np.max(np.abs(x[:, j])))


@pytest.mark.parametrize("case", [("single", 1, None), ("slab", 4, None)], ids=case_id)
def test_a_hyperviscous_wave_decays_exactly_at_its_frequency(case):
    """The finite-amplitude wave (3, 1, 2) at N dt = 1.1 with nu = kappa, nu_p = kappa_p, p = 4: after 40
    steps (a decay by 48) velocity and buoyancy equal the exact wave, oscillating at omega and decaying
    as exp(-(nu k^2 + nu_p k^8) t), to 1e-13, on one device and on a slab of 4 (the hyperviscous rate
    2.7 times the viscous one: p = 3 would decay 14 times slower; a flipped sign on u or b grows). nu_p is
    traced: a second run with another nu_p compiles nothing."""
    sim = bq_hyper(case)
    n, f, nu, dt, steps = 3.0, 1.3, 0.005, 0.37, 40
    traces = []
    for nu_p in (5e-6, 1e-6):
        p = sim.parameters(brunt_vaisala=n, coriolis=f, viscosity=nu, diffusivity=nu, hyperviscosity=nu_p,
                           hyperdiffusivity=nu_p)
        state = sim.initial_state({"name": "wave", "modes": [3, 1, 2], "amplitude": 0.3}, p)
        end = advance(sim, state, dt, steps, p)
        traces.append(sim.traces)
        u, b = fields(sim, end)
        u_exact, b_exact, _ = exact_wave((3, 1, 2), 0.3, n, f, nu, dt * steps, nu_p, 4)
        assert relative_error(u, u_exact) < 1e-13 and relative_error(b, b_exact) < 1e-13, nu_p
        energy = 0.3**2 / 2 * np.exp(-2 * (nu * 14 + nu_p * 14**4) * dt * steps)
        assert float(sim.diagnostics(end, dt, p)["total_energy"]) == pytest.approx(energy, rel=1e-13)
    assert 5e-6 * 14**4 > 2.5 * nu * 14 and np.exp(-(nu * 14 + 5e-6 * 14**4) * dt * steps) < 0.025
    assert traces[1] == traces[0]


def test_with_nu_p_zero_a_run_is_bit_for_bit_the_one_without_the_order():
    """20 steps of a random flow in the program with p = 4 and nu_p = kappa_p = 0 (the factors are exp(0) = 1)
    equal those of the program without the order exactly."""
    runs = []
    for sim in (bq(), bq_hyper()):
        p = sim.parameters(coriolis=1.5, viscosity=0.02, diffusivity=0.005)
        runs.append(np.asarray(advance(sim, random_state(sim), 0.01, 20, p)))
    assert np.array_equal(runs[0], runs[1])


def test_a_slab_decomposition_equals_one_device_with_hyperviscosity():
    """30 steps of a random rotating stratified flow, nu != kappa, nu_p = kappa_p (the hyperviscous rate at
    the 2/3-rule corner |k|^2 = 54 3 times the viscous one): slab on 4 devices equals one device to 1e-12."""
    results = []
    for case in (("single", 1, None), ("slab", 4, None)):
        sim = bq_hyper(case)
        p = sim.parameters(coriolis=1.5, viscosity=0.02, diffusivity=0.005, hyperviscosity=4e-7, hyperdiffusivity=4e-7)
        results.append(fields(sim, advance(sim, random_state(sim), 0.01, 30, p)))
    assert relative_error(results[1], results[0]) < 1e-12


def test_the_hyperviscous_budgets_close():
    """Shell by shell, dE_K(k)/dt = T_K + C_K - 2 (nu k^2 + nu_p k^8) E_K and dE_P(k)/dt = T_P + C_P -
    2 (kappa k^2 + kappa_p k^8) E_P at t = 0 (central differences), nu != kappa, to 1e-8 of the largest
    rate, the hyperviscous terms mattering; and d(E_K + E_P)/dt = -(kinetic_dissipation +
    potential_dissipation), the diagnostics holding the hyperviscous losses (more than a third of
    them)."""
    sim, h = bq_hyper(), 1e-5
    nu_p = 1e-7
    p = sim.parameters(coriolis=0.8, viscosity=0.003, diffusivity=0.001, hyperviscosity=nu_p, hyperdiffusivity=nu_p)
    n2 = float(p["brunt_vaisala"]) ** 2
    state = random_state(sim)
    support.shell_budget(sim, state, p, (("energy", slice(0, 3), p["viscosity"], 1.0, nu_p),
                                         ("potential_energy", slice(3, 4), p["diffusivity"], n2, nu_p)))
    plus, minus = (float(sim.diagnostics(advance(sim, state, s, 1, p), h, p)["total_energy"]) for s in (h, -h))
    d = sim.diagnostics(state, h, p)
    loss = float(d["kinetic_dissipation"] + d["potential_dissipation"])
    assert (plus - minus) / (2 * h) == pytest.approx(-loss, rel=1e-8)
    plain = sim.diagnostics(state, h, sim.parameters(coriolis=0.8, viscosity=0.003, diffusivity=0.001))
    assert loss - float(plain["kinetic_dissipation"] + plain["potential_dissipation"]) > loss / 3


def test_k_max_eta_takes_the_hyperviscous_scale():
    """kmax_eta = k_max min(max(eta, eta_p), max(eta_b, eta_p)): eta = (nu^3/eps_K)^(1/4), eta_b the
    buoyancy's Batchelor scale eta (nu/kappa)^(-1/2), eta_p = (nu_p^3/eps_K)^(1/(6p-2)) (kappa_p = nu_p); with
    nu_p = 0 the formula without hyperviscosity, and with nu_p large eta_p decides."""
    sim = bq_hyper()
    state = random_state(sim)
    kmax = 2 / 3 * np.pi * 8 / (2 * np.pi)  # (2/3) min_i pi N_i / L_i: N_y = 8 in a box of 2 pi
    for nu_p in (0.0, 1e-6):
        p = sim.parameters(viscosity=1e-4, diffusivity=2.5e-5, hyperviscosity=nu_p, hyperdiffusivity=nu_p)
        d = {k: float(v) for k, v in sim.diagnostics(state, 0.01, p).items()}
        eta = (1e-12 / d["kinetic_dissipation"]) ** 0.25
        eta_p = (nu_p**3 / d["kinetic_dissipation"]) ** (1 / 22)
        assert d["kmax_eta"] == pytest.approx(kmax * min(max(eta, eta_p), max(eta / 2, eta_p)), rel=1e-12)
    assert eta_p > 10 * eta


def test_hyperviscosity_keys_are_checked_in_one_line():
    """nu_p or kappa_p > 0 needs physics.hyperviscosity_order; kappa_p must equal nu_p (the propagator is
    exact for one hyperviscous rate of u and b); in a config and in Simulation.parameters alike."""
    from simulator.errors import ConfigError

    base = {"physics.name": "boussinesq"}
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set; an integer >= 2 "
                                          r"\(e.g. 4\) to use physics.hyperdiffusivity = 1e-06$"):
        support.load_config(None, {**base, "physics.hyperdiffusivity": 1e-6})
    with pytest.raises(ConfigError, match=r"^physics.hyperdiffusivity = 0.0 differs from physics.hyperviscosity; "
                                          r"it must equal physics.hyperviscosity = 1e-06 \(the exact wave "
                                          r"propagator has one hyperviscous rate for u and b\)$"):
        support.load_config(None, {**base, "physics.hyperviscosity_order": 4, "physics.hyperviscosity": 1e-6})
    assert support.load_config(None, {**base, "physics.hyperviscosity_order": 4, "physics.hyperviscosity": 1e-6,
                                      "physics.hyperdiffusivity": 1e-6})
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = 8 is too large; at most 7"):
        support.load_config(None, {**base, "physics.hyperviscosity_order": 8, "grid.shape": 512})
    with pytest.raises(ConfigError, match=r"^physics.hyperdiffusivity = 0.0 differs"):
        bq_hyper().parameters(hyperviscosity=1e-6)
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set"):
        bq().parameters(hyperviscosity=1e-6, hyperdiffusivity=1e-6)
    assert float(bq_hyper().parameters(hyperviscosity=1e-6, hyperdiffusivity=1e-6)["hyperdiffusivity"]) == 1e-6


def test_exact_propagation_at_large_n_dt():
    """N dt = 500: the wave is still exact (1e-10 after 20 steps), and a weak random flow (advective CFL
    ~ 0.02) stays bounded with its energy non-increasing (nu = kappa): the waves set no step limit."""
    sim = bq()
    n, f, nu, dt = 1000.0, 3.0, 0.01, 0.5
    p = sim.parameters(brunt_vaisala=n, coriolis=f, viscosity=nu, diffusivity=nu)
    state = sim.initial_state({"name": "wave", "modes": [1, 2, 3], "amplitude": 0.5}, p)
    u, b = fields(sim, advance(sim, state, dt, 20, p))
    u_exact, b_exact, _ = exact_wave((1, 2, 3), 0.5, n, f, nu, dt * 20)
    assert relative_error(u, u_exact) < 1e-10 and relative_error(b, b_exact) < 1e-10
    state = sim.initial_state({"name": "random", "seed": 1, "amplitude": 0.01, "buoyancy": 10.0, "k_peak": 2.0}, p)
    energies = [float(sim.diagnostics(state, dt, p)["total_energy"])]
    for _ in range(4):
        state = advance(sim, state, dt, 10, p)
        energies.append(float(sim.diagnostics(state, dt, p)["total_energy"]))
    assert np.all(np.isfinite(energies)) and np.all(np.diff(energies) <= 1e-12 * energies[0]), energies
    assert float(sim.diagnostics(state, dt, p)["cfl"]) < 0.05


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case):
    """30 RK4 steps of a random stratified rotating flow, nu != kappa: every decomposition equals one
    device to 1e-12."""
    results = []
    for c in (("single", 1, None), case):
        sim = bq(c)
        p = sim.parameters(coriolis=1.5, viscosity=0.02, diffusivity=0.005)
        results.append(fields(sim, advance(sim, random_state(sim), 0.01, 30, p)))
    assert relative_error(results[1], results[0]) < 1e-12


# ---- passive scalars -------------------------------------------------------------------------------------

#: scalar 0 obeys b's equation when its gradient is N^2 z and kappa_0 = kappa; scalar 1 is freely decaying
SCALARS = [{"diffusivity": 0.004, "mean_gradient": [0.0, 0.0, 16.0]}, {"diffusivity": 0.002}]


def with_scalars(case=("single", 1, None)):
    return shared(case, physics__name="boussinesq", grid__shape=GRID, physics__scalars=SCALARS)


def scalar_state(sim):
    """random_state's flow and buoyancy b (mean removed), scalar 0 = b, scalar 1 = b + 1 (a mean, kept)."""
    rng = np.random.default_rng(11)
    u, b = rng.standard_normal((3, *GRID)), rng.standard_normal(GRID)
    b -= b.mean()
    return sim.state_from_fields(velocity=u, buoyancy=b, scalar=np.stack([b, b + 1.0]))


def test_a_scalar_with_the_stratifying_gradient_follows_the_buoyancy():
    """With G = N^2 z and kappa = the buoyancy diffusivity, a scalar started equal to b obeys b's equation
    (-u.G = -N^2 w): after 40 steps with rotation it equals b to the time error (b's -N^2 w is in the
    exact propagator, the scalar's in the explicit stages: 3e-10, falling as dt^4), which catches the
    sign of the scalars' advection and source; the scalars' transfers sum to zero and their means stay."""
    sim = with_scalars()
    p = sim.parameters(coriolis=1.0, viscosity=0.004, diffusivity=0.004)
    state = scalar_state(sim)
    out = {k: np.asarray(v) for k, v in sim.spectra(state, params=p).items()}
    for i in range(2):
        t = out[f"transfer_scalar{i}_variance"]
        assert abs(t.sum()) < 1e-14 * np.abs(t).sum() and np.abs(t).max() > 0
    end = advance(sim, state, 0.005, 40, p)
    f = sim.fields(end, "buoyancy", "scalar")
    b, theta = sim.to_numpy(f["buoyancy"]), sim.to_numpy(f["scalar"])
    assert relative_error(theta[0], b) < 1e-8 and relative_error(b, fields(sim, state)[1]) > 1e-2
    assert np.mean(theta[1]) == pytest.approx(1.0, rel=1e-13)


def test_scalar_variance_budget_shell_by_shell():
    """dE_theta(k)/dt = T(k) + P(k) - 2 kappa k^2 E_theta(k) for each scalar in every shell at t = 0
    (central differences of one step each way), to 1e-8 of the largest rate, beside the flow's budgets."""
    sim = with_scalars()
    eq, h = sim.equation, 1e-5
    p = sim.parameters(coriolis=0.8, viscosity=0.003, diffusivity=0.001)
    state = scalar_state(sim)
    s0, plus, minus = (SPECTRA(eq, s, p) for s in (state, advance(sim, state, h, 1, p), advance(sim, state, -h, 1, p)))
    norm = eq.ops.weight / float(eq.fft.size) ** 2
    for i, s in enumerate(SCALARS):
        name = f"scalar{i}_variance"
        dissipation = spectra.shell_sum(2 * norm * eq.ops.k2 * jnp.abs(state[4 + i]) ** 2, eq.ops.k, eq.fft.shape,
                                        eq.box)
        expected = np.asarray(s0[f"transfer_{name}"] + s0[f"production_{name}"] - s["diffusivity"] * dissipation)
        measured = (np.asarray(plus[name]) - np.asarray(minus[name])) / (2 * h)
        error = np.max(np.abs(measured - expected)) / np.max(np.abs(expected))
        assert error < 1e-8, (name, error)
        assert np.max(np.abs(s0[f"transfer_{name}"])) > 0.05 * np.max(np.abs(expected))


@pytest.mark.slow
@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device_with_scalars(case):
    """30 steps with two scalars (a (4 + 2, ...) state): every decomposition equals one device to 1e-12."""
    results = []
    for c in (("single", 1, None), case):
        sim = with_scalars(c)
        p = sim.parameters(coriolis=1.5, viscosity=0.02, diffusivity=0.005)
        end = advance(sim, scalar_state(sim), 0.01, 30, p)
        results.append(sim.to_numpy(sim.fields(end, "scalar")["scalar"]))
    assert relative_error(results[1], results[0]) < 1e-12
