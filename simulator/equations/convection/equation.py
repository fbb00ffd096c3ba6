"""Rayleigh-Benard convection in a box between free-slip plates: the implementation.

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
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations import wall_scalar_terms
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.convection import INFO, ConvectionParams
from simulator.equations.noise import white_noise
from simulator.equations.plates import growth_rate
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

#: the parity of each state entry (u, v, w, theta)
PARITY = ("even", "even", "odd", "odd")


@final
class Convection(SemiLinearEquation):
    """Free-slip Rayleigh-Benard convection in a walled box (single, slab or pencil backend)."""

    info = INFO
    _LEAVES: ClassVar[tuple[str, ...]] = ("ops",)

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: ConvectionParams | None = None):
        super().__init__(fft, box, dtype, physics)
        self.ops = WalledOperators(fft, self.box, self.dtype)

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """``info.fields``, with ``scalar`` holding this run's passive scalars, or absent without any."""
        return field_info(self.info.fields, len(self.physics.scalars))

    def heights(self) -> jax.Array:
        """z of the grid points, ``(1, 1, Nz)`` (:func:`simulator.equations.walled.heights`)."""
        return heights(self.fft, self.box, self.dtype)

    def lifts(self) -> jax.Array:
        """Each passive scalar's linear profile on the grid's heights, ``(S, 1, 1, Nz)``."""
        return scalar_lifts(self.physics.scalars, self.heights(), self.box[2]).astype(self.dtype)

    def project(self, f: Sequence[jax.Array]) -> jax.Array:
        """The divergence-free part of a walled vector (x, y cosine series, z sine series), ``(3, Nx, Ny, Nz)``."""
        kx, ky, kz = self.ops.k
        d = (1j * kx * f[0] + 1j * ky * f[1] + kz * f[2]) * self.ops.inv_k2
        return jnp.stack([f[0] + 1j * kx * d, f[1] + 1j * ky * d, f[2] - kz * d])

    def divergence(self, state: jax.Array) -> jax.Array:
        """div u as a cosine series' entries."""
        kx, ky, kz = self.ops.k
        return 1j * kx * state[0] + 1j * ky * state[1] + kz * state[2]

    def linear(self, params: Params) -> jax.Array:
        """The diagonal L of (u, v, w, theta, s'_i), ``(4 + S, Nx, Ny, Nz)``."""
        nu, kappa = free_fall(params)
        k2 = self.ops.k2
        rates = (nu, nu, nu, kappa, *wall_scalar_terms.diffusivities(params))
        return -jnp.stack(jnp.broadcast_arrays(*(rate * k2 for rate in rates)))

    def exp_linear(self, state: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        return state * jnp.exp(self.linear(params) * tau)

    def real(self, state: jax.Array) -> list[jax.Array]:
        """(u, v, w, theta, s'_1 .. s'_S) on the grid."""
        even = self.fft.inverse_walls(state[:2], "even")
        odd = self.fft.inverse_walls(state[2:], "odd")
        return [even[0], even[1], *odd]

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
        slopes = jnp.asarray([1.0] + [-(b - a) / self.box[2] for a, b in (s.plates()[1] for s in self.physics.scalars)],
                             self.dtype).reshape(-1, 1, 1, 1)
        ft = -(1j * kx * ut + 1j * ky * vt - kz * wt) + slopes * state[2]
        return ops.dealias * jnp.concatenate([self.project([fx, fy, fz]), ft])

    # ---- states and fields ------------------------------------------------------------------------------

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

    def wall_lift(self, name: str) -> jax.Array | None:
        """Each scalar's linear profile (``scalar``: its plates' values, not a sine series); None for the others."""
        return self.lifts() if name == "scalar" and self.physics.scalars else None

    def fields(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        u, v, w, theta, *scalars = self.real(state)
        out = {"temperature": 1 - heights(self.fft, self.box, self.dtype) + theta, "theta": theta,
               "velocity": jnp.stack([u, v, w])}
        if scalars:
            out["scalar"] = self.lifts() + jnp.stack(scalars)
        return out

    # ---- diagnostics, spectra and profiles ----------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, the Nusselt numbers, Reynolds number, dissipations, max |div u| and the CFL number."""
        ops = self.ops
        nu, kappa = free_fall(params)
        power = jnp.sum(jnp.abs(state[:3]) ** 2, axis=0)
        energy = 0.5 * ops.mean(power)
        bottom, top = plate_nusselt(ops, state[3], self.fft.size, self.box[2])
        u, v, w = self.real(state)[:3]
        divergence = self.fft.inverse_walls(self.divergence(state), "even")
        return {**sine_scalar_diagnostics(ops, self.physics.scalars, state[4:], params, self.box[2]),
                "kinetic_energy": energy,
                "nusselt": 1 + ops.mean(jnp.real(jnp.conj(state[2]) * state[3])) / kappa,
                "nusselt_bottom": bottom, "nusselt_top": top,
                "reynolds": jnp.sqrt(2 * energy) / nu,
                "kinetic_dissipation": nu * ops.mean(ops.k2 * power),
                "kmax_eta": kmax_eta(series_cutoff(self.fft, self.box), nu, kappa, nu * ops.mean(ops.k2 * power)),
                "thermal_dissipation": kappa * (1 + ops.mean(ops.k2 * jnp.abs(state[3]) ** 2)),
                "divergence": jnp.max(jnp.abs(divergence)),
                "cfl": dt * jnp.max(jnp.abs(u) / self.spacing[0] + jnp.abs(v) / self.spacing[1]
                                    + jnp.abs(w) / self.spacing[2])}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy per shell of |k|."""
        ops = self.ops
        power = 0.5 * ops.weight * jnp.sum(jnp.abs(state[:3]) ** 2, axis=0) / float(self.fft.size) ** 2
        return {"energy": spectra.shell_sum(power, ops.k, self.fft.shape, self.box)}

    def profiles(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Averages over (x, y) at each height, each ``(Nz,)`` replicated (:mod:`simulator.output.profiles`)."""
        _, kappa = free_fall(params)
        ops = self.ops
        u, v, w, theta, *scalars = self.real(state)
        slope = self.fft.inverse_walls(ops.horizontal() * ops.k[2] * state[3], "even")
        out = {"temperature": jnp.mean(1 - heights(self.fft, self.box, self.dtype) + theta, axis=(0, 1)),
               "velocity_rms": jnp.sqrt(jnp.mean(u**2 + v**2 + w**2, axis=(0, 1))),
               "heat_flux": 1 + jnp.mean(w * theta, axis=(0, 1)) / kappa - jnp.mean(slope, axis=(0, 1))}
        if scalars:
            out.update(wall_scalar_terms.profiles(self.lifts() + jnp.stack(scalars)))
        return {k: jax.lax.with_sharding_constraint(v, self.fft.replicated_sharding()) for k, v in out.items()}


def conductive(eq: Convection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A xi 4 z (1 - z), xi unit white noise; at rest."""
    z = heights(eq.fft, eq.box, eq.dtype)
    theta = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * 4 * z * (eq.box[2] - z)
    return {"velocity": jnp.zeros((3, *eq.fft.shape), eq.dtype), "theta": theta}


def mode(eq: Convection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A cos(a x) sin(n pi z) with its eigenvector's velocity (:class:`..BoxMode`)."""
    m_x, n = ic.modes
    a, q = 2 * jnp.pi * m_x / eq.box[0], n * jnp.pi / eq.box[2]
    z = heights(eq.fft, eq.box, eq.dtype)
    theta = jnp.broadcast_to(ic.amplitude * jnp.cos(a * c[0]) * jnp.sin(q * z), eq.fft.shape)
    zero = jnp.zeros(eq.fft.shape, eq.dtype)
    if m_x == 0:
        return {"velocity": jnp.stack([zero, zero, zero]), "theta": theta}
    nu, kappa = free_fall(params)
    k2 = a**2 + q**2
    taylor = eq.physics.taylor
    if taylor:  # the cubic's largest root, on the host at the run's (traced) Rayleigh and Prandtl numbers
        rate = jax.ShapeDtypeStruct((), eq.dtype)
        sigma = jax.pure_callback(lambda ra, pr: np.asarray(growth_rate(float(ra), float(pr), float(a), n, taylor),
                                                            rate.dtype), rate, params["rayleigh"], params["prandtl"])
    else:
        sigma = -(nu + kappa) * k2 / 2 + jnp.sqrt(((nu - kappa) * k2 / 2) ** 2 + a**2 / k2)
    growth = (sigma + kappa * k2) * ic.amplitude
    w = jnp.broadcast_to(growth * jnp.cos(a * c[0]) * jnp.sin(q * z), eq.fft.shape)
    u = jnp.broadcast_to(-(q / a) * growth * jnp.sin(a * c[0]) * jnp.cos(q * z), eq.fft.shape)
    swirl = jnp.sqrt(taylor) * nu * q * growth / (a * (sigma + nu * k2))  # the vertical vorticity's v
    v = jnp.broadcast_to(swirl * jnp.sin(a * c[0]) * jnp.cos(q * z), eq.fft.shape)
    return {"velocity": jnp.stack([u, v, w]), "theta": theta}


Convection.builders = {"conductive": wall_scalar_terms.with_scalars(conductive),
                       "mode": wall_scalar_terms.with_scalars(mode)}
