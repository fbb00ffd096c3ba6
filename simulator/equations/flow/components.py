"""The transforms of a flow's nonlinear terms, stacked or component by component: one code path for both.

A flow equation forms its products in real space from the velocity (and the buoyancy's gradient, the
magnetic field...) and transforms them forward. :class:`Transforms` does the transforms either way, so
that an equation writes its nonlinear term once:

* stacked (the half spectrum, or a compact one carrying passive scalars): a vector spectrum ``(3, *k_shape)``
  is transformed as one ``(3, Nx, Ny, Nz)`` array, and the products stacked and transformed as one
  ``(m, Nx, Ny, Nz)`` array;
* by component (a compact spectrum, :mod:`simulator.fft.compact`, without scalars): every component is a
  field of its own, ``(Nx, Ny, Nz)``, not a slice of a stacked array, and transformed on its own; the
  forward transforms' spectra are stacked afterwards, ``(m, *k_shape)``.

Why by component in the compact layout (scripts/bench_compact.py, compiled XLA programs): a transform's
buffers (the spectrum padded to Nz/2 + 1 planes before the last inverse stage, 4 B/cell in float32) are
one component's, not three's; and each component of a product such as u x w is an elementwise kernel of
single-component fields, which XLA writes over a component that no later kernel reads, where a stacked
product reads other components at every point and needs a buffer of its own (12 B/cell). Navier-Stokes's
compiled chunk of lsrk4 float32 on XLA's FFT went from 55.8 to 44.2 B/cell at 64^3 on one device, 47.5 to
41.9 on a slab of 4 and 46.7 to 43.2 at 1024^3 (the one-GPU plan); on FFTW's path from 54.9 to 45.7 (one
device) and 54.7 to 40.9 (slab of 4). The half spectrum keeps the stacked fields: there the one-GPU plan
at 1024^3 went from 58.0 to 62.0 B/cell. Each transform of three components becomes three (the same
scalar FFTs and bytes exchanged, three times the all-to-alls). Boussinesq and MHD: docs/PERFORMANCE.md.

Real-space results are sequences of three ``(Nx, Ny, Nz)`` components in the backend's real layout (the
rows of a ``(3, Nx, Ny, Nz)`` array when stacked), spectra in its k-space layout and sharding.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from simulator.equations.operators import SpectralOperators, cross


class Transforms:
    """The transforms of one evaluation of a flow's nonlinear term on the operators ``ops`` (their FFT
    backend, wavenumbers and stacking): component by component when the spectrum is compact and
    ``stacked`` is False (a state with passive scalars sets it: their products are formed on the stacked
    velocity), else stacked."""

    def __init__(self, ops: SpectralOperators, stacked: bool = False):
        self.ops, self.fft = ops, ops.fft
        self.by_component = ops.fft.compact is not None and not stacked

    def fields(self, v_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of a vector spectrum ``v_hat`` ``(3, *k_shape)``."""
        if self.by_component:
            return [self.fft.irfft(v_hat[i]) for i in range(3)]
        return self.fft.irfft(v_hat)

    def curl(self, v_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of curl v, from ``v_hat`` ``(3, *k_shape)``."""
        if self.by_component:
            return [self.fft.irfft(1j * c) for c in cross(self.ops.k, v_hat)]
        return self.fft.irfft(self.ops.curl(v_hat))

    def gradient(self, f_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of grad f, from a scalar spectrum ``f_hat`` ``(*k_shape)``."""
        if self.by_component:
            return [self.fft.irfft(1j * k * f_hat) for k in self.ops.k]
        return self.fft.irfft(1j * self.ops.stack([k * f_hat for k in self.ops.k]))

    def spectrum(self, parts: Sequence[jax.Array]) -> jax.Array:
        """The spectra ``(m, *k_shape)`` of m real-space fields ``(Nx, Ny, Nz)``."""
        if self.by_component:
            return self.ops.stack([self.fft.rfft(p) for p in parts])
        return self.fft.rfft(jnp.stack(parts))
