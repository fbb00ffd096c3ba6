"""The reference backend: one fused 3D transform per call on one device.

The transforms are the local FFT's (:mod:`simulator.fft.local`: FFTW on CPU when available, else
XLA's FFT); the slab backend on a one-device mesh uses the same functions.
"""

from __future__ import annotations

import jax

from simulator.fft import compact
from simulator.fft.base import FFTBackend
from simulator.fft.layouts import SingleLayout
from simulator.fft.local import LocalFFT

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


class SingleFFT(SingleLayout, FFTBackend):
    """A 3D FFT on a one-device mesh; k-space in NumPy's order (kx, ky, kz), unsharded. A compact spectrum
    is cut from (padded into) the fused 3D transform's half spectrum (:mod:`simulator.fft.compact`)."""

    def _rfft(self, x: jax.Array) -> jax.Array:
        if self.compact is not None:
            return compact.from_full(rfft3(self.local, x), self.compact)
        return rfft3(self.local, x)

    def _irfft(self, k: jax.Array) -> jax.Array:
        if self.compact is not None:
            return irfft3(self.local, compact.to_full(k, self.shape))
        return irfft3(self.local, k)

    def _fft(self, x: jax.Array) -> jax.Array:
        return fft3(self.local, x)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return ifft3(self.local, k)
