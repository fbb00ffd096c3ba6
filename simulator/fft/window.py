"""Windows of grid nodes around points: their weights, and the windowed gather of a grid block at points with
its transpose, the scatter (the particle-mesh assignment), as one pair of JAX primitives.

A window (:data:`WINDOWS`) takes the nodes floor(s) - below .. floor(s) + above of a point at s = x / dx along
each axis, weighted by a 1D function of the offset t = s - floor(s) per axis (their tensor product): the
tricubic Lagrange interpolant, or the particle-mesh assignment functions cloud-in-cell and triangular-shaped
cloud. :func:`gather` contracts a grid block's window at each point with these weights; :func:`scatter`, its
transpose, adds each point's value times the weights into the block. Their callers
(:mod:`simulator.fft.points`) give the block with its halo planes, the index of each point's first stencil node
per axis and its offsets t, and mask what is not theirs.

Two implementations, the same arithmetic up to the order of the sums:

* ``native`` (CPU, the default there): XLA FFI custom calls (simulator/fft/native/particles_ffi.cc) that contract
  each point's window as they read it, threads on XLA's intra-op pool. XLA's own CPU gather and scatter walk
  one node at a time with an index computation each and materialise the windows first: 5-10x slower
  (docs/PERFORMANCE.md);
* ``xla``: XLA's gather of each point's window and a contraction, in chunks of :data:`LOCAL_CHUNK` points (the
  windows of one chunk held at a time); its transpose is JAX's. Used off CPU (GPUs), where the native
  extension is not built or fails to load, and with ``SIMULATOR_PARTICLES=xla``.

Environment: ``SIMULATOR_PARTICLES=auto|native|xla`` (default ``auto``: native on CPU where the extension loads),
read when a program is traced; it chooses the implementation of the particles' other kernel too (the rows a
hand-over moves, :mod:`simulator.fft.owned`).

Differentiation (forward and reverse, any order) and batching: the primitives are linear in the grid (gather)
and in the values (scatter), each the other's transpose; the derivative along the offsets t is the same
primitive with the weights' derivative (``orders``: d^k/dt^k per axis), so the tangent of a gather is
``gather(dfield) + sum_a gather(field, orders + e_a) dt_a``; under ``jax.vmap`` a batched grid or values join
the batch axis, batched points run member by member (a loop).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import os
from collections.abc import Callable
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from jax.sharding import NamedSharding, PartitionSpec

from simulator.errors import ConfigError

ENV_PATH = "SIMULATOR_PARTICLES"
PATHS = ("auto", "native", "xla")

#: points per chunk of the XLA implementation (B x 64 window values each held at a time)
LOCAL_CHUNK = 1 << 14
#: points per thread of the native implementation: fewer points than twice this run on one thread
THREAD_GRAIN = 1 << 14


def lagrange4_weights(t: jax.Array) -> jax.Array:
    """Weights of the 4-point (cubic) Lagrange interpolant on nodes -1, 0, 1, 2 at offset ``t`` in [0, 1):
    ``(..., 4)``. Exact for cubics; error O(dx^4) for smooth fields."""
    return jnp.stack([-t * (t - 1) * (t - 2) / 6, (t + 1) * (t - 1) * (t - 2) / 2,
                      -(t + 1) * t * (t - 2) / 2, (t + 1) * t * (t - 1) / 6], axis=-1)


def cic_weights(t: jax.Array) -> jax.Array:
    """Cloud-in-cell (linear) weights on nodes 0, 1 at offset ``t`` in [0, 1): ``(..., 2)`` (Hockney &
    Eastwood 1988, §5-3: the assignment function of order 2, a top hat of one cell convolved with itself)."""
    return jnp.stack([1 - t, t], axis=-1)


def tsc_weights(t: jax.Array) -> jax.Array:
    """Triangular-shaped-cloud (quadratic) weights on nodes -1, 0, 1, 2 at offset ``t`` in [0, 1): ``(..., 4)``,
    the kernel W(d) = 3/4 - d^2 (|d| < 1/2), (3/2 - |d|)^2 / 2 (1/2 <= |d| < 3/2) at d = t + 1, t, t - 1,
    t - 2 (one of the four is 0: a fixed stencil of four nodes covers every offset). Hockney & Eastwood
    1988, §5-3, the assignment function of order 3."""

    def kernel(d: jax.Array) -> jax.Array:
        d = jnp.abs(d)
        return jnp.where(d < 0.5, 0.75 - d**2, jnp.where(d < 1.5, 0.5 * (1.5 - d) ** 2, 0.0))

    return jnp.stack([kernel(t + 1), kernel(t), kernel(t - 1), kernel(t - 2)], axis=-1)


@dataclasses.dataclass(frozen=True)
class Window:
    """Grid nodes floor(s) - below .. floor(s) + above of a point at s = x / dx along each axis, and their
    weights ``weights(s - floor(s))`` ``(..., below + above + 1)``; ``order``: the power p of the window's
    transform, prod_i sinc(k_i dx_i / 2)^p (0: an interpolant, not an assignment function); ``code``: its
    number in the native extension."""

    below: int
    above: int
    weights: Callable[[jax.Array], jax.Array]
    order: int = 0
    code: int = 0

    @property
    def width(self) -> int:
        """Nodes per axis."""
        return self.below + self.above + 1

    def derivative(self, t: jax.Array, order: int) -> jax.Array:
        """d^order/dt^order of the weights at ``t``: ``(..., width)`` (the weights themselves at order 0)."""
        fn = self.weights
        for _ in range(order):
            fn = functools.partial(lambda f, s: jax.jvp(f, (s,), (jnp.ones_like(s),))[1], fn)
        return fn(t)


#: the windows by name: an interpolant (lagrange4) and the particle-mesh assignment functions (cic, tsc)
WINDOWS: dict[str, Window] = {
    "lagrange4": Window(1, 2, lagrange4_weights, code=0),
    "cic": Window(0, 1, cic_weights, order=2, code=1),
    "tsc": Window(1, 2, tsc_weights, order=3, code=2),
}


# ---- which implementation --------------------------------------------------------------------------------------


@functools.cache
def native() -> tuple[ModuleType | None, str]:
    """The native extension ``simulator.fft._particles``, or None and why it is unavailable."""
    if importlib.util.find_spec("simulator.fft._particles") is None:
        return None, ("native extension not built (bash scripts/setup.sh in a checkout, or pip install again "
                      "with a C++ compiler, builds it)")
    try:
        from simulator.fft import _particles
    except ImportError as err:
        return None, f"native extension failed to load: {err}"
    for name, capsule in _particles.handlers().items():
        jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    return _particles, ""


def implementation(platform: str) -> str:
    """``native`` or ``xla``: the particles' kernels' implementation on ``platform`` (see the module docstring)."""
    requested = os.environ.get(ENV_PATH, "").strip() or "auto"
    if requested not in PATHS:
        raise ConfigError(ENV_PATH, requested, f"expected one of {', '.join(PATHS)}")
    if platform != "cpu" or requested == "xla":
        return "xla"
    return "native" if native()[0] is not None else "xla"


def threads_for(points: int, devices: int) -> int:
    """Threads of one native call on ``points`` points, one of ``devices`` devices of this process running
    theirs at the same time: one per :data:`THREAD_GRAIN` points, at most the cores per device."""
    from simulator.threads import available_cores

    return max(1, min(available_cores() // max(1, devices), points // THREAD_GRAIN))


# ---- the primitives ------------------------------------------------------------------------------------------


def gather(field: jax.Array, cells: jax.Array, frac: jax.Array, *, window: str, wrap: tuple[bool, bool, bool],
           impl: str, threads: int = 1, orders: tuple[int, int, int] = (0, 0, 0)) -> jax.Array:
    """sum over each point's window of ``field`` ``(B, n0, n1, n2)`` times the weights: ``(B, P)``.

    ``cells`` ``(P, 3)`` int32: the index of each point's first stencil node (its cell less ``below``) along
    each axis; ``frac`` ``(P, 3)``: its offsets t in [0, 1), in the field's dtype. ``wrap``: per axis, whether
    the block is periodic along it (nodes taken mod n; else the caller's halo holds every node, and a first
    node outside [0, n - width] is clamped into it). ``orders``: the derivative of the weights along each
    axis. ``impl``: ``native`` or ``xla`` (:func:`implementation`); ``threads``: the native call's."""
    field, cells, frac = _varying(field, cells.astype(jnp.int32), frac.astype(field.dtype))
    return _gather_p().bind(field, cells, frac, window=window, wrap=tuple(map(bool, wrap)), impl=impl,
                            threads=int(threads), orders=tuple(map(int, orders)))


