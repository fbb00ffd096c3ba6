"""Rotating shallow water in a periodic plane: the implementation.

    d(u, v, eta)/dt = N(u, v, eta) + L (u, v, eta),   L = -nu k^2 - nu_p k^(2p) (- nu_m k^(-2m) - alpha on u and v)

Pseudo-spectral as FluidSim's ``sw1l`` (Augier, Mohanan & Lindborg 2019): the velocity, the surface displacement
and the vorticity in real space, the products (zeta + f) v, -(zeta + f) u, the Bernoulli function
c^2 eta + |u|^2/2 and the mass fluxes (1 + eta) u, (1 + eta) v transformed back and differentiated spectrally,
dealiased by the 2/3 rule. The rotation and gravity-wave terms, linear but not diagonal, are stepped with the
products (as FluidSim's ``sw1l`` does), so that the linear part is the diagonal dissipation, integrated exactly by
the integrating-factor schemes; the waves are explicit and c k_max dt counts in the CFL number (RK4 is stable to
omega dt of about 2.8). Only the parts that are products go through the transforms: f v, -f u, c^2 eta and the
linear part u of (1 + eta) u are formed mode by mode, so one evaluation costs one batched inverse transform of
(u, v, eta, zeta) and one batched forward transform of (zeta v, zeta u, |u|^2/2, eta u, eta v): nine transforms
of the plane, as FluidSim's.

The skeleton (the plane's axes, the sinks, the forcing, the CFL speed, the ring sums) is the planar flows' base,
:class:`~simulator.equations.flow.plane.PlanarFlow`.

Arrays: a plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): the state is the real-to-complex
spectra of (u, v, eta), ``(3, *k_shape)``, the wavenumbers ``ops.k = (0, kx, ky)``; real fields are
``(1, Nx, Ny)``, the velocity ``(3, 1, Nx, Ny)`` (u, v, 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import final

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.flow import plane, plane_forcing
from simulator.equations.sw1l import INFO, initial


@final
class SW1L(plane.PlanarFlow):
    """The shallow-water layer on one FFT backend (:class:`~simulator.equations.flow.plane.PlanarFlow`)."""

    info = INFO

    # ---- the layer's operators -------------------------------------------------------------------------

    def vorticity_hat(self, state: jax.Array) -> jax.Array:
        """zeta_hat = i (kx v_hat - ky u_hat), ``k_shape``."""
        return 1j * (self.kx * state[1] - self.ky * state[0])

    def divergence_hat(self, state: jax.Array) -> jax.Array:
        """i (kx u_hat + ky v_hat), ``k_shape``."""
        return 1j * (self.kx * state[0] + self.ky * state[1])

    def velocity_spectrum(self, state: jax.Array) -> jax.Array:
        """The velocity as the box's three components ``(3, *k_shape)``: (0, u, v) (what particles read)."""
        return self.in_box(state[0], state[1])

    def linear(self, params: Params) -> jax.Array:
        """The diagonal L of (u, v, eta), ``(3, *k_shape)``: the flow's sinks on the velocity, viscosity and
        hyperviscosity alone on eta (:meth:`~simulator.equations.flow.plane.PlanarFlow.damping`)."""
        velocity, eta = jnp.broadcast_arrays(self.damping(params), self.damping(params, flow=False))
        return -self.ops.stack([velocity, velocity, eta])

    def forcing_hat(self, params: Params) -> jax.Array | None:
        """The Kolmogorov forcing's F_x spectrum, from the planar flows' vorticity forcing f_omega = -dF_x/dy
        (:func:`~simulator.equations.flow.plane_forcing.steady`): F_x_hat = i f_omega_hat / ky on its mode; None
        unless ``forcing: kolmogorov``."""
        f_omega = plane_forcing.steady(self, params)
        if f_omega is None:
            return None
        return 1j * f_omega / jnp.where(self.ky != 0, self.ky, 1.0)

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """N of (u, v, eta) (see the module docstring), dealiased, plus the Kolmogorov forcing; ``(3, *k_shape)``."""
        ops = self.ops
        kx, ky = self.kx, self.ky
        f, c2 = params["coriolis"], params["wave_speed"] ** 2
        real = self.fft.irfft(ops.stack([state[0], state[1], state[2], self.vorticity_hat(state)]))
        u, v, eta, zeta = real[0], real[1], real[2], real[3]
        prod = self.fft.rfft(jnp.stack([zeta * v, zeta * u, 0.5 * (u * u + v * v), eta * u, eta * v]))
        bernoulli = prod[2] + c2 * state[2]
        du = prod[0] + f * state[1] - 1j * kx * bernoulli
        dv = -prod[1] - f * state[0] - 1j * ky * bernoulli
        deta = -1j * (kx * (state[0] + prod[3]) + ky * (state[1] + prod[4]))
        forced = self.forcing_hat(params)
        if forced is not None:
            du = du + forced
        return ops.dealias * ops.stack([du, dv, deta])

    def settle(self, state: jax.Array, t: jax.Array, dt: jax.Array, params: Params) -> jax.Array:
        """After a whole step, with ``forcing: random``: the planar flows' kick of the vorticity
        (:func:`~simulator.equations.flow.plane_forcing.kick`, exactly ``forcing_power`` dt into <|u|^2>/2: the
        divergent part of u is orthogonal to the kick) given to the velocity as its rotational field
        perp(delta omega_hat / k^2)."""
        if self.physics.forcing != "random":
            return state
        zeta = self.vorticity_hat(state)
        du, dv = self.perp((plane_forcing.kick(self, zeta[None], t, dt, params)[0] - zeta) * self.ops.inv_k2)
        return state + self.ops.stack([du, dv, jnp.zeros_like(du)])

    # ---- states and fields ------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The dealiased spectra of ``velocity`` ``(3, 1, Nx, Ny)`` (u, v, 0) and ``height`` ``(1, Nx, Ny)``."""
        real = jnp.stack([fields["velocity"][0], fields["velocity"][1], fields["height"]]).astype(self.dtype)
        return self.ops.dealias * self.fft.rfft(real)

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Velocity ``(3, ...)`` (u, v, 0), height, vorticity and divergence, as spectra of a state (the potential
        vorticity, a quotient, is formed in real space by :meth:`fields`)."""
        return {"velocity": lambda s: self.as_field(s[0], s[1]), "height": lambda s: s[2],
                "vorticity": self.vorticity_hat, "divergence": self.divergence_hat}

    def potential_vorticity(self, zeta: jax.Array, eta: jax.Array, params: Params) -> jax.Array:
        """The potential vorticity's anomaly q - f = (zeta - f eta)/(1 + eta) of real fields ``(1, Nx, Ny)`` (q - f, not
        q: what a figure of a rotating layer shows beside the uniform f)."""
        return (zeta - params["coriolis"] * eta) / (1 + eta)

    def fields(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The spectral fields in real space and the potential vorticity from the vorticity and the height."""
        out = super().fields(state, params)
        out["potential_vorticity"] = self.potential_vorticity(out["vorticity"], out["height"], params)
        return out

    def field(self, state: jax.Array, params: Params, name: str, component: jax.Array) -> jax.Array:
        """One field's component; the potential vorticity from the same two inverse transforms as :meth:`fields`."""
        if name != "potential_vorticity":
            return super().field(state, params, name, component)
        return self.potential_vorticity(self.fft.irfft(self.vorticity_hat(state)), self.fft.irfft(state[2]), params)

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The energies, potential enstrophy, the divergence's share, the Rossby and Froude numbers, max |eta|, the
        smallest depth min(1 + eta) (its bound: the run stops where it is no longer positive), the dissipation and
        injection of the energy (exact rates of the semi-discrete energy), the CFL number and k_max eta_Z. Means
        over the grid in real space (the energy is cubic)."""
        ops = self.ops
        f, c = params["coriolis"], params["wave_speed"]
        rate_u, rate_eta = self.damping(params), self.damping(params, flow=False)
        zeta_hat = self.vorticity_hat(state)
        # the velocity in a transform of its own: an adaptive step compiles the CFL number alone, and XLA then drops
        # the other transform, which it could not cut out of one batch of all seven
        u, v = self.fft.irfft(ops.stack([state[0], state[1]]))
        eta, zeta, lu, lv, leta = self.fft.irfft(ops.stack([state[2], zeta_hat, rate_u * state[0], rate_u * state[1],
                                                            rate_eta * state[2]]))
        h, speed2 = 1 + eta, u * u + v * v
        out = {"kinetic_energy": jnp.mean(0.5 * h * speed2), "potential_energy": jnp.mean(0.5 * c**2 * eta * eta),
               "potential_enstrophy": jnp.mean(0.5 * (zeta - f * eta) ** 2 / h),
               "max_height": jnp.max(jnp.abs(eta)), "min_depth": jnp.min(h)}
        out["total_energy"] = out["kinetic_energy"] + out["potential_energy"]
        # dE/dt of the linear terms: <h u . L u + |u|^2/2 L eta + c^2 eta L eta>, L = -rate
        out["dissipation"] = jnp.mean(h * (u * lu + v * lv) + (0.5 * speed2 + c**2 * eta) * leta)
        forced = self.forcing_hat(params)
        if forced is not None:
            out["injection"] = jnp.mean(h * u * self.fft.irfft(forced))
        elif self.physics.forcing == "random":
            out.update(plane_forcing.injection(self, zeta_hat, params))
        power = ops.mean(jnp.abs(state[0]) ** 2 + jnp.abs(state[1]) ** 2)
        divergent = ops.mean(jnp.abs(self.divergence_hat(state)) ** 2 * ops.inv_k2)
        tiny = jnp.finfo(power.dtype).tiny
        out["divergent_share"] = divergent / jnp.maximum(power, tiny)
        out["rossby"] = jnp.where(f > 0, jnp.sqrt(jnp.mean(zeta * zeta)) / jnp.where(f > 0, f, 1.0), 0.0)
        out["froude"] = jnp.sqrt(jnp.mean(speed2)) / c
        gravity = c * (1 / self.spacing[plane.X] + 1 / self.spacing[plane.Y])
        out["cfl"] = dt * (jnp.max(self.speed(u, v)) + gravity)
        eta_z = plane.enstrophy_scale(params, self.physics, ops.mean(rate_eta * jnp.abs(zeta_hat) ** 2))
        out["kmax_eta"] = self.kmax() * eta_z
        return out

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Ring sums of the kinetic energy, its divergent part and the potential energy."""
        half = 0.5 * self.norm
        return {"energy": self.shell(half * (jnp.abs(state[0]) ** 2 + jnp.abs(state[1]) ** 2)),
                "potential_energy": self.shell(half * params["wave_speed"] ** 2 * jnp.abs(state[2]) ** 2),
                "divergent_energy": self.shell(half * jnp.abs(self.divergence_hat(state)) ** 2 * self.ops.inv_k2)}


SW1L.builders = initial.BUILDERS
