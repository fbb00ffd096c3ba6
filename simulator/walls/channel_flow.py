"""The Navier-Stokes equations between no-slip plates in a plane (x, z): plane Couette and plane Poiseuille flow
stepped on the flow core of :mod:`simulator.walls.flow` (Kim, Moin & Moser's velocity-vorticity formulation, IMEX
RK222, banded solves), which this module gives its explicit terms: the advection and the drive.

Layout. The plane is periodic in x (length ``length``) and bounded in z by plates at z = 0 and z = 2h, h = 1
(the centre line of :mod:`simulator.walls.channel` is z = 1). A state is the core's :class:`~simulator.walls.flow.
State` of the ``nx // 2 + 1`` Fourier modes k_x = 2 pi m / Lx, m = 0..nx/2 (real FFT, coefficients of
exp(i k_x x) scaled by 1/nx), each a series of ``n`` Chebyshev coefficients: ``w`` and ``zeta`` ``(nx//2 + 1, n)``
(zeta zero in a plane), ``mean`` ``(2, n)`` the mean flow (U, V). Physical fields are ``(nx, n)``: x along the
first axis, z along the last on the ascending Gauss-Lobatto points.

The advection is the convective form H = -(u . grad) u, formed on a grid padded to 3/2 in both directions (x:
3 nx / 2 points; z: :func:`simulator.walls.chebyshev.padded_size`) so quadratic products are dealiased exactly, and
the Nyquist mode is kept zero; h_w = -d/dz (i k_x H_x) - k_x^2 H_z (the core's d/dt lap w), h_U = <H_x> + G.

Drives (:data:`simulator.walls.channel.DRIVES`): ``couette`` (plates at -U and +U, G = 0), ``pressure`` (a fixed
G = -dP/dx), ``flux`` (the bulk velocity held: after each step the mean flow gains G R, R the step's response to
a unit pressure gradient from rest, and G is the one value that restores the bulk velocity exactly; this
correction is the usual one of channel codes, of the scheme's order in time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from simulator.walls import chebyshev
from simulator.walls.flow import NoSlipFlow, Plates, State, velocity

#: the half gap; the plates are at z = 0 and z = 2 H_HALF
H_HALF = 1.0


@dataclass(frozen=True)
class PlaneChannel:
    """A channel in a plane: ``nx`` points along x of period ``length``, ``n`` Chebyshev points across; Re, the
    drive, the plates' speed U (Couette), the pressure gradient G (``pressure``) or the bulk velocity (``flux``)."""

    nx: int
    n: int
    length: float
    reynolds: float
    drive: str = "pressure"
    plate_velocity: float = 1.0
    gradient: float = 0.0
    flux: float = 2.0 / 3.0

    @property
    def flow(self) -> NoSlipFlow:
        """The core's linear part: one mode per k_x >= 0, k_y = 0; plates at -+U for Couette flow."""
        kx = 2.0 * np.pi / self.length * np.arange(self.nx // 2 + 1)
        speed = self.plate_velocity if self.drive == "couette" else 0.0
        return NoSlipFlow(jnp.asarray(kx), jnp.zeros(kx.size), self.n, 2.0 * H_HALF, 1.0 / self.reynolds,
                          plates=Plates(velocity=((-speed, 0.0), (speed, 0.0))))

    @property
    def z(self) -> np.ndarray:
        """The Gauss-Lobatto points from plate to plate, shape ``(n,)``."""
        return chebyshev.points(self.n, (0.0, 2.0 * H_HALF))


def from_physical(channel: PlaneChannel, u: np.ndarray, w: np.ndarray) -> State:
    """The state of the physical velocity (u, w), each ``(nx, n)``: w's modes, and u's x-mean as the mean flow
    (u's other modes follow from w by continuity, as a divergence-free field's do)."""
    modes = chebyshev.forward(jnp.fft.rfft(jnp.asarray(w), axis=0) / channel.nx)
    mean = chebyshev.forward(jnp.stack([jnp.asarray(u).mean(0), jnp.zeros(channel.n)]))
    return State(modes.at[-1].set(0.0) if channel.nx % 2 == 0 else modes, jnp.zeros_like(modes), mean,
                 jnp.zeros((0, *modes.shape), modes.dtype))


def to_physical(channel: PlaneChannel, state: State) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The physical velocity (u, w) of ``state``, each ``(nx, n)``."""
    u, _, w = velocity(channel.flow, state)
    return tuple(jnp.fft.irfft(chebyshev.backward(c) * channel.nx, n=channel.nx, axis=0) for c in (u, w))


def _padded(channel: PlaneChannel, coefficients: jnp.ndarray) -> jnp.ndarray:
    """Values on the 3/2-padded grid ``(3 nx / 2, padded_size(n))`` of modes ``(nx//2 + 1, n)``."""
    nxp, nzp = 3 * channel.nx // 2, chebyshev.padded_size(channel.n)
    columns = chebyshev.backward(chebyshev.pad(coefficients, nzp))
    columns = jnp.concatenate([columns, jnp.zeros((nxp // 2 + 1 - columns.shape[0], nzp), columns.dtype)])
    return jnp.fft.irfft(columns * nxp, n=nxp, axis=0)


def _truncated(channel: PlaneChannel, values: jnp.ndarray) -> jnp.ndarray:
    """The modes ``(nx//2 + 1, n)`` of padded-grid values, the Nyquist mode zero."""
    modes = chebyshev.forward(jnp.fft.rfft(values, axis=0)[: channel.nx // 2 + 1] / values.shape[0])
    return modes[:, : channel.n].at[channel.nx // 2].set(0.0)


def advection(channel: PlaneChannel, state: State) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The modes of H = -(u . grad) u, (H_x, H_z), each ``(nx//2 + 1, n)``, dealiased by 3/2 padding."""
    flow = channel.flow
    u, _, w = velocity(flow, state)
    ikx = 1j * flow.kx[:, None]
    height = 2.0 * H_HALF
    grids = [_padded(channel, c) for c in (u, w, ikx * u, chebyshev.derivative(u, height), ikx * w,
                                           chebyshev.derivative(w, height))]
    pu, pw, ux, uz, wx, wz = grids
    return _truncated(channel, -(pu * ux + pw * uz)), _truncated(channel, -(pu * wx + pw * wz))


def _drive_series(channel: PlaneChannel, gradient: float) -> jnp.ndarray:
    """The constant G as the mean flow's explicit term ``(2, n)``."""
    return jnp.zeros((2, channel.n)).at[0, 0].set(gradient)


def explicit_terms(channel: PlaneChannel, gradient: float) -> Callable[[State, jnp.ndarray], State]:
    """The core's explicit terms: the advection and the pressure gradient ``gradient`` on the mean flow."""
    kx = channel.flow.kx[:, None]

    def explicit(state: State, t: jnp.ndarray) -> State:
        hx, hz = advection(channel, state)
        h_w = -chebyshev.derivative(1j * kx * hx, 2.0 * H_HALF) - kx**2 * hz
        mean = jnp.stack([hx[0].real, jnp.zeros(channel.n)]) + _drive_series(channel, gradient)
        return State(h_w, jnp.zeros_like(state.zeta), mean.astype(state.mean.dtype), state.scalars)

    return explicit


def bulk_velocity(mean: jnp.ndarray) -> jnp.ndarray:
    """U_b = (1 / 2h) int U dz of the mean flow's coefficients ``(2, n)`` (the integrals of the T_k)."""
    return 0.5 * mean[0] @ chebyshev.integrals(mean.shape[-1])


def stepper(channel: PlaneChannel, dt: float) -> Callable[[State, jnp.ndarray], tuple[State, jnp.ndarray]]:
    """One step ``step(state, t) -> (state, G)``, G the pressure gradient that drove it (fixed, or under a
    fixed flux the one that held the bulk velocity)."""
    flow = channel.flow
    if channel.drive != "flux":
        gradient = channel.gradient if channel.drive == "pressure" else 0.0
        step = flow.step(explicit_terms(channel, gradient), dt)
        return jax.jit(lambda state, t: (step(state, t), jnp.asarray(gradient)))
    step = flow.step(explicit_terms(channel, 0.0), dt)
    resting = replace(flow, plates=Plates())
    unit = resting.step(lambda state, t: replace(jax.tree.map(jnp.zeros_like, state),
                                                 mean=_drive_series(channel, 1.0).astype(state.mean.dtype)), dt)

    @jax.jit
    def flux_step(state: State, t: jnp.ndarray) -> tuple[State, jnp.ndarray]:
        moved = step(state, t)
        response = unit(jax.tree.map(jnp.zeros_like, state), t).mean
        gradient = (channel.flux - bulk_velocity(moved.mean)) / bulk_velocity(response)
        return replace(moved, mean=moved.mean + gradient * response), gradient

    return flux_step