def scatter(values: jax.Array, cells: jax.Array, frac: jax.Array, *, shape: tuple[int, int, int], window: str,
            wrap: tuple[bool, bool, bool], impl: str, threads: int = 1,
            orders: tuple[int, int, int] = (0, 0, 0)) -> jax.Array:
    """The transpose of :func:`gather` in the field: ``values`` ``(B, P)`` times each point's weights added into
    a zero block ``(B, *shape)`` (a periodic axis's nodes wrapped, as :func:`gather` reads them)."""
    values, cells, frac = _varying(values, cells.astype(jnp.int32), frac.astype(values.dtype))
    return _scatter_p().bind(values, cells, frac, shape=tuple(map(int, shape)), window=window,
                             wrap=tuple(map(bool, wrap)), impl=impl, threads=int(threads),
                             orders=tuple(map(int, orders)))


def _varying(*arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The operands made to vary over the same manual mesh axes inside a shard_map (replicated points
    beside a sharded block), as a primitive's operands must."""
    axes = [frozenset(jax.typeof(a).mat.varying) for a in arrays]
    union = frozenset().union(*axes)
    return tuple(a if have == union else lax.pcast(a, tuple(sorted(union - have)), to="varying")
                 for a, have in zip(arrays, axes, strict=True))


def _out_aval(like, shape: tuple[int, ...]):
    """An abstract value of ``shape`` with ``like``'s dtype and varying mesh axes."""
    sharding = like.sharding
    return like.update(shape=shape, sharding=NamedSharding(sharding.mesh, PartitionSpec()), weak_type=False)


def _gather_abstract(field, cells, frac, **params):
    return _out_aval(field, (field.shape[0], cells.shape[0]))


def _scatter_abstract(values, cells, frac, *, shape, **params):
    return _out_aval(values, (values.shape[0], *shape))


def _unit(orders: tuple[int, int, int], axis: int) -> tuple[int, int, int]:
    return tuple(o + (a == axis) for a, o in enumerate(orders))


def _summed(out: jax.Array, terms: list[jax.Array]):
    """The tangent made of ``terms`` (a symbolic zero like ``out`` when there are none)."""
    if not terms:
        return ad.Zero(jax.typeof(out).to_tangent_aval())
    return functools.reduce(jnp.add, terms)


def _gather_jvp(primals, tangents, **params):
    field, cells, frac = primals
    dfield, _, dfrac = tangents
    out = _gather_p().bind(field, cells, frac, **params)
    terms = [] if type(dfield) is ad.Zero else [_gather_p().bind(dfield, cells, frac, **params)]
    if type(dfrac) is not ad.Zero:
        for a in range(3):
            slope = _gather_p().bind(field, cells, frac, **{**params, "orders": _unit(params["orders"], a)})
            terms.append(slope * dfrac[None, :, a])
    return out, _summed(out, terms)


def _scatter_jvp(primals, tangents, *, shape, **params):
    values, cells, frac = primals
    dvalues, _, dfrac = tangents
    out = _scatter_p().bind(values, cells, frac, shape=shape, **params)
    terms = [] if type(dvalues) is ad.Zero else [_scatter_p().bind(dvalues, cells, frac, shape=shape, **params)]
    if type(dfrac) is not ad.Zero:
        for a in range(3):
            terms.append(_scatter_p().bind(values * dfrac[None, :, a], cells, frac, shape=shape,
                                           **{**params, "orders": _unit(params["orders"], a)}))
    return out, _summed(out, terms)


def _gather_transpose(ct, field, cells, frac, **params):
    assert ad.is_undefined_primal(field) and not ad.is_undefined_primal(frac)
    if type(ct) is ad.Zero:
        return [ad.Zero(field.aval), None, None]
    return [_scatter_p().bind(ct, cells, frac, shape=tuple(field.aval.shape[1:]), **params), None, None]


def _scatter_transpose(ct, values, cells, frac, *, shape, **params):
    assert ad.is_undefined_primal(values) and not ad.is_undefined_primal(frac)
    if type(ct) is ad.Zero:
        return [ad.Zero(values.aval), None, None]
    return [_gather_p().bind(ct, cells, frac, **params), None, None]


def _batch(primitive: Primitive, args, dims, **params):
    """vmap: a batched grid (gather) or batched values (scatter) alone join the batch axis B; batched points
    run member by member."""
    first, cells, frac = args
    d0, dc, df = dims
    if dc is None and df is None:
        first = jnp.moveaxis(first, d0, 0)
        members, batch = first.shape[:2]
        out = primitive.bind(first.reshape((members * batch, *first.shape[2:])), cells, frac, **params)
        return out.reshape((members, batch, *out.shape[1:])), 0
    size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    mapped = [jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
              for a, d in zip(args, dims, strict=True)]
    return lax.map(lambda member: primitive.bind(*member, **params), tuple(mapped)), 0


# ---- the two implementations ---------------------------------------------------------------------------------


def _xla_gather(field, cells, frac, *, window, wrap, orders, **_):
    """The XLA implementation of :func:`gather`: each chunk's windows gathered, then contracted."""
    w = WINDOWS[window]
    width = w.width
    n_points = cells.shape[0]
    c = max(1, min(n_points, LOCAL_CHUNK))
    chunks = -(-n_points // c)
    pad = chunks * c - n_points
    cells = jnp.concatenate([cells, jnp.zeros((pad, 3), cells.dtype)])
    frac = jnp.concatenate([frac, jnp.zeros((pad, 3), frac.dtype)])
    steps = jnp.arange(width, dtype=jnp.int32)

    def one(chunk):
        cell, t = chunk
        idx = []
        for a in range(3):
            n = field.shape[a + 1]
            start = cell[:, a] if wrap[a] else jnp.clip(cell[:, a], 0, n - width)
            nodes = start[:, None] + steps[None, :]
            idx.append(jnp.mod(nodes, n) if wrap[a] else nodes)
        weights = [w.derivative(t[:, a], orders[a]) for a in range(3)]
        values = field[:, idx[0][:, :, None, None], idx[1][:, None, :, None], idx[2][:, None, None, :]]
        return jnp.einsum("bcijk,ci,cj,ck->bc", values, *weights)

    out = lax.map(one, (cells.reshape(chunks, c, 3), frac.reshape(chunks, c, 3)))  # (chunks, B, C)
    return jnp.moveaxis(out, 1, 0).reshape(field.shape[0], chunks * c)[:, :n_points]


def _xla_scatter(values, cells, frac, *, shape, **params):
    template = jax.ShapeDtypeStruct((values.shape[0], *shape), values.dtype)
    (out,) = jax.linear_transpose(lambda f: _xla_gather(f, cells, frac, **params), template)(values)
    return out


def _registered() -> None:
    """The native handlers registered with XLA (once; a native lowering is only asked for where they load)."""
    if native()[0] is None:
        raise RuntimeError(f"the native windows are unavailable: {native()[1]}")


def _attributes(window: str, wrap, orders, threads: int) -> dict[str, np.ndarray]:
    return {"window": np.int64(WINDOWS[window].code), "orders": np.asarray(orders, np.int64),
            "wrap": np.asarray(wrap, np.int64), "threads": np.int64(threads)}


def _lower_gather(ctx, field, cells, frac, *, window, wrap, impl, threads, orders):
    if impl != "native":
        return mlir.lower_fun(functools.partial(_xla_gather, window=window, wrap=wrap, orders=orders),
                              multiple_results=False)(ctx, field, cells, frac)
    _registered()
    return jax.ffi.ffi_lowering("simulator_window_gather")(ctx, field, cells, frac,
                                                          **_attributes(window, wrap, orders, threads))


def _lower_scatter(ctx, values, cells, frac, *, shape, window, wrap, impl, threads, orders):
    if impl != "native":
        return mlir.lower_fun(functools.partial(_xla_scatter, shape=shape, window=window, wrap=wrap, orders=orders),
                              multiple_results=False)(ctx, values, cells, frac)
    _registered()
    (out,) = ctx.avals_out
    # the threads' own grids, added into the first at the end: a result, so that XLA allocates and counts it
    scratch = out.update(shape=((threads - 1) * math.prod(out.shape),))
    rule = jax.ffi.ffi_lowering("simulator_window_scatter")
    results = rule(dataclasses.replace(ctx, avals_out=[out, scratch]), values, cells, frac,
                   **_attributes(window, wrap, orders, threads))
    return results[:1]


def _impl(primitive: Primitive, *args, **params):
    return jax.jit(functools.partial(primitive.bind, **params))(*args)


@functools.cache
def _gather_p() -> Primitive:
    """The gather primitive, its rules registered on first use (nothing is registered at import)."""
    p = Primitive("window_gather")
    p.def_impl(functools.partial(_impl, p))
    p.def_abstract_eval(_gather_abstract)
    mlir.register_lowering(p, _lower_gather)
    ad.primitive_jvps[p] = _gather_jvp
    ad.primitive_transposes[p] = _gather_transpose
    batching.primitive_batchers[p] = functools.partial(_batch, p)
    return p


@functools.cache
def _scatter_p() -> Primitive:
    """The scatter primitive (see :func:`_gather_p`)."""
    p = Primitive("window_scatter")
    p.def_impl(functools.partial(_impl, p))
    p.def_abstract_eval(_scatter_abstract)
    mlir.register_lowering(p, _lower_scatter)
    ad.primitive_jvps[p] = _scatter_jvp
    ad.primitive_transposes[p] = _scatter_transpose
    batching.primitive_batchers[p] = functools.partial(_batch, p)
    return p
