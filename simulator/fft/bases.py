"""The domain as a product of bases, one per axis of the box a grid runs as (no JAX).

A periodic direction has the :class:`Fourier` basis. The last direction of a box, or of a plane (the box
``(1, Nx, Ny)`` of :mod:`simulator.fft.plane`: its last axis is the box's last), may instead lie between two
plates at ``0`` and ``H`` (``grid.walls``), with the :class:`SinCos` basis of free-slip plates: each field is a
sine or a cosine series, its *parity* fixed by its condition at the plates:

* ``odd`` (sine, ``sin(n pi z / H)``): the field vanishes at both plates (a velocity normal to the plates; a
  temperature or scalar of fixed value, as its departure from the conductive profile);
* ``even`` (cosine, ``cos(n pi z / H)``): its normal derivative vanishes at both plates (a velocity along free-slip
  plates: no stress; a temperature or scalar of fixed flux).

Grid and modes (the transforms: :mod:`simulator.fft.walls`): ``N`` points at the cell centres
``z_j = (j + 1/2) H / N`` (the plates lie half a cell outside the first and last points; both series are
exact there), and mode numbers ``n = 0 .. N - 1`` on the spectral axis, wavenumber ``k_z = n pi / H``, for both
parities: a sine series' ``n = 0`` entry is zero, and its mode ``n = N`` is dropped as the periodic
transforms drop their Nyquist plane. That places a field and its z-derivative (of the other parity) on the same
entries, so every derivative is diagonal: ``d/dz cos -> -k_z sin``, ``d/dz sin -> +k_z cos``.

The :class:`Chebyshev` basis of no-slip plates (and of fixed values or fluxes at them) holds every field as a
Chebyshev series on the ``N`` Gauss-Lobatto points ``z_j = H (1 - cos(pi j / (N - 1))) / 2``, plates included;
its conditions are imposed by the solves that step it (:mod:`simulator.walls`), not by a parity. Its transform is
the ``chebyshev`` series of :mod:`simulator.fft.walls`.

Bases are static structure (part of a compiled program's key), as in Dedalus (``RealFourier``, ``SinCos``,
``ChebyshevT`` per axis).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: the parities of a free-slip field: its sine or cosine series
PARITIES = ("odd", "even")
#: the no-slip basis's series among a bounded axis's (``forward_walls(x, CHEBYSHEV)``)
CHEBYSHEV = "chebyshev"
#: the no-slip Legendre basis's series (``grid.walls.basis: legendre``)
LEGENDRE = "legendre"
#: every series of a bounded axis: the free-slip parities and the no-slip bases' Chebyshev and Legendre series
SERIES = (*PARITIES, CHEBYSHEV, LEGENDRE)


@dataclass(frozen=True)
class Axis:
    """What every basis of an axis is: ``size`` points over ``length``, its mode numbers ``0 .. size - 1`` and its
    2/3 rule; and what the code asks of it besides its numbers (class attributes)."""

    size: int
    length: float
    #: whether the axis lies between plates
    bounded = True
    #: whether the points are ``i L / N`` (a uniform grid from 0: no coordinates needed to place them)
    regular = False
    #: whether the points include both ends of the axis (a Chebyshev transform's real FFT is of ``2 (N - 1)`` points)
    endpoints = False
    #: ``(p, q)``: the 2/3 rule keeps the modes of ``|m| < p N / q`` (:meth:`keep`)
    kept = (2, 3)

    def modes(self) -> np.ndarray:
        """The mode numbers of the spectral entries, ``0 .. size - 1``, ``(size,)``."""
        return np.arange(self.size)

    def keep(self, modes: np.ndarray | None = None) -> np.ndarray:
        """The 2/3 rule per mode of ``modes`` (default :meth:`modes`): ``|m| < p N / q`` of :attr:`kept`, in integers
        (exact at the cutoff); bool, their shape."""
        p, q = self.kept
        return q * np.abs(self.modes() if modes is None else np.asarray(modes)) < p * self.size

    @classmethod
    def top_mode(cls, count: int) -> int:
        """The highest mode number of ``count`` modes as Dedalus counts a basis's size: degrees (or sine and cosine
        numbers) ``0 .. count - 1``."""
        return count - 1

    @classmethod
    def fewest(cls, count: int) -> int:
        """The fewest points whose 2/3 rule (:meth:`keep`) keeps the ``count`` modes of :meth:`top_mode`: the least
        N with ``q top < p N``."""
        p, q = cls.kept
        return q * cls.top_mode(count) // p + 1

    @classmethod
    def transform_length(cls, n: int) -> int | None:
        """The length of the FFT that transforms ``n`` points along the axis (None: no FFT, a dense transform)."""
        return n

    @classmethod
    def fast(cls, n: int) -> bool:
        """Whether ``n`` points transform fast: an FFT of an FFT-friendly length (:func:`fft_friendly`), or a dense
        transform, the same work at any size."""
        length = cls.transform_length(n)
        return length is None or fft_friendly(length)

    @classmethod
    def points_for(cls, count: int, at_least: int = 2) -> int:
        """The fewest points, at least ``at_least``, whose 2/3 rule keeps ``count`` modes (:meth:`fewest`) and
        that transform fast (:meth:`fast`): ``grid.modes`` -> ``grid.shape``."""
        n = max(cls.fewest(count), at_least)
        while not cls.fast(n):
            n += 1
        return n


@dataclass(frozen=True)
class Fourier(Axis):
    """A periodic axis of ``size`` points over ``length``: points ``i L / N``, wavenumbers ``2 pi m / L``; its 2/3 rule
    keeps ``|m| < N/3``."""

    bounded = False
    regular = True
    kept = (1, 3)

    @classmethod
    def top_mode(cls, count: int) -> int:
        """The highest ``|m|`` of ``count`` modes as Dedalus' ``RealFourier`` of size ``count`` holds them: the cosine
        and sine of ``m = 0 .. count/2 - 1`` (an odd count rounded up)."""
        return (count - 1) // 2

    @classmethod
    def fast(cls, n: int) -> bool:
        """An even, FFT-friendly ``n``: the real-to-complex transform of the last axis keeps ``n/2`` planes, and an
        even count divides over a mesh of two devices (taken on every periodic axis alike)."""
        return n % 2 == 0 and fft_friendly(n)

    def points(self) -> np.ndarray:
        """The grid points along the axis, ``(size,)``."""
        return np.arange(self.size) * (self.length / self.size)

    def modes(self) -> np.ndarray:
        """The signed mode numbers of the full axis in NumPy's ``fftfreq`` order, ``(size,)`` float64 (a
        real-to-complex layout holds a part of them: :meth:`simulator.fft.base.FFTBackend.mode_numbers`)."""
        return np.fft.fftfreq(self.size, 1.0 / self.size)

    def wavenumbers(self, modes: np.ndarray | None = None) -> np.ndarray:
        """``2 pi m / L`` of the mode numbers ``modes`` (default :meth:`modes`), their shape."""
        return (self.modes() if modes is None else modes) * (2.0 * np.pi / float(self.length))

    def parseval_weights(self, modes: np.ndarray, half: bool) -> np.ndarray:
        """Parseval's weights of the entries ``modes``: on the half axis of a real-to-complex spectrum (``half``)
        2 (a mode and its conjugate) except 1 at ``m = 0``; 1 on a full axis; ``modes``' shape."""
        if not half:
            return np.ones(np.shape(modes))
        w = np.full(np.shape(modes), 2.0)
        w[np.asarray(modes) == 0] = 1.0
        return w


