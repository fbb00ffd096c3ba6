"""The transforms of a flow's nonlinear terms, stacked or component by component: one code path for both.

A flow equation forms its products in real space from the velocity (and the buoyancy's gradient, the
magnetic field...) and transforms them forward. :class:`Transforms` does the transforms either way, so
that an equation writes its nonlinear term once:

* stacked (the half spectrum, or a compact one carrying passive scalars): a vector spectrum ``(3, *k_shape)``
  is transformed as one ``(3, Nx, Ny, Nz)`` array, and the products stacked and transformed as one
  ``(m, Nx, Ny, Nz)`` array;
* by component (a compact spectrum, :mod:`simulator.fft.compact`, without scalars): every component is a
  field of its own, ``(Nx, Ny, Nz)``, not a slice of a stacked array, and transformed on its own; the
  forward transforms' spectra are stacked afterwards, ``(m, *k_shape)``. On FFTW's path, small grids on one
  device (at most 2^19 cells: up to 80^3) inverse-transform a vector's three components stacked all the
  same, and their products one by one: there each call and the kernels around it cost more than the bytes
  it moves (:attr:`simulator.fft.base.FFTBackend.stacks_inverse` gives the measurements).

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

The velocity's own advection (:meth:`Transforms.momentum`) has two forms. By component, under a
truncation that removes every alias of a quadratic product (the 2/3 rule's cube, shifted or not:
:data:`ALIAS_FREE`; :attr:`Transforms.stress_form`), it is the divergence of the traceless stress,
-div(T - T_zz I) with T = u u (MHD: u u - B B), whose five independent components (:func:`stress`) are
formed from the three real components of u: 3 inverse and 5 forward transforms against the rotational
form's 6 and 3 (Basdevant 1983, J. Comput. Phys. 50, 209), and no vorticity in real space. The isotropic
part T_zz I left out is a gradient, removed by the Leray projection, and since div u = 0 the two forms are
the same truncated field in exact arithmetic: P[(u x w)^] = -P[div(u u)^]. Under an aliased dealiasing
(the Hou-Li filter, the spherical phase-shifted truncation) they differ by their aliases, and the
rotational form is kept: its product is orthogonal to u at every grid point, so aliasing adds no energy.
Stacked fields keep it too: a stacked transform of the five components holds them all at once (lsrk4
float32, 64^3, one device: 76.6 B/cell against the rotational form's 72.8), and transforming them apart
took the half spectrum's one-GPU plan at 1024^3 from 58.0 to 62.0 B/cell. In the compact layout the
stress form took lsrk4 float32 from 43.9 to 40.1 B/cell at 64^3 on one device and from 41.9 to 36.8 on a
slab of 4, the 1024^3 one-GPU plan from 42.7 to 39.2, and the all-to-alls per stage from 9 to 8
(``python scripts/bench_compact.py``, XLA's FFT path; docs/PERFORMANCE.md says what holds the plan at
39.2).

Real-space results are sequences of three ``(Nx, Ny, Nz)`` components in the backend's real layout (the
rows of a ``(3, Nx, Ny, Nz)`` array when stacked), spectra in its k-space layout and sharding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import jax
import jax.numpy as jnp

from simulator.equations.operators import SpectralOperators, cross

T = TypeVar("T")

#: the dealiasings after which no alias of a quadratic product is left (the velocity's advection is then
#: formed from the traceless stress, :meth:`Transforms.momentum`)
ALIAS_FREE = ("two_thirds", "phase_shift_cubic")


def stress(u: Sequence[jax.Array], b: Sequence[jax.Array] | None = None) -> list[jax.Array]:
    """The five independent components of T - T_zz I, T = u u (minus b b when ``b`` is given), in real
    space: (xx - zz, yy - zz, xy, xz, yz), each ``(Nx, Ny, Nz)``."""

    def t(i: int, j: int) -> jax.Array:
        return u[i] * u[j] if b is None else u[i] * u[j] - b[i] * b[j]

    zz = t(2, 2)
    return [t(0, 0) - zz, t(1, 1) - zz, t(0, 1), t(0, 2), t(1, 2)]


def stress_divergence(ops: SpectralOperators, s: Sequence[jax.Array]) -> jax.Array:
    """-div(T - T_zz I) ``(3, *k_shape)`` from the spectra ``s`` of the five components of :func:`stress`
    (``(5, *k_shape)`` or five ``(*k_shape)``): -i k_j T'_ij."""
    kx, ky, kz = ops.k
    return -1j * ops.stack([kx * s[0] + ky * s[2] + kz * s[3], kx * s[2] + ky * s[1] + kz * s[4],
                            kx * s[3] + ky * s[4]])


