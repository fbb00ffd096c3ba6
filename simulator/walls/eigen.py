"""Linear eigenvalue problems between two plates, solved densely (numpy/scipy) by the ultraspherical spectral
method (Olver & Townsend 2013) in Chebyshev coefficient space: the checks and initial conditions of the walled
runs, independent of the banded solvers that step them.

* Rayleigh-Benard onset (Chandrasekhar 1961, ch. II): at marginal stability (D^2 - k^2)^2 W = Ra k^2 Theta,
  (D^2 - k^2) Theta = -W on a layer of unit depth, Theta = 0 at the plates and W = DW = 0 (no-slip) or W = D^2 W = 0
  (free-slip); Ra(k) is the smallest positive eigenvalue, minimised over k: Ra_c = 1707.762 at k_c = 3.117
  (no-slip), 27 pi^4/4 at pi/sqrt(2) (free-slip). Away from onset, the growth rate of a mode in free-fall units
  (the time-dependent problem, a second formulation: it vanishes on the marginal curve).
* The Orr-Sommerfeld problem of a parallel flow U(y) between plates at y = -1, 1 (Orszag 1971): (U - c)(D^2 -
  alpha^2) phi - U'' phi = (D^2 - alpha^2)^2 phi / (i alpha Re), phi = D phi = 0, for perturbations psi = phi(y)
  exp(i alpha (x - c t)); plane Poiseuille flow at Re = 10^4, alpha = 1 has the Tollmien-Schlichting wave c =
  0.23752649 + 0.00373967 i.

Each unknown is a Chebyshev series sum_n a_n T_n(x), n = 0..N. An equation of order m is written in the
ultraspherical basis C^(m): d^m/dx^m maps T_n to a multiple of C^(m)_(n-m) (one diagonal), lower derivatives and the
unknown itself reach it by banded conversions T -> C^(1) -> ... -> C^(m), and multiplication by a polynomial U(x)
is U(X) for the three-term recurrence X of x C^(m)_n; its last m rows, the ones truncation spoils, give way to the
m boundary conditions (Olver & Townsend 2013). The operators are banded, their columns grow only like n, so
round-off is not amplified like N^8 as by a collocated fourth derivative: the eigenvalues converge with N to
round-off and stay there. The boundary conditions are built into a Galerkin basis of recombined T_n (Shen 1994;
Heinrichs 1989), so the pencil is square and regular: no infinite or spurious eigenvalue is made.
"""

from __future__ import annotations

import numpy as np
import numpy.polynomial.polynomial as power
import scipy.linalg
import scipy.optimize

NO_SLIP = "no-slip"
FREE_SLIP = "free-slip"
WALLS = (NO_SLIP, FREE_SLIP)
# U(y) of each parallel flow, as coefficients of 1, y, y^2 (ascending powers).
PROFILES = {"poiseuille": (1.0, 0.0, -1.0), "couette": (0.0, 1.0), "rest": (0.0,)}


def _points(n: int) -> np.ndarray:
    """The Chebyshev points x_j = -cos(pi j / n), j = 0..n, ascending from -1 to 1: shape ``(n + 1,)``."""
    return -np.cos(np.pi * np.arange(n + 1) / n)


def _values(coefficients: np.ndarray, n: int) -> np.ndarray:
    """The Chebyshev series ``coefficients`` (``(..., n + 1)``, T_0 first) on :func:`_points`: ``(..., n + 1)``,
    T_k(-cos(theta)) = cos(k (pi - theta))."""
    theta = np.pi - np.pi * np.arange(n + 1) / n
    return coefficients @ np.cos(np.outer(np.arange(n + 1), theta))


def _derivative(order: int, size: int) -> np.ndarray:
    """d^order/dx^order from T coefficients to C^(order) coefficients: T_n^(m) = 2^(m-1) (m-1)! n C^(m)_(n-m)."""
    d = np.zeros((size, size))
    n = np.arange(order, size)
    d[n - order, n] = 2.0 ** (order - 1) * float(np.prod(np.arange(1, order))) * n
    return d


