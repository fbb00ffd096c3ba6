"""What the equations between free-slip plates share (:mod:`simulator.fft.walls`): their spectral operators, the
free-fall units' coefficients, the grid's heights and the Nusselt number at each plate.

Spectra are walled spectra ``(*batch, Nx, Ny, Nz)``: the full complex spectrum of the periodic axes by the sine or
cosine entries ``n = 0 .. Nz - 1`` of the bounded last axis (a plane's box ``(1, Nx, Nz)`` alike, its first axis
holding k = 0 only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.operators import inverse_k2
from simulator.fft import FFTBackend


@jax.tree_util.register_pytree_node_class
class WalledOperators:
    """Wavenumbers ``k = (k_x, k_y, k_z)`` of walled spectra (:meth:`~simulator.fft.walls.WalledTransforms.
    wall_wavenumbers`: ``2 pi m / L`` along the periodic axes, ``n pi / H`` across the plates), their Parseval weights
    and the 2/3 rule's mask (|m| < N/3 along a periodic axis, n < 2 Nz/3 across the plates: the rule of the
    series' 2 Nz-point periodic extension); sharded leaves, the backend static."""

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any):
        self.fft = fft
        self.k = tuple(fft.wall_wavenumbers(tuple(box), dtype))
        self.weight = fft.wall_parseval_weight(dtype)
        keep = [jnp.abs(self.k[a] * (box[a] / (2 * jnp.pi))) < fft.shape[a] / 3 for a in range(2)]
        keep.append(self.k[2] * (box[2] / jnp.pi) < 2 * fft.shape[2] / 3)
        self.dealias = (keep[0] & keep[1] & keep[2]).astype(dtype)

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return (self.k, self.weight, self.dealias), (self.fft,)

    @classmethod
    def tree_unflatten(cls, static: tuple[Any, ...], leaves: tuple[Any, ...]) -> WalledOperators:
        obj = object.__new__(cls)
        obj.fft, (obj.k, obj.weight, obj.dealias) = static[0], leaves
        return obj

    @property
    def k2(self) -> jax.Array:
        return self.k[0] ** 2 + self.k[1] ** 2 + self.k[2] ** 2

    @property
    def inv_k2(self) -> jax.Array:
        """1/k^2, 0 at k = 0."""
        return inverse_k2(self.k)

    def mean(self, density: jax.Array) -> jax.Array:
        """Mean over the domain of a quantity given as a per-mode density (Parseval-weighted sum / N^2)."""
        return jnp.sum(self.weight * density) / float(self.fft.size) ** 2

    def horizontal(self) -> jax.Array:
        """1 on the entries uniform along the plates (k_x = k_y = 0), else 0."""
        return ((self.k[0] == 0) & (self.k[1] == 0)).astype(self.weight.dtype)


def free_fall(params: Params) -> tuple[jax.Array, jax.Array]:
    """nu = (Ra/Pr)^(-1/2) and kappa = (Ra Pr)^(-1/2): free-fall units (lengths in H, times in sqrt(H / Delta b))."""
    ra, pr = params["rayleigh"], params["prandtl"]
    return jnp.sqrt(pr / ra), 1 / jnp.sqrt(ra * pr)


def heights(fft: FFTBackend, box: Sequence[float], dtype: Any) -> jax.Array:
    """z of the grid points, ``(1, 1, Nz)``: the cell centres (j + 1/2) H / Nz (:class:`simulator.fft.bases.SinCos`),
    half a cell above the periodic coordinates the backend gives."""
    return fft.coordinates(box, dtype)[2] + 0.5 * box[2] / fft.shape[2]


def plate_nusselt(ops: WalledOperators, theta_hat: jax.Array, size: int, height: float) -> tuple[jax.Array, jax.Array]:
    """-d<b>/dz at the bottom (z = 0) and the top plate (z = H) of b = 1 - z/H + theta, in units of 1/H: from the
    horizontal mean of the sine series theta, sum_n a_n sin(n pi z / H), a_n its k_x = k_y = 0 entries / N."""
    mean = ops.horizontal() * jnp.real(theta_hat) / float(size)
    slope = ops.k[2] * height * mean  # each term's d/dz at z = 0, times H; at z = H, times (-1)^n
    return 1 - jnp.sum(slope), 1 - jnp.sum(slope * jnp.cos(ops.k[2] * height))
