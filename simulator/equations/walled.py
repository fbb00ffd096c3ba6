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

from simulator.equations import resolution, wall_scalar_terms
from simulator.equations.base import Params
from simulator.equations.operators import DomainOperators
from simulator.fft import FFTBackend


@jax.tree_util.register_pytree_node_class
class WalledOperators(DomainOperators):
    """The domain's operators (:class:`~simulator.equations.operators.DomainOperators`) of walled spectra between
    free-slip plates: wavenumbers ``k = (k_x, k_y, k_z)`` (``2 pi m / L`` of the Fourier bases along the plates,
    ``n pi / H`` of the sine and cosine series across them), their Parseval weights and the 2/3 rule's mask
    (|m| < N/3 along a periodic axis, n < 2 Nz/3 across the plates: the rule of the series' 2 Nz-point periodic
    extension), each the basis's own; and the horizontal mean's entries."""

    def horizontal(self) -> jax.Array:
        """1 on the entries uniform along the plates (k_x = k_y = 0), else 0."""
        return ((self.k[0] == 0) & (self.k[1] == 0)).astype(self.weight.dtype)


def free_fall(params: Params) -> tuple[jax.Array, jax.Array]:
    """nu = (Ra/Pr)^(-1/2) and kappa = (Ra Pr)^(-1/2): free-fall units (lengths in H, times in sqrt(H / Delta b))."""
    ra, pr = params["rayleigh"], params["prandtl"]
    return jnp.sqrt(pr / ra), 1 / jnp.sqrt(ra * pr)


def series_cutoff(fft: FFTBackend, box: Sequence[float]) -> float:
    """The 2/3 rule's cutoff (2/3) min_i pi N_i/L_i of a sine or cosine series across the plates and Fourier
    series along them: the modes n pi/H are the 2N-point extension's, whose 2/3 rule keeps n < 2N/3, the cutoff
    (2/3) pi N/H, as a periodic axis of N cells over H."""
    return resolution.dealiased_kmax(fft.shape, box)


def kmax_eta(kmax: float, nu: jax.Array, kappa: jax.Array, dissipation: jax.Array) -> jax.Array:
    """k_max min(eta, eta_theta): the Kolmogorov scale eta = (nu^3/epsilon_u)^(1/4) and the temperature's smallest
    scale (Batchelor or Obukhov-Corrsin, :func:`~simulator.equations.resolution.smallest_scale`) against the
    cutoff ``kmax``."""
    eta = resolution.cube_root_scale(nu, dissipation, 1 / 4, jnp)
    return kmax * jnp.minimum(eta, resolution.smallest_scale(eta, nu, kappa, jnp))


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


def scalar_lifts(scalars: Sequence[Any], z: jax.Array, height: float) -> jax.Array:
    """Each passive scalar's linear profile s0 + (s1 - s0) z / H between its plates' values (``scalars``: the
    :class:`~simulator.equations.wall_scalars.WallScalar` entries) at heights ``z`` ``(1, 1, Nz)``: ``(S, 1, 1, Nz)``.
    Between free-slip plates a scalar is this profile plus a sine series."""
    return jnp.stack([jnp.broadcast_to(wall_scalar_terms.conductive(s, z, height), z.shape) for s in scalars])


def sine_scalar_diagnostics(ops: WalledOperators, scalars: Sequence[Any], hats: jax.Array, params: Params,
                            height: float) -> dict[str, jax.Array]:
    """Per passive scalar i, of s = L + s' (L its linear profile, ``hats`` ``(S, *spectrum)`` the sine series s'):
    ``scalar{i}_mean`` and ``scalar{i}_variance`` over the volume and its diffusive flux -kappa ds/dz at each plate,
    ``scalar{i}_flux_bottom`` and ``scalar{i}_flux_top``, exact in the series: <s'^2> by Parseval, <L s'> and <s'>
    by each mode's integral over the gap, the slopes from the horizontal mean's sine coefficients."""
    kz = ops.k[2] * height  # n pi
    cos = jnp.cos(kz)
    safe = jnp.where(kz > 0, kz, 1.0)
    out = {}
    for i, (scalar, coefficients) in enumerate(zip(scalars, params["scalars"], strict=True)):
        a, b = scalar.plates()[1]
        modes = ops.horizontal() * jnp.real(hats[i]) / float(ops.fft.size)  # the horizontal mean's sine coefficients
        mean = (a + b) / 2 + jnp.sum(modes * (1 - cos) / safe)
        cross = jnp.sum(modes * (a * (1 - cos) - (b - a) * cos) / safe)  # <L s'>
        square = a**2 + a * (b - a) + (b - a) ** 2 / 3 + 2 * cross + ops.mean(jnp.abs(hats[i]) ** 2)
        slope, kappa = (b - a) / height, coefficients["diffusivity"]
        out.update({f"scalar{i}_mean": mean, f"scalar{i}_variance": square - mean**2,
                    f"scalar{i}_flux_bottom": -kappa * (slope + jnp.sum(modes * kz) / height),
                    f"scalar{i}_flux_top": -kappa * (slope + jnp.sum(modes * kz * cos) / height)})
    return out
