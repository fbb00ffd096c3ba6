"""Particles owned by the device whose real-space block holds them: their sharding, their hand-over
between neighbouring devices as they move (inside compiled code), and their first distribution.

Layout: an owned particle array is ``(devices * capacity, ...)`` sharded along its first axis over every mesh
axis in mesh order (``PartitionSpec(mesh.axis_names)``, what the functions below return): each device holds ``capacity``
slots, its live particles packed anywhere among them and a ``live`` mask ``(devices * capacity,)`` saying which slots
hold one. Every live particle's cell (floor(x / dx)) lies in its device's block of the backend's real-space layout, so
the windowed interpolation and its transpose, the particle-mesh assignment
(:func:`simulator.fft.points.interpolate_local` and :func:`~simulator.fft.points.deposit` with ``owned=True``), run on
the owner alone with a halo from the neighbours and no psum over particles. Fixed capacities keep shapes static: a
particle that finds no room is counted, never silently dropped, and the caller stops the run naming the capacity setting
(Hockney & Eastwood 1988, §8; the same hand-over as distributed particle-mesh codes such as GADGET's, with fixed
buffers instead of dynamic ones, as XLA needs).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from simulator.fft.cells import cell_of
from simulator.fft.kernels import implementation


def sharded_axes(fft) -> list[tuple[int, str, int]]:
    """(real axis, mesh axis, its size) of every real-space axis split over more than one device."""
    sizes = dict(zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True))
    return [(a, m, sizes[m]) for a, m in enumerate(fft.real_spec()) if m is not None and sizes[m] > 1]


def owner(x: jax.Array, n: int, dx: float, devices: int) -> jax.Array:
    """The device index (along one mesh axis, int32) whose block holds coordinate ``x`` of an axis of ``n`` cells
    of width ``dx`` over ``devices``, -1 where ``x`` is not finite: the cell the windows take
    (:func:`simulator.fft.cells.cell_of`), then the integers' quotient by the block's cells."""
    cell = cell_of(x, dx, n)[2]
    known = (cell >= 0) & (cell < n)  # not finite: neither
    return jnp.where(known, jnp.where(known, cell, 0).astype(jnp.int32) // (n // devices), -1)


def _like(x: jax.Array, shape: tuple[int, ...], dtype) -> jax.ShapeDtypeStruct:
    """A native call's result of ``shape``, varying over the same shard_map axes as ``x``."""
    t = jax.typeof(x)
    return jax.ShapeDtypeStruct(shape, dtype, sharding=t.sharding, manual_axis_type=t.manual_axis_type)


def _first(mask: jax.Array, count: int, impl: str) -> jax.Array:
    """The indices of the first ``count`` True entries of ``mask`` ``(n,)``, in order (``n`` past the last one).
    ``impl`` ``native``: one pass of the particles' extension (:func:`simulator.fft.kernels.implementation`); ``xla``:
    a prefix sum and a scatter (XLA's CPU prefix sum, a tree of reduce-windows, was half of a 4-device hand-over's
    time at 64^3 particles)."""
    n = mask.shape[0]
    if impl == "native":
        call = jax.ffi.ffi_call("simulator_first", _like(mask, (count,), jnp.int32), vmap_method="sequential")
        return call(mask)
    rank = jnp.cumsum(mask, dtype=jnp.int32) - 1
    target = jnp.where(mask & (rank < count), rank, count)  # count: dropped
    return jnp.full(count, n, jnp.int32).at[target].set(jnp.arange(n, dtype=jnp.int32), mode="drop")


