"""Schrodinger-Poisson: self-gravitating fuzzy (wave) dark matter in a periodic box.

    i dpsi/dt = -(nu/2) lap(psi) + (V/nu) psi,    lap(V) = 4 pi G (|psi|^2 - mean |psi|^2),

with nu = hbar/m (the only place the particle mass enters). This is i hbar dpsi/dt =
-hbar^2/(2m) lap(psi) + m V psi divided by hbar, with psi normalised so that |psi|^2 is the mass density.

Units: any consistent set; the code assumes none. Lengths in the unit of ``grid.box``, time in the
unit of ``time.dt``, density rho = |psi|^2 in mass per volume, ``physics.G`` in length^3 / (mass
time^2) and ``physics.hbar_over_m`` in length^2 / time. Example: kpc, Gyr and 1e10 Msun give
G = 4.50e4, and hbar/m = 1.96e-2 for a boson of mass m = 1e-22 eV. The shipped configs use
G = 1 and mean density 1, so the gravitational rate sqrt(4 pi G rho) is 3.54.

Diagnostics are box totals: mass M = int rho dV; kinetic K = (nu^2/2) int |grad psi|^2 dV (from the
spectrum); potential W = (1/2) int rho V dV; total E = K + W (conserved); max density; CFL number
dt / min(dx^2 / (6 nu), nu / max|V|) (Mocz et al. 2017 time-step limits; <= 1 keeps every phase step
below one radian).

Time stepping: kick-drift-kick (:func:`simulator.integrators.make_kdk`). The kick multiplies psi by
exp(-i V dt/nu) in real space (|psi| unchanged, so V is unchanged); the drift multiplies psi_hat by
exp(-i nu k^2 dt/2), exact in k-space, then refreshes V from the new density. Both parts are unitary,
so mass is conserved to round-off. Mocz et al. 2017, MNRAS 471, 4559; Woo & Chiueh 2009, ApJ 697, 850.

Arrays: the state is :class:`SPState`, psi (complex) and V (real), both ``(Nx, Ny, Nz)`` in the FFT
backend's real-space layout. The kinetic drift uses the complex transform (full spectrum); the Poisson
solve the real one, with every Nyquist plane of the density dropped so that backends with and without
a real transform solve the same problem.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator import spectra
from simulator.fft import FFTBackend
from simulator.fft.base import complex_dtype
from simulator.physics.base import Equation
from simulator.physics.gravity import inverse_laplacian, potential_spectrum

Params = dict[str, jax.Array]


class SPState(NamedTuple):
    """psi (complex) and its potential V (real): ``(Nx, Ny, Nz)`` each, real-space layout."""

    psi: jax.Array
    potential: jax.Array


class SchrodingerPoisson(Equation):
    """The equation: kick and drift operators, potential, initial states and diagnostics.

    A pytree like :class:`~simulator.physics.navier_stokes.NavierStokes`: wavenumber vectors and masks
    are leaves, the FFT backend and box are static.
    """

    name = "schrodinger_poisson"
    integrators = ("kdk",)
    progress = ("total", "max_density", "cfl")
    state_space = "real"
    _LEAVES = ("kc", "kr", "nyquist_free", "weight")
    _STATIC = ("fft", "box", "dtype", "spacing")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any):
        self.fft, self.box, self.dtype = fft, tuple(float(b) for b in box), jnp.dtype(dtype)
        self.kc = fft.wavenumbers(self.box, real=False, dtype=self.dtype)
        self.kr = fft.wavenumbers(self.box, real=True, dtype=self.dtype)
        modes = fft.wavenumbers((2 * jnp.pi,) * 3, real=True, dtype=self.dtype)
        keep = [jnp.abs(m) < n / 2 for m, n in zip(modes, fft.shape, strict=True)]
        self.nyquist_free = (keep[0] & keep[1] & keep[2]).astype(self.dtype)
        self.weight = fft.parseval_weight(real=True, dtype=self.dtype)
        self.spacing = tuple(b / n for b, n in zip(self.box, fft.shape, strict=True))

    @classmethod
    def from_config(cls, fft: FFTBackend, cfg: Any, dtype: Any) -> SchrodingerPoisson:
        return cls(fft, cfg.grid.box, dtype)

    @property
    def cell_volume(self) -> float:
        return math.prod(self.spacing)

    # ---- operators -----------------------------------------------------------------------------------

    def potential(self, psi: jax.Array, params: Params) -> jax.Array:
        """V from lap(V) = 4 pi G (|psi|^2 - mean), real space."""
        rho_hat = self.nyquist_free * self.fft.rfft(jnp.abs(psi) ** 2)
        return self.fft.irfft(potential_spectrum(rho_hat, inverse_laplacian(self.kr), params["G"]))

    def kick(self, state: SPState, dt: jax.Array, params: Params) -> SPState:
        """psi <- exp(-i V dt / nu) psi: the potential part, exact for fixed V."""
        return SPState(state.psi * jnp.exp(-1j * (dt / params["hbar_over_m"]) * state.potential), state.potential)

    def drift(self, state: SPState, dt: jax.Array, params: Params) -> SPState:
        """psi_hat <- exp(-i nu k^2 dt / 2) psi_hat: the kinetic part, exact; then V of the new density."""
        kx, ky, kz = self.kc
        phase = jnp.exp(-0.5j * (params["hbar_over_m"] * dt) * (kx**2 + ky**2 + kz**2))
        psi = self.fft.ifft(phase * self.fft.fft(state.psi))
        return SPState(psi, self.potential(psi, params))

    # ---- states --------------------------------------------------------------------------------------

    def initial(self, name: str, options: Any, params: Params) -> SPState:
        build = self.fft.real_jit(
            lambda eq, c, p: INITIAL_CONDITIONS[name](eq, c, options, p).astype(complex_dtype(eq.dtype)))
        psi = build(self, self.fft.coordinates(self.box, self.dtype), params)
        return SPState(psi, self.potential(psi, params))

    # ---- diagnostics ---------------------------------------------------------------------------------

    def diagnostics(self, state: SPState, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Box totals: mass, kinetic, potential and total energy; max density; CFL number."""
        nu = params["hbar_over_m"]
        rho = jnp.abs(state.psi) ** 2
        kx, ky, kz = self.kc
        grad2 = jnp.sum((kx**2 + ky**2 + kz**2) * jnp.abs(self.fft.fft(state.psi)) ** 2) / float(self.fft.size)
        kinetic = 0.5 * nu**2 * grad2 * self.cell_volume
        potential = 0.5 * jnp.sum(rho * state.potential) * self.cell_volume
        rate = jnp.maximum(6 * nu / min(self.spacing) ** 2, jnp.max(jnp.abs(state.potential)) / nu)
        return {
            "mass": jnp.sum(rho) * self.cell_volume,
            "kinetic": kinetic,
            "potential": potential,
            "total": kinetic + potential,
            "max_density": jnp.max(rho),
            "cfl": dt * rate,
        }

    def output_fields(self, state: SPState) -> dict[str, jax.Array]:
        """Snapshot fields, real space ``(Nx, Ny, Nz)``: density |psi|^2, |psi|, phase arg(psi), potential V."""
        return {"density": jnp.abs(state.psi) ** 2, "abs_psi": jnp.abs(state.psi), "phase": jnp.angle(state.psi),
                "potential": state.potential}

    def spectra(self, state: SPState) -> dict[str, jax.Array]:
        """Shell-summed power spectrum of the density contrast delta = rho/mean(rho) - 1 (sums to <delta^2>)."""
        rho = jnp.abs(state.psi) ** 2
        delta_hat = self.fft.rfft(rho / jnp.mean(rho) - 1)
        power = self.weight * jnp.abs(delta_hat) ** 2 / float(self.fft.size) ** 2
        return {"density": spectra.shell_sum(power, self.kr, self.fft.shape, self.box)}

    def params(self, physics_cfg: Any) -> Params:
        """Traced physical parameters: hbar/m and G."""
        return {"hbar_over_m": jnp.asarray(physics_cfg.hbar_over_m, self.dtype),
                "G": jnp.asarray(physics_cfg.G, self.dtype)}


