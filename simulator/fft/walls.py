"""The bounded last axis's transforms (:mod:`simulator.fft.bases`), local to a device: the free-slip basis's sine
and cosine series and the no-slip basis's Chebyshev series.

A backend whose layout takes walls (``Layout.takes_walls``: single, slab and pencil) runs these where it would run
its real-to-complex transform of z: on one device before the complex transform of (x, y), on a slab or a pencil
before the first all-to-all (z is whole on each device in real space), so the distributed transform of a walled
field is the periodic one with its first stage replaced (:meth:`simulator.fft.base.FFTBackend.forward_walls`; a
pencil's exchanges differ: :mod:`simulator.fft.pencil`).

Grid and normalisation: ``N`` points ``z_j = (j + 1/2) H / N`` and scipy's unnormalised type-2 transforms,

* ``even`` (cosine, DCT-II): ``c_n = 2 sum_j f_j cos(pi n (2j + 1) / 2N)``, ``n = 0 .. N-1``;
* ``odd`` (sine, DST-II): ``c_n = 2 sum_j f_j sin(pi n (2j + 1) / 2N)``, ``n = 1 .. N-1`` at entry ``n`` (scipy's
  ``dst(f, 2)[n - 1]``), entry 0 zero and mode ``N`` dropped, as the periodic transforms drop their Nyquist plane,

with inverses dividing by ``2N`` (DCT-III/DST-III, scipy's ``idct``/``idst`` with ``norm="backward"``). JAX has no
DCT or DST: each is one real FFT of length ``2N`` of the even (``[f, reversed f]``) or odd (``[f, -reversed f]``)
extension, whose coefficient ``n`` is ``2 exp(i pi n / 2N)`` times the cosine sum (``-2i`` times the sine sum)
(Makhoul 1980, "A fast cosine transform in one and two dimensions"; the extension costs twice the points of the
rfft of a periodic axis, a plain rfft of the local FFT, FFTW's or XLA's, with no separate code path).

The Chebyshev series (``chebyshev``, :class:`simulator.fft.bases.Chebyshev`): ``N`` Gauss-Lobatto points
``z_j = H (1 - cos(pi j / (N - 1))) / 2``, ascending from the lower plate (``z_0 = 0``) to the upper
(``z_{N-1} = H``), and the coefficients ``a_k`` of ``f = sum_k a_k T_k(2 z / H - 1)``, ``k = 0 .. N - 1``: a type-I
cosine transform (:func:`dct1`: one real FFT of length ``2 (N - 1)`` of the even extension; Canuto, Hussaini,
Quarteroni & Zang 2006, sec. 2.4.2; on the FFTW path FFTW's own REDFT00 where ``N - 1`` is FFT-friendly, the faster
there: :func:`direct_dct1`), normalised so that the forward transform gives the coefficients themselves
(:func:`chebyshev_forward`); :mod:`simulator.walls.chebyshev` steps fields with the same transform.

Transposes (reverse mode, :mod:`simulator.fft.linear`): with ``w_n = 4N`` at ``n = 0`` and ``2N`` elsewhere
(:func:`simulator.fft.bases.transpose_weight`),
``C^T = C^{-1} diag(w)`` (the orthonormal type-2 transform is ``diag(w)^{-1/2} C``), and the same for the sine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft import bases, compact
from simulator.fft.bases import CHEBYSHEV, LEGENDRE, SERIES, fft_friendly
from simulator.fft.local import LocalFFT


def _phase(n: int, dtype: jnp.dtype, sign: float) -> jax.Array:
    """``exp(sign i pi m / 2n)`` for ``m = 0 .. n-1``, ``(n,)``, made from an iota inside the trace (a slab stage,
    a ``custom_partitioning`` function, closes over no array)."""
    angle = jnp.arange(n, dtype=jnp.finfo(dtype).dtype) * (sign * np.pi / (2 * n))
    return jax.lax.complex(jnp.cos(angle), jnp.sin(angle)).astype(dtype)


def dct1(rfft: Callable[[jax.Array], jax.Array], f: jax.Array) -> jax.Array:
    """``y_k = f_0 + (-1)^k f_{N-1} + 2 sum_{j=1}^{N-2} f_j cos(pi j k / (N - 1))`` of a real ``f`` ``(..., N)`` over
    its last axis (scipy's DCT-I): ``rfft`` (a real FFT of the last axis) of the even extension
    ``(f_0 .. f_{N-1}, f_{N-2} .. f_1)``, whose sine parts cancel; real, ``(..., N)``."""
    extended = jnp.concatenate([f, f[..., -2:0:-1]], axis=-1)
    return jnp.real(rfft(extended)[..., :f.shape[-1]])


def direct_dct1(n: int) -> bool:
    """Whether FFTW's REDFT00 of ``n`` points beats its real FFT of the even extension (2 (n - 1) points, with the
    extension's copy and the complex result's pass): where ``n - 1`` is FFT-friendly. Measured on 1536 columns in
    float64, one thread (CPU ms, REDFT00 against the extension): 5.2/7.6 at 385, 1.3/1.7 at 97, 1.5/1.9 at 129,
    0.9/1.0 at 65; but 33/14 at 384 (2 x 383), 6.9/4.0 at 128 (2 x 127), 2.1/1.8 at 100 (2 x 9 x 11), 2.3/2.3
    at 96 (2 x 5 x 19): FFTW's REDFT00 is slow on a length with a large prime factor."""
    return n > 2 and fft_friendly(n - 1)


