"""What the flow equations' implementations share: the velocity of a state, the hyperviscosity switch and
the initial velocity fields (Navier-Stokes's, which Boussinesq and MHD start from too).

A builder takes ``eq``, any flow equation with ``fft``, ``box``, ``dtype`` and spectral operators ``ops``
(:class:`~simulator.equations.operators.SpectralOperators`), the real-space coordinates ``c`` and the
initial condition ``ic`` (any object with the attributes it reads), and returns real-space fields
``(3, Nx, Ny, Nz)`` in the backend's real layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.noise import white_noise


class FlowEquation:
    """Mixin of a flow equation whose state starts with the velocity spectrum ``(3, *k_shape)`` and whose
    static ``physics`` is a :class:`~simulator.equations.flow.FlowParams` (before the equation base class
    in the bases)."""

    def velocity_spectrum(self, state: jax.Array) -> jax.Array:
        """The velocity spectrum ``(3, *k_shape)`` of a state (what Lagrangian particles are advected by:
        :mod:`simulator.particles.flow`)."""
        return state[:3]

    @property
    def hyperviscous(self) -> bool:
        """Whether the program has the hyperviscous terms (``physics.hyperviscosity_order`` set: structure)."""
        return self.physics.hyperviscous  # type: ignore[attr-defined]


def peaked(eq: Any, noise_hat: jax.Array, k_peak: Any) -> jax.Array:
    """``noise_hat`` times k exp(-(k/k_peak)^2), k the mode number |k| L_x/2pi: white noise so shaped has
    the spectrum k^4 exp(-2 (k/k_peak)^2) (|f_hat|^2 ~ k^2 e^..., and shells add k^2)."""
    kmag = jnp.sqrt(eq.ops.k2) * (eq.box[0] / (2 * jnp.pi))
    return noise_hat * kmag * jnp.exp(-((kmag / k_peak) ** 2))


def abc(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Arnold-Beltrami-Childress flow, A = B = C = amplitude, at mode ``wavenumber`` (curl u = k u)."""
    m = ic.wavenumber
    x, y, z = (2 * jnp.pi * m / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = ic.amplitude
    u = jnp.stack(jnp.broadcast_arrays(a * (jnp.sin(z) + jnp.cos(y)), a * (jnp.sin(x) + jnp.cos(z)),
                                       a * (jnp.sin(y) + jnp.cos(x))))
    return {"velocity": u}


def random_velocity(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Solenoidal random field with E(k) ~ k^4 exp(-2 (k/k_peak)^2) (:func:`peaked`), rms velocity =
    amplitude, from ``seed``.

    The noise is drawn in real space from ``seed`` with JAX's sharding-invariant counter-based
    generator (:func:`~simulator.equations.noise.white_noise`), so the field is the same on any platform,
    backend, device or process count, and in float32 and float64 runs up to float32 round-off.
    """
    u_hat = eq.ops.project(eq.ops.dealias * eq.fft.rfft(white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype, 3)))
    u = eq.fft.irfft(peaked(eq, u_hat, ic.k_peak))
    return {"velocity": u * (ic.amplitude / jnp.sqrt(jnp.mean(jnp.sum(u**2, axis=0))))}
