"""The jaxdecomp backend: ``jaxdecomp.fft.pfft3d`` / ``pifft3d``, slab or pencil.

jaxdecomp's traps are handled here so physics never sees them:

* it needs a 2D mesh even for a slab: a slab is the mesh ``(1, P)``, a pencil ``(p0, p1)``; the mesh
  axes are ``("p0", "p1")`` and real space ``(*batch, Nx, Ny, Nz)`` is sharded x over p0, y over p1;
* ``pfft3d`` returns k-space transposed: axis order ``(ky, kz, kx)``, sharded ky over p0 and kz over
  p1 (``perm = (1, 2, 0)``); the wavenumbers handed out follow that order;
* it has no real-to-complex transform (``prfft3d`` is not implemented in 0.3): :meth:`rfft` casts to
  complex and returns the FULL spectrum, :meth:`irfft` returns the real part of the c2c inverse. This
  costs twice the memory and work of a true r2c transform; sums over modes use weight 1;
* it transforms one 3D field at a time: leading batch axes are transformed one component at a time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from simulator.fft.base import FFTBackend, batch_ndim, complex_dtype
from simulator.fft.layouts import JaxDecompLayout


def _per_component(fn, x: jax.Array) -> jax.Array:
    nb = batch_ndim(x)
    if nb == 0:
        return fn(x)
    lead = x.shape[:nb]
    flat = x.reshape((-1,) + x.shape[nb:])
    out = jnp.stack([fn(flat[i]) for i in range(flat.shape[0])])
    return out.reshape(lead + out.shape[1:])


class JaxDecompFFT(JaxDecompLayout, FFTBackend):
    """jaxdecomp pfft3d: real (x/p0, y/p1, z), k-space transposed (ky/p0, kz/p1, kx), complex only.

    Its local transforms are jaxdecomp's own calls to XLA's FFT, inside that package: the FFTW path
    of :mod:`simulator.fft.local` cannot reach them without copying its code, so it stays on XLA.
    """

    owns_local_transforms = False

    def _forward(self, x: jax.Array) -> jax.Array:
        import jaxdecomp

        x = x.astype(complex_dtype(x.dtype))
        y = _per_component(jaxdecomp.fft.pfft3d, x)
        return jax.lax.with_sharding_constraint(y, self.spectral_sharding(batch_ndim(y)))

    def _inverse(self, k: jax.Array) -> jax.Array:
        import jaxdecomp

        y = _per_component(jaxdecomp.fft.pifft3d, k)
        return jax.lax.with_sharding_constraint(y, self.real_sharding(batch_ndim(y)))

    def _rfft(self, x: jax.Array) -> jax.Array:
        return self._forward(x)

    def _irfft(self, k: jax.Array) -> jax.Array:
        return self._inverse(k).real

    def _fft(self, x: jax.Array) -> jax.Array:
        return self._forward(x)

    def _ifft(self, k: jax.Array) -> jax.Array:
        return self._inverse(k)
