"""Passive scalars between no-slip plates: what the equations between plates run alike (JAX), the declarations
being :mod:`simulator.equations.wall_scalars`.

The scalars are part of the flow core's state (:class:`simulator.walls.flow.State` ``scalars``, ``(S, *grid)``
walled Chebyshev spectra: NumPy's FFT along the periodic axes, unnormalised, by the Chebyshev coefficients across
the plates), stepped with the flow's implicit diffusion and its plates' conditions (:class:`simulator.walls.flow.
Plates`); the host equation adds their advection -u . grad s, formed on the grid with its own velocity, to the
explicit terms. Grid fields are ``(*grid)`` on the periodic points and the Gauss-Lobatto heights. The free-slip
equations share the profiles, initial fields and builder here, their series' diagnostics being
:func:`simulator.equations.walled.sine_scalar_diagnostics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.noise import white_noise
from simulator.walls.bases import Basis


def plates(scalars: Sequence[Any], cells: int) -> tuple[tuple[str, ...], tuple[tuple[float, float], ...]]:
    """Each scalar's condition and its plates' values or slopes ((bottom, top)) as the flow core takes them: times
    ``cells``, the points along the plates, the unnormalised spectrum's mean entry."""
    given = [s.plates() for s in scalars]
    return tuple(c for c, _ in given), tuple((cells * a, cells * b) for _, (a, b) in given)


def diffusivities(params: Any) -> tuple[jax.Array, ...]:
    """kappa_i of the traced ``params["scalars"]``."""
    return tuple(s["diffusivity"] for s in params["scalars"])


def conductive(scalar: Any, z: jax.Array, height: float) -> jax.Array:
    """The conductive profile of a scalar's plates at heights ``z``: s0 + (s1 - s0) z/H between fixed values,
    g0 z + (g1 - g0) z^2 / (2H) (the slopes g0 and g1 at the plates) between fixed fluxes."""
    condition, (a, b) = scalar.plates()
    if condition == "fixed-value":
        return a + (b - a) * z / height
    return a * z + (b - a) * z**2 / (2 * height)


def initial_fields(eq: Any, ic: Any) -> jax.Array:
    """The scalars ``(S, *grid)`` of ``ic`` (:class:`~simulator.equations.wall_scalars.WallScalarInitial`) for host
    ``eq`` (its ``physics.scalars``, ``fft``, ``box``, ``dtype`` and ``heights()``, ``(1, 1, Nz)``): zero, or each
    scalar's conductive profile plus A xi (4 z (H - z) / H^2)^2, xi white noise drawn from ``fold_in(key(seed), i)``:
    damped flat at the plates (the first step's solve imposes either condition there)."""
    scalars = eq.physics.scalars
    shape = (len(scalars), *eq.fft.shape)
    if ic.name == "zero":
        return jnp.zeros(shape, eq.dtype)
    z, h = eq.heights(), eq.box[2]
    damped = (4 * z * (h - z) / h**2) ** 2
    return jnp.stack([conductive(s, z, h) + ic.amplitude * damped
                      * white_noise(eq.fft, jax.random.fold_in(jax.random.key(ic.seed), i), eq.dtype)
                      for i, s in enumerate(scalars)]).astype(eq.dtype)


def horizontal_mean(hat: jax.Array, mean_mode: jax.Array, cells: int) -> jax.Array:
    """The coefficients across the plates ``(..., Nz)`` of the horizontal means of spectra ``(..., *grid)``."""
    return jnp.real(jnp.sum(jnp.where(mean_mode, hat, 0.0), axis=(-3, -2))) / cells


def diagnostics(hats: jax.Array, grid: jax.Array, params: Any, mean_mode: jax.Array, cells: int, height: float,
                volume_mean: Callable[[jax.Array], jax.Array], basis: Basis) -> dict[str, jax.Array]:
    """Per scalar i (spectra ``hats`` and grid fields ``grid``, ``(S, *grid)`` each): ``scalar{i}_mean`` and
    ``scalar{i}_variance`` over the volume (the basis's quadrature across the plates: ``volume_mean``) and the
    diffusive flux -kappa d<s>/dz at each plate, ``scalar{i}_flux_bottom`` and ``scalar{i}_flux_top``."""
    out = {}
    for i, s in enumerate(params["scalars"]):
        mean = volume_mean(grid[i])
        bottom, top = basis.boundary_values(basis.derivative(horizontal_mean(hats[i], mean_mode, cells), height))
        out[f"scalar{i}_mean"] = mean
        out[f"scalar{i}_variance"] = volume_mean(grid[i] ** 2) - mean**2
        out[f"scalar{i}_flux_bottom"] = -s["diffusivity"] * bottom
        out[f"scalar{i}_flux_top"] = -s["diffusivity"] * top
    return out


def profiles(grid: jax.Array) -> dict[str, jax.Array]:
    """``scalar{i}``: each scalar's average along the plates at each height, ``(Nz,)``, of grid fields
    ``(S, *grid)``."""
    return {f"scalar{i}": jnp.mean(grid[i], axis=(0, 1)) for i in range(grid.shape[0])}


def with_scalars(builder: Callable[..., dict[str, jax.Array]]) -> Callable[..., dict[str, jax.Array]]:
    """An initial-condition builder of the flow that also makes the scalars of ``ic.scalars`` (field ``scalar``,
    :func:`initial_fields`) when the host has any."""

    def build(eq: Any, c: Sequence[jax.Array], ic: Any, params: Any) -> dict[str, jax.Array]:
        fields = builder(eq, c, ic, params)
        if eq.physics.scalars:
            fields["scalar"] = initial_fields(eq, ic.scalars)
        return fields

    return build
