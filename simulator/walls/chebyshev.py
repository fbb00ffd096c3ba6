"""The Chebyshev basis of a direction between two plates, on the Gauss-Lobatto points.

A field on the interval [a, b] is f(z) = sum_k a_k T_k(x), x = (2 z - a - b)/(b - a), k = 0..N, sampled on the
N + 1 Gauss-Lobatto points z_j = (a + b)/2 - (b - a)/2 cos(pi j / N), j = 0..N, which run upwards from the lower
plate (z_0 = a) to the upper one (z_N = b): the plates are grid points, so boundary values and wall fluxes are read
off the grid. Arrays hold the Chebyshev direction on their last axis, whole; every leading axis (horizontal modes,
components) is batched over. Values are real or complex (the horizontal Fourier coefficients of a field).

The transforms are a type-I discrete cosine transform computed as an FFT of the even extension (Canuto, Hussaini,
Quarteroni & Zang 2006, sec. 2.4.2): O(N log N). Derivatives use the coefficients' backward recurrence
c_{k-1} a'_{k-1} = a'_{k+1} + 2 k a_k (c_0 = 2, else 1), written as parity-split cumulative sums: O(N). Products
are dealiased by padding the coefficients to 3/2 as many points, as Dedalus does (Burns et al. 2020).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft import walls

#: the basis's name (``grid.walls.basis``, :mod:`simulator.walls.bases`)
NAME = "chebyshev"
#: the padding of products (Dedalus's dealias = 3/2): enough points that a product's first N + 1 coefficients are
#: exact (:func:`padded_size`)
DEALIAS = 1.5


def points(n: int, interval: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """The ``n`` Gauss-Lobatto points of ``interval`` (n >= 2), ascending: shape ``(n,)``."""
    a, b = interval
    return 0.5 * (a + b) - 0.5 * (b - a) * np.cos(np.pi * np.arange(n) / (n - 1))


def _real_parts(transform, f: jnp.ndarray) -> jnp.ndarray:
    """``transform`` (real -> real, linear) of a real ``f``, or of a complex one's real and imaginary parts."""
    # the even extension's real FFT of the last axis (XLA's), as a backend's local one on the xla path
    dct = functools.partial(walls.dct1, lambda x: jnp.fft.rfft(x, axis=-1))
    if jnp.iscomplexobj(f):
        return transform(dct, f.real) + 1j * transform(dct, f.imag)
    return transform(dct, f)


def forward(values: jnp.ndarray) -> jnp.ndarray:
    """Chebyshev coefficients ``a[..., k]`` of the values ``values[..., j]`` on the ascending Gauss-Lobatto
    points (same shape): a_k = (2 / (N c_k)) sum_j f_j cos(pi j k / N) / c_j, exact for polynomials of degree N
    (the transform the bounded axis's backends run: :func:`simulator.fft.walls.chebyshev_forward`)."""
    return _real_parts(walls.chebyshev_forward, values)


def backward(coefficients: jnp.ndarray) -> jnp.ndarray:
    """Values on the ascending Gauss-Lobatto points of the series ``coefficients[..., k]`` (same shape)."""
    return _real_parts(walls.chebyshev_backward, coefficients)


def derivative(coefficients: jnp.ndarray, length: float = 2.0, order: int = 1) -> jnp.ndarray:
    """The coefficients of d^order/dz^order of a series on an interval of ``length`` (same shape; the top
    coefficient of a derivative is 0): a'_k = (2 / c_k) sum_{p > k, p + k odd} p a_p, each sum a cumulative sum of
    one parity, O(N)."""
    a = coefficients
    n = a.shape[-1]
    for _ in range(order):
        w = a * np.arange(n)
        if n % 2:
            w = jnp.concatenate([w, jnp.zeros_like(w[..., :1])], axis=-1)
        pairs = w.reshape(*w.shape[:-1], -1, 2)  # [..., m, parity]: w_{2m + parity}
        # sum_{q >= p, same parity}: a reversed cumulative sum (no reversed copies of the series)
        tails = jax.lax.cumsum(pairs, axis=pairs.ndim - 2, reverse=True).reshape(w.shape)
        scale = np.full(n, 2.0 * 2.0 / length)
        scale[0] /= 2.0
        a = jnp.concatenate([tails[..., 1:n] * scale[:-1], jnp.zeros_like(a[..., :1])], axis=-1)
    return a.astype(coefficients.dtype)  # NumPy's int64 and float64 factors would promote float32's coefficients


