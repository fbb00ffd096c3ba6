"""The incompressible flow between no-slip plates, per horizontal mode: the implicit half of a step of the
velocity-vorticity formulation of Kim, Moin & Moser (1987) with scalars, reusable by every equation between
no-slip plates (convection, channel flows). The equation supplies the explicit terms (advection, buoyancy,
forcing) formed in physical space; this module holds the state's layout, its mass operator and the stage solves,
and steps it with the implicit-explicit scheme it is handed (a tableau of :mod:`simulator.time.imex`: RK111, RK222,
RK443; or a multistep scheme of :mod:`simulator.time.multistep`: SBDF2, whose history the state carries).

The state of a flow between plates at z = 0 and z = H, per horizontal mode (k_x, k_y) with k^2 = k_x^2 + k_y^2
(a :class:`State`, each array's last axis the N coefficients of the run's basis, :mod:`simulator.walls.bases`):

* ``w``: the wall-normal velocity, stepped by d/dt lap w = nu lap^2 w + h_w (the pressure eliminated), w = dw/dz
  = 0 at both plates imposed by the influence matrix of :mod:`simulator.walls.wall_normal`: the velocity rebuilt
  by continuity is divergence-free to round-off, plates included; zero at k = 0 (no mean flow across the plates);
* ``zeta``: the wall-normal vorticity i k_x v - i k_y u, d/dt zeta = nu lap zeta + h_zeta, zero at the plates
  (None in a plane (x, z), where v = 0 and k_y = 0: neither stored nor solved);
* ``mean``: the horizontally averaged velocity along the plates (U, V)(z), ``(2, N)``, d/dt U = nu d^2U/dz^2 +
  h_U, equal to each plate's velocity there (plates at rest, or moving along themselves: a Couette flow);
* ``scalars``: temperatures or passive scalars ``(S, ..., N)``, d/dt s = kappa lap s + h_s, a fixed value
  (Dirichlet) or a fixed flux (Neumann) at each plate;
* ``history``: what the scheme keeps from one step for the next, None for the Runge-Kutta tableaux; a multistep
  scheme's (:class:`simulator.time.multistep.History`: M X and the explicit terms of the step before, each a
  :class:`State`, and that step's dt), so that chunks and checkpoints carry it.

Each implicit stage of the scheme solves (M - gamma dt L) X = R (gamma the tableau's diagonal, or the multistep
scheme's coefficient): for w, (alpha - lap) lap w = R / (gamma dt nu), alpha = 1/(gamma dt nu), by two banded
Helmholtz solves and the 2 x 2 influence matrix; for the others one banded Helmholtz solve (alpha + k^2 - d^2/dz^2)
x = R / (gamma dt nu) (or kappa). The factorisations are O(N) per mode (no N x N inverse is formed or stored),
built once per gamma dt (:meth:`NoSlipFlow.factor`: a chunk of steps of one dt shares them), and every solve is
batched over the leading (mode) axes, over the columns the 2/3 rule keeps alone where told them
(:attr:`NoSlipFlow.kept`). The bounded direction is whole on the device that solves a mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import jax.numpy as jnp

from simulator.fft.walls import gather_runs, hermitian_full, spread_runs
from simulator.walls.bases import CHEBYSHEV, Basis
from simulator.walls.eigen import NO_SLIP
from simulator.walls.helmholtz import DIRICHLET, NEUMANN, Helmholtz
from simulator.walls.wall_normal import WallNormal, laplacian

#: a scalar's condition at a plate (``Plates.scalars``) and its Helmholtz condition
SCALAR_CONDITIONS = {"fixed-value": DIRICHLET, "fixed-flux": NEUMANN}


def scalar_conditions(condition: str | tuple[str, str]) -> tuple[str, str]:
    """The Helmholtz conditions (lower, upper) of a scalar's ``condition``: one for both plates or one per plate."""
    pair = (condition, condition) if isinstance(condition, str) else condition
    return tuple(SCALAR_CONDITIONS[c] for c in pair)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class State:
    """A flow between no-slip plates (module docstring): ``w`` and ``zeta`` ``(..., N)`` (``zeta`` None in a plane),
    ``mean`` ``(2, N)``, ``scalars`` ``(S, ..., N)`` (S may be 0), complex or real coefficients; ``history`` the
    scheme's (None: it keeps none)."""

    w: jnp.ndarray
    zeta: jnp.ndarray | None
    mean: jnp.ndarray
    scalars: jnp.ndarray
    history: Any = None