# ---- initial conditions: psi in real space ------------------------------------------------------------


def _jeans(eq: SchrodingerPoisson, c, opt, params) -> jax.Array:
    """psi = sqrt(rho0 (1 + eps cos(k x))), at rest: a density wave along x at mode ``wavenumber``.

    Linear theory (delta << 1): delta(t) = eps cosh(gamma t) with gamma^2 = 4 pi G rho0 - nu^2 k^4 / 4
    when positive (Jeans-unstable), else eps cos(omega t) with omega^2 = -gamma^2.
    """
    x = 2 * jnp.pi * opt.wavenumber / eq.box[0] * c[0]
    rho = opt.density * (1 + opt.amplitude * jnp.cos(x))
    return jnp.broadcast_to(jnp.sqrt(rho), eq.fft.shape)


@functools.lru_cache(maxsize=1)
def soliton_profile(r_max: float = 12.0, dr: float = 4e-3) -> tuple[np.ndarray, np.ndarray, float]:
    """The Schrodinger-Poisson ground state in units nu = G = 1 with psi(0) = 1, by shooting.

    Solves phi'' + 2 phi'/r = 2 U phi, U'' + 2 U'/r = 4 pi phi^2 (U = V - E) from phi(0) = 1,
    bisecting on U(0) for the nodeless solution that decays. Returns (r, phi, r0) with r0 the radius
    where phi^2 = 1/2; phi is set to 0 past the point where the shot leaves the bound state (phi is
    below 1e-3 there). Scaling: lambda^2 phi(lambda r) is also a solution.
    """

    def rhs(r, y):
        p, dp, u, du = y
        return (dp, 2 * u * p - 2 * dp / r, du, 4 * math.pi * p * p - 2 * du / r)

    def shoot(u0):
        r, y, rs, ps = dr * 1e-3, (1.0, 0.0, u0, 0.0), [0.0], [1.0]
        while r < r_max:
            k1 = rhs(r, y)
            k2 = rhs(r + dr / 2, [a + dr / 2 * b for a, b in zip(y, k1, strict=True)])
            k3 = rhs(r + dr / 2, [a + dr / 2 * b for a, b in zip(y, k2, strict=True)])
            k4 = rhs(r + dr, [a + dr * b for a, b in zip(y, k3, strict=True)])
            y = tuple(a + dr / 6 * (b + 2 * c + 2 * d + e) for a, b, c, d, e in zip(y, k1, k2, k3, k4, strict=True))
            r += dr
            rs.append(r)
            ps.append(y[0])
            if y[0] < 0 or y[1] > 0:  # crossed zero (U(0) too deep) or turned up (too shallow)
                return (-1 if y[0] < 0 else 1), rs, ps
        return 0, rs, ps

    lo, hi = -5.0, 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        sign, rs, ps = shoot(mid)
        lo, hi = (mid, hi) if sign < 0 else (lo, mid)
    r, phi = np.array(rs), np.clip(np.array(ps), 0.0, None)
    phi[-1] = 0.0
    r0 = float(np.interp(-0.5, -(phi**2), r))  # phi^2 decreases monotonically on the kept range
    return r, phi, r0