def dct1_of(local: LocalFFT, f: jax.Array) -> jax.Array:
    """:func:`dct1` of a real ``f`` ``(..., N)`` by ``local``: FFTW's own DCT-I (REDFT00, :meth:`LocalFFT.dct1`) on
    the fftw path where :func:`direct_dct1` says it is the faster, else the even extension's real FFT."""
    if local.name == "fftw" and direct_dct1(f.shape[-1]):
        return local.dct1(f)
    return dct1(_rfft_last(local), f)


def chebyshev_ends(n: int) -> jax.Array:
    """``c_k`` of the Chebyshev transforms of ``n`` points: 2 at ``k = 0`` and ``k = n - 1``, 1 between, ``(n,)``,
    made from an iota inside the trace (a slab stage closes over no array)."""
    k = jnp.arange(n)
    return jnp.where((k == 0) | (k == n - 1), 2.0, 1.0)


def chebyshev_forward(dct: Callable[[jax.Array], jax.Array], values: jax.Array) -> jax.Array:
    """The Chebyshev coefficients ``a[..., k]`` of real values on the ascending Gauss-Lobatto points (same shape):
    ``a_k = (2 / ((N - 1) c_k)) sum_j f_j cos(pi j k / (N - 1)) / c_j``, exact for polynomials of degree N - 1;
    ``dct`` is a DCT-I of the last axis (:func:`dct1`, :func:`dct1_of`)."""
    n = values.shape[-1]
    # the points ascend (x_j = -cos(pi j / (N - 1))), the DCT's descend: reversed, as T_k(-x) = (-1)^k T_k(x) says
    return dct(jnp.flip(values, -1)) / ((n - 1) * chebyshev_ends(n))


def chebyshev_backward(dct: Callable[[jax.Array], jax.Array], coefficients: jax.Array) -> jax.Array:
    """The values on the ascending Gauss-Lobatto points of real Chebyshev ``coefficients[..., k]`` (same shape)."""
    # the DCT-I doubles the interior terms: halved first
    return jnp.flip(dct(coefficients * (0.5 * chebyshev_ends(coefficients.shape[-1]))), -1)


