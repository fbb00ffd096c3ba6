"""Rayleigh-Benard convection between free-slip plates in a plane: the implementation.

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
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp

from simulator.equations import wall_scalar_terms
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.convection2d import INFO, Convection2DParams
from simulator.equations.noise import white_noise
from simulator.equations.scalars import field_info
from simulator.equations.spec import FieldInfo
from simulator.equations.walled import (
    WalledOperators,
    free_fall,
    heights,
    kmax_eta,
    plate_nusselt,
    scalar_lifts,
    series_cutoff,
    sine_scalar_diagnostics,
)
from simulator.fft import FFTBackend
from simulator.observables import spectra


@final
class Convection2D(SemiLinearEquation):
    """Free-slip Rayleigh-Benard convection on a walled plane (slab or single backend)."""

    info = INFO
    _LEAVES: ClassVar[tuple[str, ...]] = ("ops",)

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: Convection2DParams | None = None):
        super().__init__(fft, box, dtype, physics)
        self.ops = WalledOperators(fft, self.box, self.dtype)

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """``info.fields``, with ``scalar`` holding this run's passive scalars, or absent without any."""
        return field_info(self.info.fields, len(self.physics.scalars))

    def lifts(self) -> jax.Array:
        """Each passive scalar's linear profile on the grid's heights, ``(S, 1, 1, Nz)``."""
        return scalar_lifts(self.physics.scalars, self.heights(), self.box[2]).astype(self.dtype)

    def velocity_hat(self, omega_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(u_hat, w_hat): the cosine series k_z psi_hat and the sine series -i k_x psi_hat, psi_hat = omega/k^2."""
        psi = omega_hat * self.ops.inv_k2
        return self.ops.k[2] * psi, -1j * self.ops.k[1] * psi

    def linear(self, params: Params) -> jax.Array:
        """The diagonal L of (omega, theta, s'_i), ``(2 + S, 1, Nx, Nz)``."""
        nu, kappa = free_fall(params)
        rates = (nu, kappa, *wall_scalar_terms.diffusivities(params))
        return -jnp.stack(jnp.broadcast_arrays(*(rate * self.ops.k2 for rate in rates)))

    def exp_linear(self, state: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        return state * jnp.exp(self.linear(params) * tau)

    def real_velocity(self, omega_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(u, w) on the grid."""
        u_hat, w_hat = self.velocity_hat(omega_hat)
        return self.fft.inverse_walls(u_hat, "even"), self.fft.inverse_walls(w_hat, "odd")

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
        carried = [-(b - a) / self.box[2] * w_hat for a, b in (s.plates()[1] for s in self.physics.scalars)]
        return self.advection(state) + jnp.stack([1j * self.ops.k[1] * state[1], w_hat, *carried])

    # ---- states and fields ------------------------------------------------------------------------------

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

    def wall_lift(self, name: str) -> jax.Array | None:
        """Each scalar's linear profile (``scalar``: its plates' values, not a sine series); None for the others."""
        return self.lifts() if name == "scalar" and self.physics.scalars else None

    def fields(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Temperature, theta, vorticity, the velocity (u, w, 0) and the passive scalars, on the grid."""
        odd = self.fft.inverse_walls(state, "odd")
        u, w = self.real_velocity(state[0])
        out = {"temperature": 1 - self.heights() + odd[1], "theta": odd[1], "vorticity": odd[0],
               "velocity": jnp.stack([u, w, jnp.zeros_like(u)])}
        if self.physics.scalars:
            out["scalar"] = self.lifts() + odd[2:]
        return out

    def heights(self) -> jax.Array:
        """z of the grid points, ``(1, 1, Nz)`` (:func:`simulator.equations.walled.heights`)."""
        return heights(self.fft, self.box, self.dtype)

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, the Nusselt number through the volume and at each plate, the Reynolds number, both
        dissipation rates, max |u|, the CFL number and the passive scalars'
        (:func:`~simulator.equations.walled.sine_scalar_diagnostics`)."""
        ops = self.ops
        nu, kappa = free_fall(params)
        power, power_t = jnp.abs(state[0]) ** 2, jnp.abs(state[1]) ** 2
        _, w_hat = self.velocity_hat(state[0])
        energy = 0.5 * ops.mean(power * ops.inv_k2)
        bottom, top = plate_nusselt(ops, state[1], self.fft.size, self.box[2])
        u, w = self.real_velocity(state[0])
        return {**sine_scalar_diagnostics(ops, self.physics.scalars, state[2:], params, self.box[2]),
                "kinetic_energy": energy,
                "nusselt": 1 + ops.mean(jnp.real(jnp.conj(w_hat) * state[1])) / kappa,
                "nusselt_bottom": bottom, "nusselt_top": top,
                "reynolds": jnp.sqrt(2 * energy) / nu,
                "kinetic_dissipation": nu * ops.mean(power),
                "kmax_eta": kmax_eta(series_cutoff(self.fft, self.box), nu, kappa, nu * ops.mean(power)),
                "thermal_dissipation": kappa * (1 + ops.mean(ops.k2 * power_t)),
                "max_velocity": jnp.max(jnp.sqrt(u**2 + w**2)),
                "cfl": dt * jnp.max(jnp.abs(u) / self.spacing[1] + jnp.abs(w) / self.spacing[2])}

    def profiles(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Averages over x at each height z_j, each ``(Nz,)`` replicated (:mod:`simulator.output.profiles`): the
        temperature, the rms velocity and the heat flux (<w b> - kappa d<b>/dz) / kappa = 1 + <w theta>/kappa -
        d<theta>/dz (<w> = 0 at every height), d<theta>/dz from theta's k_x = 0 entries exactly; each passive scalar's
        average ``scalar{i}``."""
        _, kappa = free_fall(params)
        ops = self.ops
        u, w = self.real_velocity(state[0])
        theta = self.fft.inverse_walls(state[1], "odd")
        slope = self.fft.inverse_walls(jnp.where(ops.k[1] == 0, ops.k[2] * state[1], 0), "even")
        out = {"temperature": jnp.mean(1 - self.heights() + theta, axis=(0, 1)),
               "velocity_rms": jnp.sqrt(jnp.mean(u**2 + w**2, axis=(0, 1))),
               "heat_flux": 1 + jnp.mean(w * theta, axis=(0, 1)) / kappa - jnp.mean(slope, axis=(0, 1))}
        if self.physics.scalars:
            out.update(wall_scalar_terms.profiles(self.lifts() + self.fft.inverse_walls(state[2:], "odd")))
        return {k: jax.lax.with_sharding_constraint(v, self.fft.replicated_sharding()) for k, v in out.items()}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy per ring of |k|."""
        ops = self.ops
        power = 0.5 * ops.weight * jnp.abs(state[0]) ** 2 * ops.inv_k2 / float(self.fft.size) ** 2
        return {"energy": spectra.shell_sum(power, ops.k, self.fft.shape, self.box)}


def conductive(eq: Convection2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A xi 4 z (1 - z), xi unit white noise; no flow."""
    z = eq.heights()
    theta = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * 4 * z * (eq.box[2] - z)
    return {"vorticity": jnp.zeros(eq.fft.shape, eq.dtype), "theta": theta}


def mode(eq: Convection2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A cos(a x) sin(n pi z) and the vorticity of its eigenvector (:class:`..Mode`)."""
    m_x, n = ic.modes
    a, q = 2 * jnp.pi * m_x / eq.box[1], n * jnp.pi / eq.box[2]
    z = eq.heights()
    theta = ic.amplitude * jnp.cos(a * c[1]) * jnp.sin(q * z)
    if m_x == 0:
        return {"vorticity": jnp.zeros(eq.fft.shape, eq.dtype), "theta": jnp.broadcast_to(theta, eq.fft.shape)}
    nu, kappa = free_fall(params)
    k2 = a**2 + q**2
    sigma = -(nu + kappa) * k2 / 2 + jnp.sqrt(((nu - kappa) * k2 / 2) ** 2 + a**2 / k2)
    omega = -a * ic.amplitude * jnp.sin(a * c[1]) * jnp.sin(q * z) / (sigma + nu * k2)
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape), "theta": jnp.broadcast_to(theta, eq.fft.shape)}


Convection2D.builders = {"conductive": wall_scalar_terms.with_scalars(conductive),
                         "mode": wall_scalar_terms.with_scalars(mode)}