class Transforms:
    """The transforms of one evaluation of a flow's nonlinear term on the operators ``ops`` (their FFT
    backend, wavenumbers and stacking): component by component when the spectrum is compact and
    ``stacked`` is False (a state with passive scalars sets it: their products are formed on the stacked
    velocity), else stacked."""

    def __init__(self, ops: SpectralOperators, stacked: bool = False):
        self.ops, self.fft = ops, ops.fft
        self.by_component = ops.fft.compact is not None and not stacked
        #: whether the velocity's advection is formed from the traceless stress (the module's docstring)
        self.stress_form = self.by_component and ops.dealiasing in ALIAS_FREE

    def fields(self, v_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of a vector spectrum ``v_hat`` ``(3, *k_shape)``."""
        return self._inverse(v_hat, lambda i, v: v[i], lambda v: v)

    def curl(self, v_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of curl v, from ``v_hat`` ``(3, *k_shape)``."""
        return self._inverse(v_hat, lambda i, v: 1j * cross(self.ops.k, v)[i], self.ops.curl)

    def gradient(self, f_hat: jax.Array) -> Sequence[jax.Array]:
        """The real-space components of grad f, from a scalar spectrum ``f_hat`` ``(*k_shape)``."""
        return self._inverse(f_hat, lambda i, f: 1j * self.ops.k[i] * f,
                             lambda f: 1j * self.ops.stack([k * f for k in self.ops.k]))

    def _inverse(self, spectrum: jax.Array, component: Callable[[int, jax.Array], jax.Array],
                 vector: Callable[[jax.Array], jax.Array]) -> Sequence[jax.Array]:
        """The three real-space components of a vector made from ``spectrum``: component ``i`` is the inverse
        transform of ``component(i, spectrum)``, the stacked vector ``vector(spectrum)`` ``(3, *k_shape)``.
        By component each is transformed on its own, unless the backend transforms small vectors stacked
        (:attr:`~simulator.fft.base.FFTBackend.stacks_inverse`); then the rows of the stacked transform."""
        if self.by_component and not self.fft.stacks_inverse:
            return self.fft.in_turn(self.fft.irfft, spectrum, 3, component)
        out = self.fft.irfft(vector(spectrum))
        return [out[i] for i in range(3)] if self.by_component else out

    def momentum(self, u: Sequence[jax.Array], u_hat: jax.Array) -> jax.Array:
        """The velocity's advection before projection and dealiasing, ``(3, *k_shape)``, from its real-space
        components ``u`` and spectrum ``u_hat``: -div(u u - u_z^2 I)^ when :attr:`stress_form`, else
        (u x w)^ (the module's docstring says when and why)."""
        if self.stress_form:
            return stress_divergence(self.ops, self.spectra(list(u), 5, lambda j, v: stress(v)[j]))
        return self.spectrum(cross(u, self.curl(u_hat)))

    def spectrum(self, parts: Sequence[jax.Array]) -> jax.Array:
        """The spectra ``(m, *k_shape)`` of m real-space fields ``(Nx, Ny, Nz)``."""
        if self.by_component:
            return self.ops.stack([self.fft.rfft(p) for p in parts])
        return self.fft.rfft(jnp.stack(parts))

    def spectra(self, inputs: T, count: int, make: Callable[[int, T], jax.Array]) -> jax.Array:
        """The spectra ``(count, *k_shape)`` of the real-space fields ``make(j, inputs)`` (``inputs``: any
        pytree, such as the components of u); by component each field is made when the backend's order of
        transforms makes it (:meth:`~simulator.fft.base.FFTBackend.in_turn`: one at a time on GPUs with
        ``fft.in_turn``), stacked all at once."""
        if self.by_component:
            return self.ops.stack(self.fft.in_turn(self.fft.rfft, inputs, count, make))
        return self.spectrum([make(j, inputs) for j in range(count)])