def legendre_matrices(n: int, dtype: jnp.dtype) -> tuple[jax.Array, jax.Array]:
    """``(V, C)`` of :func:`simulator.fft.bases.legendre_matrices` (values of coefficients and its inverse, ``(n,
    n)``), made inside the trace from an iota (a slab stage, a ``custom_partitioning`` function, closes over no
    array): the Legendre-Gauss-Lobatto points by Newton's iteration x <- x - (x L_N - L_{N-1}) / (n L_N) from the
    Chebyshev points (it fixes +-1; converged to round-off in well under its 24 trips at a few dozen points), the
    Legendre polynomials there by their recurrence."""
    big_n = n - 1
    real = jnp.finfo(dtype).dtype

    def columns(x: jax.Array) -> jax.Array:  # L_0 .. L_N at x: (n, n), column k
        def step(k, carry):
            before, now, out = carry
            after = ((2 * k + 1) * x * now - k * before) / (k + 1)
            return now, after, out.at[:, k + 1].set(after)

        out = jnp.zeros((n, n), real).at[:, 0].set(1.0).at[:, 1].set(x)
        return jax.lax.fori_loop(1, big_n, step, (jnp.ones_like(x), x, out))[2]

    def newton(_, x):
        v = columns(x)
        return x - (x * v[:, big_n] - v[:, big_n - 1]) / (n * v[:, big_n])

    x = jax.lax.fori_loop(0, 24, newton, -jnp.cos(jnp.arange(n, dtype=real) * (np.pi / big_n)))
    x = 0.5 * (x - jnp.flip(x))  # symmetric, as the host's points
    v = columns(x)
    weights = 2.0 / (big_n * n * v[:, big_n] ** 2)
    k = jnp.arange(n, dtype=real)
    norms = jnp.where(k == big_n, 2.0 / big_n, 2.0 / (2 * k + 1))
    return v, (v.T * weights) / norms[:, None]


def legendre_forward(values: jax.Array) -> jax.Array:
    """The Legendre coefficients ``a[..., k]`` of values (real or complex) on the ascending Legendre-Gauss-Lobatto
    points (same shape): the dense inverse Vandermonde matrix (:func:`legendre_matrices`), exact for polynomials of
    degree N - 1."""
    inverse = legendre_matrices(values.shape[-1], values.dtype)[1]
    return jnp.matmul(values, inverse.T, precision=jax.lax.Precision.HIGHEST)


def legendre_backward(coefficients: jax.Array) -> jax.Array:
    """The values on the ascending Legendre-Gauss-Lobatto points of Legendre ``coefficients[..., k]`` (same shape)."""
    vandermonde = legendre_matrices(coefficients.shape[-1], coefficients.dtype)[0]
    return jnp.matmul(coefficients, vandermonde.T, precision=jax.lax.Precision.HIGHEST)


def _rfft_last(local: LocalFFT) -> Callable[[jax.Array], jax.Array]:
    return lambda x: local.rfftn(x, (-1,))


