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

A walled field (``grid.walls``, :mod:`simulator.fft.walls`) keeps the bounded axis whole on each device in k-space as
in real space, so that every coefficient of a mode's column is on one device (the no-slip solves need them all): its
spectrum ``(*batch, kx, ky, n)`` is laid out as real space is, kx over ``p0``, ky over ``p1``. Forward: the sine,
cosine or Chebyshev transform of z on the z-pencils (local); one all-to-all over the whole mesh to (x, y)-planes
(x and y gathered, z split over all ``P = p0 p1`` devices, so ``Nz`` divides by ``P``); the 2D FFT of (x, y); one
all-to-all back to z-pencils. The inverse runs the same steps backwards. Two all-to-alls, as for a periodic field,
but each over the whole mesh rather than a row or a column: exchanges within rows and columns, one mesh axis at a
time, need three to gather x and y in turn and regain real space's split. The coefficients along z are real, so the
forward transform's first exchange and the inverse's second carry real numbers, half the bytes of a complex field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec

from simulator.fft import compact, walls
from simulator.fft.base import FFTBackend, batch_ndim
from simulator.fft.layouts import P0, P1, PencilLayout, Spec3
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


def _to_planes(x: jax.Array, mesh: tuple[int, int]) -> jax.Array:
    """A z-pencil block ``(*b, X/p0, Y/p1, Z)`` to an (x, y)-plane block ``(*b, X, Y, Z/P)``, device ``i0 p1 + i1``
    holding the z block of that index: one all-to-all over the whole mesh (``mesh``: ``(p0, p1)``)."""
    p0, p1 = mesh
    n = x.ndim - 3
    *lead, xl, yl, nz = x.shape
    x = jnp.moveaxis(x.reshape(*lead, xl, yl, p0 * p1, nz // (p0 * p1)), n + 2, n)
    x = lax.all_to_all(x, (P0, P1), split_axis=n, concat_axis=n, tiled=True)  # that axis: now the source device
    x = jnp.moveaxis(x.reshape(*lead, p0, p1, xl, yl, nz // (p0 * p1)), n + 1, n + 2)
    return x.reshape(*lead, p0 * xl, p1 * yl, nz // (p0 * p1))


def _to_pencils(k: jax.Array, mesh: tuple[int, int]) -> jax.Array:
    """Inverse of :func:`_to_planes`: an (x, y)-plane block ``(*b, X, Y, Z/P)`` to a z-pencil ``(*b, X/p0, Y/p1, Z)``
    (the exchange's received axis indexes the z block)."""
    p0, p1 = mesh
    n = k.ndim - 3
    *lead, nx, ny, zl = k.shape
    k = jnp.moveaxis(k.reshape(*lead, p0, nx // p0, p1, ny // p1, zl), n + 2, n + 1)
    k = lax.all_to_all(k.reshape(*lead, p0 * p1, nx // p0, ny // p1, zl), (P0, P1), split_axis=n, concat_axis=n,
                       tiled=True)  # that axis: now the z block
    return jnp.moveaxis(k, n, n + 2).reshape(*lead, nx // p0, ny // p1, p0 * p1 * zl)


def _forward_walls(local: LocalFFT, parity: str, mesh: tuple[int, int], x: jax.Array) -> jax.Array:
    """Per-device walled transform of a real z-pencil block ``(*b, X/p0, Y/p1, Z)``: complex, the same block of the
    walled spectrum (module docstring)."""
    planes = _to_planes(walls.forward_z(local, parity, x), mesh)
    return _to_pencils(local.fftn(planes.astype(jnp.result_type(planes, jnp.complex64)), (-3, -2)), mesh)


def _inverse_walls(local: LocalFFT, parity: str, mesh: tuple[int, int], k: jax.Array) -> jax.Array:
    """Inverse of :func:`_forward_walls`: the real z-pencil block. The real part is taken before the exchange back,
    as :func:`simulator.fft.walls.inverse_z` takes it (an imaginary part is another field's coefficients)."""
    planes = jnp.real(local.ifftn(_to_planes(k, mesh), (-3, -2)))
    return walls.inverse_z(local, parity, _to_pencils(planes, mesh))


class PencilFFT(PencilLayout, FFTBackend):
    """shard_map pencil FFT on a 2D mesh: real (x/p0, y/p1, z), k-space (kx, ky/p0, kz/p1); a walled run's k-space
    (kx/p0, ky/p1, n), as real space (module docstring)."""

    def __init__(self, shape, mesh, local_fft: str | None = None, fft_threads: int | None = None,
                 compact: bool | tuple[int, ...] = False, walls: bool = False, basis: str | None = None):
        self._maps: dict[tuple[str, bool | str, int], Callable[[jax.Array], jax.Array]] = {}
        super().__init__(shape, mesh, local_fft, fft_threads, compact, walls, basis)  # sets walls (its setter checks)

    @property
    def walls(self) -> bool:  # type: ignore[override]
        """Whether the run's fields lie between plates: then its spectra are walled ones, laid out as real space
        (:meth:`spectral_spec`), and ``Nz`` divides over every device (checked when it is set, at start-up)."""
        return self._walled

    @walls.setter
    def walls(self, on: bool) -> None:
        if on:
            self.check_walls_layout(self.shape, tuple(self.mesh.devices.shape))
        self._walled = bool(on)

    def spectral_spec(self) -> Spec3:
        """The periodic k-space (kx, ky/p0, kz/p1), or a walled run's, z whole: real space's (module docstring)."""
        return self.real_axes if self._walled else self.spectral_axes

    def _mapped(self, direction: str, kind: bool | str, nbatch: int) -> Callable[[jax.Array], jax.Array]:
        """The shard_map of one transform: ``direction`` ``forward`` or ``inverse`` with ``kind`` whether it is
        real-to-complex, or ``walls`` or ``iwalls`` with ``kind`` the series along z."""
        key = (direction, kind, nbatch)
        if key not in self._maps:
            self._maps[key] = self._build_map(direction, kind, nbatch)
        return self._maps[key]

    def _build_map(self, direction: str, kind: bool | str, nbatch: int) -> Callable[[jax.Array], jax.Array]:
        lead = [None] * nbatch
        real_p = PartitionSpec(*lead, *self.real_spec())
        if direction in ("walls", "iwalls"):  # real space's layout on both sides (module docstring)
            walled = _forward_walls if direction == "walls" else _inverse_walls
            body = functools.partial(walled, self.local, kind, tuple(self.mesh.devices.shape))
            return jax.shard_map(body, mesh=self.mesh, in_specs=real_p, out_specs=real_p)
        real = bool(kind)
        spec_p = PartitionSpec(*lead, *self.spectral_axes)  # the periodic k-space, whichever spectra the run holds
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

    def _walls(self, parity: str, x: jax.Array) -> jax.Array:
        self.check_walls_layout(self.shape, tuple(self.mesh.devices.shape))
        return self._mapped("walls", parity, batch_ndim(x))(x)

    def _iwalls(self, parity: str, k: jax.Array) -> jax.Array:
        self.check_walls_layout(self.shape, tuple(self.mesh.devices.shape))
        return self._mapped("iwalls", parity, batch_ndim(k))(k)
