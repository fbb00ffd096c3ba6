"""The wall-normal velocity between no-slip plates, the velocity-vorticity formulation of Kim, Moin & Moser (1987):
the pressure eliminated, w is stepped by its fourth-order equation d/dt lap w = nu lap^2 w + h_w, and the
horizontal velocity follows from continuity and the wall-normal vorticity, so the velocity is divergence-free to
round-off everywhere, plates included, and no-slip (w = dw/dz = 0) holds to round-off at every stage.

An implicit stage's problem, per horizontal mode of k^2 = k_x^2 + k_y^2, is (alpha - lap) lap w = g with lap =
d^2/dz^2 - k^2 and w = dw/dz = 0 at both plates. It is two Dirichlet Helmholtz solves (:mod:`simulator.walls
.helmholtz`): (alpha + k^2 - d^2/dz^2) phi = g, then (k^2 - d^2/dz^2) w = -phi, w = 0 at the plates, whose missing
conditions phi(a), phi(b) are found by the influence matrix (Kleiser & Schumann 1980; Canuto et al. 2007, sec.
3.4): the particular solution, plus the two homogeneous ones of phi = 1 at one plate, combined so that dw/dz = 0 at
both. Per mode it stores the two Helmholtz factorisations, the two homogeneous solutions (N + 1 coefficients each)
and the 2 x 2 influence matrix: O(N).

A free-slip plate (w = d^2w/dz^2 = 0: no stress) needs no influence function: where w = 0, phi = lap w = d^2w/dz^2,
so its condition is phi = 0 there, the first solve's own. Each no-slip plate adds one homogeneous solution and one
row and column of the influence matrix: 2 x 2 between no-slip plates, 1 x 1 below a free surface, none between
free-slip plates.

Layout: coefficients ``(..., N + 1)`` of the run's basis (:mod:`simulator.walls.bases`), ``k2`` and ``alpha`` of
the leading shape; the horizontal axes are the leading ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from simulator.walls.bases import CHEBYSHEV, Basis
from simulator.walls.eigen import NO_SLIP, WALLS
from simulator.walls.helmholtz import DIRICHLET, Helmholtz


def _wall_slopes(coefficients: jnp.ndarray, length: float, plates: tuple[int, ...], basis: Basis) -> jnp.ndarray:
    """dw/dz at the ``plates`` (0 the lower, 1 the upper) of a series of ``basis``, stacked on a last axis."""
    both = basis.boundary_values(basis.derivative(coefficients, length))
    return jnp.stack([both[p] for p in plates], -1)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class WallNormal:
    """The factored problems (alpha - lap) lap w = g, w = 0 at the plates and dw/dz = 0 (no-slip) or d^2w/dz^2 = 0
    (free-slip) at each, one per mode (``k2`` and ``alpha`` broadcast to the modes' shape): :meth:`build` once per
    time step size, :meth:`solve` per stage."""

    vorticity: Helmholtz  # (alpha + k^2 - d^2/dz^2) phi = g
    velocity: Helmholtz  # (k^2 - d^2/dz^2) w = -phi
    homogeneous: jnp.ndarray  # (..., m, N + 1): w of phi = 1 at each no-slip plate (m of them), lower first
    influence: jnp.ndarray  # (..., m, m): [plate, solution] dw/dz of the homogeneous solutions
    length: float = field(metadata={"static": True})
    walls: tuple[str, str] = field(default=(NO_SLIP, NO_SLIP), metadata={"static": True})
    basis: Basis = field(default=CHEBYSHEV, metadata={"static": True})

    @property
    def clamped(self) -> tuple[int, ...]:
        """The no-slip plates (0 the lower, 1 the upper), whose slope the influence matrix sets to zero."""
        return tuple(i for i, wall in enumerate(self.walls) if wall == NO_SLIP)

    @classmethod
    def build(cls, alpha: jnp.ndarray | float, k2: jnp.ndarray | float, n: int, length: float = 2.0,
              walls: tuple[str, str] = (NO_SLIP, NO_SLIP), basis: Basis = CHEBYSHEV) -> WallNormal:
        """Factor the problems for ``n`` coefficients of ``basis`` (alpha > 0; k2 >= 0), the lower and upper plates
        ``walls`` (each no-slip or free-slip)."""
        if len(walls) != 2 or any(w not in WALLS for w in walls):
            raise ValueError(f"walls {walls!r}: two of {', '.join(WALLS)}")
        alpha, k2 = jnp.broadcast_arrays(jnp.asarray(alpha, float), jnp.asarray(k2, float))
        vorticity = basis.helmholtz.build(alpha + k2, n, DIRICHLET, length)
        velocity = basis.helmholtz.build(k2, n, DIRICHLET, length)
        one = jnp.ones(alpha.shape)
        clamped = tuple(i for i, wall in enumerate(walls) if wall == NO_SLIP)
        if not clamped:  # free-slip plates: no influence function
            return cls(vorticity, velocity, jnp.zeros((*alpha.shape, 0, n)), jnp.zeros((*alpha.shape, 0, 0)), length,
                       tuple(walls), basis)
        # w of phi: (k^2 - d^2/dz^2) w = -phi, w = 0 at the plates. phi is a boundary layer of height 1 and w of the
        # order 1/alpha, so solving for w directly cancels order-one coefficients (1e-10 of w lost at alpha ~ 1e6).
        # Since (alpha + k^2 - d^2/dz^2) phi = 0, w = phi/alpha + chi with chi harmonic, (k^2 - d^2/dz^2) chi = 0,
        # and chi = -phi/alpha at the plates: the same discrete solution (both problems' residuals lie in the span
        # of T_{N+1}'' and T_{N+2}'', helmholtz's tau residual), without the cancellation.
        # each no-slip plate's problem one entry of a leading axis: one batched solve of each problem for all of them
        lower, upper = (jnp.stack([one if p == i else jnp.zeros_like(one) for p in clamped]) for i in (0, 1))
        phi = vorticity.solve(jnp.zeros((len(clamped), *alpha.shape, n)), lower, upper)
        homogeneous = jnp.moveaxis(phi / alpha[..., None] + velocity.solve(jnp.zeros_like(phi), -lower / alpha,
                                                                           -upper / alpha), 0, -2)
        influence = jnp.swapaxes(_wall_slopes(homogeneous, length, clamped, basis), -1, -2)
        return cls(vorticity, velocity, homogeneous, influence, length, tuple(walls), basis)

    def solve(self, g: jnp.ndarray) -> jnp.ndarray:
        """The coefficients of w for right-hand sides ``g[..., N + 1]``."""
        return self.complete(self.vorticity.solve(g))

    def complete(self, phi: jnp.ndarray) -> jnp.ndarray:
        """w from the first problem's particular solution ``phi = vorticity.solve(g)`` (``(..., N + 1)``): the
        second solve and the influence matrix's correction (a caller batching the first with other problems of the
        same factors, zeta's, solves it itself)."""
        w = self.velocity.solve(-phi)
        if not self.clamped:  # free-slip plates: phi = 0 there was the first solve's condition
            return w
        slopes = _wall_slopes(w, self.length, self.clamped, self.basis)
        weights = jnp.linalg.solve(self.influence, -slopes[..., None])[..., 0]
        return w + jnp.einsum("...s,...sk->...k", weights, self.homogeneous)


def laplacian(w: jnp.ndarray, k2: jnp.ndarray | float, length: float = 2.0, basis: Basis = CHEBYSHEV) -> jnp.ndarray:
    """The coefficients of lap w = d^2 w/dz^2 - k^2 w (same shape as ``w``, a series of ``basis``; ``k2`` of its
    leading shape)."""
    return basis.derivative(w, length, 2) - jnp.asarray(k2)[..., None] * w


def horizontal_velocity(w: jnp.ndarray, zeta: jnp.ndarray, kx: jnp.ndarray, ky: jnp.ndarray,
                        length: float = 2.0, basis: Basis = CHEBYSHEV) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The coefficients of u and v of a mode (k_x, k_y) != 0 from w and the wall-normal vorticity zeta =
    i k_x v - i k_y u: u = (i k_x dw/dz + i k_y zeta)/k^2, v = (i k_y dw/dz - i k_x zeta)/k^2, so that i k_x u +
    i k_y v + dw/dz = 0 exactly (the mean flow, k = 0, is stepped on its own); series of ``basis``."""
    kx, ky = jnp.asarray(kx)[..., None], jnp.asarray(ky)[..., None]
    slope = basis.derivative(w, length)
    k2 = kx**2 + ky**2
    return 1j * (kx * slope + ky * zeta) / k2, 1j * (ky * slope - kx * zeta) / k2
