"""Incompressible MHD against exact solutions, signs and ideal invariants (float64), on every backend
from the registry (1 and several devices).

Exact solutions: finite-amplitude Alfven waves on an oblique mean field (omega = k.B0, both directions,
decay exp(-nu k^2 t) with nu = eta); the signs of the Lorentz force and of both halves of the induction
are pinned pointwise; the dealiased terms conserve energy and cross helicity (and magnetic helicity
without a mean field) to round-off; div B stays at round-off over a long run; the mean field survives;
the shell-by-shell budgets of kinetic and magnetic energy hold on every backend (transfers that each sum
to zero, and conversion terms that exchange energy between u and B). With hyperviscosity nu_p and
hyper-resistivity eta_p (p = 4): a force-free field decaying at each field's exact rate (one device and a
slab of 4), the budgets and dissipation diagnostics with the hyperviscous losses, k_max eta, and the keys'
one-line refusals. One simulation per backend case is shared, so each compiles once.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft.check import collective_counts

import support
from support import advance, backend_cases, case_id, distributed_cases, relative_error, shared

CASES = backend_cases()
GRID = [16, 8, 16]
B0 = np.array([0.5, 0.2, 0.9])
IDEAL = jax.jit(lambda eq, state: eq.ideal(state))
SPECTRA = jax.jit(lambda eq, state, p: eq.spectra(state, p))


@jax.jit
def ideal_rates(eq, state):
    """Rates of change by the ideal terms N = (N_u, N_B): of the energy <u.N_u + B.N_B>, of the cross
    helicity <B.N_u + u.N_B>, of the magnetic helicity <A.N_B>, and the exchange <u.N_u> alone (Parseval
    sums), with the scale sum |x|^2 they are compared with."""
    n, w = eq.ideal(state), eq.ops.weight

    def rate(a, b):
        return jnp.sum(w * jnp.real(jnp.sum(jnp.conj(a) * b, axis=0)))

    u, b, nu, nb = state[:3], state[3:], n[:3], n[3:]
    return {"energy": rate(u, nu) + rate(b, nb), "cross_helicity": rate(b, nu) + rate(u, nb),
            "magnetic_helicity": rate(eq.vector_potential(b), nb), "exchange": rate(u, nu),
            "scale": jnp.sum(w * jnp.abs(state) ** 2) * 10}  # |N| ~ k |u| |B|, k <= 5 here


def mhd(case=("single", 1, None), **kw):
    return shared(case, physics__name="mhd", grid__shape=GRID, **kw)


def grid():
    return np.meshgrid(*(np.arange(n) * 2 * np.pi / n for n in GRID), indexing="ij")


def random_state(sim, mean_field=B0):
    """Random u and B (plus a mean field) from NumPy: states of any layout without compiling an initial
    condition."""
    rng = np.random.default_rng(5)
    b = rng.standard_normal((3, *GRID))
    b += np.asarray(mean_field)[:, None, None, None] - b.mean(axis=(1, 2, 3), keepdims=True)
    return sim.state_from_fields(velocity=rng.standard_normal((3, *GRID)), magnetic=b)


def fields(sim, state):
    f = sim.fields(state, "velocity", "magnetic")
    return sim.to_numpy(f["velocity"]), sim.to_numpy(f["magnetic"])


def alfven_wave(sim, amplitude, direction):
    """u = a y cos(k.x), B = B0 - direction * a y cos(k.x), k = (1, 0, 1): the Elsasser field z_-
    (direction +1) or z_+ (-1) alone, an exact solution travelling along direction * B0."""
    x = grid()
    u = np.zeros((3, *GRID))
    u[1] = amplitude * np.cos(x[0] + x[2])
    return sim.state_from_fields(velocity=u, magnetic=B0[:, None, None, None] - direction * u)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_alfven_wave_on_an_oblique_mean_field(case):
    """A finite-amplitude wave u = -b (a = 0.5): after t = 2 (100 RK4 steps) u = a y cos(k.x - omega t)
    exp(-nu k^2 t) with omega = k.B0 = 1.4, to 1e-7, and B = B0 - u."""
    sim = mhd(case)
    nu, t, steps = 0.01, 2.0, 100
    p = sim.parameters(viscosity=nu, resistivity=nu)
    u, b = fields(sim, advance(sim, alfven_wave(sim, 0.5, 1), t / steps, steps, p))
    x = grid()
    exact = np.zeros((3, *GRID))
    exact[1] = 0.5 * np.cos(x[0] + x[2] - 1.4 * t) * np.exp(-2 * nu * t)
    assert relative_error(u, exact) < 1e-7
    assert relative_error(b - B0[:, None, None, None], -exact) < 1e-7


def test_alfven_frequency_in_both_directions():
    """The phase of u_y at mode k turns at -omega (z_-, along B0) or +omega (z_+, against B0), omega =
    k.B0, to 1e-6; a wave with u = b and one with u = -b travel opposite ways."""
    sim = mhd()
    p = sim.parameters(viscosity=0.0, resistivity=0.0)
    t, steps = 2.0, 100
    for direction in (1, -1):
        state = alfven_wave(sim, 0.3, direction)
        before = np.fft.fftn(fields(sim, state)[0][1])[1, 0, 1]
        after = np.fft.fftn(fields(sim, advance(sim, state, t / steps, steps, p))[0][1])[1, 0, 1]
        assert -direction * np.angle(after / before) / t == pytest.approx(1.4, rel=1e-6)
        assert abs(after) / abs(before) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ideal_terms_conserve_energy_and_helicities(case):
    """The dealiased ideal terms N = (N_u, N_B): <u.N_u + B.N_B> = 0 (energy) and <B.N_u + u.N_B> = 0
    (cross helicity) on a mean field; without one also <A.N_B> = 0 (magnetic helicity); over shells the
    transfers T_K and T_M each sum to zero, and so do the conversions C_K + C_M (they do exchange
    energy), computed without gathering."""
    sim = mhd(case)
    eq = sim.equation
    for mean_field in (B0, np.zeros(3)):
        state = random_state(sim, mean_field)
        r = {k: float(v) for k, v in ideal_rates(eq, state).items()}
        assert abs(r["energy"]) < 1e-14 * r["scale"] and abs(r["cross_helicity"]) < 1e-14 * r["scale"]
        assert abs(r["exchange"]) > 1e-5 * r["scale"]  # the terms do exchange energy
    assert abs(r["magnetic_helicity"]) < 1e-14 * r["scale"]
    out = {k: np.asarray(v) for k, v in SPECTRA(eq, state, sim.params).items()}
    for name in ("transfer_energy", "transfer_magnetic_energy"):
        assert abs(np.sum(out[name])) < 1e-13 * np.max(np.abs(out[name])), name
    conversion = out["conversion_energy"] + out["conversion_magnetic_energy"]
    assert abs(np.sum(conversion)) < 1e-13 * np.max(np.abs(out["conversion_energy"]))
    assert abs(np.sum(out["conversion_energy"])) > 0.1 * np.max(np.abs(out["conversion_energy"]))
    counts = collective_counts(SPECTRA.lower(eq, state, sim.params).compile().as_text())
    assert counts["all-gather"] == 0, counts


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_the_signs_of_the_lorentz_force_and_the_induction_pointwise(layout):
    """B = (sin y, 0, sin x), u = 0: P[j x B] = +(0, 0, sin y cos x), the opposite of the advection of the
    same u (magnetic tension pulls back). u = (sin y, 0, sin x) on B = B0 x: dB/dt = (B0.grad)u =
    B0 (0, 0, cos x) (stretching). B = (sin y, 0, sin x) in a uniform u = U x: dB/dt = -(u.grad)B =
    -U (0, 0, cos x) (advection). A flipped sign or a missing term fails, in either spectral layout."""
    sim = mhd(fft__layout=layout)
    x = grid()
    zero = np.zeros((3, *GRID))
    shear = zero.copy()
    shear[0], shear[2] = np.sin(x[1]), np.sin(x[0])
    c = np.cos(x[0])

    def ideal(u, b):
        n = IDEAL(sim.equation, sim.state_from_fields(velocity=u, magnetic=b))
        return sim.to_numpy(sim.fft.irfft(n))

    n = ideal(zero, shear)
    np.testing.assert_allclose(n[2], np.sin(x[1]) * c, atol=1e-13)
    np.testing.assert_allclose(n[[0, 1, 3, 4, 5]], 0.0, atol=1e-13)
    along_x = zero.copy()
    along_x[0] = 0.7
    n = ideal(shear, along_x)
    np.testing.assert_allclose(n[5], 0.7 * c, atol=1e-13)
    np.testing.assert_allclose(n[2], -np.sin(x[1]) * c, atol=1e-13)  # u x w of Navier-Stokes
    np.testing.assert_allclose(n[[0, 1, 3, 4]], 0.0, atol=1e-13)
    n = ideal(along_x, shear)
    np.testing.assert_allclose(n[5], -0.7 * c, atol=1e-13)
    np.testing.assert_allclose(n[2], np.sin(x[1]) * c, atol=1e-13)
    np.testing.assert_allclose(n[[0, 1, 3, 4]], 0.0, atol=1e-13)


def test_div_b_stays_at_round_off_and_the_mean_field_survives():
    """2000 steps of a random field on a mean field: max |div B| < 1e-13 (|B| ~ 1, k <= 5) and the
    box mean of B is B0 to 1e-14."""
    sim = mhd()
    p = sim.parameters(viscosity=0.02, resistivity=0.02)
    state = advance(sim, random_state(sim), 0.005, 2000, p)
    d = {k: float(v) for k, v in sim.diagnostics(state, 0.005, p).items()}
    assert d["max_div_b"] < 1e-13 and d["max_div"] < 1e-13
    assert d["magnetic_energy"] > 0.5 * 0.5 * np.sum(B0**2)  # the fluctuations have not all decayed
    np.testing.assert_allclose(fields(sim, state)[1].mean(axis=(1, 2, 3)), B0, atol=1e-14)


def test_orszag_tang_and_beltrami_values():
    """Orszag-Tang (box 2 pi): E_K = 2, E_M = 1.92 (+ |B0|^2/2 on a mean field), <u.B> = 1.6; a Beltrami
    field B = ABC at mode m (curl B = m B) has magnetic helicity <A.B> = <|B|^2>/m."""
    sim = mhd()
    d = sim.report(sim.initial_state({"name": "orszag_tang"}))
    assert (d["kinetic_energy"], d["magnetic_energy"], d["cross_helicity"]) == pytest.approx((2, 1.92, 1.6), rel=1e-13)
    d = sim.report(sim.initial_state({"name": "orszag_tang", "mean_field": B0.tolist()}))
    assert d["magnetic_energy"] == pytest.approx(1.92 + 0.5 * np.sum(B0**2), rel=1e-13)
    x = grid()
    m = 2
    abc = np.stack([np.sin(m * x[2]) + np.cos(m * x[1]), np.sin(m * x[0]) + np.cos(m * x[2]),
                    np.sin(m * x[1]) + np.cos(m * x[0])])
    d = sim.report(sim.state_from_fields(velocity=0 * abc, magnetic=abc))
    assert d["magnetic_energy"] == pytest.approx(1.5, rel=1e-13)
    assert d["magnetic_helicity"] == pytest.approx(3.0 / m, rel=1e-13)



def test_the_cfl_number_counts_the_flow_and_the_alfven_speed_each_over_its_own_spacing():
    """On the 16 x 8 x 16 grid (2 pi box), u = (sin z, 3 sin x, 0) and B = (0, 0, 2 sin y) (solenoidal; each sine
    reaches +-1 on the grid's points together) have the CFL number dt max sum_i (|u_i| + |B_i|) / dx_i =
    dt (16 + 3 * 8 + 2 * 16) / (2 pi): the magnetic field's Alfven speed counts as the flow's does."""
    sim = mhd()
    x, y, z = grid()
    state = sim.state_from_fields(velocity=np.stack([np.sin(z), 3 * np.sin(x), 0 * x]),
                                  magnetic=np.stack([0 * x, 0 * x, 2 * np.sin(y)]))
    assert sim.report(state, 0.01)["cfl"] == pytest.approx(0.01 * 72 / (2 * np.pi), rel=1e-12)

def shell_budget(sim, p):
    """The budgets of E_K and E_M (:func:`support.shell_budget`) from random fields on a mean field."""
    return support.shell_budget(sim, random_state(sim), p, (("energy", slice(0, 3), p["viscosity"], 1.0),
                                                            ("magnetic_energy", slice(3, 6), p["resistivity"], 1.0)))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_spectral_budget_shell_by_shell(case):
    """dE_K(k)/dt = T_K(k) + C_K(k) - 2 nu k^2 E_K(k) and dE_M(k)/dt = T_M(k) + C_M(k) - 2 eta k^2 E_M(k)
    in every shell at t = 0, nu != eta, on a mean field, to 1e-8 of the largest rate."""
    sim = mhd(case)
    s0 = shell_budget(sim, sim.parameters(viscosity=0.03, resistivity=0.01))
    assert "injection_energy" not in s0


def test_forced_spectral_budget_shell_by_shell():
    """With band forcing, + F(k) in the kinetic budget; sum_k F(k) = the injected power."""
    sim = shared(physics__name="mhd", grid__shape=GRID, physics__forcing="band")
    s0 = shell_budget(sim, sim.parameters(viscosity=0.03, resistivity=0.01, forcing_power=0.01))
    assert float(np.sum(s0["injection_energy"])) == pytest.approx(0.01, rel=1e-12)


# ---- hyperviscosity nu_p (-lap)^p u and hyper-resistivity eta_p (-lap)^p B ---------------------------------

#: the order p: structure (a run without it compiles no hyperviscous term)
HYPER = {"physics__hyperviscosity_order": 4}


def mhd_hyper(case=("single", 1, None)):
    return shared(case, physics__name="mhd", grid__shape=GRID, **HYPER)


def beltrami(m):
    """The ABC field at mode m, A = B = C = 1: curl F = m F, a single wavenumber |k| = m."""
    x = grid()
    return np.stack([np.sin(m * x[2]) + np.cos(m * x[1]), np.sin(m * x[0]) + np.cos(m * x[2]),
                     np.sin(m * x[1]) + np.cos(m * x[0])])


@pytest.mark.parametrize("case", [("single", 1, None), ("slab", 4, None)], ids=case_id)
def test_a_force_free_field_decays_at_the_hyperviscous_and_hyper_resistive_rates(case):
    """u = F and B = 0.7 F with F a Beltrami field of wavenumber m (u x w = j x B = u x B = 0: every
    nonlinear term vanishes, for all time): u decays as exp(-(nu k^2 + nu_p k^8) t) and B as
    exp(-(eta k^2 + eta_p k^8) t), k = m, to 1e-13 after 100 steps, at m = 1 and m = 2 (there the
    hyperviscous rates are 1.3 and 1.6 times the Laplacian ones; nu_p != eta_p, so swapped coefficients,
    a flipped sign or another power fail), on one device and on a slab of 4; the energies follow. The
    coefficients are traced: the second run compiles nothing."""
    sim = mhd_hyper(case)
    nu, eta, dt, steps = 0.01, 0.02, 0.02, 100
    traces = []
    for m, nu_p, eta_p in ((1, 3e-3, 1e-3), (2, 2e-4, 5e-4)):
        f = beltrami(m)
        p = sim.parameters(viscosity=nu, resistivity=eta, hyperviscosity=nu_p, hyperresistivity=eta_p)
        start = sim.state_from_fields(velocity=f, magnetic=0.7 * f)
        end = advance(sim, start, dt, steps, p)
        traces.append(sim.traces)
        decay_u, decay_b = (np.exp(-(a * m**2 + a_p * m**8) * dt * steps) for a, a_p in ((nu, nu_p), (eta, eta_p)))
        u, b = fields(sim, end)
        assert relative_error(u, f * decay_u) < 1e-13 and relative_error(b, 0.7 * f * decay_b) < 1e-13, m
        d = sim.report(end, params=p)
        assert d["kinetic_energy"] == pytest.approx(1.5 * decay_u**2, rel=1e-13)
        assert d["magnetic_energy"] == pytest.approx(0.49 * 1.5 * decay_b**2, rel=1e-13)
    assert 2e-4 * 2**8 > 1.25 * nu * 4 and 5e-4 * 2**8 > 1.5 * eta * 4
    assert traces[1] == traces[0]


def test_with_nu_p_zero_a_run_is_bit_for_bit_the_one_without_the_order():
    """20 steps of random fields in the program with p = 4 and nu_p = eta_p = 0 equal those of the program
    without the order exactly."""
    runs = []
    for sim in (mhd(), mhd_hyper()):
        p = sim.parameters(viscosity=0.02, resistivity=0.005)
        runs.append(np.asarray(advance(sim, random_state(sim), 0.005, 20, p)))
    assert np.array_equal(runs[0], runs[1])


def test_a_slab_decomposition_equals_one_device_with_hyperviscosity():
    """30 steps of random fields on a mean field, nu != eta, nu_p != eta_p (the hyperviscous rates at the
    2/3-rule corner |k|^2 = 54 3 times the Laplacian ones): slab on 4 devices equals one device to 1e-12."""
    results = []
    for case in (("single", 1, None), ("slab", 4, None)):
        sim = mhd_hyper(case)
        p = sim.parameters(viscosity=0.02, resistivity=0.005, hyperviscosity=4e-7, hyperresistivity=1e-7)
        results.append(fields(sim, advance(sim, random_state(sim), 0.005, 30, p)))
    assert relative_error(results[1], results[0]) < 1e-12


def test_the_hyperviscous_budgets_close():
    """Shell by shell, dE_K(k)/dt = T_K + C_K - 2 (nu k^2 + nu_p k^8) E_K and dE_M(k)/dt = T_M + C_M -
    2 (eta k^2 + eta_p k^8) E_M at t = 0 (central differences) on a mean field, nu != eta, nu_p != eta_p,
    to 1e-8 of the largest rate, the hyperviscous terms mattering; and d(E_K + E_M)/dt = -(viscous +
    ohmic dissipation), the diagnostics holding the hyperviscous losses (more than a third of them)."""
    sim, h = mhd_hyper(), 1e-5
    nu_p, eta_p = 4e-7, 2.5e-7
    p = sim.parameters(viscosity=0.03, resistivity=0.01, hyperviscosity=nu_p, hyperresistivity=eta_p)
    state = random_state(sim)
    support.shell_budget(sim, state, p, (("energy", slice(0, 3), p["viscosity"], 1.0, nu_p),
                                         ("magnetic_energy", slice(3, 6), p["resistivity"], 1.0, eta_p)))
    plus, minus = (float(sim.diagnostics(advance(sim, state, s, 1, p), h, p)["total_energy"]) for s in (h, -h))
    d = sim.diagnostics(state, h, p)
    loss = float(d["viscous_dissipation"] + d["ohmic_dissipation"])
    assert (plus - minus) / (2 * h) == pytest.approx(-loss, rel=1e-8)
    plain = sim.diagnostics(state, h, sim.parameters(viscosity=0.03, resistivity=0.01))
    assert loss - float(plain["viscous_dissipation"] + plain["ohmic_dissipation"]) > loss / 3


def test_k_max_eta_takes_each_fields_hyperviscous_scale():
    """kmax_eta = k_max min(max(eta, eta_p(nu_p)), max(eta_B, eta_p(eta_p))) with eta from the total
    dissipation, eta_B = eta Pm^(-1/2) (Pm = 4) and eta_p(c) = (c^3/eps)^(1/(6p-2)): with the coefficients 0
    the formula without hyperviscosity; with nu_p = 1e-6 and eta_p = 1e-8 the velocity's scale is
    hyperviscous and the field's, the smaller, decides."""
    sim = mhd_hyper()
    state = random_state(sim)
    kmax = 2 / 3 * np.pi * 8 / (2 * np.pi)  # (2/3) min_i pi N_i / L_i: N_y = 8 in a box of 2 pi
    for nu_p, eta_p in ((0.0, 0.0), (1e-6, 1e-8)):
        p = sim.parameters(viscosity=1e-4, resistivity=2.5e-5, hyperviscosity=nu_p, hyperresistivity=eta_p)
        d = {k: float(v) for k, v in sim.diagnostics(state, 0.01, p).items()}
        eps = d["viscous_dissipation"] + d["ohmic_dissipation"]
        eta = (1e-12 / eps) ** 0.25
        scale_u, scale_b = (max(e, (c**3 / eps) ** (1 / 22)) for e, c in ((eta, nu_p), (eta / 2, eta_p)))
        assert d["kmax_eta"] == pytest.approx(kmax * min(scale_u, scale_b), rel=1e-12)
    assert scale_u > scale_b > 10 * eta


def test_hyperviscosity_keys_are_checked_in_one_line():
    """nu_p or eta_p > 0 needs physics.hyperviscosity_order, in a config and in Simulation.parameters."""
    from simulator.errors import ConfigError

    base = {"physics.name": "mhd"}
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set; an integer >= 2 "
                                          r"\(e.g. 4\) to use physics.hyperresistivity = 1e-06$"):
        support.load_config(None, {**base, "physics.hyperresistivity": 1e-6})
    with pytest.raises(ConfigError, match=r"^physics.hyperresistivity = -1.0 is out of range"):
        support.load_config(None, {**base, "physics.hyperviscosity_order": 4, "physics.hyperresistivity": -1.0})
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = 8 is too large; at most 7"):
        support.load_config(None, {**base, "physics.hyperviscosity_order": 8, "grid.shape": 512})
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set"):
        mhd().parameters(hyperviscosity=1e-6)
    assert float(mhd_hyper().parameters(hyperviscosity=1e-6, hyperresistivity=0.0)["hyperviscosity"]) == 1e-6


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case):
    """30 RK4 steps of random fields on a mean field, nu != eta: every decomposition equals one device
    to 1e-12."""
    results = []
    for c in (("single", 1, None), case):
        sim = mhd(c)
        p = sim.parameters(viscosity=0.02, resistivity=0.005)
        results.append(fields(sim, advance(sim, random_state(sim), 0.005, 30, p)))
    assert relative_error(results[1], results[0]) < 1e-12
