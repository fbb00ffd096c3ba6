"""Incompressible Navier-Stokes in a periodic box, pseudo-spectral: the implementation.

    du/dt = u x w - grad(p + |u|^2/2) + nu lap(u) (+ f),   div u = 0,   w = curl u

Rotational form; the pressure gradient is removed by the Leray projection P = I - k k^T / k^2; the
nonlinear term is dealiased with the 2/3 rule (modes with |m_i| >= N_i/3 zeroed); the viscous term is
the diagonal linear operator -nu k^2, integrated exactly by the integrating-factor schemes
(Orszag 1971; Canuto, Hussaini, Quarteroni & Zang, Spectral Methods, 2006, §3.3-3.4; Rogallo 1981).
Optional forcing (:mod:`.forcing`) is one more term of the right-hand side.

Arrays: the state ``u_hat`` is the velocity's real-to-complex spectrum, shape ``(3, *k_shape)`` in the
FFT backend's k-space layout and sharding; real-space fields are ``(3, Nx, Ny, Nz)`` in its real
layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp

from simulator import spectra
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.navier_stokes import INFO, NavierStokesParams
from simulator.equations.navier_stokes.forcing import FORCING_MASKS, constant_power
from simulator.fft import FFTBackend


def cross(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> list[jax.Array]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


@final
class NavierStokes(SemiLinearEquation):
    """Nonlinear term, viscous operator, diagnostics and spectra on one FFT backend.

    Leaves: the wavenumbers ``k`` and integer mode numbers ``modes`` (three broadcasting vectors each),
    the per-axis 2/3-rule masks ``keep`` and the Parseval weights, all sharded like the spectra. Every
    3D combination of them (k^2, 1/k^2, the dealiasing and forcing masks, the integrating factor) is
    formed inside the elementwise kernels that use it, never stored: at 1024^3 each would cost GBs.
    """

    info = INFO
    space = "spectral"
    _LEAVES: ClassVar[tuple[str, ...]] = ("k", "modes", "keep", "weight")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: NavierStokesParams | None = None):
        physics = NavierStokesParams() if physics is None else physics
        super().__init__(fft, box, dtype, physics)
        self.k = tuple(fft.wavenumbers(self.box, real=True, dtype=self.dtype))
        self.modes = tuple(fft.wavenumbers((2 * jnp.pi,) * 3, real=True, dtype=self.dtype))
        self.keep = tuple((jnp.abs(m) < n / 3).astype(self.dtype) for m, n in zip(self.modes, fft.shape, strict=True))
        self.weight = fft.parseval_weight(real=True, dtype=self.dtype)

    def dealias(self, f_hat: jax.Array) -> jax.Array:
        """``f_hat`` with the 2/3 rule applied: modes with |m_i| >= N_i/3 on any axis zeroed."""
        return f_hat * self.keep[0] * self.keep[1] * self.keep[2]

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

    def exp_linear(self, u_hat: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        """exp(-nu k^2 tau) u_hat, applied as exp(-nu kx^2 tau) exp(-nu ky^2 tau) exp(-nu kz^2 tau): three
        1D factors, so no exponential is taken per mode and no 3D factor exists."""
        for k in self.k:
            u_hat = u_hat * jnp.exp(-params["viscosity"] * tau * k**2)
        return u_hat

    def forcing(self, u_hat: jax.Array, params: Params) -> jax.Array | None:
        mask = FORCING_MASKS[self.physics.forcing]
        if mask is None:
            return None
        return constant_power(u_hat, mask(self.modes, self.dealias, self.physics.forcing_band), self.weight,
                              self.fft.size, params["forcing_power"])

    def nonlinear(self, u_hat: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """P[(u x w)^] (+ forcing), dealiased by the 2/3 rule: an inverse FFT of u, one of w, a forward
        one of u x w. Two inverses of three fields rather than one of six: the peak memory holds u, w
        and one spectrum of three fields, not two spectra of six, for the same FFT work."""
        u = self.fft.irfft(u_hat)
        w = self.fft.irfft(self.curl(u_hat))
        n_hat = self.project(self.dealias(self.fft.rfft(jnp.stack(cross(u, w)))))
        f_hat = self.forcing(u_hat, params)
        return n_hat if f_hat is None else n_hat + f_hat

    # ---- states ------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """Spectrum of a real-space ``velocity`` ``(3, Nx, Ny, Nz)``, dealiased and projected (a valid state)."""
        return self.project(self.dealias(self.fft.rfft(fields["velocity"].astype(self.dtype))))

    def fields(self, u_hat: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Real space ``(3, Nx, Ny, Nz)``: velocity and vorticity (an inverse transform each, so that only
        one three-field spectrum is held beside the results)."""
        return {"velocity": self.fft.irfft(u_hat), "vorticity": self.fft.irfft(self.curl(u_hat))}

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
        u = self.fft.irfft(u_hat)
        cfl = dt * jnp.max(sum(jnp.abs(u[i]) / self.spacing[i] for i in range(3)))
        div = self.fft.irfft(1j * (kx * u_hat[0] + ky * u_hat[1] + kz * u_hat[2]))
        out = {
            "energy": energy,
            "enstrophy": enstrophy,
            "dissipation": 2 * params["viscosity"] * enstrophy,
            "max_div": jnp.max(jnp.abs(div)),
            "cfl": cfl,
        }
        f_hat = self.forcing(u_hat, params)
        if f_hat is not None:
            out["injection"] = jnp.sum(self.weight * jnp.real(jnp.conj(u_hat) * f_hat)) / float(self.fft.size) ** 2
        return out

    def spectra(self, u_hat: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Shell-summed energy spectrum E(k), normalised so that sum_k E(k) = energy."""
        power = 0.5 * self.weight * jnp.abs(u_hat) ** 2 / float(self.fft.size) ** 2
        return {"energy": spectra.shell_sum(power, self.k, self.fft.shape, self.box)}


# ---- initial conditions: real-space velocity (3, Nx, Ny, Nz) --------------------------------------------


def _taylor_green(eq: NavierStokes, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    x, y, z = (2 * jnp.pi / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = ic.amplitude
    u = jnp.stack(jnp.broadcast_arrays(a * jnp.sin(x) * jnp.cos(y) * jnp.cos(z),
                                       -a * jnp.cos(x) * jnp.sin(y) * jnp.cos(z), 0 * x * y * z))
    return {"velocity": u}


def _abc(eq: NavierStokes, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Arnold-Beltrami-Childress flow, A = B = C = amplitude, at mode ``wavenumber`` (curl u = k u)."""
    m = ic.wavenumber
    x, y, z = (2 * jnp.pi * m / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = ic.amplitude
    u = jnp.stack(jnp.broadcast_arrays(a * (jnp.sin(z) + jnp.cos(y)), a * (jnp.sin(x) + jnp.cos(z)),
                                       a * (jnp.sin(y) + jnp.cos(x))))
    return {"velocity": u}


def _random(eq: NavierStokes, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Solenoidal random field with E(k) ~ k^4 exp(-2 (k/k_peak)^2), rms velocity = amplitude.

    The noise is drawn in real space from ``seed`` with JAX's sharding-invariant counter-based
    generator, always in float32 and then cast, so the field is the same on any backend, device or
    process count, and in float32 and float64 runs up to float32 round-off.
    """
    shape = (3, *eq.fft.shape)
    draw = eq.fft.real_jit(lambda key: jax.random.normal(key, shape, jnp.float32).astype(eq.dtype), batch_ndim=1)
    u_hat = eq.from_fields({"velocity": draw(jax.random.key(ic.seed))}, params)
    kmag = jnp.sqrt(eq.k2) * (eq.box[0] / (2 * jnp.pi))
    shaped = u_hat * kmag * jnp.exp(-((kmag / ic.k_peak) ** 2))  # |u_hat|^2 ~ k^2 e^..., shells add k^2
    u = eq.fft.irfft(shaped)
    return {"velocity": u * (ic.amplitude / jnp.sqrt(jnp.mean(jnp.sum(u**2, axis=0))))}


NavierStokes.builders = {"taylor_green": _taylor_green, "abc": _abc, "random": _random}