@dataclass(frozen=True)
class SinCos(Axis):
    """A bounded axis between free-slip plates at ``0`` and ``length``: ``size`` points at the cell centres,
    mode numbers ``0 .. size - 1`` of both parities (module docstring); its 2/3 rule keeps ``n < 2N/3``, the rule of
    the series' 2N-point periodic extension."""

    def points(self) -> np.ndarray:
        """The grid points ``(j + 1/2) H / N``, ``(size,)``: the plates are at 0 and ``length``."""
        return (np.arange(self.size) + 0.5) * (self.length / self.size)

    def wavenumbers(self, modes: np.ndarray | None = None) -> np.ndarray:
        """``k_z = n pi / H`` of the spectral entries ``modes`` (default :meth:`modes`), their shape."""
        return (self.modes() if modes is None else modes) * np.pi / float(self.length)

    def parseval_weights(self) -> np.ndarray:
        """Weights ``w_n`` with ``mean(f**2) = sum_n w_n |c_n|**2 / N**2`` for the coefficients ``c_n`` of the
        forward transform (:mod:`simulator.fft.walls`, scipy's unnormalised DCT-II/DST-II): 1/4 at ``n = 0``
        (a cosine's mean; a sine's entry there is zero), 1/2 elsewhere, ``(size,)``."""
        w = np.full(self.size, 0.5)
        w[0] = 0.25
        return w


