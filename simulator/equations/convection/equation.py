"""Rayleigh-Benard convection in a box between free-slip plates: the implementation, the box's case of the free-slip
skeleton :mod:`simulator.equations.freeslip_flow` (the linear part, fields, diagnostics, profiles, spectra and
initial conditions both geometries share), in velocity form.

The state is the walled spectra (:mod:`simulator.fft.walls`) of (u, v, w, theta), ``(4, Nx, Ny, Nz)``: u and v
cosine series in z, w and theta sine series, on the entries n = 0 .. Nz - 1 of k_z = n pi / H. The advection is
-d_j(u_i u_j) in conservative form, its products formed in real space (u u, u v, v v, w w cosine series; u w, v w,
u theta, v theta sine series; w theta a cosine one) and dealiased by the 2/3 rule of the periodic extension; the
z-derivative of a cosine series is -k_z times the sine series' entries, of a sine series +k_z times the cosine's.
The pressure projects (f_x, f_y, f_z) on divergence-free fields mode by mode: D = i k_x f_x + i k_y f_y + k_z f_z (a
cosine series), then f_x + i k_x D/k^2, f_y + i k_y D/k^2, f_z - k_z D/k^2, whose divergence is 0 exactly; the
horizontally uniform w (k_x = k_y = 0) is zero, as impermeable plates require. The buoyancy theta z_hat and w in the
temperature equation are stepped with the advection; viscosity and diffusivity are the diagonal linear part.

Passive scalars (``physics.scalars``, :mod:`simulator.equations.wall_scalars`) held at fixed values s0 and s1 at the
plates follow the state's four entries, each its departure s' from its linear profile s0 + (s1 - s0) z / H, a sine
series stepped as theta is: d s'/dt = -d_j(u_j s') - w (s1 - s0) / H + kappa_i lap s'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import Params
from simulator.equations.convection import INFO
from simulator.equations.freeslip_flow import BUILDERS, FreeSlipConvection
from simulator.equations.plates import growth_rate
from simulator.equations.walled import free_fall

#: the parity of each state entry (u, v, w, theta)
PARITY = ("even", "even", "odd", "odd")


@final
class Convection(FreeSlipConvection):
    """Free-slip Rayleigh-Benard convection in a walled box (single, slab or pencil backend), on the free-slip
    skeleton (:class:`simulator.equations.freeslip_flow.FreeSlipConvection`): its flow the velocity."""

    info = INFO
    flow_entries: ClassVar[int] = 3
    axes: ClassVar[tuple[int, ...]] = (0, 1, 2)

    def project(self, f: Sequence[jax.Array]) -> jax.Array:
        """The divergence-free part of a walled vector (x, y cosine series, z sine series), ``(3, Nx, Ny, Nz)``."""
        kx, ky, kz = self.ops.k
        d = (1j * kx * f[0] + 1j * ky * f[1] + kz * f[2]) * self.ops.inv_k2
        return jnp.stack([f[0] + 1j * kx * d, f[1] + 1j * ky * d, f[2] - kz * d])

    def divergence(self, state: jax.Array) -> jax.Array:
        """div u as a cosine series' entries."""
        kx, ky, kz = self.ops.k
        return 1j * kx * state[0] + 1j * ky * state[1] + kz * state[2]

    def real(self, state: jax.Array) -> list[jax.Array]:
        """(u, v, w, theta, s'_1 .. s'_S) on the grid."""
        even = self.fft.inverse_walls(state[:2], "even")
        odd = self.fft.inverse_walls(state[2:], "odd")
        return [even[0], even[1], *odd]

    def on_grid(self, state: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """(u, v, w) and (theta, s'_1 .. s'_S) on the grid."""
        u, v, w, *carried = self.real(state)
        return [u, v, w], jnp.stack(carried)

    def w_hat(self, state: jax.Array) -> jax.Array:
        return state[2]

    def power(self, state: jax.Array) -> tuple[jax.Array, jax.Array]:
        """|u_hat|^2 and k^2 |u_hat|^2."""
        power = jnp.sum(jnp.abs(state[:3]) ** 2, axis=0)
        return power, self.ops.k2 * power

    def flow_diagnostics(self, state: jax.Array, velocity: Sequence[jax.Array]) -> dict[str, jax.Array]:
        """max |div u| on the grid: round-off."""
        return {"divergence": jnp.max(jnp.abs(self.fft.inverse_walls(self.divergence(state), "even")))}

    def at_rest(self) -> dict[str, jax.Array]:
        return {"velocity": jnp.zeros((3, *self.fft.shape), self.dtype)}

    def growth_rate(self, a: float, n: int, params: Params) -> jax.Array:
        """The closed form without rotation; rotating, the cubic's largest root, on the host at the run's (traced)
        Rayleigh and Prandtl numbers."""
        taylor = self.physics.taylor
        if not taylor:
            return super().growth_rate(a, n, params)
        rate = jax.ShapeDtypeStruct((), self.dtype)
        return jax.pure_callback(lambda ra, pr: np.asarray(growth_rate(float(ra), float(pr), float(a), n, taylor),
                                                           rate.dtype), rate, params["rayleigh"], params["prandtl"])

    def mode_flow(self, a: float, q: float, x: jax.Array, z: jax.Array, amplitude: float, sigma: jax.Array,
                  params: Params) -> dict[str, jax.Array]:
        """w = (sigma + kappa K^2) theta, u from continuity and, rotating, the vertical vorticity's v
        (:class:`..BoxMode`)."""
        nu, kappa = free_fall(params)
        k2 = a**2 + q**2
        growth = (sigma + kappa * k2) * amplitude
        w = jnp.broadcast_to(growth * jnp.cos(a * x) * jnp.sin(q * z), self.fft.shape)
        u = jnp.broadcast_to(-(q / a) * growth * jnp.sin(a * x) * jnp.cos(q * z), self.fft.shape)
        swirl = jnp.sqrt(self.physics.taylor) * nu * q * growth / (a * (sigma + nu * k2))  # the vertical vorticity's v
        v = jnp.broadcast_to(swirl * jnp.sin(a * x) * jnp.cos(q * z), self.fft.shape)
        return {"velocity": jnp.stack([u, v, w])}

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """-d_j(u_i u_j) + theta z_hat projected, -d_j(u_j theta) + w and each scalar's -d_j(u_j s') - w (s1 - s0) / H,
        dealiased."""
        ops = self.ops
        kx, ky, kz = ops.k
        u, v, w, *carried = self.real(state)  # theta and the scalars
        n = len(carried)
        cos = self.fft.forward_walls(jnp.stack([u * u, u * v, v * v, w * w, *(w * f for f in carried)]), "even")
        sin = self.fft.forward_walls(jnp.stack([u * w, v * w, *(u * f for f in carried), *(v * f for f in carried)]),
                                     "odd")
        uu, uv, vv, ww, wt = cos[0], cos[1], cos[2], cos[3], cos[4:]
        uw, vw, ut, vt = sin[0], sin[1], sin[2:2 + n], sin[2 + n:]
        fx = -(1j * kx * uu + 1j * ky * uv + kz * uw)
        fy = -(1j * kx * uv + 1j * ky * vv + kz * vw)
        if self.physics.taylor:  # -f z_hat x u = (f v, -f u, 0): u and v are both cosine series
            f = jnp.sqrt(self.physics.taylor) * free_fall(params)[0]
            fx, fy = fx + f * state[1], fy - f * state[0]
        fz = -(1j * kx * uw + 1j * ky * vw - kz * ww) + state[3]
        # w carries the conductive profile 1 - z of the temperature and each scalar's linear one
        slopes = jnp.asarray([1.0, *self.profile_slopes()], self.dtype).reshape(-1, 1, 1, 1)
        ft = -(1j * kx * ut + 1j * ky * vt - kz * wt) + slopes * state[2]
        return ops.dealias * jnp.concatenate([self.project([fx, fy, fz]), ft])

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The dealiased, projected walled spectra of ``velocity`` ``(3, Nx, Ny, Nz)``, ``theta`` and each scalar less
        its linear profile (``scalar`` ``(S, Nx, Ny, Nz)``)."""
        velocity, theta = fields["velocity"].astype(self.dtype), fields["theta"].astype(self.dtype)
        even = self.fft.forward_walls(velocity[:2], "even")
        odd = jnp.stack([velocity[2], theta])
        if self.physics.scalars:
            odd = jnp.concatenate([odd, fields["scalar"].astype(self.dtype) - self.lifts()])
        odd = self.fft.forward_walls(odd, "odd")
        u = self.project([even[0], even[1], odd[0]])
        return self.ops.dealias * jnp.concatenate([u, odd[1:]])

    def wall_series(self, name: str) -> tuple[str, ...]:
        """u and v are cosine series, w and theta sine series (:data:`PARITY`), and so each scalar's departure from
        its linear profile."""
        if name == "scalar":
            return ("odd",) * len(self.physics.scalars)
        return PARITY[:3] if name == "velocity" else PARITY[3:]


Convection.builders = BUILDERS
