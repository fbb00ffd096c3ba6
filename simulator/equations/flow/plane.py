"""What the planar flows share (the stratified and the magnetised plane): the in-plane vector of a z potential, a
random field of a chosen spectrum, the enstrophy cascade's dissipative scale and the plane's resolved wavenumber.

A plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): spectra are ``k_shape``, the wavenumbers
``ops.k = (0, kx, ky)``; ``eq`` is a planar equation with ``fft``, ``box``, ``dtype`` and spectral operators ``ops``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params
from simulator.equations.noise import white_noise


def perp(ops: Any, f_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The in-plane vector (d f/dy, -d f/dx) of a z potential f: i (ky, -kx) f_hat (u of psi, B of A)."""
    return 1j * ops.k[2] * f_hat, -1j * ops.k[1] * f_hat


def random_spectrum(eq: Any, seed: jax.Array, k_peak: Any, slope: Any) -> jax.Array:
    """A random field's dealiased spectrum: white noise drawn in real space from ``seed``
    (:func:`~simulator.equations.noise.white_noise`: the same on any layout), shaped to |f_hat|^2 ~ m^(s+1)
    exp(-(s/2) (m/k_peak)^2), m = |k| max(L)/2pi: as a vorticity, a ring of radius m holding m modes and |u_hat|^2 =
    |f_hat|^2/k^2, its energy spectrum is E(m) ~ m^s exp(-(s/2) (m/k_peak)^2), peaked at k_peak. Unnormalised."""
    ops = eq.ops
    m = jnp.sqrt(ops.k2) * (max(eq.box) / (2 * jnp.pi))
    shape = m ** ((slope + 1) / 2) * jnp.exp(-(slope / 4) * (m / k_peak) ** 2)
    return ops.dealias * shape * eq.fft.rfft(white_noise(eq.fft, jax.random.key(seed), eq.dtype))


def enstrophy_scale(params: Params, physics: Any, chi: jax.Array) -> jax.Array:
    """The smallest scale of the enstrophy cascade dissipating ``chi``: (nu^3/chi)^(1/6) (Kraichnan 1967), or with
    hyperviscosity the larger of it and (nu_p^3/chi)^(1/(6p)), each formed without underflow in float32
    (:func:`~simulator.equations.resolution.cube_root_scale`); chi = 0 gives a large finite scale, not inf."""
    eta = resolution.cube_root_scale(params["viscosity"], chi, 1 / 6, jnp)
    if physics.hyperviscous:
        eta = jnp.maximum(eta, hyperdiffusive_scale(params["hyperviscosity"], chi, physics.hyperviscosity_order))
    return eta


def hyperdiffusive_scale(coefficient: jax.Array, chi: jax.Array, order: int) -> jax.Array:
    """The enstrophy cascade's end (c^3/chi)^(1/(6p)) under a hyperdiffusion c (-lap)^p (p = ``order``)."""
    return resolution.cube_root_scale(coefficient, chi, 1 / (6 * order), jnp)


def kmax(eq: Any) -> float:
    """The 2/3 rule's cutoff (2/3) min pi N_i/L_i over the plane's two axes (the box's one-cell axis left out)."""
    return resolution.dealiased_kmax(eq.fft.shape[1:], eq.box[1:])
