"""The four transforms of every backend as one linear JAX primitive: differentiable in both modes.

Why a primitive: the slab backend is built from ``custom_partitioning`` stages, which have no
differentiation or batching rules, and none of JAX's custom-rule wrappers covers all the
transformations on jax 0.10: ``custom_vjp`` gives no forward mode, ``custom_jvp`` with a
``linear_call`` tangent (the only custom-transpose tool left) cannot be vmapped (``linear_call`` has
no batching rule, so ``jax.jacfwd``/``jax.jacrev``/``jax.hessian`` fail), and ``custom_vmap`` is not
transposable. A primitive with four rules covers all of them, for every backend alike:

* JVP: the transform is linear, its tangent is the same transform of the tangent;
* transpose (reverse mode): the backend's transform in the other direction (below), so the backward
  pass costs what the forward pass costs, e.g. one all-to-all per transform for the slab backend;
* batching (vmap): the transforms already take any leading batch axes; the vmapped axis is moved there;
* lowering: the backend's own implementation, inlined into the caller's jit. It is traced once per
  input shape and carried as a parameter, so that JAX sees the shardings and custom_partitioning
  calls inside it when it assigns devices, exactly as for the nested jit this replaces; the compiled
  forward transforms are op for op what they were before.

Transposes, in JAX's convention for complex values (the transpose ``A^T`` of a complex-linear map,
not its conjugate; for a map that is only real-linear, ``A^T ct = conj(A* conj(ct))`` with ``A*`` the
adjoint for the real inner product ``<a, b> = Re sum conj(a) b``). With ``N = Nx*Ny*Nz`` and the
unnormalised forward transform ``F``:

* ``fft``:  ``F^T = F`` (the DFT matrix is symmetric), computed as ``N conj(ifft(conj ct))`` so that
  it maps the spectral layout to the real layout;
* ``ifft``: ``conj(fft(conj ct)) / N``;
* ``rfft`` (``R x = F x`` restricted to ``kz = 0 .. Nz/2-1``): ``R* y = N Re ifft(pad(y))``, and since
  ``irfft(y) = Re ifft(pad(w y))`` with ``w = 1`` at ``kz = 0`` and 2 for ``kz > 0`` (each such plane
  stands for itself and its conjugate), ``R^T ct = irfft(conj(ct) N / w)``;
* ``irfft``: ``I* x = w rfft(x) / N``, so ``I^T ct = conj(rfft(ct)) w / N``.

For a backend without a real transform (jaxdecomp: full spectrum, ``irfft = Re ifft``) ``w = 1``.

A walled field's transforms (:mod:`simulator.fft.walls`: ``walls_<parity>`` ``W = F_xy C_z``, real -> complex, and
``iwalls_<parity>`` ``W^-1 k = C_z^-1 Re ifft_xy(k)``), with ``N_xy = Nx*Ny`` and ``w_n`` the z weights of
:func:`simulator.fft.bases.transpose_weight` (``C^T = C^-1 diag(w)``):

* ``walls``: ``W^T ct = W^-1(conj(ct) N_xy w)``;
* ``iwalls``: ``(W^-1)^T ct = conj(W ct) / (N_xy w)``.

The Chebyshev series (``walls_chebyshev``, forward ``F = diag(1/(M c)) C diag(e) R`` with ``C`` the symmetric
DCT-I matrix, ``R`` the reversal, ``M = Nz - 1``, ``c_k`` 2 at the ends and 1 between, ``e = 2/c``; inverse
``B = R C``, since ``C diag(e) C = M diag(c)``) has ``F^T = diag(e) B diag(1/(M c))`` and ``B^T = diag(M c) F
diag(1/e)``: the same two formulas with ``w_n = 1/(M c_n)``, the first's result and the second's cotangent
multiplied and divided by ``e`` along z. The Legendre series (``walls_legendre``, forward ``F = diag(1/g) V^T
diag(e)``, ``e`` the Gauss-Lobatto quadrature weights, inverse ``V``) has ``F^T = diag(e) V diag(1/g)``: the same
with ``w_n = 1/g_n`` (:func:`simulator.fft.bases.legendre_transpose_weights`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend.core import ClosedJaxpr, Primitive, jaxpr_as_fun
from jax.interpreters import ad, batching, mlir

if TYPE_CHECKING:
    from simulator.fft.base import FFTBackend


def apply(backend: FFTBackend, kind: str, x: jax.Array) -> jax.Array:
    """``backend``'s transform ``kind`` of ``x`` (layouts: :mod:`simulator.fft.base`).

    Inputs are brought to the dtype the transform takes (real for ``rfft``, complex otherwise) before
    the primitive, so its rules see one dtype each and a real input's cotangent stays real.
    """
    x = jnp.asarray(x)
    if kind == "rfft" or kind.startswith("walls_"):
        if jnp.iscomplexobj(x):
            raise TypeError(f"rfft takes a real array, got {x.dtype}; use fft for complex data")
        x = x.astype(jnp.finfo(jnp.result_type(x, jnp.float32)).dtype)
    else:
        x = x.astype(jnp.result_type(x, jnp.complex64))
    walled = "walls" in kind
    want = tuple(backend.shape) if kind in ("rfft", "fft") or walled else tuple(
        backend.spectral_shape(real=kind == "irfft"))
    if x.ndim < 3 or tuple(x.shape[-3:]) != want:
        raise ValueError(f"{backend.name} {kind} takes (..., {', '.join(map(str, want))}), got shape {x.shape}")
    return _primitive().bind(x, backend=backend, kind=kind, impl=_traced(backend, kind, x.shape, x.dtype))


def _traced(backend: FFTBackend, kind: str, shape: tuple[int, ...], dtype) -> ClosedJaxpr:
    """The backend's implementation traced for one input shape, cached on the backend.

    It travels with the primitive as a parameter: JAX finds the shardings and the custom_partitioning
    calls inside it when it assigns devices to a jitted program, as it would for a nested jit.
    """
    key = (kind, tuple(shape), jnp.dtype(dtype))
    cache = backend._traced
    if key not in cache:
        cache[key] = jax.make_jaxpr(getattr(backend, f"_{kind}"))(jax.ShapeDtypeStruct(shape, dtype))
    return cache[key]


def _abstract_eval(x, *, backend: FFTBackend, kind: str, impl: ClosedJaxpr):
    return impl.out_avals[0]


def _impl(x: jax.Array, *, backend: FFTBackend, kind: str, impl: ClosedJaxpr) -> jax.Array:
    # Eager call: the backend's jitted implementation (custom_partitioning must not run op by op).
    return backend._jitted[kind](x)


def _lower(x: jax.Array, *, backend: FFTBackend, kind: str, impl: ClosedJaxpr) -> jax.Array:
    return jaxpr_as_fun(impl)(x)[0]


def _half_spectrum_scale(backend: FFTBackend, ndim: int, dtype, kz0: float, kz_pos: float) -> jax.Array:
    """``kz0`` on the kz = 0 plane and ``kz_pos`` on the others, shaped to broadcast against a half
    spectrum with ``ndim`` axes (built from iota inside the trace: no array is closed over)."""
    if not backend.has_real_transform:
        return jnp.asarray(kz0, dtype)
    axis = backend.perm.index(2)
    shape = [1, 1, 1]
    shape[axis] = backend.spectral_shape(real=True)[axis]
    kz = lax.broadcasted_iota(jnp.int32, tuple(shape), axis)
    scale = jnp.where(kz == 0, jnp.asarray(kz0, dtype), jnp.asarray(kz_pos, dtype))
    return scale.reshape((1,) * (ndim - 3) + tuple(shape))


def _wall_weight(backend: FFTBackend, ndim: int, dtype, series: str) -> jax.Array:
    """``N_xy w_n`` (module docstring) along the z axis of a walled spectrum of ``series`` with ``ndim`` axes."""
    from simulator.fft.bases import POLYNOMIAL_TRANSPOSES, transpose_weight

    nz = backend.shape[2]
    w = POLYNOMIAL_TRANSPOSES[series](nz)[0] if series in POLYNOMIAL_TRANSPOSES else transpose_weight(nz)
    return jnp.asarray((w * (backend.size // nz)).reshape((1,) * (ndim - 1) + (nz,)), dtype)


def _point_weight(backend: FFTBackend, ndim: int, dtype, series: str) -> jax.Array | float:
    """``e`` along z of the polynomial series' transposes (module docstring); 1 for the sine and cosine."""
    from simulator.fft.bases import POLYNOMIAL_TRANSPOSES

    if series not in POLYNOMIAL_TRANSPOSES:
        return 1.0
    nz = backend.shape[2]
    return jnp.asarray(POLYNOMIAL_TRANSPOSES[series](nz)[1].reshape((1,) * (ndim - 1) + (nz,)), dtype)


