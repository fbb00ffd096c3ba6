"""Stably stratified Boussinesq flow in a vertical periodic plane, vorticity-buoyancy form: the implementation.

    d omega/dt = -div(u omega) + i k_x b_hat + L_omega omega,    L_omega = -nu k^2 - nu_p k^(2p)
    d b/dt     = -div(u b) - N^2 v + L_b b,                      L_b = -kappa k^2 - kappa_p k^(2p)

Pseudo-spectral as FluidSim's ``ns2d.strat`` (Mohanan, Bonamy & Augier 2019): psi_hat = omega_hat / k^2,
u_hat = i (k_y, -k_x) psi_hat, the products u omega, v omega, u b, v b in real space (conservative form),
dealiased by the 2/3 rule, which conserves E_K + E_P of the inviscid semi-discrete equations to round-off. One
evaluation costs one batched inverse transform of (u, v, omega, b) and one batched forward transform of the four
products. The buoyancy coupling (d b/dx in omega, -N^2 v in b: the internal waves, omega_w = N |k_x|/|k|) is not
diagonal and is stepped with the nonlinear term, so that the linear part is the diagonal viscosity and
diffusivity, integrated exactly by the integrating-factor schemes and usable by the exponential ones; the waves
are explicit and N dt counts in the CFL number (RK4 is stable to N dt of about 2.8).

Arrays: a plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): the state is the spectra of
(omega, b), ``(2, *k_shape)``, the wavenumbers ``ops.k = (0, kx, ky)``; real fields are ``(1, Nx, Ny)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, final

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params
from simulator.equations.boussinesq2d import INFO
from simulator.equations.flow import plane
from simulator.equations.scalars import terms as passive


@final
class Boussinesq2D(plane.VorticityFlow):
    """The stratified plane on one FFT backend (:class:`~simulator.equations.flow.plane.VorticityFlow`)."""

    info = INFO
    diffusive = (("diffusivity", "hyperdiffusivity"),)

    def products(self, state: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """-div(u omega) and -div(u b), dealiased, ``(2, *k_shape)``, and the scalars' -div(u theta_i): one batched
        inverse transform of (u, v, omega, b, theta...), one batched forward transform of the products."""
        u_hat, v_hat = self.velocity_hat(state[0])
        flux, advected = self.transport([u_hat, v_hat, state[0], state[1]], state, lambda real: [
            real[0] * real[2], real[1] * real[2], real[0] * real[3], real[1] * real[3]])
        kx, ky = self.kx, self.ky
        own = -1j * self.ops.dealias * self.ops.stack([kx * flux[0] + ky * flux[1], kx * flux[2] + ky * flux[3]])
        return own, advected

    def buoyancy_terms(self, state: jax.Array, params: Params) -> jax.Array:
        """The coupling of the waves, ``(2, *k_shape)``: d b/dx = i k_x b_hat in omega, -N^2 v_hat in b."""
        _, v_hat = self.velocity_hat(state[0])
        return self.ops.stack([1j * self.kx * state[1], -params["brunt_vaisala"] ** 2 * v_hat])

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """Advection, the buoyancy coupling and the Kolmogorov forcing of the vorticity, if any; the scalars'."""
        own, advected = self.products(state)
        return self.with_scalars(self.forced(own + self.buoyancy_terms(state, params), params, row=0), advected,
                                 state, params)

    # ---- states and fields ------------------------------------------------------------------------------

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Vorticity, buoyancy, velocity ``(3, ...)`` (u, v, 0), stream function and the scalars, as spectra of a
        state."""
        return {"vorticity": lambda s: s[0], "buoyancy": lambda s: s[1], **self.flow_fields()}

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic, potential and total energy, enstrophy, the buoyancy flux, both dissipation rates (Parseval
        means), max |omega|, the Froude and CFL numbers, k_max eta and a forced run's injection."""
        ops = self.ops
        n = params["brunt_vaisala"]
        inv_n2 = jnp.where(n > 0, 1 / jnp.where(n > 0, n, 1.0) ** 2, 0.0)
        power, power_b = jnp.abs(state[0]) ** 2, jnp.abs(state[1]) ** 2
        rate, rate_b = self.rates(params)
        u_hat, v_hat = self.velocity_hat(state[0])
        out = self.flow_diagnostics(state[0], rate, ("kinetic_energy", "enstrophy", "kinetic_dissipation"), params)
        out.update(potential_energy=0.5 * inv_n2 * ops.mean(power_b),
                   buoyancy_flux=ops.mean(jnp.real(jnp.conj(v_hat) * state[1])),
                   potential_dissipation=inv_n2 * ops.mean(rate_b * power_b))
        out["total_energy"] = out["kinetic_energy"] + out["potential_energy"]
        real = self.fft.irfft(ops.stack([u_hat, v_hat, state[0]]))
        out["max_vorticity"] = jnp.max(jnp.abs(real[2]))
        out["cfl"] = dt * (jnp.max(self.speed(real[0], real[1])) + n)
        # the integral scale L = 2 pi sum E(k)/k / sum E(k)
        weighted = ops.mean(power * ops.inv_k2 * jnp.sqrt(ops.inv_k2))
        length = 2 * jnp.pi * weighted / jnp.maximum(ops.mean(power * ops.inv_k2), jnp.finfo(weighted.dtype).tiny)
        speed = jnp.sqrt(2 * out["kinetic_energy"])
        out["froude"] = jnp.where((n > 0) & (length > 0), speed / jnp.where((n > 0) & (length > 0), n * length, 1.0),
                                  0.0)
        eta = plane.enstrophy_scale(params, self.physics, ops.mean(rate * power))
        eta_b = resolution.smallest_scale(eta, params["viscosity"], params["diffusivity"], jnp)
        if self.physics.hyperviscous:  # the buoyancy's own hyperdiffusive end of the cascade, as the vorticity's
            eta_b = jnp.maximum(eta_b, plane.hyperdiffusive_scale(params["hyperdiffusivity"], ops.mean(rate * power),
                                                                  self.physics.hyperviscosity_order))
        out["kmax_eta"] = self.kmax() * jnp.minimum(eta, eta_b)
        return {**out, **self.scalar_diagnostics(state, params, eta)}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Ring sums of E_K(k), E_P(k), their transfers by advection, their conversion by buoyancy, and the
        Kolmogorov forcing's injection."""
        n = params["brunt_vaisala"]
        inv_n2 = jnp.where(n > 0, 1 / jnp.where(n > 0, n, 1.0) ** 2, 0.0)
        norm = self.norm
        advected, scalars = self.products(state)
        _, v_hat = self.velocity_hat(state[0])
        conversion = self.shell(norm * jnp.real(jnp.conj(v_hat) * state[1]))
        return {**self.flow_spectra(state[0], advected[0], params),
                "potential_energy": self.shell(0.5 * inv_n2 * norm * jnp.abs(state[1]) ** 2),
                "transfer_potential_energy": self.shell(inv_n2 * norm * jnp.real(jnp.conj(state[1]) * advected[1])),
                "conversion_energy": conversion, "conversion_potential_energy": -conversion,
                **self.scalar_spectra(state, scalars, params)}


