"""The order of every semi-linear scheme in the registry, measured (float64) against an exact nonlinear
solution of each flow equation that can use it: Navier-Stokes without and with a passive scalar,
Boussinesq (with rotation) and MHD.

The solution: a Beltrami shear flow u = a(t) (sin(k z + phi(t)), cos(k z + phi(t)), 0), driven by the
constant-power linear forcing f = P / (2 E) u (Lundgren 2003). Its advection and Lorentz terms vanish
(curl u = k u, u_z = 0), but the forcing is nonlinear in u (1/E): the scheme integrates
dE/dt = P - 2 nu k^2 E, whose solution E(t) = E_inf + (E_0 - E_inf) exp(-2 nu k^2 t), E_inf = P / (2 nu k^2),
gives a = sqrt(E / E_0). A first-order error in the forcing's time integration shows as the ratio 2
between the errors at dt and dt/2, whatever the scheme's nominal order. With a scalar under a mean
gradient G = (g, 0, 0), theta = beta(t) sin(k z) obeys d beta/dt = -kappa k^2 beta - g a(t): the scheme
integrates the source -u.G, explicitly time-dependent through a(t) (beta by Gauss-Legendre quadrature
here). Boussinesq's rotation f (du/dt = f v, dv/dt = -f u) turns u at phi = f t, exactly in the integrating
factor, as it does the buoyancy b = b_0 exp(-kappa k^2 t) sin(k z) (kappa = nu), which w = 0 leaves alone;
MHD's field B = b_0 exp(-eta k^2 t) u(0) has the shape of u, so that j x B and u x B vanish.

Measured orders (4 -> 8 -> 16 steps): rk2 2.08, 2.04 (2.21, 2.14 with the scalar); rk3 3.11, 3.08; rk4 4.07,
4.12 (3.95, 4.04 with the scalar); lsrk4 4.10, 4.11. A wrong node (Williamson's c_3 = 0.7 for 3/4) gives 0.92,
1.00; a wrong weight (B_3 = 8.1/15, Heun's A_2 = -0.95) no convergence at all.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.time.integrators import run_steps
from simulator.time.schemes import SCHEMES, SEMILINEAR, compatible

from support import shared

N = 8
K = 1.0  # mode number along z (box 2 pi): kept by the 2/3 rule at N = 8
NU, POWER, T_END = 0.4, 2.0, 1.0  # E rises from 1/2 towards P / (2 nu k^2) = 5/2 (to 1.6 at T_END)
KAPPA, GRADIENT, CORIOLIS, ETA, B0 = 0.25, 1.5, 2.0, 0.3, 0.5
STEPS = (4, 8, 16)
#: the measured order log2(e(dt) / e(dt/2)) of both pairs lies within this of the scheme's order
TOLERANCE = 0.25

EQUATIONS = {
    "navier_stokes": {"physics.viscosity": NU},
    "navier_stokes_scalar": {"physics.viscosity": NU,
                             "physics.scalars": [{"diffusivity": KAPPA, "mean_gradient": [GRADIENT, 0.0, 0.0]}]},
    "boussinesq": {"physics.name": "boussinesq", "physics.viscosity": NU, "physics.diffusivity": NU,
                   "physics.coriolis": CORIOLIS},
    "mhd": {"physics.name": "mhd", "physics.viscosity": NU, "physics.resistivity": ETA},
}


def amplitude(t: np.ndarray | float) -> np.ndarray:
    """a(t) = sqrt(E(t) / E_0), E_0 = 1/2."""
    e0, e_inf, rate = 0.5, POWER / (2 * NU * K**2), 2 * NU * K**2
    return np.sqrt((e_inf + (e0 - e_inf) * np.exp(-rate * t)) / e0)


def scalar_amplitude(t: float) -> float:
    """beta(t) = -g int_0^t exp(-kappa k^2 (t - s)) a(s) ds (beta(0) = 0), by 32-point Gauss-Legendre."""
    x, w = np.polynomial.legendre.leggauss(32)
    s = 0.5 * t * (x + 1)
    return float(-GRADIENT * 0.5 * t * np.sum(w * np.exp(-KAPPA * K**2 * (t - s)) * amplitude(s)))


def exact(name: str, t: float) -> dict[str, np.ndarray]:
    """The exact fields at time t on the N^3 grid."""
    z = np.meshgrid(*(np.arange(N) * 2 * np.pi / N,) * 3, indexing="ij")[2]
    phase = K * z + (CORIOLIS * t if name == "boussinesq" else 0.0)
    shape = np.stack([np.sin(phase), np.cos(phase), np.zeros_like(z)])
    fields = {"velocity": amplitude(t) * shape}
    if name == "navier_stokes_scalar":
        fields["scalar"] = scalar_amplitude(t) * np.sin(K * z)[None]
    if name == "boussinesq":
        fields["buoyancy"] = B0 * np.exp(-NU * K**2 * t) * np.sin(K * z)
    if name == "mhd":
        fields["magnetic"] = B0 * np.exp(-ETA * K**2 * t) * shape
    return fields


def _pairs() -> list[tuple[str, str]]:
    """(scheme, equation) for every scheme each equation of :data:`EQUATIONS` accepts (the registries'
    answer: Boussinesq's coupled waves have no diagonal L for an exponential scheme)."""
    from simulator.equations import registry

    infos = registry()
    return [(scheme, equation) for equation in sorted(EQUATIONS)
            for info in [infos[EQUATIONS[equation].get("physics.name", "navier_stokes")]]
            for scheme in compatible(SEMILINEAR, info.diagonal_linear)]


@pytest.mark.parametrize("scheme,equation", _pairs())
def test_the_scheme_converges_at_its_order_on_a_forced_exact_solution(scheme, equation):
    """Errors of the state after T_END in 4, 8 and 16 steps: both ratios are 2^order to within TOLERANCE in
    the exponent. One simulation per equation serves every scheme; each scheme compiles only its loop."""
    sim = shared(grid__shape=N, physics__forcing="linear", physics__forcing_power=POWER,
                 **{k.replace(".", "__"): v for k, v in EQUATIONS[equation].items()})
    start, end = (sim.state_from_fields(**exact(equation, t)) for t in (0.0, T_END))
    run = jax.jit(lambda eq, u, n, dt, p: run_steps(SCHEMES[scheme].load()(eq), u, jnp.zeros_like(dt), n, dt, p))
    errors = [float(jnp.max(jnp.abs(run(sim.equation, start, steps, jnp.asarray(T_END / steps), sim.params) - end)))
              for steps in STEPS]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - SCHEMES[scheme].order) < TOLERANCE), (errors, orders)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_the_phi_functions_match_their_series_to_rounding(dtype):
    """phi_1..3 of ETDRK4 against 40-digit decimal arithmetic, on both sides of the switch from the Taylor series
    (|z| < 1) to the closed forms and far out (where z^3 would overflow float32); their derivatives at 0 (the
    series' 1/2, 1/6, 1/24) and at -1 are finite: a run's gradient through an inviscid mode."""
    from decimal import Decimal, getcontext

    from simulator.time.integrators import phi_functions

    getcontext().prec = 40

    def exact(z: float) -> list[float]:
        if z == 0:
            return [1.0, 0.5, 1 / 6]
        d = Decimal(z)
        e = d.exp() - 1
        phis = [e / d]
        for k in (2, 3):
            phis.append((phis[-1] - Decimal(1) / math.factorial(k - 1)) / d)
        return [float(p) for p in phis]

    zs = [0.0, 1e-8, -1e-8, 0.3, -0.5, -0.999, -1.0, -1.001, 0.999, 1.0, 2.0, -3.0, -50.0, -1e4, -1e13]
    got = np.array(jax.jit(phi_functions)(jnp.asarray(zs, dtype)), dtype=np.float64)
    want = np.array([exact(z) for z in zs]).T
    eps = float(jnp.finfo(dtype).eps)
    assert np.all(np.abs(got - want) <= 8 * eps * np.abs(want)), np.abs(got - want) / np.abs(want) / eps
    # one program for the three derivatives (each eager operation would compile alone)
    slopes_at = jax.jit(lambda x: [jax.grad(lambda y, k=k: phi_functions(y)[k])(x) for k in range(3)])
    for z, slopes in ((0.0, (1 / 2, 1 / 6, 1 / 24)), (-1.0, None)):
        grads = [float(g) for g in slopes_at(jnp.asarray(z, dtype))]
        assert np.all(np.isfinite(grads)), grads
        if slopes:
            assert grads == pytest.approx(slopes, rel=20 * eps)


