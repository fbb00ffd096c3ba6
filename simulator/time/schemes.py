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
  ``drift(state, dt, params)``), for symmetric splittings;
* ``imex``: M dX/dt = L X + F(X, t) with L implicit through solves the equation builds for each dt
  (``imex_step(state, t, dt, params, tableau)``: the equations between no-slip plates, :mod:`simulator.walls.flow`),
  for implicit-explicit Runge-Kutta schemes, each a tableau of :mod:`simulator.time.imex`, and multistep ones, each
  of :mod:`simulator.time.multistep` (``tableau``: the factory and the chunk are handed it; a multistep scheme's
  history travels in the equation's state, :meth:`Scheme.prepare`).

A scheme's duties towards the equation are declared here and done for it by :meth:`Scheme.load`, not by
each step factory (:func:`simulator.time.integrators.bind`): each stage evaluates the equation at that stage
(``eq.at_stage(n, shift)``, with the scheme's declared ``shifts``: Navier-Stokes's random phase shifts), a
whole step ends with ``eq.settle(state)`` (particles kept per device handed to their new owners), and a chunk
of steps is the scheme's own where it declares one (``chunk``: kick-drift-kick merges the half-kicks between
steps), else a loop of steps. The equation protocols give neutral defaults of both (the equation itself, the
state as it is): no scheme probes for them.

Importable without JAX (config validation reads it); :meth:`Scheme.load` imports the step factory.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SEMILINEAR = "semilinear"
SPLIT_STEP = "split_step"
IMEX = "imex"
PROTOCOLS = (SEMILINEAR, SPLIT_STEP, IMEX)


#: the phase-shift offsets (cells) of classical RK4's stages, and of ETDRK4's, which takes RK4's stages and
#: weights for L = 0: FluidSim 26.10's RK4_phaseshift_random's, citing Sinhababu & Ayyalasomayajula (2021). Like
#: Rogallo's pairing (0, 1/2, 0, 1/2) they make the weighted sum of the stages' single aliases vanish,
#: sum_i w_i exp(2 pi i o_i) = 0; measured, they are the more accurate of the two (Taylor-Green at Re = 400 to
#: t = 10, float64, scripts/bench_accuracy.py's error against its 128^3 reference): 4.92e-2 against 5.19e-2 at
#: 48^3, 7.51e-3 against 7.88e-3 at 64^3
RK4_SHIFTS = (0.0, -1 / 3, 1 / 6, -1 / 2)


def paired_shifts(stages: int) -> tuple[float, ...]:
    """Rogallo's pairing (Rogallo 1981): no offset at even stages, half a cell at odd ones. It cancels the
    single aliases of Heun's two equally weighted stages; a scheme with no offsets of its own uses it."""
    return tuple(0.5 * (i % 2) for i in range(stages))


@dataclass(frozen=True)
class Scheme:
    """A time integrator: its name, the protocol it needs, its order of accuracy, its nonlinear
    evaluations per step, its spectral registers (memory), its step factory ``module:function``
    (``make(equation, stage) -> step(state, t, dt, params) -> state``, ``stage(t, dt, i)`` the equation at
    stage i), whether it needs a diagonal L (``diagonal``: functions of L per mode other than its
    exponential), whether it treats L by an integrating factor (``integrating_factor``: exp(L dt) alone, which
    loses its order where |L dt| is large at k_max), each stage's phase-shift offset in cells (``shifts``;
    () for a scheme without stages of one equation), its own chunk of steps (``chunk``: ``module:function``,
    ``make(equation) -> steps(state, t, n, dt, params) -> state``; None: a loop of steps) and the coefficients
    its factory and chunk are handed (``tableau``: ``module:name``, an IMEX scheme's
    :class:`~simulator.time.imex.Tableau` or :class:`~simulator.time.multistep.Multistep`; None: none)."""

    name: str
    protocol: str
    order: int
    stages: int
    registers: int
    doc: str
    factory: str
    diagonal: bool = False
    integrating_factor: bool = False
    shifts: tuple[float, ...] = ()
    chunk: str | None = None
    tableau: str | None = None

    def _made(self, ref: str) -> Callable[..., Any]:
        """The factory or chunk ``ref``, handed the scheme's tableau where it declares one."""
        make = _function(ref)
        return make if self.tableau is None else functools.partial(make, tableau=_function(self.tableau))

    def prepare(self, equation: Any) -> Any:
        """The equation a run of this scheme steps: ``equation`` whose states carry what the scheme keeps from one
        step for the next (an IMEX scheme's, :meth:`simulator.equations.base.ImexEquation.carrying`: a multistep
        scheme's history), or ``equation`` itself for a scheme that keeps nothing."""
        return equation if self.tableau is None else equation.carrying(_function(self.tableau))

    def load(self) -> Callable[[Any], Callable[..., Any]]:
        """``make(equation) -> step(state, t, dt, params) -> state``: the factory's step with the duties above done."""
        from simulator.time.integrators import bind

        return lambda eq: bind(self, self._made(self.factory), eq)

    def steps(self) -> Callable[[Any], Callable[..., Any]]:
        """``make(equation) -> steps(state, t, n, dt, params) -> state``: a chunk of ``n`` steps (traced)."""
        from simulator.time.integrators import run_steps

        if self.chunk is not None:
            return self._made(self.chunk)
        return lambda eq: lambda state, t, n, dt, params: run_steps(self.load()(eq), state, t, n, dt, params)


