"""Navier-Stokes numerics options (float64): hyperviscosity nu_p (-lap)^p and the Hou-Li filter.

Hyperviscosity against the exact decay of a Beltrami flow at two wavenumbers (so that the power k^(2p)
is checked, not just a rate), its dissipation against dE/dt; the Hou-Li filter's values against its
formula, its action on a nonlinear term known in closed form, the energy it lets through (none lost
from a low-mode flow; at a high-mode one the rate an independent NumPy evaluation predicts); the
resolution diagnostic following the choice; the default (2/3 rule, nu_p = 0) bit for bit unchanged;
a decomposed run with both equal to one device. The shell-by-shell budget with hyperviscosity is in
tests/test_budget.py, the injected power of every step of a forced run in tests/test_navier_stokes.py.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_navier_stokes import GRID, ns, velocity

from simulator.api import load_config
from simulator.equations import resolution
from simulator.errors import ConfigError
from simulator.time.schemes import SCHEMES

from support import advance, nonlinear_field, relative_error, shared

N = 16
#: the filtered simulation (low-storage RK4: its chunk compiles in half the time of classical RK4's)
HOU_LI = {"grid__shape": N, "physics__dealias": "hou_li", "time__integrator": "lsrk4",
          "physics__hyperviscosity_order": 4}
#: the order of the hyperviscous term: structure (a run without it compiles no hyperviscous term)
HYPER = {"physics__hyperviscosity_order": 4}


def hou_li(case=("single", 1, None)):
    return shared(case, **HOU_LI)


def sigma(m, n):
    """The Hou-Li filter of mode numbers ``m`` on an axis of ``n`` points, in NumPy."""
    return np.exp(-36 * (np.abs(m) / (n / 2)) ** 36)


# ---- hyperviscosity ----------------------------------------------------------------------------------


def test_a_beltrami_flow_decays_at_the_viscous_plus_hyperviscous_rate():
    """ABC (u x w = 0) decays exactly as exp(-(nu k^2 + nu_p k^(2p)) t), k = m, p = 4: the energy and the
    field after 100 steps to 1e-12, at m = 1 and m = 3 (there the hyperviscous rate 6561 nu_p is 7 times
    the viscous one; a wrong power p = 3 would make it 9 times smaller). nu_p is traced: the second run,
    with another nu_p, compiles nothing."""
    nu, dt, steps = 0.01, 0.01, 100
    sim, traces = ns(**HYPER), []
    for m, nu_p in ((1, 2e-3), (3, 1e-4)):
        u0 = sim.initial_state({"name": "abc", "wavenumber": m})
        u = advance(sim, u0, dt, steps, sim.parameters(viscosity=nu, hyperviscosity=nu_p))
        traces.append(sim.traces)  # compilations of the simulation so far
        decay = np.exp(-(nu * m**2 + nu_p * m**8) * steps * dt)
        assert sim.report(u)["energy"] == pytest.approx(sim.report(u0)["energy"] * decay**2, rel=1e-12), m
        assert relative_error(velocity(sim, u), velocity(sim, u0) * decay) < 1e-12, m
    assert traces[1] == traces[0]


def test_the_dissipation_diagnostic_holds_the_hyperviscous_loss():
    """dE/dt = -(2 nu Z + nu_p <|k|^(2p) |u_hat|^2>) at t = 0 (central differences of one step each way), the
    hyperviscous part more than half of it (a missing or wrong term fails)."""
    nu, nu_p, h = 0.01, 2e-6, 1e-4
    sim = ns(**HYPER)
    u0 = sim.initial_state({"name": "random", "seed": 4, "k_peak": 3.0})
    p = sim.parameters(viscosity=nu, hyperviscosity=nu_p)
    eps = float(sim.diagnostics(u0, h, p)["dissipation"])
    viscous = float(sim.diagnostics(u0, h, sim.parameters(viscosity=nu))["dissipation"])
    e_plus, e_minus = (float(sim.diagnostics(advance(sim, u0, s, 1, p), h, p)["energy"]) for s in (h, -h))
    assert (e_plus - e_minus) / (2 * h) == pytest.approx(-eps, rel=1e-6)
    assert eps - viscous > 0.5 * eps


def test_hyperviscosity_keys_are_checked_in_one_line():
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = 1 is out of range; .*2"):
        load_config(None, {"physics.hyperviscosity_order": 1})
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity = -0.1 is out of range"):
        load_config(None, {"physics.hyperviscosity": -0.1})
    with pytest.raises(ConfigError, match=r"^physics.dealias = 'sharp' is unknown; expected one of: two_thirds, "
                                          r"hou_li, phase_shift_cubic, phase_shift_spherical$"):
        load_config(None, {"physics.dealias": "sharp"})
    # float32 at 512^3: |k|^16 at the grid's corner, 3 (256)^2 to the 8th, is past float32's largest number
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = 8 is too large; at most 7 for "
                                          r"grid.shape \[512, 512, 512\] in float32"):
        load_config(None, {"physics.hyperviscosity_order": 8, "grid.shape": 512})
    assert load_config(None, {"physics.hyperviscosity_order": 8, "grid.shape": 512, "precision": "float64"})
    # nu_p needs its order (structure), in a config and in Simulation.parameters alike
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set; an integer >= 2 "
                                          r"\(e.g. 4\) to use physics.hyperviscosity = 1e-06$"):
        load_config(None, {"physics.hyperviscosity": 1e-6})
    with pytest.raises(ConfigError, match=r"^physics.hyperviscosity_order = null is not set"):
        ns().parameters(hyperviscosity=1e-6)
    assert float(ns(**HYPER).parameters(hyperviscosity=1e-6)["hyperviscosity"]) == 1e-6


# ---- the Hou-Li filter --------------------------------------------------------------------------------


def test_the_filter_is_its_formula_on_every_mode_and_the_two_thirds_mask_is_unchanged():
    """ops.dealias is prod_i exp(-36 (|m_i|/(N_i/2))^36) on every mode of the layout (1 at m = 0, exp(-36)
    at the Nyquist mode); the 2/3 rule's mask is still prod_i [|m_i| < N_i/3], bit for bit."""
    ops = hou_li().equation.ops
    modes = [np.asarray(m) for m in ops.modes]
    expected = sigma(modes[0], N) * sigma(modes[1], N) * sigma(modes[2], N)
    np.testing.assert_allclose(np.asarray(ops.dealias), expected, rtol=1e-15, atol=0)
    assert expected.max() == 1.0 and expected.min() < 1e-30  # the filter acts
    plain = ns().equation.ops
    mx, my, mz = (np.abs(np.asarray(m)) < n / 3 for m, n in zip(plain.modes, GRID, strict=True))
    assert np.array_equal(np.asarray(plain.dealias), (mx & my & mz).astype(float))



