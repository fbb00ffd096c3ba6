"""A spectrum evaluated at arbitrary points, without gathering it: the spectrally exact interpolation.

For a real field f with spectrum f_hat (NumPy's ``"backward"`` normalisation, :mod:`simulator.fft.base`)
the trigonometric interpolant at a point x is

    f(x) = Re( sum_k w_k f_hat_k exp(i k . x) ) / (Nx Ny Nz)

over the modes the backend stores: for a half spectrum (rfft along z, Nyquist plane dropped) w_k = 2
on the kz > 0 planes, which stand for themselves and their conjugates, and 1 on kz = 0; for a full
spectrum (jaxdecomp) w_k = 1. These are exactly the Parseval weights
(:meth:`simulator.fft.base.FFTBackend.parseval_weight`). On the grid points it reproduces the field
to round-off; between them it is the band-limited interpolant itself (no interpolation error for a
dealiased field, whose Nyquist modes are zero). Boyd, Chebyshev and Fourier Spectral Methods (2001),
§2.4; for particle tracking in DNS, Yeung & Pope 1988 (J. Comput. Phys. 79, 373) compared exactly
this sum with local polynomial interpolation.

Distribution: the points (``(Np, 3)``, every device holds all of them: fine up to ~1e6 particles)
are replicated; the spectrum stays sharded in the backend's k-space layout. Inside ``shard_map``
each device sums over its own block of modes for every point, and the partial sums are added with
one ``psum`` over the whole mesh: Np x batch numbers per device, whatever the grid. The sum is
separable: per chunk of C points it contracts the last spectral axis first (a GEMM of the local block
``(batch * n0 * n1, n2)`` by the phases ``(n2, C)``), then the middle axis, then the first, so the cost
is ~ batch * n0 * n1 * n2 * Np complex multiply-adds (the direct sum's, done as matrix products) and
the memory one chunk's ``batch * n0 * n1 * C`` partial sums. It is the exact reference; a NUFFT
(type 2, e.g. FINUFFT) would cost O(N^3 log N + Np w^3) instead and is not wired in here.

Differentiable in forward and reverse mode (in the spectrum and in the points: the phases are
ordinary JAX arithmetic, the psum transposes to itself) and batched under ``jax.vmap``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

#: complex partial sums held per chunk of points (batch * n0 * n1 * C): bounds the chunk's memory
CHUNK_ELEMENTS = 1 << 22


def _vector_spec(fft, spectral_axis: int, size: int) -> PartitionSpec:
    """The PartitionSpec of a broadcasting vector along ``spectral_axis`` (as the backend builds them)."""
    spec: list[str | None] = [None, None, None]
    if size > 1:
        spec[spectral_axis] = fft.spectral_spec()[spectral_axis]
    return PartitionSpec(*spec)


def chunk_size(batch: int, local_shape: Sequence[int], n_points: int) -> int:
    """Points per chunk so that ``batch * n0 * n1 * C`` complex partial sums fit :data:`CHUNK_ELEMENTS`."""
    per_point = max(1, batch * int(local_shape[0]) * int(local_shape[1]))
    return max(1, min(n_points, CHUNK_ELEMENTS // per_point))


def _local_sum(perm: tuple[int, int, int], axes: tuple[str, ...], spectrum: jax.Array, k0: jax.Array,
               k1: jax.Array, k2: jax.Array, weight: jax.Array, points: jax.Array) -> jax.Array:
    """One device's partial sums: ``spectrum`` its block ``(B, n0, n1, n2)``, ``k0, k1, k2`` the local
    wavenumbers along spectral axes 0, 1, 2 (of real axes ``perm``), ``points`` ``(Np, 3)`` all of them.
    Returns ``(B, Np)`` real, summed over the whole mesh."""
    kv = (k0.reshape(-1), k1.reshape(-1), k2.reshape(-1))
    f = spectrum * weight  # the Parseval weights: 2 on kz > 0 of a half spectrum, else 1
    b, n0, n1, _ = f.shape
    n_points = points.shape[0]
    c = chunk_size(b, (n0, n1), n_points)
    chunks = -(-n_points // c)
    padded = jnp.concatenate([points, jnp.zeros((chunks * c - n_points, 3), points.dtype)])
    ctype = f.dtype

    def phases(x: jax.Array, axis: int) -> jax.Array:
        """exp(i k x) of the chunk's coordinate along spectral ``axis``: ``(C, n_axis)``."""
        return jnp.exp(1j * (x[:, perm[axis], None] * kv[axis][None, :])).astype(ctype)

    def one(x: jax.Array) -> jax.Array:
        # z (the last spectral axis) first: one GEMM over the whole local block, then two cheap contractions
        t = jnp.einsum("bijk,ck->bijc", f, phases(x, 2))
        t = jnp.einsum("bijc,cj->bic", t, phases(x, 1))
        return jnp.real(jnp.einsum("bic,ci->bc", t, phases(x, 0)))

    out = jax.lax.map(one, padded.reshape(chunks, c, 3))  # (chunks, B, C): one chunk's memory at a time
    out = jnp.moveaxis(out, 1, 0).reshape(b, chunks * c)[:, :n_points]
    return jax.lax.psum(out, axes)


def evaluate_at(fft, spectrum: jax.Array, points: jax.Array, wavenumbers: Sequence[jax.Array],
                weight: jax.Array) -> jax.Array:
    """The real field of ``spectrum`` at ``points``, exactly (see the module docstring).

    ``spectrum``: ``(*batch, K0, K1, K2)`` in ``fft``'s real-to-complex k-space layout and sharding (what
    :meth:`~simulator.fft.base.FFTBackend.rfft` returns); ``points``: ``(Np, 3)`` physical coordinates
    (any real numbers: the sum is periodic), replicated; ``wavenumbers``: ``(kx, ky, kz)`` and ``weight``
    the Parseval weights as the backend hands them out (an equation's ``ops.k`` and ``ops.weight``:
    leaves of the equation, so no array is closed over). Returns ``(*batch, Np)``, replicated.
    """
    nb = spectrum.ndim - 3
    batch = spectrum.shape[:nb]
    flat = spectrum.reshape((math.prod(batch), *spectrum.shape[nb:]))
    perm = tuple(fft.perm)
    by_spectral_axis = [wavenumbers[perm[i]] for i in range(3)]
    wshape = tuple(weight.shape)
    waxis = max(range(3), key=lambda i: wshape[i])
    specs = (PartitionSpec(None, *fft.spectral_spec()),
             *(_vector_spec(fft, i, by_spectral_axis[i].shape[i]) for i in range(3)),
             _vector_spec(fft, waxis, wshape[waxis]), PartitionSpec())
    axes = tuple(fft.mesh.axis_names)
    mapped = jax.shard_map(functools.partial(_local_sum, perm, axes), mesh=fft.mesh, in_specs=specs,
                           out_specs=PartitionSpec())
    real = jnp.finfo(spectrum.dtype).dtype
    out = mapped(flat, *by_spectral_axis, weight, points.astype(real))
    return out.reshape((*batch, points.shape[0])) / float(fft.size)
