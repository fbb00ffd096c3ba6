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

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import shared

from simulator.time.integrators import run_steps
from simulator.time.schemes import SCHEMES, SEMILINEAR, compatible

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


@pytest.mark.parametrize("equation", sorted(EQUATIONS))
@pytest.mark.parametrize("scheme", compatible(SEMILINEAR))
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
