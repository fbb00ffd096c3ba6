"""Distributed 3D FFTs behind one interface (:class:`FFTBackend`), chosen by name.

Backends: ``slab`` (custom_partitioning, the primary), ``pencil`` (shard_map), ``jaxdecomp``, and
``single`` (``jnp.fft`` on one device, the reference). See :mod:`simulator.fft.base` for the array
layouts, normalisation and the real-to-complex convention shared by all of them.
"""

from __future__ import annotations

from simulator.fft.base import FFTBackend, complex_dtype, real_dtype
from simulator.fft.decomp import JaxDecompFFT
from simulator.fft.pencil import PencilFFT
from simulator.fft.single import SingleFFT
from simulator.fft.slab import SlabFFT

BACKENDS: dict[str, type[FFTBackend]] = {
    cls.name: cls for cls in (SlabFFT, PencilFFT, JaxDecompFFT, SingleFFT)
}

__all__ = ["BACKENDS", "FFTBackend", "complex_dtype", "real_dtype"]
