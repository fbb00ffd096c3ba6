"""The reference backend: ``jnp.fft`` on one device."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from simulator.errors import ConfigError
from simulator.fft.base import FFTBackend, Shape3, Spec3

_AXES = (-3, -2, -1)


class SingleFFT(FFTBackend):
    """``jnp.fft`` on a one-device mesh; k-space in NumPy's order (kx, ky, kz), unsharded."""

    name: ClassVar[str] = "single"
    axis_names: ClassVar[tuple[str, ...]] = ("single",)

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: tuple[int, ...] | None) -> tuple[int, ...]:
        return (1,)

    @classmethod
    def check_mesh_request(cls, requested: tuple[int, ...] | None, key: str = "fft.mesh") -> None:
        if requested is not None and tuple(requested) != (1,):
            raise ConfigError(
                key, requested, "the single backend runs on one device: use [1] or null", "is not allowed"
            )

    @classmethod
    def divisibility(cls, shape: Shape3, mesh_shape: tuple[int, ...]) -> list[tuple[str, int, int]]:
        return []

    def real_spec(self) -> Spec3:
        return (None, None, None)

    def spectral_spec(self) -> Spec3:
        return (None, None, None)

    def _rfft(self, x: jax.Array) -> jax.Array:
        return jnp.fft.rfftn(x, axes=_AXES)[..., : self.shape[2] // 2]

    def _irfft(self, k: jax.Array) -> jax.Array:
        # irfftn zero-pads the half axis from Nz/2 to Nz/2+1 planes: the dropped Nyquist plane is zero.
        return jnp.fft.irfftn(k, s=self.shape, axes=_AXES)

    def _fft(self, x: jax.Array) -> jax.Array:
        return jnp.fft.fftn(x, axes=_AXES)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return jnp.fft.ifftn(k, axes=_AXES)
