"""Windows of grid nodes around points: their weights, and the windowed gather of a grid block at points with
its transpose, the scatter (the particle-mesh assignment), as one pair of JAX primitives.

A window (:data:`WINDOWS`; its nodes declared without JAX in :data:`simulator.fft.stencils.STENCILS`) takes the
nodes floor(s) - below .. floor(s) + above of a point at s = x / dx along each axis, weighted by a 1D function of the
offset t = s - floor(s) per axis (their tensor product): the tricubic Lagrange interpolant, or the particle-mesh
assignment functions cloud-in-cell and triangular-shaped cloud. :func:`gather` contracts a grid block's window at each
point with these weights; :func:`scatter`, its transpose, adds each point's value times the weights into the block.
Their callers (:mod:`simulator.fft.points`) give the block with its halo planes, the index of each point's first stencil
node per axis and its offsets t, and mask what is not theirs.

Two implementations, the same arithmetic up to the order of the sums:

* ``native`` (CPU, the default there): XLA FFI custom calls (simulator/fft/native/particles_ffi.cc) that contract
  each point's window as they read it, threads on XLA's intra-op pool. XLA's own CPU gather and scatter walk
  one node at a time with an index computation each and materialise the windows first: 5-10x slower
  (docs/PERFORMANCE.md);
* ``xla``: XLA's gather of each point's window and a contraction, in chunks of :data:`LOCAL_CHUNK` points (the
  windows of one chunk held at a time); the scatter adds each chunk's in turn. Used off CPU (GPUs), where the
  native extension is not built or fails to load, and with ``SIMULATOR_PARTICLES=xla``.

Which runs, and on how many threads: :mod:`simulator.fft.kernels` (``SIMULATOR_PARTICLES``).

Differentiation (forward and reverse, any order) and batching: the primitives are linear in the grid (gather)
and in the values (scatter), each the other's transpose; the derivative along the offsets t is the same
primitive with the weights' derivative (``orders``: d^k/dt^k per axis), so the tangent of a gather is
``gather(dfield) + sum_a gather(field, orders + e_a) dt_a``; under ``jax.vmap`` a batched grid or values join
the batch axis, batched points run member by member (a loop).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir
from jax.sharding import NamedSharding, PartitionSpec

from simulator.fft.cells import cell_of
from simulator.fft.kernels import native
from simulator.fft.stencils import STENCILS, Stencil

#: points per chunk of the XLA implementation on a CPU (B x 64 window values each held at a time)
LOCAL_CHUNK = 1 << 14
#: bytes of window values per chunk of the XLA implementation on a GPU, where each chunk is one iteration of a
#: loop of small kernels whose launches cost more than their work at LOCAL_CHUNK points: on one H200 the mass
#: assignment of 256^3 particles (1024 chunks) took 9.9 ms, about 9.6 us per chunk, as 128^3's (128 chunks) 1.6
#: ms did (docs/PERFORMANCE.md)
GPU_CHUNK_BYTES = 1 << 28


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
    """A window's nodes (:class:`~simulator.fft.stencils.Stencil`: floor(s) - below .. floor(s) + above of a point
    at s = x / dx along each axis, its order and native code) and their weights ``weights(s - floor(s))``
    ``(..., width)``."""

    stencil: Stencil
    weights: Callable[[jax.Array], jax.Array]

    def derivative(self, t: jax.Array, order: int) -> jax.Array:
        """d^order/dt^order of the weights at ``t``: ``(..., width)`` (the weights themselves at order 0)."""
        fn = self.weights
        for _ in range(order):
            fn = functools.partial(lambda f, s: jax.jvp(f, (s,), (jnp.ones_like(s),))[1], fn)
        return fn(t)


#: the windows by name (:data:`simulator.fft.stencils.STENCILS`, their nodes), each with its weight function
WINDOWS: dict[str, Window] = {name: Window(STENCILS[name], weights) for name, weights in (
    ("lagrange4", lagrange4_weights), ("cic", cic_weights), ("tsc", tsc_weights))}


# ---- the primitives ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Block:
    """How a device's block of the grid sits in it, for the windows of points (hashable: a primitive parameter).

    ``shape``: the grid's cells per axis; ``spacing``: their size; ``cut``: per axis, whether the block is one of
    several along it (then the caller extends it by the window's planes and ``reach`` more on each side, its
    halo, and gives the block's first cell in ``starts``) or holds the axis whole (the stencil's nodes wrap
    around it); ``reach``: how many cells outside the block a point's cell may lie; ``outside``: what a point
    whose cell lies outside gives: ``"none"`` (every point is inside: not checked), ``"zero"`` (0, and adds
    nothing) or ``"nan"`` (NaN, and adds nothing)."""

    shape: tuple[int, int, int]
    spacing: tuple[float, float, float]
    cut: tuple[bool, bool, bool] = (False, False, False)
    reach: int = 0
    outside: str = "none"


OUTSIDE = ("none", "zero", "nan")


def gather(field: jax.Array, points: jax.Array, starts: jax.Array, *, window: str, block: Block, impl: str,
           threads: int = 1, orders: tuple[int, int, int] = (0, 0, 0), live: jax.Array | None = None) -> jax.Array:
    """sum over each point's window of ``field`` ``(B, n0, n1, n2)`` (a device's block with its halo, see
    :class:`Block`) times the weights: ``(B, P)`` for ``points`` ``(P, 3)`` (physical coordinates, any real
    numbers: periodic); ``starts`` ``(3,)`` int32 the block's first cell along each axis. ``orders``: the
    derivative of the weights along each axis. ``impl``: ``native`` or ``xla``
    (:func:`simulator.fft.kernels.implementation`);
    ``threads``: the native call's. ``live`` ``(P,)`` bool (owned slots): an empty slot gives 0, and the native
    call skips it (the gather is then linear in the field masked by ``live``; its transpose adds nothing of
    an empty slot)."""
    mask = jnp.zeros((0,), bool) if live is None else live.astype(bool)
    field, points, starts, mask = _varying(field, points.astype(field.dtype), starts.astype(jnp.int32), mask)
    return _gather_p().bind(field, points, starts, mask, window=window, block=block, impl=impl, threads=int(threads),
                            orders=tuple(map(int, orders)))


def scatter(values: jax.Array, points: jax.Array, starts: jax.Array, *, extent: tuple[int, int, int], window: str,
            block: Block, impl: str, threads: int = 1, orders: tuple[int, int, int] = (0, 0, 0)) -> jax.Array:
    """The transpose of :func:`gather` in the field: ``values`` ``(B, P)`` times each point's weights added into
    a zero block ``(B, *extent)`` (the block with its halo)."""
    values, points, starts = _varying(values, points.astype(values.dtype), starts.astype(jnp.int32))
    return _scatter_p().bind(values, points, starts, extent=tuple(map(int, extent)), window=window, block=block,
                             impl=impl, threads=int(threads), orders=tuple(map(int, orders)))


def _varying(*arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The operands made to vary over the same manual mesh axes inside a shard_map (replicated points
    beside a sharded block), as a primitive's operands must."""
    axes = [frozenset(jax.typeof(a).manual_axis_type.varying) for a in arrays]
    union = frozenset().union(*axes)
    return tuple(a if have == union else lax.pcast(a, tuple(sorted(union - have)), to="varying")
                 for a, have in zip(arrays, axes, strict=True))


