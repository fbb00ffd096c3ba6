"""Moving spectra between backends whose k-space layouts differ in kind (half vs full spectrum), and
transforms on another grid over the same devices.

A checkpoint written by a backend with a real-to-complex transform holds a half (or compact) spectrum;
a backend without one (jaxdecomp) needs the full spectrum. The half is completed through real space on
a slab over the same devices, then transformed by the target backend: exact to round-off, and no global
array is gathered. The caller supplies the reading, which gives a stored compact spectrum as the half
one (the FFT package knows no files).

A state written on another grid is transformed on that grid first (:func:`on_grid`), then read into
this one's spectrum mode by mode (:mod:`simulator.output.resample`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from simulator.errors import ConfigError
from simulator.fft.base import FFTBackend
from simulator.fft.mesh import build_mesh

#: reads a stored half or compact spectrum as the half spectrum: (global shape, sharding, k-space axis order) -> array
ReadHalf = Callable[[tuple[int, ...], jax.sharding.Sharding, Sequence[int]], jax.Array]


def full_from_half(read_half: ReadHalf, target: FFTBackend, batch_shape: tuple[int, ...], dtype: Any,
                   sharding: jax.sharding.Sharding) -> jax.Array:
    """The full spectrum, in ``target``'s layout and ``sharding``, of a stored half spectrum (``read_half``
    gives a compact one zero-padded to it)."""
    from simulator.fft.slab import SlabFFT

    slab = SlabFFT(target.shape, build_mesh(SlabFFT, None, list(target.mesh.devices.flat)))
    nb = len(batch_shape)
    half = read_half((*batch_shape, *slab.spectral_shape(real=True)), slab.spectral_sharding(nb), slab.perm)
    real = jax.device_put(slab.irfft(half.astype(dtype)), target.real_sharding(nb))
    return jax.device_put(target.rfft(real), sharding)


def on_grid(target: FFTBackend, shape: Sequence[int]) -> FFTBackend | None:
    """An FFT of grid ``shape`` on ``target``'s devices: ``target``'s backend on its mesh, or, where
    ``shape`` does not decompose over that mesh, a slab over as many of its devices as the shape allows
    (in a single process; None in several, where every process must hold a part of the mesh)."""
    try:
        return type(target)(shape, target.mesh, walls=target.walls, basis=target.basis)
    except ConfigError:
        pass
    from simulator.fft.slab import SlabFFT

    devices = list(target.mesh.devices.flat)
    if jax.process_count() > 1:
        return None
    for count in range(len(devices), 0, -1):
        try:
            return SlabFFT(shape, build_mesh(SlabFFT, None, devices[:count]), walls=target.walls,
                           basis=target.basis)
        except ConfigError:
            continue
    return None
