"""Pencil-decomposed 3D FFT: ``jax.shard_map`` with explicit ``lax.all_to_all`` transposes.

For more devices than a slab allows (P <= Ny), on a 2D mesh ``(p0, p1)``:

* real space ``(*batch, Nx, Ny, Nz)``: x sharded over ``p0``, y over ``p1`` (z-pencils);
* k-space ``(*batch, kx, ky, kz)`` (NumPy's axis order): ky over ``p0``, kz over ``p1`` (x-pencils).

Forward: FFT along z (local); all-to-all over ``p1`` (y gathered, z split); FFT along y; all-to-all
over ``p0`` (x gathered, y split); FFT along x. Exactly two all-to-alls per transform, each inside one
row or column of the mesh; the inverse runs the same steps backwards. (Chaining three
custom_partitioning stages instead makes the partitioner emit four.)

Compact spectra (:mod:`simulator.fft.compact`): each axis is cut right after its transform, before the
exchange that follows it (z to Kz before the first, y to Ky before the second), so both all-to-alls
carry only kept lines; the inverse pads each axis just before its transform.

Real-to-complex keeps ``kz = 0 .. Nz/2-1`` (Nyquist plane dropped, see :mod:`simulator.fft.base`).
The 1D transforms are the local FFT's (:mod:`simulator.fft.local`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
from jax import lax
from jax.sharding import PartitionSpec

from simulator.fft import compact
from simulator.fft.base import FFTBackend, batch_ndim
from simulator.fft.layouts import P0, P1, PencilLayout
from simulator.fft.local import LocalFFT


def _forward(local: LocalFFT, x: jax.Array, real: bool, sizes=None) -> jax.Array:
    """Per-device forward transform of a z-pencil block ``(*b, X/p0, Y/p1, Z)`` (``sizes``: compact sizes)."""
    nz = x.shape[-1]
    x = local.rfftn(x, (-1,))[..., : nz // 2] if real else local.fftn(x, (-1,))
    if sizes is not None:
        x = compact.truncate(x, -1, sizes[2], half=True)
    x = lax.all_to_all(x, P1, split_axis=x.ndim - 1, concat_axis=x.ndim - 2, tiled=True)
    x = local.fftn(x, (-2,))
    if sizes is not None:
        x = compact.truncate(x, -2, sizes[1])
    x = lax.all_to_all(x, P0, split_axis=x.ndim - 2, concat_axis=x.ndim - 3, tiled=True)
    x = local.fftn(x, (-3,))
    return compact.truncate(x, -3, sizes[0]) if sizes is not None else x


def _inverse(local: LocalFFT, k: jax.Array, real: bool, grid=None) -> jax.Array:
    """Per-device inverse transform of an x-pencil block ``(*b, X, Y/p0, Z'/p1)`` (``grid``: the global
    shape, given for a compact spectrum)."""
    if grid is not None:
        k = compact.pad(k, -3, grid[0])
    k = local.ifftn(k, (-3,))
    k = lax.all_to_all(k, P0, split_axis=k.ndim - 3, concat_axis=k.ndim - 2, tiled=True)
    if grid is not None:
        k = compact.pad(k, -2, grid[1])
    k = local.ifftn(k, (-2,))
    k = lax.all_to_all(k, P1, split_axis=k.ndim - 2, concat_axis=k.ndim - 1, tiled=True)
    if grid is not None:
        return local.irfftn(compact.pad(k, -1, grid[2] // 2 + 1, half=True), (-1,), grid[2])
    return local.irfftn(k, (-1,), 2 * k.shape[-1]) if real else local.ifftn(k, (-1,))


class PencilFFT(PencilLayout, FFTBackend):
    """shard_map pencil FFT on a 2D mesh: real (x/p0, y/p1, z), k-space (kx, ky/p0, kz/p1)."""

    def __init__(self, shape, mesh, local_fft: str | None = None, fft_threads: int | None = None,
                 compact: bool | tuple[int, ...] = False):
        super().__init__(shape, mesh, local_fft, fft_threads, compact)
        self._maps: dict[tuple[str, bool, int], Callable[[jax.Array], jax.Array]] = {}

    def _mapped(self, direction: str, real: bool, nbatch: int) -> Callable[[jax.Array], jax.Array]:
        key = (direction, real, nbatch)
        if key not in self._maps:
            self._maps[key] = self._build_map(direction, real, nbatch)
        return self._maps[key]

    def _build_map(self, direction: str, real: bool, nbatch: int) -> Callable[[jax.Array], jax.Array]:
        lead = [None] * nbatch
        real_p = PartitionSpec(*lead, *self.real_spec())
        spec_p = PartitionSpec(*lead, *self.spectral_spec())
        pruned = real and self.compact is not None
        if direction == "forward":
            body = functools.partial(_forward, self.local, real=real, sizes=self.compact if pruned else None)
            in_spec, out_spec = real_p, spec_p
        else:
            body = functools.partial(_inverse, self.local, real=real, grid=self.shape if pruned else None)
            in_spec, out_spec = spec_p, real_p
        return jax.shard_map(body, mesh=self.mesh, in_specs=in_spec, out_specs=out_spec)

    def _rfft(self, x: jax.Array) -> jax.Array:
        return self._mapped("forward", True, batch_ndim(x))(x)

    def _irfft(self, k: jax.Array) -> jax.Array:
        return self._mapped("inverse", True, batch_ndim(k))(k)

    def _fft(self, x: jax.Array) -> jax.Array:
        return self._mapped("forward", False, batch_ndim(x))(x)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return self._mapped("inverse", False, batch_ndim(k))(k)