def _soliton(eq: SchrodingerPoisson, c, opt, params) -> jax.Array:
    """The ground-state soliton with core radius r_c = ``core_radius`` (where rho = rho_c / 2) at the
    box centre, on a background of density ``density`` * ``amplitude`` (0 = none).

    rho_c = (nu^2 / G) (r0 / r_c)^4 follows from the ground state's scaling; r0 ~= 0.69 in units
    nu = G = 1 (it reproduces Schive et al. 2014's rho_c = 1.9 (m/1e-23 eV)^-2 (r_c/kpc)^-4 Msun/pc^3).
    """
    r_tab, phi_tab, r0 = soliton_profile()
    scale = opt.core_radius / r0
    r2 = 0.0
    for ci, length in zip(c, eq.box, strict=True):
        d = ci - length / 2
        r2 = r2 + d**2
    amp = params["hbar_over_m"] / (jnp.sqrt(params["G"]) * scale**2)
    psi = amp * jnp.interp(jnp.sqrt(r2) / scale, jnp.asarray(r_tab, eq.dtype), jnp.asarray(phi_tab, eq.dtype))
    return jnp.sqrt(psi**2 + opt.density * opt.amplitude)


def _random(eq: SchrodingerPoisson, c, opt, params) -> jax.Array:
    """A cold random density field that collapses into halos: rho = rho0 exp(d) / mean(exp(d)), d a
    Gaussian random field of rms ``amplitude`` with spectrum ~ k^4 exp(-2 (k/k_peak)^2) (log-normal,
    so rho > 0), psi = sqrt(rho) at rest. Drawn from ``seed`` with JAX's sharding-invariant generator:
    the same field on any backend, device or process count.
    """
    draw = eq.fft.real_jit(lambda key: jax.random.normal(key, eq.fft.shape, eq.dtype))
    noise_hat = eq.nyquist_free * eq.fft.rfft(draw(jax.random.key(opt.seed)))
    kx, ky, kz = eq.kr
    kmag = jnp.sqrt(kx**2 + ky**2 + kz**2) * (eq.box[0] / (2 * jnp.pi))
    d = eq.fft.irfft(noise_hat * kmag**2 * jnp.exp(-((kmag / opt.k_peak) ** 2)))
    d = d * (opt.amplitude / jnp.sqrt(jnp.mean(d**2)))
    rho = jnp.exp(d)
    return jnp.sqrt(opt.density * rho / jnp.mean(rho))


INITIAL_CONDITIONS: dict[str, Callable[[SchrodingerPoisson, Sequence[jax.Array], Any, Params], jax.Array]] = {
    "jeans": _jeans,
    "soliton": _soliton,
    "random": _random,
}