def _out_aval(like, shape: tuple[int, ...]):
    """An abstract value of ``shape`` with ``like``'s dtype and varying mesh axes."""
    sharding = like.sharding
    return like.update(shape=shape, sharding=NamedSharding(sharding.mesh, PartitionSpec()), weak_type=False)


def _gather_abstract(field, points, starts, live, **params):
    return _out_aval(field, (field.shape[0], points.shape[0]))


def _scatter_abstract(values, points, starts, *, extent, **params):
    return _out_aval(values, (values.shape[0], *extent))


def _slope(params: dict, axis: int) -> dict:
    """The parameters of the derivative along ``axis`` of the offsets: the weights' next derivative, and a point
    outside the block 0 (its value is a constant there)."""
    orders = tuple(o + (a == axis) for a, o in enumerate(params["orders"]))
    block = params["block"]
    if block.outside == "nan":
        block = dataclasses.replace(block, outside="zero")
    return {**params, "orders": orders, "block": block}


def _summed(out: jax.Array, terms: list[jax.Array]):
    """The tangent made of ``terms`` (a symbolic zero like ``out`` when there are none)."""
    if not terms:
        return ad.Zero(jax.typeof(out).to_tangent_aval())
    return functools.reduce(jnp.add, terms)


def _gather_jvp(primals, tangents, **params):
    field, points, starts, live = primals
    dfield, dpoints, _, _ = tangents
    out = _gather_p().bind(field, points, starts, live, **params)
    terms = [] if type(dfield) is ad.Zero else [_gather_p().bind(dfield, points, starts, live, **params)]
    if type(dpoints) is not ad.Zero:  # t = x / dx - floor(x / dx): dt = dx_point / dx
        for a in range(3):
            slope = _gather_p().bind(field, points, starts, live, **_slope(params, a))
            terms.append(slope * (dpoints[None, :, a] / params["block"].spacing[a]))
    return out, _summed(out, terms)


