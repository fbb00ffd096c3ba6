"""The shallow-water layer's initial conditions: real-space fields ``velocity`` ``(3, 1, Nx, Ny)`` (u, v, 0) and
``height`` ``(1, Nx, Ny)`` (a plane's box, :mod:`simulator.fft.plane`), each device computing its own block from the
coordinates ``c = (0, x, y)`` (``eq`` the layer, a :class:`~simulator.equations.flow.plane.PlanarFlow`). Balanced
velocities are formed from eta's spectrum, u_hat = (c^2/f) i (-ky, kx) eta_hat, so that f z x u = -c^2 grad eta
holds mode by mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.flow import plane


def _gaussian(eq: Any, c: Sequence[jax.Array], ic: Any) -> jax.Array:
    """A exp(-r^2/(2 sigma^2)) about the plane's centre, ``(1, Nx, Ny)``."""
    (x, y), (lx, ly) = eq.xy(c), eq.lengths
    r2 = (x - lx / 2) ** 2 + (y - ly / 2) ** 2
    return jnp.broadcast_to(ic.amplitude * jnp.exp(-r2 / (2 * ic.width**2)), eq.fft.shape).astype(eq.dtype)


def _fields(eq: Any, u_hat: jax.Array, v_hat: jax.Array, eta_hat: jax.Array) -> dict[str, jax.Array]:
    """Real fields of three spectra: one batched inverse transform."""
    real = eq.fft.irfft(eq.ops.stack([u_hat, v_hat, eta_hat]))
    return {"velocity": jnp.stack([real[0], real[1], jnp.zeros_like(real[0])]), "height": real[2]}


def balanced(eq: Any, eta_hat: jax.Array, params: Params) -> dict[str, jax.Array]:
    """eta and its geostrophic velocity u = (c^2/f) z x grad eta, i.e. u_hat = -(c^2/f) i ky eta_hat, v_hat =
    (c^2/f) i kx eta_hat (dealiased, as every state is)."""
    eta_hat = eq.ops.dealias * eta_hat
    g = params["wave_speed"] ** 2 / params["coriolis"]
    return _fields(eq, -1j * g * eq.ky * eta_hat, 1j * g * eq.kx * eta_hat, eta_hat)


def bump(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """At rest, eta a Gaussian bump."""
    eta = _gaussian(eq, c, ic)
    return {"velocity": jnp.zeros((3, *eta.shape), eta.dtype), "height": eta}


def vortex(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A Gaussian eta and its geostrophic velocity (:func:`balanced`)."""
    return balanced(eq, eq.fft.rfft(_gaussian(eq, c, ic)), params)


def _scaled(eq: Any, f_hat: jax.Array, rms: Any) -> jax.Array:
    """``f_hat`` scaled to the rms ``rms`` in real space (Parseval)."""
    return f_hat * (rms / jnp.sqrt(jnp.maximum(eq.ops.mean(jnp.abs(f_hat) ** 2), jnp.finfo(eq.dtype).tiny)))


def random_balanced(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A random eta of :func:`~simulator.equations.flow.plane.random_spectrum` (ns2d's shape) scaled to
    ``eta_rms``, and its geostrophic velocity."""
    eta_hat = _scaled(eq, plane.random_spectrum(eq, ic.seed, ic.k_peak, ic.slope), ic.eta_rms)
    return balanced(eq, eta_hat, params)


def random_unbalanced(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A rotational velocity from a random vorticity (seed), a divergent one from a random divergence (seed + 1),
    each the spectrum of ns2d's random vorticity, holding the shares 1 - ``divergent`` and ``divergent`` of
    ``energy``; an independent eta (seed + 2) of rms ``eta_rms``."""
    ops = eq.ops
    kx, ky = eq.kx, eq.ky
    psi = plane.random_spectrum(eq, ic.seed, ic.k_peak, ic.slope) * ops.inv_k2  # zeta_hat / k^2
    phi = -plane.random_spectrum(eq, ic.seed + 1, ic.k_peak, ic.slope) * ops.inv_k2  # -delta_hat / k^2
    rotational = jnp.stack(eq.perp(psi))
    divergent = jnp.stack([1j * kx * phi, 1j * ky * phi])

    def share(w_hat: jax.Array, energy: Any) -> jax.Array:
        return w_hat * jnp.sqrt(2 * energy / jnp.maximum(ops.mean(jnp.abs(w_hat) ** 2), jnp.finfo(eq.dtype).tiny))

    w_hat = share(rotational, ic.energy * (1 - ic.divergent)) + share(divergent, ic.energy * ic.divergent)
    eta_hat = _scaled(eq, plane.random_spectrum(eq, ic.seed + 2, ic.k_peak, ic.slope), ic.eta_rms)
    return _fields(eq, w_hat[0], w_hat[1], eta_hat)


BUILDERS = {"bump": bump, "vortex": vortex, "random_balanced": random_balanced, "random": random_unbalanced}
