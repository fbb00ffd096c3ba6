"""Forcing for statistically stationary turbulence, composed into the velocity's right-hand side of every flow
equation (Navier-Stokes, Boussinesq, MHD: :meth:`simulator.equations.operators.SpectralOperators.forcing`).

Both schemes are linear in the velocity, f = A u on a set of modes, with the coefficient chosen from
the current energy of those modes so that the injected power is exactly ``forcing_power`` at every
instant: A = P / (2 E_forced). This is Lundgren's linear forcing (Lundgren 2003; Rosales & Meneveau
2005, Phys. Fluids 17, 095106) on all resolved modes (``linear``), or the same restricted to a
low-wavenumber band 0 < |k| L/2pi <= ``forcing_band`` (``band``, a constant-power variant of Alvelius
1999). A forced run settles where the dissipation balances P on average. f is solenoidal and
dealiased because u is.

A scheme is a mask builder ``(modes, held, band) -> mask`` in :data:`FORCING_MASKS`; ``modes`` are the
integer mode numbers in the FFT backend's k-space layout, ``held`` 1 on the modes a state may hold (the
2/3 rule's; every mode under a smooth filter), else 0. A mask is 0 or 1 per mode: with a fractional
one the power f injects would not be the P its coefficient is made for. A flow equation hands its
:class:`Forcing` to its spectral operators (injected: the operators know no forcing scheme).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp


def _all_modes(modes: Sequence[jax.Array], held: jax.Array, band: float) -> jax.Array:
    return held


def _band(modes: Sequence[jax.Array], held: jax.Array, band: float) -> jax.Array:
    m2 = modes[0] ** 2 + modes[1] ** 2 + modes[2] ** 2
    return held * ((m2 > 0) & (m2 <= band**2)).astype(held.dtype)


FORCING_MASKS: dict[str, Callable[[Sequence[jax.Array], jax.Array, float], jax.Array] | None] = {
    "none": None,
    "linear": _all_modes,
    "band": _band,
}


def constant_power(u_hat: jax.Array, mask: jax.Array, weight: jax.Array, size: int, power: jax.Array) -> jax.Array:
    """f_hat = P / (2 E_m) * mask * u_hat, with E_m = sum(weight * mask * |u_hat|^2) / (2 N^2).

    Spectral arrays ``(3, *k_shape)`` in the backend's layout; zero where the forced modes hold no
    energy (nothing to amplify).
    """
    forced = mask * u_hat
    energy = 0.5 * jnp.sum(weight * jnp.abs(forced) ** 2) / float(size) ** 2
    coefficient = jnp.where(energy > 0, power / (2 * jnp.where(energy > 0, energy, 1.0)), 0.0)
    return coefficient * forced


@dataclass(frozen=True)
class Forcing:
    """A flow's forcing, ``physics.forcing`` (a scheme of :data:`FORCING_MASKS`) on the band ``physics.forcing_band``:
    static structure of the spectral operators it is handed to (hashable), applied by
    :meth:`simulator.equations.operators.SpectralOperators.forcing`."""

    scheme: str = "none"
    band: float = 0.0

    def __call__(self, ops: Any, u_hat: jax.Array, params: dict[str, jax.Array]) -> jax.Array | None:
        """The constant-power forcing of ``u_hat`` at the traced ``params["forcing_power"]`` on the modes of
        ``ops`` (mode numbers, held modes, Parseval weights), or None for the scheme ``none``."""
        mask = FORCING_MASKS[self.scheme]
        if mask is None:
            return None
        return constant_power(u_hat, mask(ops.modes, ops.held, self.band), ops.weight, ops.fft.size,
                              params["forcing_power"])