def _scatter_jvp(primals, tangents, *, extent, **params):
    values, points, starts = primals
    dvalues, dpoints, _ = tangents
    out = _scatter_p().bind(values, points, starts, extent=extent, **params)
    terms = [] if type(dvalues) is ad.Zero else [_scatter_p().bind(dvalues, points, starts, extent=extent, **params)]
    if type(dpoints) is not ad.Zero:
        for a in range(3):
            moved = values * (dpoints[None, :, a] / params["block"].spacing[a])
            terms.append(_scatter_p().bind(moved, points, starts, extent=extent, **_slope(params, a)))
    return out, _summed(out, terms)


def _gather_transpose(ct, field, points, starts, live, **params):
    assert ad.is_undefined_primal(field) and not ad.is_undefined_primal(points)
    if type(ct) is ad.Zero:
        return [ad.Zero(field.aval), None, None, None]
    ct = ct if live.shape[0] == 0 else jnp.where(live[None, :], ct, jnp.zeros((), ct.dtype))  # an empty slot: nothing
    return [_scatter_p().bind(ct, points, starts, extent=tuple(field.aval.shape[1:]), **params), None, None, None]


def _scatter_transpose(ct, values, points, starts, *, extent, **params):
    assert ad.is_undefined_primal(values) and not ad.is_undefined_primal(points)
    if type(ct) is ad.Zero:
        return [ad.Zero(values.aval), None, None]
    none = _varying(ct, jnp.zeros((0,), bool))[1]  # every point
    return [_gather_p().bind(ct, points, starts, none, **params), None, None]


def _batch(primitive: Primitive, args, dims, **params):
    """vmap: a batched grid (gather) or batched values (scatter) alone join the batch axis B; batched points
    (or starts, or the gather's live slots) run member by member."""
    first = args[0]
    d0 = dims[0]
    if all(d is None for d in dims[1:]):
        first = jnp.moveaxis(first, d0, 0)
        members, batch = first.shape[:2]
        out = primitive.bind(first.reshape((members * batch, *first.shape[2:])), *args[1:], **params)
        return out.reshape((members, batch, *out.shape[1:])), 0
    size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    mapped = [jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
              for a, d in zip(args, dims, strict=True)]
    return lax.map(lambda member: primitive.bind(*member, **params), tuple(mapped)), 0


# ---- the two implementations ---------------------------------------------------------------------------------