@pytest.mark.parametrize("dealias, shape", [("two_thirds", (24, 48, 12)), ("phase_shift_spherical", (16, 32, 16))])
def test_the_truncations_keep_the_modes_their_rules_name_on_grids_of_unequal_axes(dealias, shape):
    """On every mode of the full layout: the 2/3 rule keeps |m_i| <= 7, 15 and 3 of 24, 48 and 12 points (3 |m| < N:
    two kept modes add to at most 2N/3 - 2, which aliases to -N/3 + 2 or beyond, kept only if |m| = N/3 is
    dropped); the spherical truncation keeps sum_i (m_i / N_i)^2 < 2/9, each axis's m_i over its own N_i
    (m = (0, 15, 0) of 32 points along y kept)."""
    ops = shared(grid__shape=list(shape), physics__dealias=dealias, fft__layout="full").equation.ops
    m = [np.abs(np.asarray(mi)) + 0 * np.asarray(ops.modes[0] + ops.modes[1] + ops.modes[2]) for mi in ops.modes]
    if dealias == "two_thirds":
        expected = (m[0] <= 7) & (m[1] <= 15) & (m[2] <= 3)
    else:
        expected = sum((mi / n) ** 2 for mi, n in zip(m, shape)) < 2 / 9
        assert np.any(expected & (m[0] == 0) & (m[1] == 15) & (m[2] == 0))
    np.testing.assert_array_equal(np.asarray(ops.dealias) + 0 * m[0], expected.astype(float))

