"""The beta plane on :class:`~simulator.equations.flow.plane.VorticityFlow`: the state is the vorticity's spectrum and
the scalars', ``(1 + n, *k_shape)``. -beta v = i beta k_x psi_hat is diagonal, so it joins the sinks in L and the
integrating-factor schemes integrate the Rossby waves exactly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from beta_plane import INFO
from simulator.equations.base import Params
from simulator.equations.flow import plane
from simulator.equations.scalars import terms as passive


class BetaPlane(plane.VorticityFlow):
    info = INFO

    def linear(self, params: Params) -> jax.Array:
        """-(the sinks' rate) + i beta k_x / k^2 for the vorticity, the scalars' diffusion after it."""
        return self.linear_rows([self.damping(params) - 1j * params["beta"] * self.kx * self.ops.inv_k2], params)

    def advection(self, state: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """-div(u omega), dealiased, and the scalars' -div(u theta_i)."""
        u_hat, v_hat = self.velocity_hat(state[0])
        flux, advected = self.transport([u_hat, v_hat, state[0]], state, lambda r: [r[0] * r[2], r[1] * r[2]])
        return -1j * self.ops.dealias * (self.kx * flux[0] + self.ky * flux[1]), advected

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        n_omega, advected = self.advection(state)
        return self.with_scalars(self.forced(n_omega, params)[None], advected, state, params)

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        return {"vorticity": lambda s: s[0], **self.flow_fields()}

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        rate = self.damping(params)
        out = self.flow_diagnostics(state[0], rate, ("energy", "enstrophy", "dissipation"), params)
        u, v = self.fft.irfft(self.ops.stack(list(self.velocity_hat(state[0]))))
        out["cfl"] = dt * jnp.max(self.speed(u, v))
        eta = plane.enstrophy_scale(params, self.physics, self.ops.mean(rate * jnp.abs(state[0]) ** 2))
        out["kmax_eta"] = self.kmax() * eta
        return {**out, **self.scalar_diagnostics(state, params, eta)}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        n_omega, advected = self.advection(state)
        return {**self.flow_spectra(state[0], n_omega, params), **self.scalar_spectra(state, advected, params)}


def rossby_wave(eq: BetaPlane, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    (lx, ly), (x, y) = eq.lengths, eq.xy(c)
    omega = ic.amplitude * jnp.cos(2 * jnp.pi * (ic.modes[0] * x / lx + ic.modes[1] * y / ly))
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape)}


BetaPlane.builders = {"rossby_wave": passive.with_scalars(rossby_wave)}