def forward_z(local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
    """The sine (``odd``), cosine (``even``) or Chebyshev (``chebyshev``) coefficients of a real ``x`` ``(..., N)``
    along its last axis: real, ``(..., N)`` (module docstring)."""
    if parity not in SERIES:
        raise ValueError(f"parity {parity!r}: one of {SERIES}")
    if parity == CHEBYSHEV:
        return chebyshev_forward(functools.partial(dct1_of, local), x)
    if parity == LEGENDRE:
        return legendre_forward(x)
    n = x.shape[-1]
    mirrored = jnp.flip(x, -1)
    spectrum = local.rfftn(jnp.concatenate([x, mirrored if parity == "even" else -mirrored], -1), (-1,))[..., :n]
    phase = _phase(n, spectrum.dtype, -1.0)
    return jnp.real(spectrum * (phase if parity == "even" else 1j * phase))


def inverse_z(local: LocalFFT, parity: str, k: jax.Array) -> jax.Array:
    """Inverse of :func:`forward_z`: the real field ``(..., N)`` of coefficients ``k`` ``(..., N)`` (real, or
    complex whose imaginary part is another field's coefficients and is dropped)."""
    if parity not in SERIES:
        raise ValueError(f"parity {parity!r}: one of {SERIES}")
    n = k.shape[-1]
    coefficients = jnp.real(k)
    if parity == CHEBYSHEV:
        return chebyshev_backward(functools.partial(dct1_of, local), coefficients)
    if parity == LEGENDRE:
        return legendre_backward(coefficients)
    dtype = jnp.result_type(coefficients, jnp.complex64)
    phase = _phase(n, dtype, 1.0)
    if parity == "odd":  # a sine series has no n = 0 term: that entry is ignored, as irfft ignores an imaginary mean
        phase = jnp.where(jnp.arange(n) == 0, 0, -1j * phase).astype(dtype)
    extended = jnp.concatenate([coefficients * phase, jnp.zeros((*k.shape[:-1], 1), dtype)], -1)
    return local.irfftn(extended, (-1,), 2 * n)[..., :n]


def hermitian_full(half: jax.Array, ny: int) -> jax.Array:
    """The full spectrum ``(..., Nx, Ny, ...)`` of (x, y) of a real field from its half ``half`` ``(..., Nx, Ny // 2
    + 1, ...)`` (axes -3 and -2; an rfft's along y): the entries of negative k_y are the conjugates of those at
    -(k_x, k_y)."""
    mirrored = jnp.roll(jnp.flip(half, -3), 1, -3)  # entry m at -m (mod Nx) along x
    return compact.join(((half, 0), (jnp.conj(mirrored[..., (ny - 1) // 2:0:-1, :]), half.shape[-2])), -2, ny)


def forward(local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
    """A walled field's spectrum on one device: :func:`forward_z`, then the complex transform of the first two
    axes; ``(*batch, Nx, Ny, Nz)`` real -> complex, the same shape (kx, ky, n)."""
    return local.fftn(forward_z(local, parity, x).astype(jnp.result_type(x, jnp.complex64)), (-3, -2))


def inverse(local: LocalFFT, parity: str, k: jax.Array) -> jax.Array:
    """Inverse of :func:`forward`: the real field ``(*batch, Nx, Ny, Nz)``."""
    return inverse_z(local, parity, local.ifftn(k, (-3, -2)))


def runs_of(keep: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The runs ``[start, stop)`` of the true entries of a 1D bool ``keep``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(int), [0]])))
    return tuple((int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True))


def kept_runs(n: int) -> tuple[tuple[int, int], ...]:
    """The runs of entries (NumPy's FFT order) of a periodic axis of ``n`` points whose modes the 2/3 rule keeps
    (:meth:`simulator.fft.bases.Fourier.keep`): ``m = 0 .. a - 1``, then ``m = -(a - 1) .. -1``."""
    return runs_of(bases.Fourier(n, 1.0).keep())


def gather_runs(x: jax.Array, runs: tuple[tuple[int, int], ...], axis: int) -> jax.Array:
    """The entries of ``runs`` (``[start, stop)`` each) of ``x`` along ``axis``, one after the other."""
    pieces, taken = [], 0
    for a, b in runs:
        pieces.append((jax.lax.slice_in_dim(x, a, b, axis=axis), taken))
        taken += b - a
    return compact.join(pieces, axis, taken)


def spread_runs(part: jax.Array, runs: tuple[tuple[int, int], ...], n: int, axis: int) -> jax.Array:
    """Inverse of :func:`gather_runs`: ``part`` placed back at ``runs`` among zeros, ``n`` entries along ``axis``."""
    pieces, taken = [], 0
    for a, b in runs:
        pieces.append((jax.lax.slice_in_dim(part, taken, taken + b - a, axis=axis), a))
        taken += b - a
    return compact.join(pieces, axis, n)


def _of_complex(transform: Callable[[jax.Array], jax.Array], part: jax.Array) -> jax.Array:
    """A real transform of the last axis of the real and the imaginary parts of ``part``, one batch of both."""
    both = transform(jnp.stack([jnp.real(part), jnp.imag(part)]))
    return jax.lax.complex(both[0], both[1])


@dataclass(frozen=True)
class KeptHalf:
    """The columns (k_x, k_y) of a walled spectrum on one device that the 2/3 rule of both periodic axes keeps,
    of the half k_y >= 0 alone (a real field's spectrum holds the others as their conjugates): 2/9 of a box's
    columns, 1/3 of a plane's. ``(nx, ny)``: the periodic axes' points, the grid's first two (a plane's ``(1,
    Nx)``). Arrays in this layout are ``(*batch, Kx, Ky, Nz)``: along the first axis the kept entries in NumPy's
    order (:func:`kept_runs`: m = 0 .. a - 1, then -(a - 1) .. -1), along the second k_y = 0 .. Ky - 1.

    What the no-slip step runs on, on one device (:mod:`simulator.equations.noslip_flow`): the stage solves hold
    these columns alone, and the explicit terms' products are transformed to and from them directly
    (:meth:`forward`, :meth:`inverse`: the real transform of (x, y), the series across the plates of the kept
    columns alone), so that no step touches the columns the 2/3 rule drops."""

    nx: int
    ny: int

    @property
    def rows(self) -> tuple[tuple[int, int], ...]:
        """The kept entries' runs along the first axis."""
        return kept_runs(self.nx)

    @property
    def count(self) -> int:
        """Ky: the kept k_y >= 0."""
        return kept_runs(self.ny)[0][1]

    def gather(self, k: jax.Array) -> jax.Array:
        """The columns of a walled spectrum ``(*batch, Nx, Ny, Nz)`` (full along (x, y), of real fields) in this
        layout."""
        return gather_runs(k[..., : self.count, :], self.rows, -3)

    def spread(self, part: jax.Array) -> jax.Array:
        """Inverse of :meth:`gather` for a spectrum that holds nothing outside the kept columns: the full
        spectrum, zero outside them, the negative k_y the conjugates of the positive."""
        half = spread_runs(spread_runs(part, self.rows, self.nx, -3), ((0, self.count),), self.ny // 2 + 1, -2)
        return hermitian_full(half, self.ny)

    def select(self, vector: jax.Array) -> jax.Array:
        """A 3D vector that broadcasts against a walled spectrum (size 1 or the grid's along each axis, as
        :meth:`simulator.fft.domain.DomainSpectra.domain_keep`'s) on this layout's columns."""
        if vector.shape[0] > 1:
            vector = gather_runs(vector, self.rows, 0)
        return vector[:, : self.count] if vector.shape[1] > 1 else vector

    def forward(self, local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
        """The kept columns of :func:`forward` of real fields ``x`` ``(*batch, Nx, Ny, Nz)``: the real transform of
        (x, y) (half the complex one's work), then the series across the plates of the kept columns alone."""
        return jax.jit(kept_half_forward, static_argnums=(0, 1, 2))(self, local, parity, x)

    def inverse(self, local: LocalFFT, parity: str, part: jax.Array) -> jax.Array:
        """The real fields ``(*batch, Nx, Ny, Nz)`` of a spectrum on the kept columns ``part``, the others zero:
        the series across the plates of those columns, then the real inverse of (x, y)."""
        return jax.jit(kept_half_inverse, static_argnums=(0, 1, 2))(self, local, parity, part)


# each a nested jit, so that a step's jaxpr names it: the planner counts them as it counts the distributed FFT's
# primitive (:func:`simulator.planning.plan.transforms_per_step`), one scalar 3D transform per field of the batch
def kept_half_forward(half: KeptHalf, local: LocalFFT, parity: str, x: jax.Array) -> jax.Array:
    """:meth:`KeptHalf.forward`."""
    spectrum = local.rfftn(x, (-3, -2))[..., : half.count, :]
    return _of_complex(functools.partial(forward_z, local, parity), gather_runs(spectrum, half.rows, -3))


def kept_half_inverse(half: KeptHalf, local: LocalFFT, parity: str, part: jax.Array) -> jax.Array:
    """:meth:`KeptHalf.inverse`."""
    values = _of_complex(functools.partial(inverse_z, local, parity), part)
    spectrum = spread_runs(spread_runs(values, half.rows, half.nx, -3), ((0, half.count),), half.ny // 2 + 1, -2)
    return local.irfftn(spectrum, (-3, -2), half.ny)


#: the kept half's transforms by the names a jaxpr gives their nested jits
KEPT_TRANSFORMS = (kept_half_forward.__name__, kept_half_inverse.__name__)


#: what a walled backend's layout says (:meth:`simulator.fft.base.FFTBackend.describe_layout`)
LAYOUT = ", walled spectrum (full along the plates, sine/cosine or Chebyshev across them)"
#: the transform kinds of a walled field in :mod:`simulator.fft.linear`: forward and inverse, per parity
KINDS = tuple(f"{direction}walls_{parity}" for direction in ("", "i") for parity in SERIES)


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

        raise ConfigError("fft.backend", self.name, "single, slab or pencil with grid.walls", "does not take walls")

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

    def _walls_chebyshev(self, x: jax.Array) -> jax.Array:
        return self._walls(CHEBYSHEV, x)

    def _iwalls_chebyshev(self, k: jax.Array) -> jax.Array:
        return self._iwalls(CHEBYSHEV, k)

    def _walls_legendre(self, x: jax.Array) -> jax.Array:
        return self._walls(LEGENDRE, x)

    def _iwalls_legendre(self, k: jax.Array) -> jax.Array:
        return self._iwalls(LEGENDRE, k)

    def forward_walls(self, x: jax.Array, parity: str) -> jax.Array:
        """The walled spectrum of a real field ``(*batch, Nx, Ny, Nz)`` whose z series is a sine (``odd``), a
        cosine (``even``) or a Chebyshev (``chebyshev``) one: forward transform, unnormalised along x and y
        (NumPy's FFT), scipy's DCT-II/DST-II along z for the sine and cosine, the Chebyshev coefficients
        themselves for ``chebyshev``."""
        from simulator.fft import linear

        return linear.apply(self, f"walls_{parity}", x)

    def inverse_walls(self, k: jax.Array, parity: str) -> jax.Array:
        """Inverse of :meth:`forward_walls`: the real field ``(*batch, Nx, Ny, Nz)`` in the real sharding."""
        from simulator.fft import linear

        return linear.apply(self, f"iwalls_{parity}", k)

    def wall_wavenumbers(self, box: tuple[float, float, float], dtype: jnp.dtype = jnp.float32
                         ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(kx, ky, kz)`` of a walled spectrum, broadcasting against it and sharded like it: the Fourier bases'
        ``2 pi m / L`` along x and y, the sine and cosine series' ``n pi / H`` along z (``H = box[2]``), whichever
        basis the run has (the periodic directions' wavenumbers of a Chebyshev run)."""
        sincos = bases.domain(self.shape, box, "sincos")
        return tuple(self._broadcast_vector(b.wavenumbers(b.modes()), a, dtype)  # type: ignore[return-value]
                     for a, b in enumerate(sincos))

    def wall_parseval_weight(self, dtype: jnp.dtype = jnp.float32) -> jax.Array:
        """Weights ``w`` with ``sum(w |u_hat|**2) / N**2 == mean(u**2)`` for a walled spectrum (either parity):
        1/4 on ``n = 0``, 1/2 elsewhere (:meth:`simulator.fft.bases.SinCos.parseval_weights`)."""
        return self._broadcast_vector(bases.SinCos(self.shape[2], 1.0).parseval_weights(), 2, dtype)