def test_the_filter_multiplies_the_nonlinear_term_on_the_modes_it_makes():
    """u = (sin 7y, 0, sin 6x): N = -(u.grad)u = (0, 0, -6 sin 7y cos 6x), divergence-free, on the modes
    (+-6, +-7, 0), which the filter multiplies by sigma(6) sigma(7) = 0.744 (the 2/3 rule would zero them,
    no dealiasing leave them whole); to 1e-13."""
    sim = hou_li()
    x = np.arange(N) * 2 * np.pi / N
    X, Y, _ = np.meshgrid(x, x, x, indexing="ij")
    u = np.stack([np.sin(7 * Y), 0 * X, np.sin(6 * X)])
    state = sim.fft.rfft(jnp.asarray(u))  # the field itself (from_fields would filter it)
    n = nonlinear_field(sim, state, sim.parameters(viscosity=0.0))
    factor = sigma(6, N) * sigma(7, N)
    assert factor == pytest.approx(0.744, abs=1e-3)
    np.testing.assert_allclose(n[2], -6 * factor * np.sin(7 * Y) * np.cos(6 * X), rtol=0, atol=1e-13)
    np.testing.assert_allclose(n[:2], 0.0, atol=1e-13)


def energy_rates(u):
    """dE/dt = sum_k sigma(k) T(k) of a real velocity ``(3, N, N, N)``, T(k) = Re(conj(u_hat) . P[(u x w)^]) / N^6
    the unfiltered term's work, and sum_k T(k): in NumPy (full complex transforms), independent of the
    simulator."""
    m = np.fft.fftfreq(N, 1 / N)
    k = np.meshgrid(m, m, m, indexing="ij")
    k2 = np.where(k[0] ** 2 + k[1] ** 2 + k[2] ** 2 > 0, k[0] ** 2 + k[1] ** 2 + k[2] ** 2, 1)
    u_hat = np.fft.fftn(u, axes=(1, 2, 3))
    w = np.fft.ifftn(1j * np.stack([k[1] * u_hat[2] - k[2] * u_hat[1], k[2] * u_hat[0] - k[0] * u_hat[2],
                                    k[0] * u_hat[1] - k[1] * u_hat[0]]), axes=(1, 2, 3)).real
    c = np.fft.fftn(np.stack([u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]]),
                    axes=(1, 2, 3))
    div = (k[0] * c[0] + k[1] * c[1] + k[2] * c[2]) / k2
    work = np.real(np.conj(u_hat) * (c - np.stack(k) * div)).sum(axis=0) / N**6
    return float(np.sum(sigma(k[0], N) * sigma(k[1], N) * sigma(k[2], N) * work)), float(np.sum(work))


def test_an_inviscid_filtered_run_loses_energy_only_where_the_filter_acts():
    """Inviscid and unforced: a low-mode flow (Taylor-Green) keeps its energy to 3e-13 over 20 steps (the
    filter is 1 to round-off below |m| = 4 of 8); a flow peaked at the highest modes changes it at the rate
    sum_k sigma(k) T(k) of an independent NumPy evaluation (to 1e-5, the central difference's error), here
    a loss, where the unfiltered term would conserve it (sum_k T(k) = 0 to round-off)."""
    sim, h = hou_li(), 1e-4
    p = sim.parameters(viscosity=0.0)

    def energy(state):
        return sim.report(state)["energy"]

    tg = sim.initial_state({"name": "taylor_green"})
    assert energy(advance(sim, tg, 0.01, 20, p)) == pytest.approx(energy(tg), rel=3e-13)
    high = sim.initial_state({"name": "random", "seed": 3, "k_peak": 5.0})
    rate = (energy(advance(sim, high, h, 1, p)) - energy(advance(sim, high, -h, 1, p))) / (2 * h)
    predicted, unfiltered = energy_rates(velocity(sim, high))
    assert rate == pytest.approx(predicted, rel=1e-5)
    assert predicted < -1e-5 * energy(high) and abs(unfiltered) < 1e-10 * abs(predicted)


