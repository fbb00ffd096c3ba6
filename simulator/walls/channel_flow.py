"""The Navier-Stokes equations between no-slip plates, in a plane (x, z) or a box (x, y, z): plane Couette and plane
Poiseuille flow stepped on the flow core of :mod:`simulator.walls.flow` (Kim, Moin & Moser's velocity-vorticity
formulation, IMEX RK222, banded solves), which this module gives its explicit terms: the advection and the drive.

Layout. x (streamwise, period ``length``) and a box's y (spanwise, period ``width``) are periodic; z is bounded by
plates at z = 0 and z = 2h, h = 1 (the centre line of :mod:`simulator.walls.channel` is z = 1). A state is the
core's :class:`~simulator.walls.flow.State` of the Fourier modes exp(i (k_x x + k_y y)), scaled by 1 / (nx ny):
k_x = 2 pi m / Lx for m = 0..nx/2 (a real FFT along x) and, in a box, k_y in numpy's FFT order along y; each mode
a series of ``n`` Chebyshev coefficients: ``w`` and ``zeta`` ``(nx//2 + 1[, ny], n)`` (zeta zero in a plane),
``mean`` ``(2, n)`` the mean flow (U, V). Physical fields are ``(nx[, ny], n)``: x first, z last on the ascending
Gauss-Lobatto points; velocities list their components in the axes' order, (u, w) or (u, v, w).

The advection is the convective form H = -(u . grad) u, formed on a grid padded to 3/2 in every direction (x and
y: 3/2 as many points; z: :func:`simulator.walls.chebyshev.padded_size`) so quadratic products are dealiased
exactly, and the Nyquist modes are kept zero; h_w = -d/dz (i k_x H_x + i k_y H_y) - k^2 H_z (the core's d/dt lap
w), h_zeta = i k_x H_y - i k_y H_x, and the mean flow's h_U = <H_x> + G, h_V = <H_y>.

Drives (:data:`simulator.walls.channel.DRIVES`): ``couette`` (plates at -U and +U along x, G = 0), ``pressure`` (a
fixed G = -dP/dx), ``flux`` (the bulk velocity held: after each step the mean flow gains G R, R the step's response
to a unit pressure gradient from rest, and G is the one value that restores the bulk velocity exactly; this
correction is the usual one of channel codes, of the scheme's order in time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from simulator.walls import chebyshev
from simulator.walls.flow import NoSlipFlow, Plates, State, velocity

#: the half gap; the plates are at z = 0 and z = 2 H_HALF
H_HALF = 1.0


@dataclass(frozen=True)
class Channel:
    """A channel: ``nx`` points along x of period ``length``, in a box also ``ny`` along y of period ``width``
    (even counts), ``n`` Chebyshev points across; Re, the drive, the plates' speed U (Couette), the pressure
    gradient G (``pressure``) or the bulk velocity (``flux``)."""

    nx: int
    n: int
    length: float
    reynolds: float
    drive: str = "pressure"
    plate_velocity: float = 1.0
    gradient: float = 0.0
    flux: float = 2.0 / 3.0
    ny: int | None = None
    width: float = 2.0 * np.pi

    @property
    def box(self) -> bool:
        """Whether the channel is a box (x, y, z), not a plane (x, z)."""
        return self.ny is not None

    @property
    def flow(self) -> NoSlipFlow:
        """The core's linear part, one mode per (k_x >= 0[, k_y]); plates at -+U along x for Couette flow."""
        kx = 2.0 * np.pi / self.length * np.arange(self.nx // 2 + 1)
        ky = np.zeros_like(kx)
        if self.box:
            kx, ky = np.meshgrid(kx, 2.0 * np.pi / self.width * np.fft.fftfreq(self.ny, 1.0 / self.ny), indexing="ij")
        speed = self.plate_velocity if self.drive == "couette" else 0.0
        return NoSlipFlow(jnp.asarray(kx), jnp.asarray(ky), self.n, 2.0 * H_HALF, 1.0 / self.reynolds,
                          plates=Plates(velocity=((-speed, 0.0), (speed, 0.0))))

    @property
    def z(self) -> np.ndarray:
        """The Gauss-Lobatto points from plate to plate, shape ``(n,)``."""
        return chebyshev.points(self.n, (0.0, 2.0 * H_HALF))

    @property
    def periodic(self) -> tuple[int, ...]:
        """The periodic axes' point counts."""
        return (self.nx, self.ny) if self.box else (self.nx,)


def _to_modes(channel: Channel, values: jnp.ndarray) -> jnp.ndarray:
    """The modes ``(nx//2 + 1[, ny], n)`` of physical values ``(nx[, ny], n)``."""
    modes = jnp.fft.rfft(jnp.asarray(values), axis=0) / channel.nx
    if channel.box:
        modes = jnp.fft.fft(modes, axis=1) / channel.ny
    return chebyshev.forward(modes)


def _to_values(channel: Channel, coefficients: jnp.ndarray) -> jnp.ndarray:
    """Physical values ``(nx[, ny], n)`` of modes ``(nx//2 + 1[, ny], n)``."""
    columns = chebyshev.backward(coefficients)
    if channel.box:
        columns = jnp.fft.ifft(columns * channel.ny, axis=1)
    return jnp.fft.irfft(columns * channel.nx, n=channel.nx, axis=0)


def from_physical(channel: Channel, components: Sequence[np.ndarray]) -> State:
    """The state of a divergence-free physical velocity, (u, w) or (u, v, w), each ``(nx[, ny], n)``: w's modes,
    the wall-normal vorticity i k_x v - i k_y u, and the periodic mean of u and v as the mean flow (u's and v's
    other modes follow from w and zeta by continuity)."""
    flow = channel.flow
    u, w = _to_modes(channel, components[0]), _to_modes(channel, components[-1])
    v = _to_modes(channel, components[1]) if channel.box else jnp.zeros_like(u)
    zeta = 1j * flow.kx[..., None] * v - 1j * flow.ky[..., None] * u
    mean = jnp.stack([u[(0,) * len(channel.periodic)].real, v[(0,) * len(channel.periodic)].real])
    w, zeta = _nyquist_zero(channel, w), _nyquist_zero(channel, zeta)
    return State(w, zeta, mean, jnp.zeros((0, *w.shape), w.dtype))


def to_physical(channel: Channel, state: State) -> tuple[jnp.ndarray, ...]:
    """The physical velocity of ``state``, (u, w) or (u, v, w), each ``(nx[, ny], n)``."""
    u, v, w = velocity(channel.flow, state)
    return tuple(_to_values(channel, c) for c in ((u, v, w) if channel.box else (u, w)))


def _nyquist_zero(channel: Channel, modes: jnp.ndarray) -> jnp.ndarray:
    """``modes`` with the Nyquist modes of x (and y) zero."""
    modes = modes.at[channel.nx // 2].set(0.0)
    return modes.at[:, channel.ny // 2].set(0.0) if channel.box else modes


def _padded(channel: Channel, coefficients: jnp.ndarray) -> jnp.ndarray:
    """Values on the 3/2-padded grid ``(3 nx / 2[, 3 ny / 2], padded_size(n))`` of modes ``(nx//2 + 1[, ny], n)``
    (Nyquist modes zero)."""
    nzp = chebyshev.padded_size(channel.n)
    columns = chebyshev.backward(chebyshev.pad(coefficients, nzp))
    if channel.box:
        half, nyp = channel.ny // 2, 3 * channel.ny // 2
        gap = jnp.zeros((columns.shape[0], nyp - channel.ny + 1, nzp), columns.dtype)
        columns = jnp.fft.ifft(jnp.concatenate([columns[:, :half], gap, columns[:, half + 1:]], 1) * nyp, axis=1)
    nxp = 3 * channel.nx // 2
    columns = jnp.concatenate([columns, jnp.zeros((nxp // 2 + 1 - columns.shape[0], *columns.shape[1:]),
                                                  columns.dtype)])
    return jnp.fft.irfft(columns * nxp, n=nxp, axis=0)


def _truncated(channel: Channel, values: jnp.ndarray) -> jnp.ndarray:
    """The modes ``(nx//2 + 1[, ny], n)`` of padded-grid values, the Nyquist modes zero."""
    modes = jnp.fft.rfft(values, axis=0)[: channel.nx // 2 + 1] / values.shape[0]
    if channel.box:
        half, nyp = channel.ny // 2, values.shape[1]
        full = jnp.fft.fft(modes, axis=1) / nyp
        modes = jnp.concatenate([full[:, :half + 1], full[:, nyp - half + 1:]], 1)
    return _nyquist_zero(channel, chebyshev.forward(modes)[..., : channel.n])


def advection(channel: Channel, state: State) -> tuple[jnp.ndarray, ...]:
    """The modes of H = -(u . grad) u, (H_x, H_z) or (H_x, H_y, H_z), each of the modes' shape, dealiased by 3/2
    padding."""
    flow = channel.flow
    u, v, w = velocity(flow, state)
    components = (u, v, w) if channel.box else (u, w)
    slopes = [lambda c: 1j * flow.kx[..., None] * c]
    if channel.box:
        slopes.append(lambda c: 1j * flow.ky[..., None] * c)
    slopes.append(lambda c: chebyshev.derivative(c, 2.0 * H_HALF))
    grid = [_padded(channel, c) for c in components]
    return tuple(_truncated(channel, -sum(grid[j] * _padded(channel, slope(c)) for j, slope in enumerate(slopes)))
                 for c in components)


def _drive_series(channel: Channel, gradient: float) -> jnp.ndarray:
    """The constant G as the mean flow's explicit term ``(2, n)``."""
    return jnp.zeros((2, channel.n)).at[0, 0].set(gradient)


def explicit_terms(channel: Channel, gradient: float) -> Callable[[State, jnp.ndarray], State]:
    """The core's explicit terms: the advection and the pressure gradient ``gradient`` on the mean flow."""
    flow = channel.flow
    kx, ky, mean_mode = flow.kx[..., None], flow.ky[..., None], (0,) * len(channel.periodic)

    def explicit(state: State, t: jnp.ndarray) -> State:
        h = advection(channel, state)
        hx, hz = h[0], h[-1]
        hy = h[1] if channel.box else jnp.zeros_like(hx)
        h_w = -chebyshev.derivative(1j * kx * hx + 1j * ky * hy, 2.0 * H_HALF) - (kx**2 + ky**2) * hz
        mean = jnp.stack([hx[mean_mode].real, hy[mean_mode].real]) + _drive_series(channel, gradient)
        return State(h_w, 1j * kx * hy - 1j * ky * hx, mean.astype(state.mean.dtype), state.scalars)

    return explicit


def bulk_velocity(mean: jnp.ndarray) -> jnp.ndarray:
    """U_b = (1 / 2h) int U dz of the mean flow's coefficients ``(2, n)`` (the integrals of the T_k)."""
    return 0.5 * mean[0] @ chebyshev.integrals(mean.shape[-1])


def stepper(channel: Channel, dt: float) -> Callable[[State, jnp.ndarray], tuple[State, jnp.ndarray]]:
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
