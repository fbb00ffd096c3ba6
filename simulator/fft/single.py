"""The reference backend: one fused 3D transform per call on one device.

The transforms are the local FFT's (:mod:`simulator.fft.local`: FFTW on CPU when available, else
XLA's FFT); the slab backend on a one-device mesh uses the same functions, and on several devices the
compact stages defined here.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from simulator.fft import compact, walls
from simulator.fft.base import FFTBackend
from simulator.fft.layouts import SingleLayout
from simulator.fft.local import LocalFFT
from simulator.fft.mesh import route_platform

_AXES = (-3, -2, -1)


def rfft3(local: LocalFFT, x: jax.Array) -> jax.Array:
    """One fused 3D r2c transform over the last three axes, Nyquist plane of z dropped."""
    return local.rfftn(x, _AXES)[..., : x.shape[-1] // 2]


def irfft3(local: LocalFFT, k: jax.Array) -> jax.Array:
    """Inverse of :func:`rfft3`; the half axis is zero-padded back to Nz/2+1 planes (Nyquist = 0)."""
    return local.irfftn(k, _AXES, 2 * k.shape[-1])


def fft3(local: LocalFFT, x: jax.Array) -> jax.Array:
    return local.fftn(x, _AXES)


def ifft3(local: LocalFFT, k: jax.Array) -> jax.Array:
    return local.ifftn(k, _AXES)


# The compact stages of the kept lines (``grid``: the global shape, ``sizes``: the compact sizes), the slab's
# two custom_partitioning stages on several devices: z then x before its all-to-all, y after; the inverse
# pads each axis just before its transform.


def rfft_zx_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], x: jax.Array) -> jax.Array:
    k = compact.truncate(local.rfftn(x, (-1,)), -1, sizes[2], half=True)
    return compact.truncate(local.fftn(k, (-3,)), -3, sizes[0])


def fft_y_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], k: jax.Array) -> jax.Array:
    return compact.truncate(local.fftn(k, (-2,)), -2, sizes[1])


def ifft_y_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], k: jax.Array) -> jax.Array:
    return local.ifftn(compact.pad(k, -2, grid[1]), (-2,))


def irfft_xz_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], k: jax.Array) -> jax.Array:
    k = local.ifftn(compact.pad(k, -3, grid[0]), (-3,))
    return local.irfftn(compact.pad(k, -1, grid[2] // 2 + 1, half=True), (-1,), grid[2])


def stages_pay(mesh: jax.sharding.Mesh) -> bool:
    """Whether a compact spectrum on one device is best made by the stages of the kept lines (True: CPU
    devices) or cut from the fused 3D transform (False: GPUs). Measured, one r2c + c2r pair of three
    components, staged against fused then cut (probe of 2026-11-24, interleaved rounds, quiet machine): on
    the 2-core CPU with FFTW 0.79x at 64^3 and 0.70x at 128^3 in float64, 0.69x at 128^3 in float32, with
    XLA's CPU FFT 0.82x and 0.85x; on one H100 with cuFFT 1.06x at 256^3 and 1.05x at 512^3 in float32,
    1.15x at 256^3 in float64 (cuFFT's fused 3D plan beats three strided passes)."""
    return route_platform(mesh) == "cpu"


def rfft3_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], x: jax.Array,
                  mesh: jax.sharding.Mesh) -> jax.Array:
    """The compact spectrum ``(*batch, Kx, Ky, Kz)`` of a real field on one device (:func:`stages_pay`)."""
    if stages_pay(mesh):
        return fft_y_compact(local, grid, sizes, rfft_zx_compact(local, grid, sizes, x))
    return compact.from_full(local.rfftn(x, _AXES), sizes)  # cut from the transform's Nz/2 + 1 planes


def irfft3_compact(local: LocalFFT, grid: Sequence[int], sizes: Sequence[int], k: jax.Array,
                   mesh: jax.sharding.Mesh) -> jax.Array:
    """Inverse of :func:`rfft3_compact`: the real field ``(*batch, Nx, Ny, Nz)``."""
    if stages_pay(mesh):
        return irfft_xz_compact(local, grid, sizes, ifft_y_compact(local, grid, sizes, k))
    return irfft3(local, compact.to_full(k, grid))


class SingleFFT(SingleLayout, FFTBackend):
    """A 3D FFT on a one-device mesh; k-space in NumPy's order (kx, ky, kz), unsharded. A compact spectrum
    (:mod:`simulator.fft.compact`) is made by the stages of the kept lines on a CPU and cut from the fused
    3D transform on a GPU (:func:`stages_pay`)."""

    def _rfft(self, x: jax.Array) -> jax.Array:
        if self.compact is not None:
            return rfft3_compact(self.local, self.shape, self.compact, x, self.mesh)
        return rfft3(self.local, x)

    def _irfft(self, k: jax.Array) -> jax.Array:
        if self.compact is not None:
            return irfft3_compact(self.local, self.shape, self.compact, k, self.mesh)
        return irfft3(self.local, k)

    def _fft(self, x: jax.Array) -> jax.Array:
        return fft3(self.local, x)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return ifft3(self.local, k)

    def _walls(self, parity: str, x: jax.Array) -> jax.Array:
        return walls.forward(self.local, parity, x)

    def _iwalls(self, parity: str, k: jax.Array) -> jax.Array:
        return walls.inverse(self.local, parity, k)
