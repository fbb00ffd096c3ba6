"""Incompressible Navier-Stokes in a periodic plane, vorticity form: the implementation.

    d omega/dt = -div(u omega) + L omega (+ f),   L = -nu k^2 - nu_p k^(2p) - nu_m k^(-2m) - alpha

Pseudo-spectral as FluidSim's ``ns2d`` (Mohanan, Bonamy & Augier 2019): the stream function psi_hat =
omega_hat / k^2 from one Poisson solve, u_hat = i (ky, -kx) psi_hat, the quadratic products in real space,
dealiased by the 2/3 rule, which then conserves the energy and the enstrophy of the inviscid equations to
round-off; the diagonal linear part integrated exactly by the integrating-factor schemes. The advection of the
vorticity is formed from the stress (:meth:`NS2D.products`): one evaluation costs one batched inverse transform of
(u, v) and one batched forward transform of (uv, v^2 - u^2), four transforms of the plane where the form
-div(u omega) (FluidSim's count) takes five.

Arrays: a plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): the state is the vorticity's
real-to-complex spectrum ``(1 + n, *k_shape)`` with the n passive scalars' after it, the wavenumbers
``ops.k = (0, kx, ky)``; real fields are ``(1, Nx, Ny)``, the velocity ``(3, 1, Nx, Ny)`` (u, v, 0).

The skeleton (the velocity of the vorticity, the sinks, the forcing, the kinetic diagnostics and spectra, the ring
sums) is the planar flows' base, :class:`~simulator.equations.flow.plane.VorticityFlow`: random forcing
(:mod:`simulator.equations.flow.plane_forcing`) is a kick after each whole step, the Kolmogorov forcing a constant
term of the right-hand side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import final

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.flow import plane
from simulator.equations.ns2d import INFO, initial
from simulator.equations.scalars import terms as passive


@final
class NS2D(plane.VorticityFlow):
    """The planar flow on one FFT backend (:class:`~simulator.equations.flow.plane.VorticityFlow`)."""

    info = INFO

    def products(self, state: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """-u . grad omega and, with scalars, -div(u theta_i), dealiased: one batched inverse transform of
        (u, v, theta...), one batched forward transform of the products (:meth:`transport`).

        The vorticity's term from the stress, as the curl of -div(u u) (Basdevant 1983, in two dimensions):
        -u . grad omega = -(d_xx - d_yy)(u v) - d_x d_y (v^2 - u^2), whose spectrum is
        (kx^2 - ky^2) (uv)^ + kx ky (v^2 - u^2)^: two inverse and two forward transforms, where -div(u omega) takes
        three and two. The products are quadratic in fields of the 2/3 rule's modes, so both forms give the same
        kept modes, to round-off."""
        flux, advected = self.transport(list(self.velocity_hat(state[0])), state,
                                        lambda real: [real[0] * real[1], real[1] * real[1] - real[0] * real[0]])
        kx, ky = self.kx, self.ky
        return self.ops.dealias * ((kx**2 - ky**2) * flux[0] + kx * ky * flux[1]), advected

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """-div(u omega) (+ the Kolmogorov forcing), and for the scalars -div(u theta_i) - u . G_i."""
        n_hat, advected = self.products(state)
        return self.with_scalars(self.forced(n_hat, params)[None], advected, state, params)

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Vorticity, velocity ``(3, ...)`` (u, v, 0), stream function and the scalars, as spectra of a state."""
        return {"vorticity": lambda s: s[0], **self.flow_fields()}

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Energy, enstrophy, palinstrophy (Parseval means), max |omega|, the dissipation of energy and enstrophy
        by every sink, the injection, the CFL number and k_max eta_Z; the scalars' (:meth:`scalar_diagnostics`)."""
        ops = self.ops
        omega_hat = state[0]
        power = jnp.abs(omega_hat) ** 2
        rate = self.damping(params)
        out = self.flow_diagnostics(omega_hat, rate, ("energy", "enstrophy", "dissipation"), params)
        out.update(palinstrophy=0.5 * ops.mean(ops.k2 * power), dissipation_enstrophy=ops.mean(rate * power))
        u_hat, v_hat = self.velocity_hat(omega_hat)
        real = self.fft.irfft(ops.stack([u_hat, v_hat, omega_hat]))
        out["max_vorticity"] = jnp.max(jnp.abs(real[2]))
        out["cfl"] = dt * jnp.max(self.speed(real[0], real[1]))
        eta = plane.enstrophy_scale(params, self.physics, out["dissipation_enstrophy"])
        out["kmax_eta"] = self.kmax() * eta
        return {**out, **self.scalar_diagnostics(state, params, eta)}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Ring sums of E(k), Z(k), their transfers and fluxes, the forcing's injection (Kolmogorov forcing), and
        the scalars' spectra."""
        omega_hat = state[0]
        n_hat, advected = self.products(state)
        out = self.flow_spectra(omega_hat, n_hat, params)
        out["enstrophy"] = self.shell(0.5 * self.norm * jnp.abs(omega_hat) ** 2)
        out["transfer_enstrophy"] = self.shell(jnp.real(jnp.conj(omega_hat) * n_hat) * self.norm)
        out["flux_energy"] = -jnp.cumsum(out["transfer_energy"])
        out["flux_enstrophy"] = -jnp.cumsum(out["transfer_enstrophy"])
        return {**out, **self.scalar_spectra(state, advected, params)}


NS2D.builders = {name: passive.with_scalars(b) for name, b in initial.BUILDERS.items()}
