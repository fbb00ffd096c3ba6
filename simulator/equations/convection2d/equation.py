"""Rayleigh-Benard convection between free-slip plates in a plane: the implementation, the plane's case of the
free-slip skeleton :mod:`simulator.equations.freeslip_flow` (the linear part, fields, diagnostics, profiles, spectra
and initial conditions both geometries share), in vorticity form (as FluidSim's ns2d).

    d omega/dt = -(i k_x F_s[u omega] - k_z F_c[w omega]) + i k_x theta_hat + L_omega omega,   L_omega = -nu k^2
    d theta/dt = -(i k_x F_s[u theta] - k_z F_c[w theta]) + w_hat + L_theta theta,             L_theta = -kappa k^2

on the walled spectra of :mod:`simulator.fft.walls` (``F_s``: the sine series' transform, ``F_c``: the cosine's; k_z =
n pi / H on the entries n = 0 .. Nz - 1 of both): psi_hat = omega_hat / k^2, u_hat = k_z psi_hat (a cosine series),
w_hat = -i k_x psi_hat (a sine series); the z-derivative of the cosine series w omega is the sine series -k_z
F_c[w omega]. The products are formed in real space in conservative form and dealiased by the 2/3 rule of the
periodic extension (|m_x| < Nx/3, n < 2 Nz/3: a product of two kept modes aliases, on the grid of cell centres, from
mode n onto 2 Nz - n, outside the kept ones). The buoyancy coupling is stepped with the nonlinear terms, so the linear
part is the diagonal viscosity and diffusivity, integrated exactly by the integrating-factor schemes (as
:mod:`simulator.equations.boussinesq2d`, which this equation is modelled on).

Passive scalars (``physics.scalars``, :mod:`simulator.equations.wall_scalars`) are held at fixed values s0 and s1 at
the plates: each is its linear profile L = s0 + (s1 - s0) z / H plus a sine series s', stepped as theta is,
d s'/dt = -div(u s') - w (s1 - s0) / H + kappa_i lap s'.

Arrays: the plane runs as the box ``(1, Nx, Nz)``; the state is the walled spectra of (omega, theta, s'_1 .. s'_S),
``(2 + S, 1, Nx, Nz)`` complex, all sine series; real fields are ``(1, Nx, Nz)`` on the points x_i = i Lx / Nx,
z_j = (j + 1/2) / Nz.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, final

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.convection2d import INFO
from simulator.equations.freeslip_flow import BUILDERS, FreeSlipConvection
from simulator.equations.walled import free_fall


@final
class Convection2D(FreeSlipConvection):
    """Free-slip Rayleigh-Benard convection on a walled plane (slab or single backend), on the free-slip skeleton
    (:class:`simulator.equations.freeslip_flow.FreeSlipConvection`): its flow the vorticity."""

    info = INFO
    flow_entries: ClassVar[int] = 1
    axes: ClassVar[tuple[int, ...]] = (1, 2)

    def velocity_hat(self, omega_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(u_hat, w_hat): the cosine series k_z psi_hat and the sine series -i k_x psi_hat, psi_hat = omega/k^2."""
        psi = omega_hat * self.ops.inv_k2
        return self.ops.k[2] * psi, -1j * self.ops.k[1] * psi

    def on_grid(self, state: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """(u, w) and (theta, s'_1 .. s'_S) on the grid."""
        u_hat, w_hat = self.velocity_hat(state[0])
        velocity = [self.fft.inverse_walls(u_hat, "even"), self.fft.inverse_walls(w_hat, "odd")]
        return velocity, self.fft.inverse_walls(state[1:], "odd")

    def w_hat(self, state: jax.Array) -> jax.Array:
        return self.velocity_hat(state[0])[1]

    def power(self, state: jax.Array) -> tuple[jax.Array, jax.Array]:
        """|u_hat|^2 = |omega_hat|^2 / k^2 and |omega_hat|^2 (<|grad u|^2> = <omega^2> between free-slip plates)."""
        enstrophy = jnp.abs(state[0]) ** 2
        return enstrophy * self.ops.inv_k2, enstrophy

    def flow_diagnostics(self, state: jax.Array, velocity: Sequence[jax.Array]) -> dict[str, jax.Array]:
        """max |u|."""
        u, w = velocity
        return {"max_velocity": jnp.max(jnp.sqrt(u**2 + w**2))}

    def flow_fields(self, state: jax.Array, velocity: Sequence[jax.Array]) -> dict[str, jax.Array]:
        """The vorticity and the velocity (u, w, 0)."""
        return {"vorticity": self.fft.inverse_walls(state[0], "odd"), **super().flow_fields(state, velocity)}

    def at_rest(self) -> dict[str, jax.Array]:
        return {"vorticity": jnp.zeros(self.fft.shape, self.dtype)}

    def mode_flow(self, a: float, q: float, x: jax.Array, z: jax.Array, amplitude: float, sigma: jax.Array,
                  params: Params) -> dict[str, jax.Array]:
        """omega = -a A sin(a x) sin(q z) / (sigma + nu K^2) (:class:`..Mode`)."""
        nu, _ = free_fall(params)
        omega = -a * amplitude * jnp.sin(a * x) * jnp.sin(q * z) / (sigma + nu * (a**2 + q**2))
        return {"vorticity": jnp.broadcast_to(omega, self.fft.shape)}

    def advection(self, state: jax.Array) -> jax.Array:
        """-div(u f) of omega, theta and each scalar's s', dealiased, ``(2 + S, 1, Nx, Nz)``."""
        ops = self.ops
        u_hat, w_hat = self.velocity_hat(state[0])
        u = self.fft.inverse_walls(u_hat, "even")
        odd = self.fft.inverse_walls(jnp.concatenate([w_hat[None], state]), "odd")
        w, carried = odd[0], odd[1:]
        sines = self.fft.forward_walls(u * carried, "odd")
        cosines = self.fft.forward_walls(w * carried, "even")
        return -ops.dealias * (1j * ops.k[1] * sines - ops.k[2] * cosines)

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """Advection, the buoyancy coupling (d theta/dx in omega, w in theta) and the scalars' profiles carried by w
        (-w (s1 - s0) / H)."""
        _, w_hat = self.velocity_hat(state[0])
        carried = [slope * w_hat for slope in self.profile_slopes()]
        return self.advection(state) + jnp.stack([1j * self.ops.k[1] * state[1], w_hat, *carried])

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The dealiased walled spectra of ``vorticity`` and ``theta``, each ``(1, Nx, Nz)``, and of each scalar less
        its linear profile (``scalar`` ``(S, 1, Nx, Nz)``)."""
        real = jnp.stack([fields["vorticity"], fields["theta"]]).astype(self.dtype)
        if self.physics.scalars:
            real = jnp.concatenate([real, fields["scalar"].astype(self.dtype) - self.lifts()])
        return self.ops.dealias * self.fft.forward_walls(real, "odd")

    def wall_series(self, name: str) -> tuple[str, ...]:
        """Vorticity and theta are sine series (both vanish at free-slip, fixed-temperature plates), and so each
        scalar's departure from its linear profile."""
        return ("odd",) * (len(self.physics.scalars) if name == "scalar" else 1)


Convection2D.builders = BUILDERS
