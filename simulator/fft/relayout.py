"""Moving spectra between backends whose k-space layouts differ in kind (half vs full spectrum).

A checkpoint written by a backend with a real-to-complex transform holds a half spectrum; a backend
without one (jaxdecomp) needs the full spectrum. The half is completed through real space on a slab
over the same devices, then transformed by the target backend: exact to round-off, and no global array
is gathered. The caller supplies the reading (the FFT package knows no files).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from simulator.fft.base import FFTBackend
from simulator.fft.mesh import build_mesh

#: reads a stored half spectrum into (global shape, sharding, k-space axis order) -> array
ReadHalf = Callable[[tuple[int, ...], jax.sharding.Sharding, Sequence[int]], jax.Array]


def full_from_half(read_half: ReadHalf, target: FFTBackend, batch_shape: tuple[int, ...], dtype: Any,
                   sharding: jax.sharding.Sharding) -> jax.Array:
    """The full spectrum, in ``target``'s layout and ``sharding``, of a stored half spectrum."""
    from simulator.fft.slab import SlabFFT

    slab = SlabFFT(target.shape, build_mesh(SlabFFT, None, list(target.mesh.devices.flat)))
    nb = len(batch_shape)
    half = read_half((*batch_shape, *slab.spectral_shape(real=True)), slab.spectral_sharding(nb), slab.perm)
    real = jax.device_put(slab.irfft(half.astype(dtype)), target.real_sharding(nb))
    return jax.device_put(target.rfft(real), sharding)