def _function(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _imex(name: str, order: int, stages: int, registers: int, doc: str, module: str = "imex") -> Scheme:
    """An implicit-explicit scheme of the coefficients ``name`` of :mod:`simulator.time.imex` (a Runge-Kutta
    tableau) or ``module`` (:mod:`simulator.time.multistep`): viscosity and diffusion implicit by banded solves per
    mode, one factorisation per step size."""
    return Scheme(name, IMEX, order, stages, registers, doc, "simulator.time.imex:make_imex",
                  chunk="simulator.time.imex:make_imex_steps", tableau=f"simulator.time.{module}:{name.upper()}")


SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme("rk2", SEMILINEAR, 2, 2, 2, "Heun's second-order Runge-Kutta with an integrating factor (IF-RK2), "
               "2N storage", "simulator.time.integrators:make_rk2", integrating_factor=True, shifts=paired_shifts(2)),
        Scheme("rk3", SEMILINEAR, 3, 3, 2, "Williamson's three-stage third-order 2N-storage Runge-Kutta with an "
               "integrating factor", "simulator.time.integrators:make_rk3", integrating_factor=True,
               shifts=paired_shifts(3)),
        Scheme("rk4", SEMILINEAR, 4, 4, 5, "classical Runge-Kutta with an exact integrating factor (IF-RK4)",
               "simulator.time.integrators:make_rk4", integrating_factor=True, shifts=RK4_SHIFTS),
        Scheme("lsrk4", SEMILINEAR, 4, 5, 2, "Carpenter-Kennedy five-stage 2N-storage Runge-Kutta with an "
               "integrating factor", "simulator.time.integrators:make_lsrk4", integrating_factor=True,
               shifts=paired_shifts(5)),
        Scheme("etdrk4", SEMILINEAR, 4, 4, 5, "Cox & Matthews's fourth-order exponential time differencing "
               "Runge-Kutta (ETDRK4): the linear part exact, the nonlinear term a polynomial in time through it "
               "(phi-functions of L dt per mode); for a diagonal L", "simulator.time.integrators:make_etdrk4",
               diagonal=True, shifts=RK4_SHIFTS),
        _imex("rk111", 1, 1, 2, "forward-backward Euler (1,1,1) of Ascher, Ruuth & Spiteri (1997), Dedalus's RK111: "
              "first order, one explicit evaluation a step"),
        _imex("rk222", 2, 2, 3, "the implicit-explicit Runge-Kutta (2,2,2) of Ascher, Ruuth & Spiteri (1997), "
              "Dedalus's RK222: second order, L-stable; viscosity and diffusion implicit by banded solves per mode"),
        _imex("rk443", 3, 4, 5, "the implicit-explicit Runge-Kutta (4,4,3) of Ascher, Ruuth & Spiteri (1997), "
              "Dedalus's RK443: third order, L-stable, four explicit evaluations a step"),
        _imex("sbdf2", 2, 1, 4, "the semi-implicit backward differentiation formula of Ascher, Ruuth & Wetton (1995), "
              "Dedalus's SBDF2: second order, one solve and one explicit evaluation a step, the step before's M X "
              "and explicit terms carried in the state (started by SBDF1; variable-step coefficients where dt "
              "changes)", "multistep"),
        Scheme("kdk", SPLIT_STEP, 2, 1, 1, "kick-drift-kick Strang splitting", "simulator.time.integrators:make_kdk",
               chunk="simulator.time.integrators:make_kdk_steps"),
    )
}


def compatible(protocol: str, diagonal_linear: bool = True) -> list[str]:
    """Names of the schemes an equation of ``protocol`` can use, in registry order; with
    ``diagonal_linear=False`` (an equation whose L couples the components of a mode) not those that need
    a diagonal L."""
    return [name for name, scheme in SCHEMES.items()
            if scheme.protocol == protocol and (diagonal_linear or not scheme.diagonal)]