def _stencil(points: jax.Array, starts: jax.Array, window: Stencil, block: Block, extent: tuple[int, int, int]
             ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Each point's stencil in the block of ``extent`` (with its halo): the index of its first node along each
    axis ``(P, 3)`` int32 (before wrapping, on an axis held whole), its offsets t ``(P, 3)`` and whether its cell
    lies in the block ``(P,)`` (the native kernel computes the same, operation for operation)."""
    s, base, g = cell_of(points, block.spacing, block.shape)
    g = jnp.where((g >= 0) & (g < jnp.asarray(block.shape, g.dtype)), g, 0).astype(jnp.int32)  # NaN: 0, as native
    inside = jnp.ones(points.shape[0], bool)
    reach = block.reach
    cells = []
    for a in range(3):
        if not block.cut[a]:
            cells.append(g[:, a] - window.below)
            continue
        held = extent[a] - (window.width - 1) - 2 * reach
        # the cell's offset from the block's start; with a reach, periodic in [-reach, shape - reach) so that a
        # cell just below the block (across the periodic wrap too) is a negative offset into the wider halo
        local = g[:, a] - starts[a] if not reach else jnp.mod(g[:, a] - starts[a] + reach, block.shape[a]) - reach
        if block.outside != "none":
            inside = inside & (local >= -reach) & (local < held + reach)
        # node -below of the stencil is at ext position local + reach (the lower halo shifts everything)
        cells.append(jnp.clip(local, -reach, held + reach - 1) + reach)
    return jnp.stack(cells, axis=-1), s - base, inside


def chunk_points(platforms: Sequence[str], batch: int, window: str, itemsize: int) -> int:
    """Points per chunk of the XLA implementation lowered for ``platforms``: :data:`LOCAL_CHUNK` on CPUs, on GPUs
    as many as :data:`GPU_CHUNK_BYTES` hold of each point's window: its ``batch`` values of ``itemsize`` bytes and
    the three int32 indices of each of its nodes (which XLA's scatter and gather take as one array)."""
    if not any(p in ("cuda", "rocm", "gpu") for p in platforms):
        return LOCAL_CHUNK
    return max(LOCAL_CHUNK, GPU_CHUNK_BYTES // (WINDOWS[window].stencil.width ** 3 * (batch * itemsize + 12)))


def _chunks(points: jax.Array, *arrays: jax.Array, size: int) -> tuple[int, tuple[jax.Array, ...]]:
    """``points`` ``(P, 3)`` and ``arrays`` ``(B, P)`` in the fewest equal chunks of at most ``size`` points, zero
    padded (less than a point per chunk): ``(chunks, C, 3)`` and ``(chunks, B, C)``, and C."""
    n_points = points.shape[0]
    chunks = max(1, -(-n_points // max(1, size)))
    c = max(1, -(-n_points // chunks))
    pad = chunks * c - n_points
    out = [jnp.pad(points, ((0, pad), (0, 0))).reshape(chunks, c, 3)]
    out += [jnp.moveaxis(jnp.pad(a, ((0, 0), (0, pad))).reshape(a.shape[0], chunks, c), 1, 0) for a in arrays]
    return c, tuple(out)


def _nodes(x: jax.Array, starts: jax.Array, w: Window, block: Block, extent: tuple[int, int, int], orders):
    """A chunk's stencil as XLA indexes it: the nodes along each axis ``(C, width)`` (wrapped on an axis the block
    holds whole), the weights (or their derivatives) along each ``(C, width)``, and which points are inside."""
    cell, t, inside = _stencil(x, starts, w.stencil, block, extent)
    steps = jnp.arange(w.stencil.width, dtype=jnp.int32)
    idx = []
    for a in range(3):
        nodes = cell[:, a, None] + steps[None, :]
        idx.append(jnp.mod(nodes, extent[a]) if not block.cut[a] else nodes)
    return idx, [w.derivative(t[:, a], orders[a]) for a in range(3)], inside


def _xla_gather(field, points, starts, live, *, window, block, orders, chunk=LOCAL_CHUNK, **_):
    """The XLA implementation of :func:`gather`: each chunk's windows gathered, then contracted (an empty slot's
    value then set to 0)."""
    w = WINDOWS[window]
    extent = tuple(field.shape[1:])
    fill = jnp.nan if block.outside == "nan" else 0
    c, (chunked,) = _chunks(points, size=chunk)

    def one(x):
        idx, weights, inside = _nodes(x, starts, w, block, extent, orders)
        values = field[:, idx[0][:, :, None, None], idx[1][:, None, :, None], idx[2][:, None, None, :]]
        out = jnp.einsum("bcijk,ci,cj,ck->bc", values, *weights)
        return out if block.outside == "none" else jnp.where(inside[None, :], out, fill)

    out = lax.map(one, chunked)  # (chunks, B, C)
    out = jnp.moveaxis(out, 1, 0).reshape(field.shape[0], -1)[:, :points.shape[0]]
    return out if live.shape[0] == 0 else jnp.where(live[None, :], out, jnp.zeros((), out.dtype))


def _xla_scatter(values, points, starts, *, extent, window, block, orders, chunk=LOCAL_CHUNK, **_):
    """The XLA implementation of :func:`scatter`: each chunk's values times the weights added into the block
    (a point outside it adds nothing), one chunk after the other."""
    w = WINDOWS[window]
    c, (chunked, carried) = _chunks(points, values, size=chunk)

    def one(field, chunk):
        x, v = chunk
        idx, weights, inside = _nodes(x, starts, w, block, extent, orders)
        if block.outside != "none":
            v = jnp.where(inside[None, :], v, 0)
        added = jnp.einsum("bc,ci,cj,ck->bcijk", v, *weights)
        nodes = (idx[0][:, :, None, None], idx[1][:, None, :, None], idx[2][:, None, None, :])
        return field.at[(slice(None), *nodes)].add(added), None

    # the zero block varies over the mesh axes the values do (inside a shard_map), as the carry must
    _, start = _varying(values, jnp.zeros((values.shape[0], *extent), values.dtype))
    return lax.scan(one, start, (chunked, carried))[0]


def _registered() -> None:
    """The native handlers registered with XLA (once; a native lowering is only asked for where they load)."""
    if native()[0] is None:
        raise RuntimeError(f"the native windows are unavailable: {native()[1]}")


def _attributes(window: str, block: Block, orders, threads: int) -> dict[str, np.ndarray]:
    return {"window": np.int64(STENCILS[window].code), "orders": np.asarray(orders, np.int64),
            "cut": np.asarray(block.cut, np.int64), "shape": np.asarray(block.shape, np.int64),
            "spacing": np.asarray(block.spacing, np.float64), "reach": np.int64(block.reach),
            "outside": np.int64(OUTSIDE.index(block.outside)), "threads": np.int64(threads)}


def _lower_gather(ctx, field, points, starts, live, *, window, block, impl, threads, orders):
    if impl != "native":
        aval = ctx.avals_in[0]
        chunk = chunk_points(ctx.module_context.platforms, aval.shape[0], window, aval.dtype.itemsize)
        return mlir.lower_fun(functools.partial(_xla_gather, window=window, block=block, orders=orders, chunk=chunk),
                              multiple_results=False)(ctx, field, points, starts, live)
    _registered()
    rule = jax.ffi.ffi_lowering("simulator_window_gather")
    return rule(ctx, field, points, starts, live, **_attributes(window, block, orders, threads))


def _lower_scatter(ctx, values, points, starts, *, extent, window, block, impl, threads, orders):
    if impl != "native":
        aval = ctx.avals_in[0]
        chunk = chunk_points(ctx.module_context.platforms, aval.shape[0], window, aval.dtype.itemsize)
        scatter = functools.partial(_xla_scatter, extent=extent, window=window, block=block, orders=orders, chunk=chunk)
        return mlir.lower_fun(scatter, multiple_results=False)(ctx, values, points, starts)
    _registered()
    (out,) = ctx.avals_out
    # the threads' own grids, added into the first at the end: a result, so that XLA allocates and counts it
    scratch = out.update(shape=((threads - 1) * math.prod(out.shape),))
    rule = jax.ffi.ffi_lowering("simulator_window_scatter")
    results = rule(dataclasses.replace(ctx, avals_out=[out, scratch]), values, points, starts,
                   **_attributes(window, block, orders, threads))
    return results[:1]


def _impl(primitive: Primitive, *args, **params):
    return jax.jit(functools.partial(primitive.bind, **params))(*args)


def _primitive(name: str, abstract: Callable, lower: Callable, jvp: Callable, transpose: Callable) -> Primitive:
    """A primitive with its rules registered: evaluation by a jitted bind, abstract evaluation, lowering, forward
    mode, transpose and batching."""
    p = Primitive(name)
    p.def_impl(functools.partial(_impl, p))
    p.def_abstract_eval(abstract)
    mlir.register_lowering(p, lower)
    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = functools.partial(_batch, p)
    return p


@functools.cache
def _gather_p() -> Primitive:
    """The gather primitive, its rules registered on first use (nothing is registered at import)."""
    return _primitive("window_gather", _gather_abstract, _lower_gather, _gather_jvp, _gather_transpose)


@functools.cache
def _scatter_p() -> Primitive:
    """The scatter primitive (see :func:`_gather_p`)."""
    return _primitive("window_scatter", _scatter_abstract, _lower_scatter, _scatter_jvp, _scatter_transpose)
