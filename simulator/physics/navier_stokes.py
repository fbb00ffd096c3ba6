"""Incompressible Navier-Stokes in a periodic box, pseudo-spectral.

    du/dt = u x w - grad(p + |u|^2/2) + nu lap(u),   div u = 0,   w = curl u

Rotational form; the pressure gradient is removed by the Leray projection P = I - k k^T / k^2; the
nonlinear term is dealiased with the 2/3 rule (modes with |m_i| >= N_i/3 zeroed); the viscous term is
the diagonal linear operator -nu k^2, integrated exactly by the integrating-factor schemes in
:mod:`simulator.integrators` (Canuto, Hussaini, Quarteroni & Zang, Spectral Methods, 2006). Optional
forcing (:mod:`simulator.physics.forcing`) is one more term of the right-hand side.

Arrays: the state ``u_hat`` is the velocity's real-to-complex spectrum, shape ``(3, *k_shape)`` in the
FFT backend's k-space layout and sharding; real-space fields are ``(3, Nx, Ny, Nz)`` in its real
layout. This module never sees a mesh: it only combines spectra with the backend's wavenumbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator import spectra
from simulator.fft import FFTBackend
from simulator.physics.base import Equation
from simulator.physics.forcing import FORCINGS, constant_power

Params = dict[str, jax.Array]


def cross(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> list[jax.Array]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


class NavierStokes(Equation):
    """The equation: nonlinear term, linear (viscous) operator, initial states and diagnostics.

    A pytree: its sharded spectral constants (wavenumbers, dealiasing mask, Parseval weights) are
    leaves, the FFT backend and box are static. Jitted code takes the equation as an argument, since a
    multi-process program may not close over arrays that span other processes' devices.
    """

    name = "navier_stokes"
    #: time integrators this equation supports; the first is its default
    integrators = ("rk4", "lsrk4")
    #: diagnostics shown in progress lines
    progress = ("energy", "cfl")
    #: the state lives in k-space (the backend's rfft layout)
    state_space = "spectral"
    _LEAVES = ("k", "keep", "weight", "forcing_mask")
    _STATIC = ("fft", "box", "dtype", "spacing")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, forcing: str = "none",
                 forcing_band: float = 2.5):
        self.fft, self.box, self.dtype = fft, tuple(float(b) for b in box), jnp.dtype(dtype)
        self.k = fft.wavenumbers(self.box, real=True, dtype=self.dtype)
        modes = fft.wavenumbers((2 * jnp.pi,) * 3, real=True, dtype=self.dtype)  # integer mode numbers
        # Per-axis 2/3-rule masks, wavenumbers and weights are 1D vectors that broadcast: the 3D products
        # (dealias, k^2, 1/k^2) are formed inside the fused elementwise kernels, never stored.
        self.keep = tuple((jnp.abs(m) < n / 3).astype(self.dtype) for m, n in zip(modes, fft.shape, strict=True))
        mask_builder = FORCINGS[forcing]
        self.forcing_mask = None if mask_builder is None else mask_builder(modes, self.dealias, forcing_band)
        self.weight = fft.parseval_weight(real=True, dtype=self.dtype)
        self.spacing = tuple(b / n for b, n in zip(self.box, fft.shape, strict=True))
        self.k = tuple(self.k)

    @classmethod
    def from_config(cls, fft: FFTBackend, cfg: Any, dtype: Any) -> NavierStokes:
        return cls(fft, cfg.grid.box, dtype, cfg.physics.forcing, cfg.physics.forcing_band)

    @property
    def dealias(self) -> jax.Array:
        """1 on the modes the 2/3 rule keeps (|m_i| < N_i/3 on every axis), else 0."""
        return self.keep[0] * self.keep[1] * self.keep[2]

    @property
    def k2(self) -> jax.Array:
        return self.k[0] ** 2 + self.k[1] ** 2 + self.k[2] ** 2

    @property
    def inv_k2(self) -> jax.Array:
        """1/k^2, and 0 at k = 0 (the mean flow is left alone by the projection)."""
        k2 = self.k2
        return jnp.where(k2 > 0, 1.0 / jnp.where(k2 > 0, k2, 1.0), 0.0)

    # ---- operators on spectra ---------------------------------------------------------------------

    def project(self, f_hat: jax.Array) -> jax.Array:
        """Leray projection onto divergence-free fields: f - k (k.f) / k^2 (k = 0 left unchanged)."""
        kx, ky, kz = self.k
        div = (kx * f_hat[0] + ky * f_hat[1] + kz * f_hat[2]) * self.inv_k2
        return jnp.stack([f_hat[0] - kx * div, f_hat[1] - ky * div, f_hat[2] - kz * div])

    def curl(self, u_hat: jax.Array) -> jax.Array:
        return 1j * jnp.stack(cross(self.k, u_hat))

    def linear(self, params: Params) -> jax.Array:
        return -params["viscosity"] * self.k2

    def nonlinear(self, u_hat: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """P[(u x w)^] (+ forcing), dealiased by the 2/3 rule: one batched inverse FFT of (u, w), one
        forward of u x w."""
        fields = self.fft.irfft(jnp.concatenate([u_hat, self.curl(u_hat)]))
        n_hat = self.fft.rfft(jnp.stack(cross(fields[:3], fields[3:])))
        n_hat = self.project(self.dealias * n_hat)
        if self.forcing_mask is not None:
            n_hat = n_hat + constant_power(u_hat, self.forcing_mask, self.weight, self.fft.size,
                                           params["forcing_power"])
        return n_hat

    # ---- states ------------------------------------------------------------------------------------

    def from_real(self, u: jax.Array) -> jax.Array:
        """Spectrum of a real-space velocity, dealiased and projected (a valid state)."""
        return self.project(self.dealias * self.fft.rfft(u.astype(self.dtype)))

    def initial(self, name: str, options: Any, params: Params | None = None) -> jax.Array:
        build = self.fft.real_jit(lambda eq, c: INITIAL_CONDITIONS[name](eq, c, options), batch_ndim=1)
        return self.from_real(build(self, self.fft.coordinates(self.box, self.dtype)))

    # ---- diagnostics ---------------------------------------------------------------------------------

    def _mean_square(self, f_hat: jax.Array) -> jax.Array:
        """Volume mean of |f|^2 summed over components, from the spectrum (Parseval)."""
        return jnp.sum(self.weight * jnp.abs(f_hat) ** 2) / float(self.fft.size) ** 2

    def diagnostics(self, u_hat: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Energy <|u|^2>/2, enstrophy <|w|^2>/2, dissipation 2 nu Z, max |div u|, CFL number
        dt * max(sum_i |u_i| / dx_i), and when forced the injected power <u . f>."""
        energy = 0.5 * self._mean_square(u_hat)
        enstrophy = 0.5 * self._mean_square(self.curl(u_hat))
        kx, ky, kz = self.k
        div_hat = 1j * (kx * u_hat[0] + ky * u_hat[1] + kz * u_hat[2])
        u = self.fft.irfft(jnp.concatenate([u_hat, div_hat[None]]))
        cfl = dt * jnp.max(sum(jnp.abs(u[i]) / self.spacing[i] for i in range(3)))
        out = {
            "energy": energy,
            "enstrophy": enstrophy,
            "dissipation": 2 * params["viscosity"] * enstrophy,
            "max_div": jnp.max(jnp.abs(u[3])),
            "cfl": cfl,
        }
        if self.forcing_mask is not None:
            f_hat = constant_power(u_hat, self.forcing_mask, self.weight, self.fft.size, params["forcing_power"])
            out["injection"] = jnp.sum(self.weight * jnp.real(jnp.conj(u_hat) * f_hat)) / float(self.fft.size) ** 2
        return out

    def output_fields(self, u_hat: jax.Array) -> dict[str, jax.Array]:
        """Snapshot fields, real space ``(3, Nx, Ny, Nz)``: velocity and vorticity."""
        fields = self.fft.irfft(jnp.concatenate([u_hat, self.curl(u_hat)]))
        return {"velocity": fields[:3], "vorticity": fields[3:]}

    def spectra(self, u_hat: jax.Array) -> dict[str, jax.Array]:
        """Shell-summed energy spectrum E(k), normalised so that sum_k E(k) = energy."""
        power = 0.5 * self.weight * jnp.abs(u_hat) ** 2 / float(self.fft.size) ** 2
        return {"energy": spectra.shell_sum(power, self.k, self.fft.shape, self.box)}

    def params(self, physics_cfg: Any) -> Params:
        """Traced physical parameters: viscosity, and the forcing power when forced."""
        out = {"viscosity": jnp.asarray(physics_cfg.viscosity, self.dtype)}
        if self.forcing_mask is not None:
            out["forcing_power"] = jnp.asarray(physics_cfg.forcing_power, self.dtype)
        return out


