"""The planar flow's initial conditions: real-space vorticity ``(1, Nx, Ny)`` (a plane's box,
:mod:`simulator.fft.plane`), each device computing its own block from the coordinates ``c = (0, x, y)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.flow import plane

#: the first zero of the Bessel function J1: k a of the Lamb-Chaplygin dipole
J1_ZERO = 3.8317059702075125


def _plane(eq: Any, c: Sequence[jax.Array]) -> tuple[jax.Array, jax.Array, float, float]:
    """The plane's coordinates (x, y) and sides (Lx, Ly)."""
    return (*eq.xy(c), *eq.lengths)


def taylor_green(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """omega = 2 A sin(2 pi x/Lx) sin(2 pi y/Ly)."""
    x, y, lx, ly = _plane(eq, c)
    omega = 2 * ic.amplitude * jnp.sin(2 * jnp.pi * x / lx) * jnp.sin(2 * jnp.pi * y / ly)
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape)}


def random_vorticity(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """White noise drawn in real space from ``seed`` (:func:`~simulator.equations.noise.white_noise`: the same on
    any layout), shaped to |omega_hat|^2 ~ m^(s+1) exp(-(s/2) (m/k_peak)^2) (a ring of radius m holds m modes and
    |u_hat|^2 = |omega_hat|^2/k^2: E(m) ~ m^s exp(-(s/2) (m/k_peak)^2)), dealiased, scaled to the energy."""
    ops = eq.ops
    omega_hat = plane.random_spectrum(eq, ic.seed, ic.k_peak, ic.slope)
    energy = 0.5 * ops.mean(jnp.abs(omega_hat) ** 2 * ops.inv_k2)
    return {"vorticity": eq.fft.irfft(omega_hat * jnp.sqrt(ic.energy / energy))}


def double_shear_layer(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """omega = dv/dx - du/dy of the two layers u(y') and the perturbation v = delta sin(x')."""
    x, y, lx, ly = _plane(eq, c)
    xs, ys = 2 * jnp.pi * x / lx, 2 * jnp.pi * y / ly
    lower = ic.rho / jnp.cosh(ic.rho * (ys - jnp.pi / 2)) ** 2
    upper = -ic.rho / jnp.cosh(ic.rho * (3 * jnp.pi / 2 - ys)) ** 2
    du_dy = jnp.where(ys <= jnp.pi, lower, upper) * (2 * jnp.pi / ly)
    omega = ic.delta * (2 * jnp.pi / lx) * jnp.cos(xs) - du_dy
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape)}


def bessel(n: int, z: jax.Array, nodes: int = 64) -> jax.Array:
    """J_n(z) = (1/2pi) int_0^2pi cos(n t - z sin t) dt by the trapezoidal rule, exponentially accurate for a
    periodic integrand (to round-off for |z| < 10 with 64 nodes)."""
    t = jnp.arange(nodes) * (2 * jnp.pi / nodes)
    return jnp.mean(jnp.cos(n * t - z[..., None] * jnp.sin(t)), axis=-1)


def dipole(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The Lamb-Chaplygin dipole at the plane's centre: omega = -2 U k J1(k r)/J0(k a) sin(theta) inside r < a."""
    x, y, lx, ly = _plane(eq, c)
    dx, dy = x - lx / 2, y - ly / 2
    r = jnp.sqrt(dx**2 + dy**2)
    k = J1_ZERO / ic.radius
    sin = dy / jnp.where(r > 0, r, 1.0)
    inside = -2 * ic.speed * k * bessel(1, k * r) / bessel(0, J1_ZERO * jnp.ones((), eq.dtype)) * sin
    omega = jnp.where(r < ic.radius, inside, 0.0)
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape)}


BUILDERS = {"taylor_green": taylor_green, "random": random_vorticity, "double_shear_layer": double_shear_layer,
            "dipole": dipole}