def _conversion(start: int, stop: int, size: int) -> np.ndarray:
    """C^(start) coefficients to C^(stop) coefficients (C^(0) meaning T), the product of the banded steps
    T_n = (C^(1)_n - C^(1)_(n-2)) / 2 and C^(l)_n = l (C^(l+1)_n - C^(l+1)_(n-2)) / (n + l)."""
    n = np.arange(size)
    out = np.eye(size)
    for lam in range(start, stop):
        step = np.zeros((size, size))
        if lam == 0:
            step[n, n] = np.where(n == 0, 1.0, 0.5)
            step[n[2:] - 2, n[2:]] = -0.5
        else:
            step[n, n] = lam / (n + lam)
            step[n[2:] - 2, n[2:]] = -lam / (n[2:] + lam)
        out = step @ out
    return out


def _multiplication(polynomial: tuple[float, ...], order: int, size: int) -> np.ndarray:
    """Multiplication by the polynomial (ascending power coefficients) on C^(order) coefficients, order >= 1, by
    Horner's rule on x C^(l)_n = ((n + 1) C^(l)_(n+1) + (n + 2l - 1) C^(l)_(n-1)) / (2 (n + l)); exact but for the
    last deg rows, which are dropped (:func:`_pencil`)."""
    n = np.arange(size)
    x = np.zeros((size, size))
    x[n[:-1] + 1, n[:-1]] = (n[:-1] + 1) / (2 * (n[:-1] + order))
    x[n[1:] - 1, n[1:]] = (n[1:] + 2 * order - 1) / (2 * (n[1:] + order))
    out = np.zeros((size, size))
    for coefficient in polynomial[::-1]:
        out = x @ out + coefficient * np.eye(size)
    return out


def _laplacian(order: int, k2: float, scale: float, size: int) -> np.ndarray:
    """(scale^2 d^2/dx^2 - k2)^(order/2), order 2 or 4, from T coefficients to C^(order) coefficients (d/dz = scale
    d/dx)."""
    d2 = _conversion(2, order, size) @ _derivative(2, size) * scale**2
    if order == 2:
        return d2 - k2 * _conversion(0, 2, size)
    return _derivative(4, size) * scale**4 - 2 * k2 * d2 + k2**2 * _conversion(0, 4, size)


def _boundary(orders: tuple[int, ...], size: int) -> np.ndarray:
    """Rows giving the ``orders``-th x-derivatives at x = -1 and x = 1 of a T series: T_n^(m)(1) = prod_(j<m)
    (n^2 - j^2) / (2j + 1), T_n^(m)(-1) = (-1)^(n+m) that."""
    n = np.arange(size, dtype=float)
    rows = []
    for m in orders:
        at_one = np.ones(size)
        for j in range(m):
            at_one *= (n**2 - j**2) / (2 * j + 1)
        rows += [(-1.0) ** (n + m) * at_one, at_one]
    return np.array(rows)


def _basis(orders: tuple[int, ...] | tuple[tuple[int, ...], tuple[int, ...]], size: int) -> np.ndarray:
    """The Galerkin basis of the T series of ``size`` terms whose ``orders``-th derivatives vanish at x = -1 and
    x = 1 (Shen 1994; Heinrichs 1989): phi_j = T_j + sum_(i=1..m) x_i T_(j+2i), m = len(orders), columns j = 0 ..
    size - 2m - 1, shape ``(size, size - 2m)``. Each phi_j has one parity, so only m of its 2m conditions bind and
    x solves them exactly (least squares of a consistent system). The basis is banded and each column keeps its
    degree, so the pencil's round-off stays flat in N (a dense basis of the same space, mixing all degrees in each
    column, lets it grow with N, fastest beside free-slip plates' rows of size n^4).

    ``orders`` a pair (lower plate's, upper plate's) of different conditions: phi_j = T_j + sum_(i=1..m) x_i T_(j+i),
    m conditions in all, both parities (Shen 1995's mixed bases), x the square system's solution."""
    if orders and isinstance(orders[0], tuple):
        lower, upper = orders
        if lower != upper:
            conditions = np.concatenate([_boundary(lower, size)[0::2], _boundary(upper, size)[1::2]])
            m = len(lower) + len(upper)
            basis = np.zeros((size, size - m))
            for j in range(size - m):
                later = j + np.arange(1, m + 1)
                basis[j, j] = 1.0
                basis[later, j] = np.linalg.solve(conditions[:, later], -conditions[:, j])
            return basis
        orders = lower
    conditions = _boundary(orders, size)
    m = len(orders)
    basis = np.zeros((size, size - 2 * m))
    for j in range(size - 2 * m):
        later = j + 2 * np.arange(1, m + 1)
        basis[j, j] = 1.0
        basis[later, j] = np.linalg.lstsq(conditions[:, later], -conditions[:, j], rcond=None)[0]
    return basis


