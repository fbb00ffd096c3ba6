"""Self-gravity on the periodic box: the Poisson equation lap(V) = 4 pi G (rho - mean(rho)).

In k-space V_hat = -4 pi G rho_hat / k^2 for k != 0. The k = 0 mode is set to zero explicitly: on a
periodic box only the density contrast gravitates (the "Jeans swindle"; Binney & Tremaine 2008,
§5.2) and the potential is defined up to a constant, fixed here by mean(V) = 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from simulator.equations.operators import inverse_k2


def inverse_laplacian(k: Sequence[jax.Array]) -> jax.Array:
    """-1/k^2 per mode, and 0 at k = 0 (broadcasts like the wavenumbers ``k`` it is built from)."""
    return -inverse_k2(k)


def potential_spectrum(rho_hat: jax.Array, inv_lap: jax.Array, G: jax.Array) -> jax.Array:
    """V_hat = 4 pi G inv_lap rho_hat: the Poisson solve on a spectrum in any backend layout.

    ``inv_lap`` comes from :func:`inverse_laplacian` with the wavenumbers of ``rho_hat``'s layout; its
    zero at k = 0 drops the mean density.
    """
    return (4 * jnp.pi * G) * inv_lap * rho_hat