@dataclass(frozen=True)
class Chebyshev(Axis):
    """A bounded axis between plates at ``0`` and ``length`` (no-slip, or any fixed value or flux): ``size``
    Gauss-Lobatto points, both plates among them, and the Chebyshev coefficients ``k = 0 .. size - 1`` (its
    :meth:`modes`, the degrees; its 2/3 rule keeps degrees below 2N/3). A derivative is not diagonal in them: no
    wavenumbers (:func:`simulator.walls.chebyshev.derivative`)."""

    endpoints = True

    @classmethod
    def transform_length(cls, n: int) -> int | None:
        """The real FFT of the even extension, ``2 (n - 1)`` points (:mod:`simulator.fft.walls`): fast where ``n - 1``
        is FFT-friendly."""
        return 2 * (n - 1)

    def points(self) -> np.ndarray:
        """The Gauss-Lobatto points ``H (1 - cos(pi j / (N - 1))) / 2``, ascending from 0 to ``length``,
        ``(size,)``."""
        return 0.5 * self.length * (1.0 - np.cos(np.pi * np.arange(self.size) / (self.size - 1)))


@functools.lru_cache(maxsize=16)
def legendre_nodes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` Legendre-Gauss-Lobatto points of [-1, 1] (n >= 2), ascending, and their quadrature weights, each
    ``(n,)``: +-1 and the roots of L_N', N = n - 1 (the eigenvalues of the Jacobi (1, 1) polynomials' three-term
    matrix, polished by Newton's method on L_N'), weights 2 / (N (N + 1) L_N(x_j)^2); the quadrature is exact for
    degree 2N - 1. Symmetric to round-off about 0 (the mirror images averaged)."""
    big_n = n - 1
    k = np.arange(1, big_n - 1, dtype=float)
    off = np.sqrt(k * (k + 2) / ((2 * k + 1) * (2 * k + 3)))  # the monic P^(1,1)_k's recurrence
    inner = np.linalg.eigvalsh(np.diag(off, 1) + np.diag(off, -1)) if big_n > 1 else np.zeros(0)
    series = np.polynomial.legendre.Legendre.basis(big_n)
    slope, curvature = series.deriv(), series.deriv(2)
    for _ in range(3):
        inner = inner - slope(inner) / curvature(inner)
    x = np.concatenate([[-1.0], inner, [1.0]])
    x = 0.5 * (x - x[::-1])
    return x, 2.0 / (big_n * (big_n + 1) * series(x) ** 2)


@functools.lru_cache(maxsize=16)
def legendre_matrices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(V, C)``, ``(n, n)`` each: V_jk = L_k(x_j) on the ``n`` Legendre-Gauss-Lobatto points (values of
    coefficients) and its inverse C = diag(1/g) V^T diag(w) (coefficients of values), w the quadrature weights and
    g_k = sum_j w_j L_k(x_j)^2 = 2/(2k + 1), 2/N at k = N (the quadrature's norm of L_N). Dense: n^2 entries and
    n^2 work per column, fine at the few dozen points across that a Legendre run takes (the Chebyshev basis's
    transform is the FFT's N log N)."""
    x, w = legendre_nodes(n)
    vandermonde = np.polynomial.legendre.legvander(x, n - 1)
    return vandermonde, (vandermonde.T * w) / legendre_norms(n)[:, None]


def legendre_norms(n: int) -> np.ndarray:
    """g_k of :func:`legendre_matrices`, ``(n,)``."""
    k = np.arange(n, dtype=float)
    g = 2.0 / (2 * k + 1)
    g[-1] = 2.0 / (n - 1)
    return g


@dataclass(frozen=True)
class Legendre(Chebyshev):
    """A bounded axis between plates at ``0`` and ``length`` in Legendre polynomials: ``size`` Legendre-Gauss-Lobatto
    points, both plates among them, and the coefficients ``k = 0 .. size - 1`` of L_k (degrees, as
    :class:`Chebyshev`'s: its 2/3 rule). Its transform is the dense ``legendre`` series of :mod:`simulator.fft.walls`
    (:func:`legendre_matrices`)."""

    @classmethod
    def transform_length(cls, n: int) -> int | None:
        """None: the transform is a dense matrix product (:func:`legendre_matrices`), the same work at any ``n``."""
        return None

    def points(self) -> np.ndarray:
        """The Legendre-Gauss-Lobatto points ``H (1 + x_j) / 2``, ascending from 0 to ``length``, ``(size,)``."""
        return 0.5 * self.length * (1.0 + legendre_nodes(self.size)[0])


Basis = Fourier | SinCos | Chebyshev | Legendre
#: the bounded bases by the name ``domain`` takes
BOUNDED = {"sincos": SinCos, "chebyshev": Chebyshev, "legendre": Legendre}


def domain(cells: Sequence[int], lengths: Sequence[float], bounded: str | None) -> tuple[Basis, Basis, Basis]:
    """The bases of the box ``cells`` with ``lengths`` (:func:`simulator.fft.plane.cells` and ``lengths``):
    Fourier on every axis, the last the bounded basis named ``bounded`` (a key of :data:`BOUNDED`) where it
    is not None."""
    bases: list[Basis] = [Fourier(int(n), float(length)) for n, length in zip(cells, lengths, strict=True)]
    if bounded is not None:
        bases[2] = BOUNDED[bounded](int(cells[2]), float(lengths[2]))
    return bases[0], bases[1], bases[2]


def fft_friendly(n: int) -> bool:
    """Whether n has no prime factor above 7 (sizes FFT libraries transform fastest)."""
    for p in (2, 3, 5, 7):
        while n % p == 0 and n > 1:
            n //= p
    return n == 1


def factored(n: int) -> str:
    """How ``n`` factors, as a line writes it after ``n``: `` = 2^7 x 3``, ``, a prime`` (empty for 1)."""
    parts, p = [], 2
    while n > 1:
        power = 0
        while n % p == 0:
            n, power = n // p, power + 1
        if power:
            parts.append(f"{p}^{power}" if power > 1 else str(p))
        p += 1
    if not parts:
        return ""
    return " = " + " x ".join(parts) if len(parts) > 1 or "^" in parts[0] else ", a prime"


def fast_across(n: int) -> int:
    """The fewest Gauss-Lobatto points, at least ``n``, whose Chebyshev transform (a real FFT of ``2 (N - 1)``
    points, :mod:`simulator.fft.walls`) has an FFT-friendly length: 385 for 384 (2 x 383), 97 for 96 (2 x 5 x 19);
    it keeps the Chebyshev modes of ``n`` points and more (the 2/3 rule keeps the degrees below 2N/3)."""
    return Chebyshev.points_for(1, at_least=max(n, 2))


def transpose_weight(n: int) -> np.ndarray:
    """``w_m`` with ``C^T y = C^{-1}(w y)`` for the type-2 transforms of :mod:`simulator.fft.walls` of ``n`` points
    (``4n`` at ``m = 0``, ``2n`` elsewhere: the orthonormal transform is ``diag(w)^{-1/2} C``), ``(n,)``."""
    w = np.full(n, 2.0 * n)
    w[0] = 4.0 * n
    return w


def legendre_transpose_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(w, e)`` of the Legendre transform's transposes (:mod:`simulator.fft.linear`): C^T = diag(e) C^{-1} diag(w)
    with ``w_k = 1/g_k`` on the coefficients and ``e_j`` the quadrature weights on the points
    (:func:`legendre_matrices`); each ``(n,)``."""
    return 1.0 / legendre_norms(n), legendre_nodes(n)[1]


def chebyshev_transpose_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(w, e)`` of the Chebyshev transform's transposes for ``n`` points (:mod:`simulator.fft.linear`):
    ``w_k = 1/((n - 1) c_k)`` on the coefficients and ``e_j = 2/c_j`` on the points, ``c`` 2 at both ends and 1
    between; each ``(n,)``."""
    c = np.ones(n)
    c[[0, -1]] = 2.0
    return 1.0 / ((n - 1) * c), 2.0 / c


#: the polynomial series' transposes' weights ``(w, e)`` by name (:mod:`simulator.fft.linear`)
POLYNOMIAL_TRANSPOSES = {CHEBYSHEV: chebyshev_transpose_weights, LEGENDRE: legendre_transpose_weights}


def resample_matrix(series: str, n0: int, n1: int) -> np.ndarray:
    """The matrix ``(n1, n0)`` taking a field's values on the ``n0`` points of a bounded axis (:class:`SinCos`'s cell
    centres, or :class:`Chebyshev`'s Gauss-Lobatto points) to its values on ``n1`` points, by the field's own
    ``series`` (one of :data:`SERIES`): its coefficients on the stored points, the first ``min(n0, n1)`` kept, evaluated
    at the new points. A sine series keeps the entries ``1 .. min - 1`` (its mode ``n0`` is the one the transforms drop,
    as a periodic axis drops its Nyquist mode); a Chebyshev series is truncated or padded with zeros, as Dedalus
    changes a basis's size. Exact for a field of the kept modes."""
    if series not in SERIES:
        raise ValueError(f"series {series!r}: one of {SERIES}")
    kept = min(n0, n1)
    if series == LEGENDRE:  # the Legendre coefficients on the stored points, kept, evaluated at the new ones
        values = np.polynomial.legendre.legvander(2.0 * Legendre(n1, 1.0).points() - 1.0, kept - 1)
        return values @ legendre_matrices(n0)[1][:kept]
    if series == CHEBYSHEV:
        # on [-1, 1]: the Vandermonde matrix of T_0 .. T_{n0-1} at the stored points is square and well conditioned
        x0, x1 = (2.0 * Chebyshev(n, 1.0).points() - 1.0 for n in (n0, n1))
        coefficients = np.linalg.solve(np.polynomial.chebyshev.chebvander(x0, n0 - 1), np.eye(n0))
        return np.polynomial.chebyshev.chebvander(x1, kept - 1) @ coefficients[:kept]
    wave, modes = (np.cos, np.arange(n0)) if series == "even" else (np.sin, np.arange(1, n0 + 1))
    z0, z1 = SinCos(n0, 1.0).points(), SinCos(n1, 1.0).points()
    coefficients = np.linalg.solve(wave(np.pi * np.outer(z0, modes)), np.eye(n0))
    return wave(np.pi * np.outer(z1, modes[modes < kept])) @ coefficients[modes < kept]