def test_etdrk4_keeps_a_stiff_balance_that_the_integrating_factor_loses():
    """The forced Beltrami solution above with hyperviscosity nu_p = 20 (|k| = 1: the damping rate
    nu + nu_p = 20.4, |L dt| = 2.55 at 8 steps): the forcing P/(2E) u balances the damping, so N
    follows exp(L t) slowly. ETDRK4 integrates N through the propagator and reaches the exact solution's
    own accuracy at 8 steps; the integrating-factor schemes integrate exp(-L t) N, varying at the rate
    |L|, and are 1e5 times further off (measured, relative to the state: etdrk4 2e-6 and 4e-6 at 8 and
    16 steps, the exact formula's floor; rk4 47.7, 3.24; lsrk4 4.53, 0.36)."""
    hyper = 20.0
    rate = NU + hyper

    def state(t: float) -> dict[str, np.ndarray]:
        e0, e_inf = 0.5, POWER / (2 * rate)
        a = np.sqrt((e_inf + (e0 - e_inf) * np.exp(-2 * rate * t)) / e0)
        z = np.meshgrid(*(np.arange(N) * 2 * np.pi / N,) * 3, indexing="ij")[2]
        return {"velocity": a * np.stack([np.sin(z), np.cos(z), np.zeros_like(z)])}

    sim = shared(grid__shape=N, physics__forcing="linear", physics__forcing_power=POWER, physics__viscosity=NU,
                 physics__hyperviscosity=hyper, physics__hyperviscosity_order=2)
    start, end = (sim.state_from_fields(**state(t)) for t in (0.0, T_END))
    scale = float(jnp.max(jnp.abs(end)))

    def error(scheme: str, steps: int) -> float:
        run = jax.jit(lambda eq, u, n, dt, p: run_steps(SCHEMES[scheme].load()(eq), u, jnp.zeros_like(dt), n, dt, p))
        return float(jnp.max(jnp.abs(run(sim.equation, start, steps, jnp.asarray(T_END / steps), sim.params) - end)))

    for steps in (8, 16):
        etd = error("etdrk4", steps)
        assert etd < 1e-6 * scale, (steps, etd, scale)
        for other in ("rk4", "lsrk4"):
            assert etd < 1e-4 * error(other, steps), (steps, other)


