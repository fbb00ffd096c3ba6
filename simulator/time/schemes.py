"""Time-integration schemes as registered data: each declares the equation protocol it needs and
its order (in the manner of Dedalus's registered schemes and diffrax's ``term_structure``).

An equation declares the protocol its implementation follows (``EquationInfo.protocol``); a scheme is
available to it exactly when the protocols match, so a new scheme needs no edit to any equation.
Protocols (the abstract classes are in :mod:`simulator.equations.base`):

* ``semilinear``: du/dt = L u + N(u, t), L linear in k-space (``exp_linear(u, tau, params)``, exp(L tau)
  exactly, and ``nonlinear(u, t, params)``), for integrating-factor Runge-Kutta schemes; an exponential
  time-differencing scheme (``diagonal``) also needs L diagonal per mode (``linear(params)``,
  ``linear_map``), which the equation declares (``EquationInfo.diagonal_linear``: not Boussinesq, whose
  gravity-inertia waves couple the components of a mode);
* ``split_step``: H = T + W with exactly solvable parts (``kick(state, dt, params)``,
  ``drift(state, dt, params)``), for symmetric splittings.

Importable without JAX (config validation reads it); :func:`Scheme.load` imports the step factory.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SEMILINEAR = "semilinear"
SPLIT_STEP = "split_step"
PROTOCOLS = (SEMILINEAR, SPLIT_STEP)


@dataclass(frozen=True)
class Scheme:
    """A time integrator: its name, the protocol it needs, its order of accuracy, its nonlinear
    evaluations per step, its spectral registers (memory), its step factory ``module:function``
    (``make(equation) -> step(state, t, dt, params) -> state``), and whether it needs a diagonal L
    (``diagonal``: functions of L per mode other than its exponential)."""

    name: str
    protocol: str
    order: int
    stages: int
    registers: int
    doc: str
    factory: str
    diagonal: bool = False

    def load(self) -> Callable[[Any], Callable[..., Any]]:
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)


SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme("rk2", SEMILINEAR, 2, 2, 2, "Heun's second-order Runge-Kutta with an integrating factor (IF-RK2), "
               "2N storage", "simulator.time.integrators:make_rk2"),
        Scheme("rk3", SEMILINEAR, 3, 3, 2, "Williamson's three-stage third-order 2N-storage Runge-Kutta with an "
               "integrating factor", "simulator.time.integrators:make_rk3"),
        Scheme("rk4", SEMILINEAR, 4, 4, 5, "classical Runge-Kutta with an exact integrating factor (IF-RK4)",
               "simulator.time.integrators:make_rk4"),
        Scheme("lsrk4", SEMILINEAR, 4, 5, 2, "Carpenter-Kennedy five-stage 2N-storage Runge-Kutta with an "
               "integrating factor", "simulator.time.integrators:make_lsrk4"),
        Scheme("etdrk4", SEMILINEAR, 4, 4, 5, "Cox & Matthews's fourth-order exponential time differencing "
               "Runge-Kutta (ETDRK4): the linear part exact, the nonlinear term a polynomial in time through it "
               "(phi-functions of L dt per mode); for a diagonal L", "simulator.time.integrators:make_etdrk4",
               diagonal=True),
        Scheme("kdk", SPLIT_STEP, 2, 1, 1, "kick-drift-kick Strang splitting", "simulator.time.integrators:make_kdk"),
    )
}


def compatible(protocol: str, diagonal_linear: bool = True) -> list[str]:
    """Names of the schemes an equation of ``protocol`` can use, in registry order; with
    ``diagonal_linear=False`` (an equation whose L couples the components of a mode) not those that need
    a diagonal L."""
    return [name for name, scheme in SCHEMES.items()
            if scheme.protocol == protocol and (diagonal_linear or not scheme.diagonal)]