def _pencil(a: np.ndarray, b: np.ndarray, bases: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The eigenvalues and eigenvectors (T coefficients, columns) of a x = lambda b x, the i-th unknown in the
    span of bases[i]. a and b are square blocks of equal size, the i-th block row an equation in C^(2m): its last
    2m rows, spoilt by truncation, give way to the basis' 2m conditions and are dropped."""
    size = a.shape[0] // len(bases)
    kept = np.concatenate([block * size + np.arange(basis.shape[1]) for block, basis in enumerate(bases)])
    basis = scipy.linalg.block_diag(*bases)
    values, vectors = scipy.linalg.eig(a[kept] @ basis, b[kept] @ basis)
    return values, basis @ vectors


FIXED_VALUE = "fixed-value"
FIXED_FLUX = "fixed-flux"
TEMPERATURES = (FIXED_VALUE, FIXED_FLUX)


def _pair(condition: str | tuple[str, str], allowed: tuple[str, ...], what: str) -> tuple[str, str]:
    """``condition`` as (lower, upper): one for both plates or a pair, each one of ``allowed``."""
    pair = (condition, condition) if isinstance(condition, str) else tuple(condition)
    if len(pair) != 2 or any(c not in allowed for c in pair):
        raise ValueError(f"{what} {condition!r}: one of {', '.join(allowed)}, or a (lower, upper) pair of them")
    return pair


def _walls(walls: str | tuple[str, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The orders of the derivatives of W that vanish at the lower and the upper plate: W = DW = 0 at a no-slip
    plate, W = D^2 W = 0 at a free-slip one."""
    return tuple((0, 1) if wall == NO_SLIP else (0, 2) for wall in _pair(walls, WALLS, "walls"))


def _layer(walls: str | tuple[str, str], size: int, temperature: str | tuple[str, str] = FIXED_VALUE
           ) -> list[np.ndarray]:
    """The bases of (W, Theta) on a layer: W's conditions by ``walls``, Theta = 0 (fixed value) or D Theta = 0
    (fixed flux) at each plate by ``temperature``."""
    theta = tuple((0,) if t == FIXED_VALUE else (1,) for t in _pair(temperature, TEMPERATURES, "temperature"))
    return [_basis(_walls(walls), size), _basis(theta, size)]


def rayleigh_number(k: float, walls: str | tuple[str, str] = NO_SLIP, n: int = 40,
                    temperature: str | tuple[str, str] = FIXED_VALUE) -> float:
    """The marginal Rayleigh number of the horizontal wavenumber ``k`` (layer depth 1), the plates ``walls`` (one
    for both or a (lower, upper) pair) holding the temperature's value or flux (``temperature``, likewise), from
    Chebyshev series of degree ``n``. Between fixed-flux plates Ra(k) falls to its minimum as k -> 0 (720
    no-slip, 320 no-slip below free-slip, 120 free-slip: Hurle, Jakeman & Pike 1967)."""
    size = n + 1
    bases = _layer(walls, size, temperature)
    scale = 2.0  # z = (x + 1)/2 on a layer of unit depth: d/dz = 2 d/dx
    zero = np.zeros((size, size))
    a = np.block([[_laplacian(4, k**2, scale, size), zero],
                  [_conversion(0, 2, size), _laplacian(2, k**2, scale, size)]])
    b = np.block([[zero, k**2 * _conversion(0, 4, size)], [zero, zero]])
    inverse, _ = _pencil(b, a, bases)  # 1/Ra: the largest positive one is the smallest Ra
    real = inverse[np.abs(inverse.imag) < 1e-9 * np.abs(inverse).max()].real
    return float(1.0 / real.max())


def rayleigh_benard_onset(walls: str | tuple[str, str] = NO_SLIP, n: int = 40,
                          temperature: str | tuple[str, str] = FIXED_VALUE) -> tuple[float, float]:
    """The critical Rayleigh number and wavenumber (Ra_c, k_c): :func:`rayleigh_number` minimised over k (in
    1.5..4.5: fixed temperatures; between fixed-flux plates the minimum is at k -> 0)."""
    found = scipy.optimize.minimize_scalar(lambda k: rayleigh_number(k, walls, n, temperature), bounds=(1.5, 4.5),
                                           method="bounded", options={"xatol": 1e-9})
    return float(found.fun), float(found.x)


def rayleigh_benard_growth(ra: float, pr: float, k: float, walls: str | tuple[str, str] = NO_SLIP, n: int = 40,
                           temperature: str | tuple[str, str] = FIXED_VALUE
                           ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The fastest-growing linear mode of Rayleigh-Benard convection in free-fall units (Dedalus's example: depth
    1, nu = (Ra/Pr)^(-1/2), kappa = (Ra Pr)^(-1/2), buoyancy b = 1 - z conducting) at horizontal wavenumber ``k``:
    d/dt lap w = nu lap^2 w - k^2 b, d/dt b = kappa lap b + w, b = 0 or db/dz = 0 (``temperature``) and no-slip or
    free-slip plates (``walls``; each one for both plates or a (lower, upper) pair), from Chebyshev series of degree
    ``n``. Returns the growth rate sigma (real: exchange of stabilities), the Chebyshev
    points z (ascending, 0 to 1) and the mode's w and b there, scaled to max |w| = 1; shapes ``(n + 1,)``.
    sigma = 0 on the marginal curve of :func:`rayleigh_number`."""
    size = n + 1
    bases = _layer(walls, size, temperature)
    nu, kappa = (ra / pr) ** -0.5, (ra * pr) ** -0.5
    zero = np.zeros((size, size))
    a = np.block([[nu * _laplacian(4, k**2, 2.0, size), -(k**2) * _conversion(0, 4, size)],
                  [_conversion(0, 2, size), kappa * _laplacian(2, k**2, 2.0, size)]])
    b = np.block([[_conversion(2, 4, size) @ _laplacian(2, k**2, 2.0, size), zero], [zero, _conversion(0, 2, size)]])
    sigma, vectors = _pencil(a, b, bases)
    best = np.argmax(sigma.real)
    mode = _values(vectors[:, best].reshape(2, size), n)
    mode = mode / mode[0, np.argmax(np.abs(mode[0]))]
    mode[0, [0, -1]] = 0.0  # w at the plates, round-off of zero
    fixed = [i for i, t in zip((0, -1), _pair(temperature, TEMPERATURES, "temperature"), strict=True)
             if t == FIXED_VALUE]
    mode[1, fixed] = 0.0  # b at a plate of fixed temperature, likewise
    return float(sigma[best].real), 0.5 * (_points(n) + 1), mode[0].real, mode[1].real


def orr_sommerfeld(re: float, alpha: float, profile: str = "poiseuille", n: int = 120
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The eigenvalues c of the Orr-Sommerfeld problem of ``profile`` (U = 1 - y^2, y, or 0) at Reynolds number
    ``re`` (the centreline or plate velocity and the half gap) and streamwise wavenumber ``alpha``, from Chebyshev
    series of degree ``n``, the least stable first (largest Im c, growth rate alpha Im c), with the eigenfunctions
    phi on the Chebyshev points: shapes ``(n - 3,)``, ``(n + 1,)`` (y ascending, -1 to 1) and ``(n - 3, n + 1)``."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: one of {', '.join(PROFILES)}")
    size = n + 1
    u = PROFILES[profile]
    lap = _conversion(2, 4, size) @ _laplacian(2, alpha**2, 1.0, size)
    a = (_multiplication(u, 4, size) @ lap
         - _multiplication(tuple(power.polyder(u, 2)) or (0.0,), 4, size) @ _conversion(0, 4, size)
         - _laplacian(4, alpha**2, 1.0, size) / (1j * alpha * re))
    c, vectors = _pencil(a, lap, [_basis((0, 1), size)])
    order = np.argsort(-c.imag)
    phi = _values(vectors[:, order].T, n)
    phi[:, [0, -1]] = 0.0  # clamped: round-off of zero
    return c[order], _points(n), phi


def tollmien_schlichting(re: float = 1e4, alpha: float = 1.0, n: int = 120
                         ) -> tuple[complex, np.ndarray, np.ndarray]:
    """The least stable Orr-Sommerfeld mode of plane Poiseuille flow (the Tollmien-Schlichting wave at Re = 10^4):
    c, the points y (ascending) and its stream function phi(y), scaled to max |phi| = 1, real there. The
    velocity is (u, v) = (D phi, -i alpha phi) exp(i alpha (x - c t))."""
    c, y, phi = orr_sommerfeld(re, alpha, "poiseuille", n)
    mode = phi[0]
    peak = mode[np.argmax(np.abs(mode))]
    return complex(c[0]), y, mode / peak
