"""The reference backend: ``jnp.fft`` on one device."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from simulator.fft.base import FFTBackend
from simulator.fft.layouts import SingleLayout

_AXES = (-3, -2, -1)


def rfft3(x: jax.Array) -> jax.Array:
    """One fused 3D r2c transform over the last three axes, Nyquist plane of z dropped."""
    return jnp.fft.rfftn(x, axes=_AXES)[..., : x.shape[-1] // 2]


def irfft3(k: jax.Array) -> jax.Array:
    """Inverse of :func:`rfft3`; irfftn zero-pads the half axis back to Nz/2+1 planes (Nyquist = 0)."""
    return jnp.fft.irfftn(k, s=(*k.shape[-3:-1], 2 * k.shape[-1]), axes=_AXES)


def fft3(x: jax.Array) -> jax.Array:
    return jnp.fft.fftn(x, axes=_AXES)


def ifft3(k: jax.Array) -> jax.Array:
    return jnp.fft.ifftn(k, axes=_AXES)


class SingleFFT(SingleLayout, FFTBackend):
    """``jnp.fft`` on a one-device mesh; k-space in NumPy's order (kx, ky, kz), unsharded."""

    def _rfft(self, x: jax.Array) -> jax.Array:
        return rfft3(x)

    def _irfft(self, k: jax.Array) -> jax.Array:
        return irfft3(k)

    def _fft(self, x: jax.Array) -> jax.Array:
        return fft3(x)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return ifft3(k)