def test_k_max_eta_follows_the_dealiasing_and_the_hyperviscous_scale():
    """k_max = 0.8 pi N / L under the filter (2/3 under the 2/3 rule); with nu_p the dissipative scale is
    the larger of eta and (nu_p^3/epsilon)^(1/(6p-2))."""
    assert resolution.dealiased_kmax([N] * 3, [2 * math.pi] * 3, "hou_li") == pytest.approx(0.8 * N / 2, rel=1e-15)
    assert resolution.dealiased_kmax([N] * 3, [2 * math.pi] * 3) == pytest.approx(N / 3, rel=1e-15)
    sim = hou_li()
    u0 = sim.initial_state({"name": "random", "seed": 1})
    for nu, nu_p in ((0.01, 0.0), (1e-6, 1e-7)):
        p = sim.parameters(viscosity=nu, hyperviscosity=nu_p)
        d = {k: float(v) for k, v in sim.diagnostics(u0, 0.01, p).items()}
        eta = max((nu**3 / d["dissipation"]) ** 0.25, (nu_p**3 / d["dissipation"]) ** (1 / 22))
        assert d["kmax_eta"] == pytest.approx(0.8 * N / 2 * eta, rel=1e-12)
    assert eta > 10 * (nu**3 / d["dissipation"]) ** 0.25  # the hyperviscous scale decided the second


# ---- the default unchanged, and every decomposition --------------------------------------------------------


class _WithoutHyperviscosity:
    """The equation's nonlinear term with the integrating factor as it was before hyperviscosity: three 1D
    factors exp(-nu k_i^2 tau), nothing more."""

    def __init__(self, eq):
        self.eq = eq

    def nonlinear(self, u, t, params):
        return self.eq.nonlinear(u, t, params)

    def at_stage(self, step, shift):
        return self

    def settle(self, state, t, dt, params):
        return state

    def exp_linear(self, u, tau, params):
        for k in self.eq.ops.k:
            u = u * jnp.exp(-params["viscosity"] * tau * k**2)
        return u


@pytest.mark.parametrize("order", [None, 4])
def test_with_nu_p_zero_and_the_two_thirds_rule_a_run_is_bit_for_bit_the_one_without_them(order):
    """20 RK4 steps of a random field without physics.hyperviscosity_order (no hyperviscous term in the
    program), and with it at nu_p = 0 (the factor is exp(0) = 1): the states agree exactly with those of the
    integrating factor without hyperviscosity."""
    sim = ns(**({} if order is None else {"physics__hyperviscosity_order": order}))
    eq, p, dt = sim.equation, sim.parameters(viscosity=0.01), jnp.asarray(0.01)
    u0 = sim.initial_state({"name": "random", "seed": 7, "k_peak": 3.0})

    def run(step):
        return jax.jit(lambda u: jax.lax.fori_loop(0, 20, lambda i, v: step(v, i * dt, dt, p), u))(u0)

    rk4 = SCHEMES["rk4"].load()
    assert np.array_equal(np.asarray(run(rk4(eq))), np.asarray(run(rk4(_WithoutHyperviscosity(eq)))))


def test_a_slab_decomposition_equals_one_device_with_the_filter_and_hyperviscosity():
    """20 steps of a random field, filtered and hyperviscous (nu_p k^8 = 0.5 nu k^2 at the filter's 0.8 k_N):
    slab on 4 devices equals one device to 1e-12."""
    results = []
    for case in (("single", 1, None), ("slab", 4, None)):
        sim = hou_li(case)
        u0 = sim.initial_state({"name": "random", "seed": 7, "k_peak": 4.0})
        p = sim.parameters(viscosity=0.01, hyperviscosity=0.5 * 0.01 / 6.4**6)
        results.append(velocity(sim, advance(sim, u0, 0.01, 20, p)))
    assert relative_error(results[1], results[0]) < 1e-12
