"""Batched banded linear solves: matrices with one sub-diagonal and ``upper`` super-diagonals, one per leading
index (a horizontal mode), factored by Gaussian elimination with partial pivoting and solved in O(n) per matrix.

Storage is banded throughout (LAPACK's ``gbtrf`` in the manner of Golub & Van Loan 2013, sec. 4.3.5, for one
sub-diagonal): ``bands[..., i, d]`` is the entry of row i at column i - 1 + d, d = 0..upper + 1 (d = 0 the
sub-diagonal, d = 1 the diagonal; row 0's sub-diagonal entry is ignored); the factors hold, per row, the row
interchange (whether row i + 1 was taken as the pivot), the multiplier and the row of U, whose pivoting fills one
more super-diagonal, rows first: ``(n, ...)``, ``(n, ...)`` and ``(n, ..., upper + 2)``, the last row's interchange
and multiplier none. Nothing of size n^2 is formed. The elimination and a solve's down sweep run down the rows with
``lax.scan``, every matrix of the batch at once; a solve's up sweep runs back up them in a loop that writes each
unknown over the row it was found from.

The sweeps' loops take :data:`ROWS` rows a trip, written out in their bodies, so the factors keep an even row count
(an odd system gains an identity row, whose unknown is zero): each loop then reads the arrays it is given in place.
A loop that ``lax.scan`` unrolls itself over a count it does not divide, or one fed slices (rows 1..n-1), copies its
inputs first, every factor among them, once per solve (58 of the 310 bytes a cell a 64^2 no-slip plane's chunk
held so). So the down sweep, which pairs row i's interchange with row i + 1's right-hand side, takes the
right-hand side as its first row and the rows after it (:func:`solve`), as the caller's reordering copy makes them.

A solve handed its bands is differentiated as a linear system (Giles 2008, "Collected matrix derivative results for
forward and reverse mode algorithmic differentiation"): the tangent of A x = b solves A x' = b' - A' x by the same
factors, the cotangent b_bar = A^-T x_bar by :func:`solve_transposed` on them, and A's own cotangent, -b_bar x^T on
the bands, follows from their formula; neither the factorisation nor the sweeps' loops are differentiated.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

#: rows eliminated per trip of the sweeps' loops: two halve the trips, whose fixed cost is most of a sweep's time at
#: a few hundred modes, and measured fastest (a 1536 x 384 plane's stage solves 39 -> 28 CPU ms on one core; four
#: or eight slower again, their larger bodies fused worse)
ROWS = 2


class Factors(NamedTuple):
    """A batch of banded LU factorisations, rows first (arrays ``(n, ...)``, ``(n, ...)``, ``(n, ..., upper +
    2)``, n a multiple of :data:`ROWS`): the order the solves' sweeps read them in, so a solve moves no factor."""

    swapped: jnp.ndarray
    multipliers: jnp.ndarray
    upper: jnp.ndarray

    @property
    def rows(self) -> int:
        """The systems' row count, padded to a multiple of :data:`ROWS`: the rows a solve's right-hand side has."""
        return self.upper.shape[0]