def _transpose(ct: jax.Array, x, *, backend: FFTBackend, kind: str, impl: ClosedJaxpr) -> list[jax.Array]:
    n = float(backend.size)
    rdtype = jnp.finfo(ct.dtype).dtype
    if kind.startswith("walls_"):
        series = kind[6:]
        out = backend.inverse_walls(jnp.conj(ct) * _wall_weight(backend, ct.ndim, rdtype, series), series)
        out = out * _point_weight(backend, ct.ndim, rdtype, series)
    elif kind.startswith("iwalls_"):
        series = kind[7:]
        k = backend.forward_walls(ct / _point_weight(backend, ct.ndim, rdtype, series), series)
        out = jnp.conj(k) / _wall_weight(backend, k.ndim, rdtype, series)
    elif kind == "fft":
        out = n * jnp.conj(backend.ifft(jnp.conj(ct)))
    elif kind == "ifft":
        out = jnp.conj(backend.fft(jnp.conj(ct))) / n
    elif kind == "rfft":
        out = backend.irfft(jnp.conj(ct) * _half_spectrum_scale(backend, ct.ndim, rdtype, n, n / 2))
    else:
        k = backend.rfft(ct)
        out = jnp.conj(k) * _half_spectrum_scale(backend, k.ndim, rdtype, 1 / n, 2 / n)
    return [out.astype(x.aval.dtype)]


def _batch(args, dims, *, backend: FFTBackend, kind: str, impl: ClosedJaxpr):
    # The transforms take any number of leading batch axes: put the vmapped one first.
    (x,), (d,) = args, dims
    return apply(backend, kind, jnp.moveaxis(x, d, 0)), 0


@functools.cache
def _primitive() -> Primitive:
    """The primitive, with its rules registered on first use (nothing is registered at import)."""
    p = Primitive("distributed_fft3d")
    p.def_impl(_impl)
    p.def_abstract_eval(_abstract_eval)
    mlir.register_lowering(p, mlir.lower_fun(_lower, multiple_results=False))
    ad.deflinear2(p, _transpose)
    batching.primitive_batchers[p] = _batch
    return p