def test_gradients_flow_through_etdrk4_phi_functions():
    """d/d nu and d/d nu_p of a random field's energy after 4 ETDRK4 steps (advection and forcing; the
    phi-functions of L dt on both sides of their series' switch, and at z = 0 for the mean mode) equal
    central differences to 1e-7."""
    sim = shared(grid__shape=N, physics__forcing="linear", physics__forcing_power=POWER, physics__viscosity=NU,
                 physics__hyperviscosity=0.1, physics__hyperviscosity_order=2)
    start = sim.initial_state({"name": "random", "seed": 3, "k_peak": 2.0})
    step = SCHEMES["etdrk4"].load()(sim.equation)
    dt = jnp.asarray(0.3)  # |L dt| = (nu k^2 + nu_p k^4) dt: 0.15 at |k| = 1, 5.8 at k = (2, 2, 2)

    def energy(nu, hyper):
        p = {**sim.params, "viscosity": nu, "hyperviscosity": hyper}
        u = run_steps(step, start, jnp.zeros_like(dt), 4, dt, p)
        return jnp.sum(jnp.abs(u) ** 2)

    nu, hyper, h = jnp.asarray(NU), jnp.asarray(0.1), 1e-6
    grads = jax.jit(jax.grad(energy, argnums=(0, 1)))(nu, hyper)
    energy = jax.jit(energy)  # one program for the four differences (each eager op would compile alone)
    central = ((energy(nu + h, hyper) - energy(nu - h, hyper)) / (2 * h),
               (energy(nu, hyper + h) - energy(nu, hyper - h)) / (2 * h))
    for g, c in zip(grads, central, strict=True):
        assert np.isfinite(float(g)) and float(g) == pytest.approx(float(c), rel=1e-7), (grads, central)