def wave(eq: Boussinesq2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """omega = A |k| cos(k_x x + k_y y), b = -A N cos(k_x x + k_y y)."""
    kx, ky = (2 * jnp.pi * m / length for m, length in zip(ic.modes, eq.lengths, strict=True))
    x, y = eq.xy(c)
    phase = jnp.cos(kx * x + ky * y)
    omega = ic.amplitude * jnp.sqrt(kx**2 + ky**2) * phase
    b = -ic.amplitude * params["brunt_vaisala"] * phase
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape), "buoyancy": jnp.broadcast_to(b, eq.fft.shape)}


def random_flow(eq: Boussinesq2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A random vorticity of kinetic energy ``energy`` and a buoyancy b_hat = X_hat/|k| of rms ``buoyancy``, X another
    such field (from seed + 1: E_P(k) shaped as E_K(k)), both of :func:`~..flow.plane.random_spectrum`."""
    ops = eq.ops
    omega_hat = plane.random_spectrum(eq, ic.seed, ic.k_peak, ic.slope)
    omega_hat = omega_hat * jnp.sqrt(2 * ic.energy / ops.mean(jnp.abs(omega_hat) ** 2 * ops.inv_k2))
    b_hat = plane.random_spectrum(eq, ic.seed + 1, ic.k_peak, ic.slope) * jnp.sqrt(ops.inv_k2)
    b_hat = b_hat * (ic.buoyancy / jnp.sqrt(ops.mean(jnp.abs(b_hat) ** 2)))
    return {"vorticity": eq.fft.irfft(omega_hat), "buoyancy": eq.fft.irfft(b_hat)}


Boussinesq2D.builders = {"wave": passive.with_scalars(wave), "random": passive.with_scalars(random_flow)}