def _taylor_green(eq: NavierStokes, c, opt) -> jax.Array:
    x, y, z = (2 * jnp.pi / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = opt.amplitude
    return jnp.stack(jnp.broadcast_arrays(a * jnp.sin(x) * jnp.cos(y) * jnp.cos(z),
                                          -a * jnp.cos(x) * jnp.sin(y) * jnp.cos(z), 0 * x * y * z))


def _abc(eq: NavierStokes, c, opt) -> jax.Array:
    """Arnold-Beltrami-Childress flow, A = B = C = amplitude, at mode ``wavenumber`` (curl u = k u)."""
    m = opt.wavenumber
    x, y, z = (2 * jnp.pi * m / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = opt.amplitude
    return jnp.stack(jnp.broadcast_arrays(a * (jnp.sin(z) + jnp.cos(y)), a * (jnp.sin(x) + jnp.cos(z)),
                                          a * (jnp.sin(y) + jnp.cos(x))))


def _random(eq: NavierStokes, c, opt) -> jax.Array:
    """Solenoidal random field with E(k) ~ k^4 exp(-2 (k/k_peak)^2), energy = amplitude^2 / 2.

    The noise is drawn in real space from ``seed`` with JAX's sharding-invariant counter-based
    generator, so the field is the same on any backend, device or process count.
    """
    shape = (3, *eq.fft.shape)
    draw = eq.fft.real_jit(lambda key: jax.random.normal(key, shape, eq.dtype), batch_ndim=1)
    u_hat = eq.from_real(draw(jax.random.key(opt.seed)))
    kmag = jnp.sqrt(eq.k2) * (eq.box[0] / (2 * jnp.pi))
    shaped = u_hat * kmag * jnp.exp(-((kmag / opt.k_peak) ** 2))  # |u_hat|^2 ~ k^2 e^..., shells add k^2
    u = eq.fft.irfft(shaped)
    return u * (opt.amplitude / jnp.sqrt(jnp.mean(jnp.sum(u**2, axis=0))))


INITIAL_CONDITIONS: dict[str, Callable[[NavierStokes, Sequence[jax.Array], Any], jax.Array]] = {
    "taylor_green": _taylor_green,
    "abc": _abc,
    "random": _random,
}