def padded_size(n: int) -> int:
    """The points a product of two series of ``n`` coefficients is formed on: M with M - 1 > 3/2 (n - 1), so that
    the DCT-I's aliases of degree 2(M - 1) - k miss every kept coefficient k < n."""
    return math.floor(DEALIAS * (n - 1)) + 2


def pad(coefficients: jnp.ndarray, size: int) -> jnp.ndarray:
    """The series with zeros appended to ``size`` coefficients (the last axis)."""
    extra = size - coefficients.shape[-1]
    return jnp.concatenate([coefficients, jnp.zeros((*coefficients.shape[:-1], extra), coefficients.dtype)], -1)


def product(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """The first n coefficients of the product of two series of n coefficients (the last axis), exactly: each
    padded to :func:`padded_size` points, multiplied there, transformed back and truncated."""
    n = a.shape[-1]
    m = padded_size(n)
    return forward(backward(pad(a, m)) * backward(pad(b, m)))[..., :n]


def integrals(n: int) -> np.ndarray:
    """The integral over [-1, 1] of each T_k, k < n: 2 / (1 - k^2) for even k, 0 for odd; shape ``(n,)``."""
    k = np.arange(n, dtype=float)
    return np.where(k % 2 == 0, 2.0 / np.where(k % 2 == 0, 1.0 - k**2, 1.0), 0.0)


def weights(n: int, length: float = 2.0) -> np.ndarray:
    """Clenshaw-Curtis weights on the ``n`` ascending Gauss-Lobatto points of an interval of ``length``: sum_j w_j
    f_j is the integral of the interpolating polynomial, exact for degree n - 1 (volume averages, a Nusselt number
    through the volume). Shape ``(n,)``, summing to ``length``.

    w_j = (length / 2) sum_k I_k C_kj, I_k the integral of T_k (:func:`integrals`) and C the DCT-I taking values to
    coefficients, C_kj = 2 cos(pi j k / (n - 1)) / ((n - 1) c_j c_k): applied as a real FFT of the even extension, in
    O(n log n) time and O(n) memory (a plan of 65537 points across would not hold C, 32 GiB)."""
    ends = np.where((np.arange(n) == 0) | (np.arange(n) == n - 1), 2.0, 1.0)  # c_j, as numbers: built outside a trace
    moments = integrals(n)
    # sum_k I_k cos(pi j k / (n - 1)) / c_k: half the real FFT of I's even extension, length 2 (n - 1)
    cosines = 0.5 * np.fft.rfft(np.concatenate([moments, moments[-2:0:-1]])).real
    return (0.5 * length * 2.0 / ((n - 1) * ends) * cosines)[::-1]


def boundary_values(coefficients: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The series' values at the lower plate (sum_k (-1)^k a_k) and at the upper one (sum_k a_k)."""
    signs = (-1.0) ** np.arange(coefficients.shape[-1])
    return (coefficients * signs).sum(-1), coefficients.sum(-1)


def slopes(coefficients: jnp.ndarray, length: float) -> tuple[jnp.ndarray, jnp.ndarray]:
    """du/dz at the lower and the upper plate of the series ``coefficients[..., N + 1]`` on an interval of
    ``length``: T_k'(1) = k^2, T_k'(-1) = (-1)^(k+1) k^2, as two dot products (no derivative series formed)."""
    k = np.arange(coefficients.shape[-1], dtype=float)
    upper = k**2 * (2.0 / length)
    lower = np.where(k % 2 == 1, 1.0, -1.0) * upper
    return coefficients @ lower.astype(coefficients.real.dtype), coefficients @ upper.astype(coefficients.real.dtype)