def padded(n: int) -> int:
    """The row count the factors of ``n`` rows keep: ``n`` rounded up to a multiple of :data:`ROWS`."""
    return -(-n // ROWS) * ROWS


def _trips(xs: tuple[jnp.ndarray, ...]) -> tuple[jnp.ndarray, ...]:
    """Rows-first arrays ``(n, ...)`` as the loops' trips ``(n / ROWS, ROWS, ...)`` (a reshape: no copy)."""
    return tuple(x.reshape(x.shape[0] // ROWS, ROWS, *x.shape[1:]) for x in xs)


def _rows(x: jnp.ndarray) -> jnp.ndarray:
    """The inverse of :func:`_trips` for one array."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def factor(bands: jnp.ndarray) -> Factors:
    """The factorisation of the banded matrices ``bands[..., n, upper + 2]`` (see the module's layout), padded to
    :func:`padded` rows by identity rows."""
    n, width = bands.shape[-2], bands.shape[-1]
    identity = jnp.zeros((*bands.shape[:-2], 1, width), bands.dtype).at[..., 1].set(1.0)
    zero = jnp.zeros_like(bands[..., 0, :1])
    # the first row has no sub-diagonal: its entries from the diagonal on, with room for the pivoting's fill
    first = jnp.concatenate([bands[..., 0, 1:], zero], -1)
    # trip i meets row i + 1: the rows after the first, then identity rows to the padded count and one beyond the
    # system's last, which leaves the last row of U as it is
    below = jnp.moveaxis(jnp.concatenate([bands[..., 1:, :], *[identity] * (padded(n) - n + 1)], -2), -2, 0)

    def eliminate(current, row):
        swap = jnp.abs(row[..., 0]) > jnp.abs(current[..., 0])
        pivot = jnp.where(swap[..., None], row, current)
        other = jnp.where(swap[..., None], current, row)
        multiplier = other[..., 0] / pivot[..., 0]
        reduced = other - multiplier[..., None] * pivot
        return jnp.concatenate([reduced[..., 1:], zero], -1), (swap, multiplier, pivot)

    def trip(current, rows):
        out = []
        for r in range(ROWS):
            current, one = eliminate(current, rows[r])
            out.append(one)
        return current, tuple(jnp.stack(parts) for parts in zip(*out, strict=True))

    _, factors = jax.lax.scan(trip, first, *_trips((below,)))
    return Factors(*(_rows(f) for f in factors))


def solve(factors: Factors, first: jnp.ndarray, later: jnp.ndarray, bands: jnp.ndarray | None = None
          ) -> jnp.ndarray:
    """The solutions x[n, ...] of the factored systems, rows first as the factors (real or complex; the factors'
    batch axes broadcast against the right-hand side's), for the right-hand side whose row 0 is ``first`` ``(...)``
    and whose rows 1, 2, ... are ``later[0], later[1], ...`` (``later`` ``(n, ...)``, its last row zero: the down
    sweep's trip i pairs row i's interchange with row i + 1).

    With ``bands``, the matrices ``factors`` was made from (the module's layout), a derivative of the solution is
    taken as a linear system's (:func:`jax.lax.custom_linear_solve`): a tangent x' solves A x' = b' - A' x by the
    same factors, a cotangent solves the transposed systems (:func:`solve_transposed`), and A' is the bands'
    own tangent, so neither the factorisation nor the sweeps are differentiated (JAX's derivative of their loops
    compiles to several times the solve's own program). Without, JAX differentiates the sweeps.

    The up sweep writes each x_i over the row of L^-1 b it reads (a loop over the trips that carries the down
    sweep's result and updates it in place, not a scan that stacks a third array): a solve holds two right-hand
    sides' size beside its input. The down sweep cannot so write over ``later``: its carry reads the rows the
    write replaces, and XLA then copies the whole array twice a trip to keep the write from overtaking it."""
    if bands is not None:
        return _as_linear_system(factors, first, later, bands)
    swapped, multipliers, upper = factors

    def down(current, rows):
        out = []
        for r in range(ROWS):
            swap, multiplier, below = (x[r] for x in rows)
            pivot = jnp.where(swap, below, current)
            other = jnp.where(swap, current, below)
            current = other - multiplier * pivot
            out.append(pivot)
        return current, jnp.stack(out)

    _, y = jax.lax.scan(down, first, _trips((swapped, multipliers, later)))
    y = _rows(y)
    trips, width = upper.shape[0] // ROWS, upper.shape[-1]
    shape = jnp.broadcast_shapes(y.shape[1:], upper.shape[1:-1])
    dtype = jnp.result_type(y, upper)

    def up(j: jax.Array, carry: tuple[jnp.ndarray, jnp.ndarray]) -> tuple[jnp.ndarray, jnp.ndarray]:
        later, y = carry  # later: x_{i+1}..x_{i+width-1}
        start = (trips - 1 - j) * ROWS
        u = jax.lax.dynamic_slice_in_dim(upper, start, ROWS, 0)
        values = jax.lax.dynamic_slice_in_dim(y, start, ROWS, 0)
        out = [None] * ROWS
        for r in reversed(range(ROWS)):
            x = (values[r] - jnp.einsum("...d,d...->...", u[r][..., 1:], later)) / u[r][..., 0]
            later = jnp.concatenate([x[None], later[:-1]], 0)
            out[r] = x
        return later, jax.lax.dynamic_update_slice_in_dim(y, jnp.stack(out), start, 0)

    after = jnp.zeros((width - 1, *shape), dtype)
    return jax.lax.fori_loop(0, trips, up, (after, jnp.broadcast_to(y.astype(dtype), (y.shape[0], *shape))))[1]


def solve_transposed(factors: Factors, rows: jnp.ndarray) -> jnp.ndarray:
    """The solutions z ``(n, ...)`` of the transposed systems A^T z = g for right-hand sides ``rows`` ``(n, ...)``
    (rows first, as the factors; not conjugated: A is real). With the factorisation E A = U, E = E_(n-1) .. E_0 and
    E_i = (I - m_i e_(i+1) e_i^T) P_i (row i's interchange, then its multiplier), A^T = U^T E^-T: forward
    substitution by U^T down the rows, then E^T = E_0^T .. E_(n-1)^T applied back up them, E_i^T = P_i (I - m_i
    e_i e_(i+1)^T). What a cotangent through :func:`solve` solves; O(n) per matrix, as the solve."""
    swapped, multipliers, upper = factors
    n, width = upper.shape[0], upper.shape[-1]
    shape = jnp.broadcast_shapes(rows.shape[1:], upper.shape[1:-1])
    dtype = jnp.result_type(rows, upper)
    rows = jnp.broadcast_to(rows.astype(dtype), (n, *shape))
    # row i of U^T holds U[i - d, d] at column i - d: each of those entries aligned with row i (zero above the top)
    column = jnp.stack([jnp.concatenate([jnp.zeros((d, *upper.shape[1:-1]), upper.dtype), upper[..., d]])[:n]
                        for d in range(1, width)], -1)

    def substitute(earlier, xs):  # earlier: v_(i-1), v_(i-2), ..., v_(i-width+1)
        g, diagonal, entries = xs
        v = (g - jnp.einsum("...d,d...->...", entries, earlier)) / diagonal
        return jnp.concatenate([v[None], earlier[:-1]]), v

    _, v = jax.lax.scan(substitute, jnp.zeros((width - 1, *shape), dtype), (rows, upper[..., 0], column))

    def back(after, xs):  # after: the entry at row i + 1, final once E_i^T has acted
        swap, multiplier, v_i = xs
        here = v_i - multiplier * after
        return jnp.where(swap, after, here), jnp.where(swap, here, after)

    # E_(n-1) is the identity (the padding's last elimination): the entry below the last row starts at zero
    first, below = jax.lax.scan(back, jnp.zeros(shape, dtype), (swapped, multipliers, v), reverse=True)
    return jnp.concatenate([first[None], below[:-1]])


def _product(bands: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    """A x for solutions ``x`` ``(n, ...)`` rows first, A the banded matrices ``bands`` (the module's layout) padded
    to the ``n`` rows by identity rows, as :func:`factor` pads them."""
    n, width = x.shape[0], bands.shape[-1]
    identity = jnp.zeros((*bands.shape[:-2], n - bands.shape[-2], width), bands.dtype).at[..., 1].set(1.0)
    rows = jnp.moveaxis(jnp.concatenate([bands, identity], -2), -2, 0)
    rows = rows.reshape(n, *[1] * (x.ndim - rows.ndim + 1), *rows.shape[1:])  # the batch axes x has beyond them
    # row i meets x_(i - 1) .. x_(i + width - 2): x with a zero row above and width - 2 below
    margin = jnp.zeros((width - 2, *x.shape[1:]), x.dtype)
    padded_x = jnp.concatenate([margin[:1], x, margin])
    return sum(rows[..., d] * padded_x[d: d + n] for d in range(width))


def _as_linear_system(factors: Factors, first: jnp.ndarray, later: jnp.ndarray, bands: jnp.ndarray) -> jnp.ndarray:
    """:func:`solve` of ``bands``' systems by ``factors``, differentiated as a linear system. The right-hand side
    comes as :func:`solve` takes it, (row 0, the rows after it); :func:`jax.lax.custom_linear_solve` asks the
    solution in the same form, so the solution is the pair (zero, x): the first entry a stand-in the solve leaves
    zero and the product ignores, the second the rows, so the forward solve moves no row."""
    shape = jnp.broadcast_shapes(later.shape[1:], factors.upper.shape[1:-1])
    dtype = jnp.result_type(later, factors.upper)
    rhs = (jnp.broadcast_to(first.astype(dtype), shape),
           jnp.broadcast_to(later.astype(dtype), (later.shape[0], *shape)))

    def product(x: tuple[jnp.ndarray, jnp.ndarray]) -> tuple[jnp.ndarray, jnp.ndarray]:
        b = _product(bands, x[1])
        return b[0], jnp.concatenate([b[1:], jnp.zeros_like(b[:1])])

    def forward(_, b: tuple[jnp.ndarray, jnp.ndarray]) -> tuple[jnp.ndarray, jnp.ndarray]:
        return jnp.zeros_like(b[0]), solve(factors, *b)

    def transposed(_, x: tuple[jnp.ndarray, jnp.ndarray]) -> tuple[jnp.ndarray, jnp.ndarray]:
        z = solve_transposed(factors, x[1])
        return z[0], jnp.concatenate([z[1:], jnp.zeros_like(z[:1])])

    return jax.lax.custom_linear_solve(product, rhs, forward, transposed)[1]