def _leavers(x: jax.Array, live: jax.Array, me: jax.Array, axis: int, n: int, dx: float, size: int, rows: int,
             impl: str) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The particles that left this device's block along real axis ``axis`` (``n`` cells of width ``dx`` over
    ``size`` devices along its mesh axis, this one ``me``): ``(up, down, stay, counts)``, ``up`` and ``down``
    ``(rows,)`` the slots of the first ``rows`` live particles whose owner is the next device up and down
    (:func:`_first`'s form: in slot order, then the slot count; with two devices every leaver goes up), ``stay``
    ``live`` less every leaver (those past ``rows`` too) and every particle further away or not finite,
    ``counts`` ``(3,)`` int32 the leavers up and down (all) and those further away or not finite. These are lost:
    out of ``stay``, as every lost particle leaves the live slots, so that no later axis of the hand-over (a
    particle not finite is far along each) and no later step counts one again. ``impl`` native: one pass over
    the slots (handover_ffi.cc); xla: XLA's operations and :func:`_first`."""
    cap = live.shape[0]
    if impl == "native":
        # the positions only choose slots (integers): no derivative flows through them, and a native call has no
        # differentiation rule, so a gradient through a run would fail here without the stop
        x = jax.lax.stop_gradient(x)
        call = jax.ffi.ffi_call("simulator_leavers", (_like(live, (rows,), jnp.int32), _like(live, (rows,), jnp.int32),
                                                      _like(live, (cap,), jnp.bool_), _like(live, (3,), jnp.int32)),
                                vmap_method="sequential")
        return call(x, live, jnp.reshape(me, (1,)).astype(jnp.int32), axis=np.int64(axis), n=np.int64(n),
                    spacing=np.float64(dx), devices=np.int64(size))
    dest = owner(x[:, axis], n, dx, size)
    known = dest >= 0
    delta = jnp.where(known, dest, me) - me
    delta = jnp.where(delta < 0, delta + size, delta)  # mod size: both lie in [0, size)
    up = live & known & (delta == 1)
    down = live & known & (delta == size - 1) & (size > 2)
    far = live & ~(known & ((delta == 0) | (delta == 1) | (delta == size - 1)))
    counts = jnp.stack([jnp.sum(m, dtype=jnp.int32) for m in (up, down, far)])
    return _first(up, rows, impl), _first(down, rows, impl), live & ~up & ~down & ~far, counts


def _derived_from(xla):
    """A native kernel whose derivative is that of ``xla``, the same function in XLA's operations: a native call
    has no differentiation rule, and the hand-over moves what a gradient follows (positions, momenta). Only the
    tangents take XLA's path (linear, so reverse mode transposes them); the values stay the native kernel's."""
    def wrap(native):
        fn = jax.custom_jvp(native)
        fn.defjvp(lambda primals, tangents: (fn(*primals), jax.jvp(xla, primals, tangents)[1]))
        return fn
    return wrap


def _take_xla(x: jax.Array, rows: jax.Array) -> jax.Array:
    return jnp.take(x, rows, axis=0, mode="fill", fill_value=0)


@_derived_from(_take_xla)
def _take_native(x: jax.Array, rows: jax.Array) -> jax.Array:
    call = jax.ffi.ffi_call("simulator_take_rows", _like(x, (rows.shape[0], *x.shape[1:]), x.dtype),
                            vmap_method="sequential")
    return call(x, rows)


def _take(x: jax.Array, rows: jax.Array, impl: str) -> jax.Array:
    """The rows ``rows`` ``(R,)`` of ``x`` ``(n, ...)`` (:func:`_first`'s: in order, ``n`` for none: a zero row)."""
    return (_take_native if impl == "native" else _take_xla)(x, rows)


def _put_xla(x: jax.Array, target: jax.Array, rows: jax.Array) -> jax.Array:
    return x.at[target].set(rows.astype(x.dtype), mode="drop")


@_derived_from(_put_xla)
def _put_native(x: jax.Array, target: jax.Array, rows: jax.Array) -> jax.Array:
    call = jax.ffi.ffi_call("simulator_put_rows", _like(x, x.shape, x.dtype), vmap_method="sequential",
                            input_output_aliases={0: 0})
    return call(x, rows.astype(x.dtype), target)


def _put(x: jax.Array, target: jax.Array, rows: jax.Array, impl: str) -> jax.Array:
    """``x`` ``(n, ...)`` with row ``target[k]`` set to ``rows[k]`` (a target of ``n`` or more: dropped); native:
    in ``x``'s buffer, only those rows written."""
    return (_put_native if impl == "native" else _put_xla)(x, target, rows)


def _send(rows: list[jax.Array], mesh_axis: str, pairs: list[tuple[int, int]]) -> list[jax.Array]:
    """``rows`` (arrays of one length) sent to the neighbours ``pairs`` along ``mesh_axis``: the arrays of one
    dtype side by side in one message (one collective per dtype, not one per array); returned as they were."""
    out: list[jax.Array] = [None] * len(rows)  # type: ignore[list-item]
    for dtype in dict.fromkeys(r.dtype for r in rows):
        mine = [i for i, r in enumerate(rows) if r.dtype == dtype]
        flat = [rows[i].reshape(rows[i].shape[0], -1) for i in mine]
        sent = jax.lax.ppermute(jnp.concatenate(flat, axis=1), mesh_axis, pairs)
        edges = np.cumsum([0] + [f.shape[1] for f in flat])
        for i, a, b in zip(mine, edges[:-1], edges[1:], strict=True):
            out[i] = sent[:, a:b].reshape(rows[i].shape)
    return out


def _sent(mesh_axis: str, directions: list[list[tuple[int, int]]], impl: str, live: jax.Array,
          leaving: list[jax.Array], arrays: list[jax.Array]) -> tuple[list[jax.Array], jax.Array]:
    """Each direction's ``leaving`` slots (:func:`_leavers`' ``up``, ``down``, or a part of them: the buffers'
    rows) sent to the neighbours ``directions`` (ppermute pairs). Returns what arrived from them: each array's rows
    ``(R, ...)`` and which rows hold a particle ``(R,)`` bool, the directions one after the other (each
    message's particles first in it)."""
    cap = live.shape[0]
    incoming: list[list[jax.Array]] = []
    arriving = []
    for slots_out, pairs in zip(leaving, directions, strict=True):
        *came_rows, came = _send([_take(x, slots_out, impl) for x in arrays] + [(slots_out < cap).astype(jnp.int32)],
                                 mesh_axis, pairs)
        incoming.append(came_rows)
        arriving.append(came > 0)
    return [jnp.concatenate(rows) for rows in zip(*incoming, strict=True)], jnp.concatenate(arriving)


def _placed(impl: str, live: jax.Array, arrays: list[jax.Array], rows: list[jax.Array], arrived: jax.Array,
            guard: jax.Array, reserved: jax.Array | None = None) -> tuple[jax.Array, list[jax.Array], jax.Array]:
    """The arrivals (``rows`` of each array and which hold a particle, ``arrived``, as :func:`_sent` returns them)
    put into ``live``'s empty slots in slot order, in their order, ``reserved`` ``(slots,)`` (bool, or None)
    excepted: the slots of leavers still to be sent. ``guard``: counts the caller took from the arrays before
    (the write must come after them). Returns ``(live, arrays, unplaced)``, ``unplaced`` ``(R,)`` the arrivals
    that found no empty slot."""
    cap = live.shape[0]
    free = _first(~live if reserved is None else ~(live | reserved), arrived.shape[0], impl)
    rank = jnp.cumsum(arrived, dtype=jnp.int32) - 1
    target = jnp.where(arrived, jnp.take(free, jnp.clip(rank, 0, free.shape[0] - 1)), cap)  # cap: no room
    unplaced = arrived & (target >= cap)
    # one write of every direction's arrivals per array, in the array's buffer (_put aliases it). XLA writes in
    # place only after every other reader of the array, which it must see in the data: the messages out (all
    # of them feed this one write) and the counts (a select it cannot fold, as they are never negative).
    # Written a direction at a time, it copied each whole array first: 2 ms of a 64^3 step on 4 devices.
    target = jnp.where(guard >= 0, target, cap)
    arrays = [_put(x, target, r, impl) for x, r in zip(arrays, rows, strict=True)]
    return _put(live, target, arrived, impl), arrays, unplaced


def _migrate_local(moves: list[tuple[int, str, int]], shape: tuple[int, ...], spacing: tuple[float, ...],
                   buffer: int, first: tuple[int, ...], axes: tuple[str, ...], impl: str, live: jax.Array,
                   *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """One device's migration (see :func:`migrate`): along each sharded axis in turn, the live particles
    whose cell left this block go to the neighbour that holds it, ``buffer`` rows at most per direction: first
    that axis's ``first`` rows, then, where some device had more leavers for a neighbour or arrivals without
    room (the psum of the loss counts carries the answer, so that every device takes the same branch and sends
    the same messages), the rest. The arrivals fill this device's empty slots in slot order (those from the
    lower neighbour first); the first buffers' keep out of the slots of the leavers the rest will send, and
    those that found no room then take the slots the rest freed. Only the rows that move are gathered and
    scattered (no sort, no pass over every slot per array); ``impl``: how they are found (:func:`_leavers`)."""
    arrays = list(arrays)
    pending = jnp.zeros(3, jnp.int32)  # this device's losses not yet summed: over a buffer, no room, too far
    total = jnp.zeros(3, jnp.int32)  # the summed ones
    for (axis, mesh_axis, size), rows in zip(moves, first, strict=True):
        directions = [[(i, (i + 1) % size) for i in range(size)]]
        if size > 2:  # with two devices the left neighbour is the right one
            directions.append([(i, (i - 1) % size) for i in range(size)])
        up, down, live, counts = _leavers(arrays[0], live, jax.lax.axis_index(mesh_axis), axis, shape[axis],
                                          spacing[axis], size, buffer, impl)
        leaving = [up, down][:len(directions)]
        over = jnp.sum(jnp.maximum(counts[:2] - buffer, 0))  # past the buffer: counted, and lost
        pending = pending + jnp.stack([over, jnp.zeros((), jnp.int32), counts[2]])
        guard = pending[0] | pending[2]
        came = _sent(mesh_axis, directions, impl, live, [s[:rows] for s in leaving], arrays)
        if rows >= buffer:
            live, arrays, unplaced = _placed(impl, live, arrays, *came, guard)
            pending = pending.at[1].add(jnp.sum(unplaced, dtype=jnp.int32))
            continue
        # the first buffers' arrivals must not take the slots of the leavers the rest would send
        later = jnp.concatenate([s[rows:] for s in leaving])
        reserved = _put(jnp.zeros_like(live), later, jnp.ones(later.shape, bool), impl)
        live, arrays, unplaced = _placed(impl, live, arrays, *came, guard, reserved)
        more = (jnp.max(counts[:len(directions)]) > rows) | jnp.any(unplaced)
        summed = jax.lax.psum(jnp.concatenate([more.astype(jnp.int32)[None], pending]), axes)
        total, pending = total + summed[1:], jnp.zeros(3, jnp.int32)

        def rest(live, arrays, carried, unplaced, leaving=leaving, guard=guard, directions=directions,
                 mesh_axis=mesh_axis, rows=rows):
            # the rest sent; the first buffers' arrivals that found no room go first into the slots it freed
            sent, arrived = _sent(mesh_axis, directions, impl, live, [s[rows:] for s in leaving], arrays)
            live, arrays, lacking = _placed(impl, live, arrays, [jnp.concatenate(r) for r in zip(carried, sent)],
                                            jnp.concatenate([unplaced, arrived]), guard)
            return live, arrays, jax.lax.psum(jnp.sum(lacking, dtype=jnp.int32), axes)

        def done(live, arrays, carried, unplaced):  # no device has more to send, nor an arrival without room
            return live, arrays, jnp.zeros((), jnp.int32)

        live, arrays, lacking = jax.lax.cond(summed[0] > 0, rest, done, live, arrays, came[0], unplaced)
        total = total.at[1].add(lacking)
    if any(rows >= buffer for rows in first):  # losses of an axis that sent its buffers at once
        total = total + jax.lax.psum(pending, axes)
    return (live, *arrays, total)


def split_planes(fft) -> tuple[int, ...]:
    """The planes of cells of a device's real-space block along each axis split over more than one device, in
    the order :func:`migrate` hands particles over along them (its ``first``)."""
    return tuple(int(fft.shape[a]) // size for a, _, size in sharded_axes(fft))


def migrate(fft, box: Sequence[float], buffer: int, live: jax.Array, *arrays: jax.Array,
            first: Sequence[int] | None = None) -> tuple[jax.Array, ...]:
    """Hand every live particle to the device whose real-space block holds its cell, inside compiled code.

    ``live`` ``(devices * capacity,)`` and ``arrays`` (the first the positions ``(devices * capacity, 3)``,
    then anything that travels with them) are sharded by owner (the module docstring). Along each sharded
    axis in turn, each device packs the particles that left its block into a buffer of ``buffer`` rows
    per direction, ``ppermute`` sends it to the neighbour, which puts the arrivals into its empty slots.
    ``first`` (one per sharded axis, :func:`split_planes`' order; default ``buffer``): the buffers sent first
    along that axis; the rest only when some device has more leavers for a neighbour, or arrivals without room
    (the messages, their packing and unpacking are what a hand-over's time is proportional to). The same
    particles end on the same devices either way, and in the same slots when the first buffers hold every
    leaver. On XLA's path (a GPU's) the buffers go at once: the conditional would make the GPU wait for its
    predicate every step, a cost not measured against the buffers'. A particle moves at most one block per call.
    Returns ``(live, *arrays, counts)`` with ``counts`` ``(3,)`` replicated: particles that did not fit a send
    buffer, that found no empty slot, that moved more than one block (or whose position is not finite). Each is
    a particle lost from the arrays and must stop the run (the caller reports it, naming the capacity
    setting)."""
    moves = sharded_axes(fft)
    axes = tuple(fft.mesh.axis_names)
    if not moves:
        return (live, *arrays, jnp.zeros(3, jnp.int32))
    shape = tuple(int(n) for n in fft.shape)
    spacing = tuple(float(length) / n for length, n in zip(box, shape, strict=True))
    spread = PartitionSpec(axes)
    impl = implementation(fft.route)
    if first is not None and len(first) != len(moves):
        raise ValueError(f"migrate: first has {len(first)} entries for {len(moves)} split axes")
    if first is None or impl != "native":
        first = [buffer] * len(moves)
    first = tuple(max(1, min(int(r), buffer)) for r in first)
    body = functools.partial(_migrate_local, moves, shape, spacing, buffer, first, axes, impl)
    specs = (spread, *(PartitionSpec(axes, *([None] * (x.ndim - 1))) for x in arrays))
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=specs, out_specs=(*specs, PartitionSpec()))
    return mapped(live, *arrays)


def counted(lost: jax.Array | None, counts: jax.Array) -> jax.Array:
    """A state's lost counts ``(4,)`` int32 (:data:`simulator.fft.particle_slots.LOST`) after one more hand-over
    (one per step) that lost ``counts`` ``(3,)`` (:func:`migrate`'s, or a first distribution's): the step
    counter goes on from the first loss, so that the host dates it (:class:`simulator.fft.particle_slots.Loss`).
    ``lost`` None: none before (a first distribution)."""
    if lost is None:
        return jnp.concatenate([counts.astype(jnp.int32), jnp.zeros(1, jnp.int32)])
    before = (jnp.sum(lost[:3]) > 0).astype(jnp.int32)
    return jnp.concatenate([lost[:3] + counts.astype(jnp.int32), lost[3:] + before])


def _scatter_local(moves: list[tuple[int, str, int]], shape: tuple[int, ...], spacing: tuple[float, ...],
                   capacity: int, *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """One device's share of replicated particles: those whose cell lies in its block, packed first."""
    if not moves:
        # one block holds every particle, in order. Not the general path's cumsum over an all-true mask: that
        # mask is a constant, and XLA's GPU compiler folds its cumsum (a reduce-window of 16 per element)
        # on the host, for minutes at 256^3 particles (measured on an H100)
        count = arrays[0].shape[0]
        keep = min(count, capacity)
        out = [jnp.pad(x[:keep], [(0, capacity - keep)] + [(0, 0)] * (x.ndim - 1)) for x in arrays]
        return (jnp.arange(capacity) < keep, *out, jnp.asarray([0, count - keep, 0], jnp.int32))
    mine = jnp.ones(arrays[0].shape[0], bool)
    nowhere = jnp.zeros(arrays[0].shape[0], bool)  # a position not finite: no device's
    for axis, mesh_axis, size in moves:
        dest = owner(arrays[0][:, axis], shape[axis], spacing[axis], size)
        mine = mine & (dest == jax.lax.axis_index(mesh_axis))
        nowhere = nowhere | (dest < 0)
    rank = jnp.cumsum(mine) - 1
    slot = jnp.where(mine & (rank < capacity), rank, capacity)
    out = [jnp.zeros((capacity + 1, *x.shape[1:]), x.dtype).at[slot].set(x)[:capacity] for x in arrays]
    live = jnp.zeros(capacity + 1, bool).at[slot].set(mine)[:capacity]
    # summed over the axes that split the particles: the replicated input varies only along those (a mesh
    # axis of one device, as p0 of jaxdecomp's slab [1, P], holds the same values, and JAX refuses a psum there)
    over = jax.lax.psum(jnp.sum(mine & (rank >= capacity)).astype(jnp.int32), tuple(m for _, m, _ in moves))
    # counted once: every device sees every replicated particle; not as a full device's (its message would ask
    # for more slots) but as migrate counts a position not finite
    return (live, *out, jnp.stack([jnp.zeros((), jnp.int32), over, jnp.sum(nowhere, dtype=jnp.int32)]))


def sharding(fft, ndim: int) -> jax.sharding.NamedSharding:
    """The sharding of an owned particle array of ``ndim`` dimensions: its rows (slots) split over every mesh
    axis in mesh order, each device its own ``capacity`` rows (what :func:`distribute` returns)."""
    return jax.sharding.NamedSharding(fft.mesh, PartitionSpec(tuple(fft.mesh.axis_names), *([None] * (ndim - 1))))


def fullest(fft, live: jax.Array) -> int:
    """The occupied slots of the fullest of this process's devices in an owned stack's ``live`` ``(devices *
    slots,)`` (0/1 or bool), counted on each device, read on the host: one integer per device moves."""
    counts = _occupied(fft, live)
    return max(int(np.asarray(shard.data).max()) for shard in counts.addressable_shards)


@functools.partial(jax.jit, static_argnums=0)
def _occupied(fft, live: jax.Array) -> jax.Array:
    spec = PartitionSpec(tuple(fft.mesh.axis_names))
    count = jax.shard_map(lambda mine: jnp.sum(mine > 0, dtype=jnp.int32, keepdims=True), mesh=fft.mesh,
                          in_specs=spec, out_specs=spec)
    return count(live)


def distribute(fft, box: Sequence[float], capacity: int, *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """Replicated particle arrays ``(Np, ...)`` (the first the positions) laid out as owned ones: each device
    keeps those in its block in ``capacity`` slots. Returns ``(live, *arrays, counts)``: ``counts`` ``(3,)``
    int32 replicated, as :func:`migrate`'s: 0 (no send buffer), the particles that found no slot, those whose
    position is not finite (each lost: to be reported)."""
    moves = sharded_axes(fft)
    axes = tuple(fft.mesh.axis_names)
    shape = tuple(int(n) for n in fft.shape)
    spacing = tuple(float(length) / n for length, n in zip(box, shape, strict=True))
    body = functools.partial(_scatter_local, moves, shape, spacing, capacity)
    outs = (PartitionSpec(axes), *(PartitionSpec(axes, *([None] * (x.ndim - 1))) for x in arrays), PartitionSpec())
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=tuple(PartitionSpec() for _ in arrays), out_specs=outs)
    return mapped(*arrays)


def _gather_local(count: int, axes: tuple[str, ...], live: jax.Array, ident: jax.Array, *arrays: jax.Array
                  ) -> tuple[jax.Array, ...]:
    """One device's live slots whose identity is below ``count``, scattered to row ``ident`` of zeros, summed
    over the mesh: each identity lives on one device, so the sum adds zeros to it."""
    slot = jnp.where(live & (ident < count), ident, count)  # count: a row thrown away
    return tuple(jax.lax.psum(jnp.zeros((count + 1, *x.shape[1:]), x.dtype).at[slot].set(x)[:count], axes)
                 for x in arrays)


def gather_identities(fft, count: int, live: jax.Array, ident: jax.Array, *arrays: jax.Array
                      ) -> tuple[jax.Array, ...]:
    """The particles with identities 0 .. ``count`` - 1 as small replicated arrays ``(count, ...)``, row i
    particle i (the rows a replicated species holds first), inside compiled code: ``live``, ``ident``
    ``(devices * capacity,)`` and ``arrays`` ``(devices * capacity, ...)`` sharded by owner. One psum of
    ``count`` rows per array, whatever the species' size (what a trajectory file records). A row whose
    particle is not live (lost) stays 0."""
    axes = tuple(fft.mesh.axis_names)
    body = functools.partial(_gather_local, count, axes)
    specs = (PartitionSpec(axes), PartitionSpec(axes), *(PartitionSpec(axes, *([None] * (x.ndim - 1))) for x in arrays))
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=specs,
                           out_specs=tuple(PartitionSpec() for _ in arrays))
    return mapped(live, ident, *arrays)
