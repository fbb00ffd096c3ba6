"""The free-slip basis's transforms of the bounded last axis (:mod:`simulator.fft.bases`), local to a device.

A backend whose layout takes walls (``Layout.takes_walls``: single and slab) runs these where it would run its
real-to-complex transform of z: on one device before the complex transform of (x, y), on a slab before the
all-to-all (z is whole on each device in real space), so the distributed transform of a walled field is the
periodic one with its first stage replaced (:meth:`simulator.fft.base.FFTBackend.forward_walls`).

Grid and normalisation: ``N`` points ``z_j = (j + 1/2) H / N`` and scipy's unnormalised type-2 transforms,

* ``even`` (cosine, DCT-II): ``c_n = 2 sum_j f_j cos(pi n (2j + 1) / 2N)``, ``n = 0 .. N-1``;
* ``odd`` (sine, DST-II): ``c_n = 2 sum_j f_j sin(pi n (2j + 1) / 2N)``, ``n = 1 .. N-1`` at entry ``n`` (scipy's
  ``dst(f, 2)[n - 1]``), entry 0 zero and mode ``N`` dropped, as the periodic transforms drop their Nyquist plane,

with inverses dividing by ``2N`` (DCT-III/DST-III, scipy's ``idct``/``idst`` with ``norm="backward"``). JAX has no
DCT or DST: each is one real FFT of length ``2N`` of the even (``[f, reversed f]``) or odd (``[f, -reversed f]``)
extension, whose coefficient ``n`` is ``2 exp(i pi n / 2N)`` times the cosine sum (``-2i`` times the sine sum)
(Makhoul 1980, "A fast cosine transform in one and two dimensions"; the extension costs twice the points of the
rfft of a periodic axis, a plain rfft of the local FFT, FFTW's or XLA's, with no separate code path).

Transposes (reverse mode, :mod:`simulator.fft.linear`): with ``w_n = 4N`` at ``n = 0`` and ``2N`` elsewhere
(:func:`simulator.fft.bases.transpose_weight`),
``C^T = C^{-1} diag(w)`` (the orthonormal type-2 transform is ``diag(w)^{-1/2} C``), and the same for the sine.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft.bases import PARITIES
from simulator.fft.local import LocalFFT


def _phase(n: int, dtype: jnp.dtype, sign: float) -> jax.Array:
    """``exp(sign i pi m / 2n)`` for ``m = 0 .. n-1``, ``(n,)``, made from an iota inside the trace (a slab stage,
    a ``custom_partitioning`` function, closes over no array)."""
    angle = jnp.arange(n, dtype=jnp.finfo(dtype).dtype) * (sign * np.pi / (2 * n))
    return jax.lax.complex(jnp.cos(angle), jnp.sin(angle)).astype(dtype)


def forward_z(local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
    """The sine (``odd``) or cosine (``even``) coefficients of a real ``x`` ``(..., N)`` along its last axis:
    real, ``(..., N)`` (module docstring)."""
    if parity not in PARITIES:
        raise ValueError(f"parity {parity!r}: one of {PARITIES}")
    n = x.shape[-1]
    mirrored = jnp.flip(x, -1)
    spectrum = local.rfftn(jnp.concatenate([x, mirrored if parity == "even" else -mirrored], -1), (-1,))[..., :n]
    phase = _phase(n, spectrum.dtype, -1.0)
    return jnp.real(spectrum * (phase if parity == "even" else 1j * phase))


def inverse_z(local: LocalFFT, parity: str, k: jax.Array) -> jax.Array:
    """Inverse of :func:`forward_z`: the real field ``(..., N)`` of coefficients ``k`` ``(..., N)`` (real, or
    complex whose imaginary part is another field's coefficients and is dropped)."""
    if parity not in PARITIES:
        raise ValueError(f"parity {parity!r}: one of {PARITIES}")
    n = k.shape[-1]
    coefficients = jnp.real(k)
    dtype = jnp.result_type(coefficients, jnp.complex64)
    phase = _phase(n, dtype, 1.0)
    if parity == "odd":  # a sine series has no n = 0 term: that entry is ignored, as irfft ignores an imaginary mean
        phase = jnp.where(jnp.arange(n) == 0, 0, -1j * phase).astype(dtype)
    extended = jnp.concatenate([coefficients * phase, jnp.zeros((*k.shape[:-1], 1), dtype)], -1)
    return local.irfftn(extended, (-1,), 2 * n)[..., :n]


def forward(local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
    """A walled field's spectrum on one device: :func:`forward_z`, then the complex transform of the first two
    axes; ``(*batch, Nx, Ny, Nz)`` real -> complex, the same shape (kx, ky, n)."""
    return local.fftn(forward_z(local, parity, x).astype(jnp.result_type(x, jnp.complex64)), (-3, -2))


def inverse(local: LocalFFT, parity: str, k: jax.Array) -> jax.Array:
    """Inverse of :func:`forward`: the real field ``(*batch, Nx, Ny, Nz)``."""
    return inverse_z(local, parity, local.ifftn(k, (-3, -2)))


#: what a walled backend's layout says (:meth:`simulator.fft.base.FFTBackend.describe_layout`)
LAYOUT = ", walled spectrum (full along the plates, sine/cosine across them)"
#: the transform kinds of a walled field in :mod:`simulator.fft.linear`: forward and inverse, per parity
KINDS = tuple(f"{direction}walls_{parity}" for direction in ("", "i") for parity in PARITIES)


class WalledTransforms:
    """The walled transforms every backend has (:class:`simulator.fft.base.FFTBackend` inherits them); a backend
    whose layout takes walls defines :meth:`_walls` and :meth:`_iwalls`.

    A walled spectrum is ``(*batch, Nx, Ny, Nz)`` complex, in real-axis order and the backend's spectral
    sharding: the full complex spectrum of (x, y) (NumPy's ``fftfreq`` order) by the sine or cosine entries
    ``n = 0 .. Nz - 1`` along z (module docstring)."""

    #: whether the run's fields lie between plates (set by :func:`simulator.runtime.make_fft`): what its layout says
    walls = False

    def _walls(self, parity: str, x: jax.Array) -> jax.Array:
        from simulator.errors import ConfigError

        raise ConfigError("fft.backend", self.name, "single or slab with grid.walls", "does not take walls")

    def _iwalls(self, parity: str, k: jax.Array) -> jax.Array:
        return self._walls(parity, k)  # the same refusal

    def _walls_odd(self, x: jax.Array) -> jax.Array:
        return self._walls("odd", x)

    def _walls_even(self, x: jax.Array) -> jax.Array:
        return self._walls("even", x)

    def _iwalls_odd(self, k: jax.Array) -> jax.Array:
        return self._iwalls("odd", k)

    def _iwalls_even(self, k: jax.Array) -> jax.Array:
        return self._iwalls("even", k)

    def forward_walls(self, x: jax.Array, parity: str) -> jax.Array:
        """The walled spectrum of a real field ``(*batch, Nx, Ny, Nz)`` whose z series is a sine (``odd``) or a
        cosine (``even``) one: forward transform, unnormalised (scipy's DCT-II/DST-II along z, NumPy's FFT along
        x and y)."""
        from simulator.fft import linear

        return linear.apply(self, f"walls_{parity}", x)

    def inverse_walls(self, k: jax.Array, parity: str) -> jax.Array:
        """Inverse of :meth:`forward_walls`: the real field ``(*batch, Nx, Ny, Nz)`` in the real sharding."""
        from simulator.fft import linear

        return linear.apply(self, f"iwalls_{parity}", k)

    def wall_wavenumbers(self, box: tuple[float, float, float], dtype: jnp.dtype = jnp.float32
                         ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(kx, ky, kz)`` of a walled spectrum, broadcasting against it and sharded like it: ``2 pi m / L``
        along x and y, ``n pi / H`` along z (``H = box[2]``)."""
        out = []
        for axis in range(3):
            n = self.shape[axis]
            k = np.arange(n) * np.pi / float(box[2]) if axis == 2 else np.fft.fftfreq(n, 1.0 / n) * (
                2.0 * np.pi / float(box[axis]))
            out.append(self._broadcast_vector(k, axis, dtype))
        return out[0], out[1], out[2]

    def wall_parseval_weight(self, dtype: jnp.dtype = jnp.float32) -> jax.Array:
        """Weights ``w`` with ``sum(w |u_hat|**2) / N**2 == mean(u**2)`` for a walled spectrum (either parity):
        1/4 on ``n = 0``, 1/2 elsewhere (:meth:`simulator.fft.bases.SinCos.parseval_weights`)."""
        from simulator.fft.bases import SinCos

        return self._broadcast_vector(SinCos(self.shape[2], 1.0).parseval_weights(), 2, dtype)