@dataclass(frozen=True)
class Plates:
    """The plates' conditions: each plate's velocity condition (``walls``, bottom then top: ``no-slip``, the
    velocity along the plate given, or ``free-slip``, no stress: w = 0 and d/dz of the velocity along it zero), the
    velocity along each no-slip plate (U, V) at the bottom and the top (at rest or moving along the plate; ignored
    at a free-slip plate), and per scalar its condition (``fixed-value`` or ``fixed-flux``, one for both plates or a
    (bottom, top) pair) with its value or flux at the bottom and the top."""

    velocity: tuple[tuple[float, float], tuple[float, float]] = ((0.0, 0.0), (0.0, 0.0))
    scalars: tuple[str | tuple[str, str], ...] = ()
    values: tuple[tuple[float, float], ...] = ()
    walls: tuple[str, str] = (NO_SLIP, NO_SLIP)

    @property
    def along(self) -> tuple[str, str]:
        """The Helmholtz conditions of the velocity along the plates, U, V and the wall-normal vorticity: a value
        at a no-slip plate, a zero slope at a free-slip one."""
        return tuple(DIRICHLET if wall == NO_SLIP else NEUMANN for wall in self.walls)


@dataclass(frozen=True)
class NoSlipFlow:
    """The linear part and stage solves of a flow between no-slip plates, batched over horizontal modes:
    ``kx``, ``ky`` broadcast to the modes' shape ``(...)``; ``n`` coefficients across a gap of ``height``;
    ``viscosity`` and ``diffusivities`` (one per scalar); ``planar``: a plane (x, z), whose states hold no zeta;
    ``hermitian``: the modes are those of real fields' spectra, their shape ``(A, B)`` whole (not split between
    devices) in NumPy's FFT order, where mode -(k_x, k_y) is entry (-a mod A, -b mod B): the solves and their
    factorisations then hold the half ``b <= B // 2`` alone and the other half is its conjugate (the problems depend
    on k^2 alone; half the work and half the factors' memory). ``kept``: the columns whose right-hand sides may be
    nonzero (the 2/3 rule zeroes the explicit terms elsewhere, and the state made from fields holds none there):
    the factorisations and solves hold those alone, and the solutions elsewhere are zero, as the solves of zero
    right-hand sides and zero plate values are (4/9 of a box's columns, 2/3 of a plane's)."""

    kx: jnp.ndarray
    ky: jnp.ndarray
    n: int
    height: float
    viscosity: float | jnp.ndarray
    diffusivities: tuple[float | jnp.ndarray, ...] = ()
    plates: Plates = field(default_factory=Plates)
    planar: bool = False  # a plane (x, z): no wall-normal vorticity, none factored
    hermitian: bool = False
    basis: Basis = CHEBYSHEV  # the polynomials across the plates (:mod:`simulator.walls.bases`)
    #: per modes' axis, the runs [start, stop) of the columns the solves hold (the 2/3 rule's kept ones, from
    #: :meth:`simulator.fft.domain.DomainSpectra.kept_columns`), None for all: the others' solutions are zero
    kept: tuple[tuple[tuple[int, int], ...] | None, tuple[tuple[int, int], ...] | None] = (None, None)

    @property
    def k2(self) -> jnp.ndarray:
        return jnp.asarray(self.kx) ** 2 + jnp.asarray(self.ky) ** 2

    def _runs(self) -> tuple[tuple[tuple[int, int], ...] | None, tuple[tuple[int, int], ...] | None]:
        """The runs of entries the solves hold along each modes' axis (None: all): :attr:`kept`'s, and along the
        last axis only those ``b <= B // 2`` where :attr:`hermitian`."""
        first, last = self.kept
        if self.hermitian:
            half = self.modes[-1] // 2 + 1
            last = tuple((a, min(b, half)) for a, b in (last or ((0, half),)) if a < half)
        return first, last

    def _solved(self, x: jnp.ndarray, axis: int = -2) -> jnp.ndarray:
        """The entries the solves hold (:meth:`_runs`) of ``x``, whose modes' axes end at ``axis``."""
        for runs, at in zip(self._runs(), (axis - 1, axis), strict=True):
            if runs is not None:
                x = gather_runs(x, runs, at)
        return x

    def _placed(self, x: jnp.ndarray, axis: int = -2) -> jnp.ndarray:
        """The solves' entries ``x`` (:meth:`_solved`'s layout) among zeros at the others, the modes' whole shape:
        the conjugate half appended where :attr:`hermitian`."""
        sizes = (self.modes[0], self.modes[-1] // 2 + 1 if self.hermitian else self.modes[-1])
        for runs, at, size in zip(self._runs(), (axis - 1, axis), sizes, strict=True):
            if runs is not None:
                x = spread_runs(x, runs, size, at)
        return hermitian_full(x, self.modes[-1]) if self.hermitian else x

    @property
    def modes(self) -> tuple[int, ...]:
        """The modes' shape, ``kx``'s and ``ky``'s broadcast."""
        return jnp.broadcast_shapes(jnp.shape(self.kx), jnp.shape(self.ky))

    def _solved_k2(self) -> jnp.ndarray:
        """k^2 of the modes the solves hold (:meth:`_runs`)."""
        return self._solved(jnp.broadcast_to(self.k2, self.modes), -1)

    def mass(self, x: State) -> State:
        """M X: lap w for w, the identity for the others."""
        return State(laplacian(x.w, self.k2, self.height, self.basis), x.zeta, x.mean, x.scalars)

    def factor(self, dt: float | jnp.ndarray, tableau: Any) -> Factored:
        """The stage solves' factorisations for ``dt`` and ``tableau``'s diagonal gamma (a scheme of
        :mod:`simulator.time.imex` or :mod:`simulator.time.multistep`): built once per chunk of steps of one dt (a
        pytree, held across the chunk's steps; :meth:`step` builds them itself where none are given)."""
        return self.factor_for(tableau.gamma * jnp.asarray(dt))

    def factor_for(self, gdt: jnp.ndarray) -> Factored:
        """The stage solves' factorisations for gamma dt = ``gdt`` (traced)."""
        k2, h = self._solved_k2(), self.height
        alpha = 1.0 / (gdt * self.viscosity)
        along = self.plates.along
        normal = WallNormal.build(alpha, k2, self.n, h, self.plates.walls, self.basis)
        # zeta's problem is the one w's vorticity solve already factored, with its plates' conditions: between no-slip
        # plates the same, below a free-slip plate on the same factors and an influence function
        zeta = None if self.planar else normal.vorticity.with_conditions(along)
        build = self.basis.helmholtz.build
        return Factored(normal, zeta, build(alpha, self.n, along, h),
                        tuple(build(1.0 / (gdt * kappa) + k2, self.n, scalar_conditions(condition), h)
                              for kappa, condition in zip(self.diffusivities, self.plates.scalars, strict=True)),
                        gdt)

    def solver(self, factored: Factored) -> Callable[[State], State]:
        """``solve(R)``: X with (M - gamma dt L) X = R and the plates' conditions, by the factorisations of
        :meth:`factor` for its gamma dt."""
        mean_mode = self._solved_k2() == 0
        scale = factored.gamma_dt * self.viscosity
        # a free-slip plate's velocity along it is free: its condition is a zero slope
        (u0, v0), (u1, v1) = [(u, v) if wall == NO_SLIP else (0.0, 0.0)
                              for (u, v), wall in zip(self.plates.velocity, self.plates.walls, strict=True)]
        shared = self.plates.along == (DIRICHLET, DIRICHLET)
        s_scales = [factored.gamma_dt * kappa for kappa in self.diffusivities]
        values = self.plates.values
        whole = self._placed

        def solve(r: State) -> State:
            half = self._solved
            if r.zeta is not None and shared:
                # w's first Helmholtz problem and zeta's are the same: one batched solve of both
                phi, zeta = factored.normal.vorticity.solve(jnp.stack([half(r.w), half(r.zeta)]) / scale)
            else:
                phi = factored.normal.vorticity.solve(half(r.w) / scale)
                zeta = None if r.zeta is None else factored.vorticity.solve(half(r.zeta) / scale)
            w = jnp.where(mean_mode[..., None], 0.0, factored.normal.complete(phi))
            zeta = None if zeta is None else whole(jnp.where(mean_mode[..., None], 0.0, zeta))
            # U and V: one batched solve of the same factors
            mean = factored.along.solve(r.mean / scale, jnp.asarray([u0, v0]), jnp.asarray([u1, v1]))
            # a scalar's plate values belong to its horizontal mean alone
            out = [whole(solver.solve(half(r.scalars[i]) / s_scales[i], jnp.where(mean_mode, values[i][0], 0.0),
                                      jnp.where(mean_mode, values[i][1], 0.0)))
                   for i, solver in enumerate(factored.scalars)]
            return State(whole(w), zeta, mean, jnp.stack(out) if out else r.scalars)

        return solve

    def mean_response(self, forcing: jnp.ndarray, dt: float | jnp.ndarray, tableau: Any,
                      factored: Factored | None = None) -> jnp.ndarray:
        """The mean flow (U, V) ``(2, N)`` that one step of ``dt`` (:meth:`step`) makes from rest under the constant
        explicit term ``forcing`` ``(2, N)`` on the mean flow alone, the plates at rest: the mean flow's two stage
        solves and nothing else (the other parts of the flow stay at rest), linear in ``forcing``; by ``factored``
        where given, as :meth:`step`. What a fixed-flux drive adds, times the pressure gradient, to hold its bulk
        velocity."""
        factored = self.factor(dt, tableau) if factored is None else factored
        scale = factored.gamma_dt * self.viscosity
        return tableau.response(forcing, lambda r: factored.along.solve(r / scale), dt).astype(forcing.dtype)

    def step(self, explicit: Callable[[State, jnp.ndarray], State], dt: float | jnp.ndarray, tableau: Any,
             factored: Factored | None = None) -> Callable[[State, jnp.ndarray], State]:
        """One step of the IMEX scheme ``tableau`` (its ``advance``: a tableau of :mod:`simulator.time.imex` or a
        multistep scheme of :mod:`simulator.time.multistep`, with the history the state carries), ``step(state, t)
        -> state``, with the explicit terms ``explicit(state, t)`` (a :class:`State` of h_w, h_zeta, h_U and h_s)
        and the solves of :meth:`solver` for ``dt`` (by ``factored``, :meth:`factor` of this ``dt`` and tableau,
        where given; a step of another gamma dt, a multistep scheme's start or changed dt, factors its own)."""
        advance = tableau.advance(self.mass, explicit, None if factored is None else self.solver(factored), dt,
                                  lambda gdt: self.solver(self.factor_for(gdt)))

        def step(state: State, t: jnp.ndarray) -> State:
            x, history = advance(replace(state, history=None), t, state.history)
            # the factorisations and the Chebyshev operators' numbers are float64 where x64 is on: a float32 run's
            # state stays float32
            return jax.tree.map(lambda x, like: x.astype(like.dtype), replace(x, history=history), state)

        return step


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Factored:
    """The factorisations of a flow's stage solves for one gamma dt (:meth:`NoSlipFlow.factor`): w's
    (:class:`~simulator.walls.wall_normal.WallNormal`), zeta's (None in a plane), the mean flow's and each
    scalar's Helmholtz problems, batched over the modes as the flow's ``kx``."""

    normal: WallNormal
    vorticity: Helmholtz | None
    along: Helmholtz
    scalars: tuple[Helmholtz, ...]
    gamma_dt: jnp.ndarray  # the tableau's diagonal times dt, which the factorisations are built for


def velocity(flow: NoSlipFlow, x: State) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """The coefficients of (u, v, w) of every mode, ``(..., N)`` each: u and v by continuity and zeta
    (:func:`simulator.walls.wall_normal.horizontal_velocity`), the mean flow at k = 0."""
    from simulator.walls.wall_normal import horizontal_velocity

    mean_mode = (flow.k2 == 0)[..., None]
    safe = jnp.where(mean_mode[..., 0], 1.0, jnp.asarray(flow.kx))
    zeta = jnp.zeros_like(x.w) if x.zeta is None else x.zeta
    u, v = horizontal_velocity(x.w, zeta, safe, jnp.where(mean_mode[..., 0], 0.0, jnp.asarray(flow.ky)),
                               flow.height, flow.basis)
    return jnp.where(mean_mode, x.mean[0], u), jnp.where(mean_mode, x.mean[1], v), x.w


def buoyancy(flow: NoSlipFlow, x: State, scalar: int = 0) -> State:
    """The explicit terms of the linearised Boussinesq equations about the conductive state b = 1 - z (free-fall
    units, the buoyancy the departure ``scalars[scalar]`` from it): h_w = -k^2 theta (the vertical buoyancy
    force's part in d/dt lap w), h_theta = w (the conductive gradient carried by w), nothing else."""
    h_s = jnp.zeros_like(x.scalars).at[scalar].set(x.w)
    zeta = None if x.zeta is None else jnp.zeros_like(x.zeta)
    return State(-flow.k2[..., None] * x.scalars[scalar], zeta, jnp.zeros_like(x.mean), h_s)
