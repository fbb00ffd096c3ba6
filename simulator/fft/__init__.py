"""Distributed 3D FFTs behind one interface (:class:`FFTBackend`), chosen by name.

Backends: ``slab`` (custom_partitioning, the primary), ``pencil`` (shard_map), ``jaxdecomp``, and
``single`` (``jnp.fft`` on one device, the reference). See :mod:`simulator.fft.base` for the array
layouts, normalisation and the real-to-complex convention shared by all of them.

:data:`LAYOUTS` (the layout rules, importable without JAX) is what config validation reads; the
backends themselves (:data:`BACKENDS`, :class:`FFTBackend`, meshes) load JAX on first access.
"""

from __future__ import annotations

from typing import Any

from simulator.fft.layouts import LAYOUTS, Layout

__all__ = ["BACKENDS", "LAYOUTS", "FFTBackend", "Layout", "build_mesh", "complex_dtype", "real_dtype"]


def __getattr__(name: str) -> Any:
    # The transforms need JAX; a module that only validates a config must not pay for importing it.
    if name == "BACKENDS":
        from simulator.fft.decomp import JaxDecompFFT
        from simulator.fft.pencil import PencilFFT
        from simulator.fft.single import SingleFFT
        from simulator.fft.slab import SlabFFT

        backends = {cls.name: cls for cls in (SlabFFT, PencilFFT, JaxDecompFFT, SingleFFT)}
        assert set(backends) == set(LAYOUTS)
        globals()["BACKENDS"] = backends
        return backends
    if name in ("FFTBackend", "complex_dtype", "real_dtype"):
        from simulator.fft import base

        return getattr(base, name)
    if name == "build_mesh":
        from simulator.fft.mesh import build_mesh

        return build_mesh
    raise AttributeError(f"module 'simulator.fft' has no attribute {name!r}")
