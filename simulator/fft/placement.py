"""A particle set too large for one device placed on its owners without any device holding it whole.

Rows: a set of ``R`` particles in row order (a lattice start's or a checkpoint's, by identity) arrives as
arrays ``(R, ...)`` sharded along their rows over every mesh axis in mesh order (:func:`rows_sharding`:
device k holds rows k R/P .. (k+1) R/P - 1 of P devices), where R divides over the devices; otherwise, and
on one device, replicated as before (every device the whole set).

* :func:`lattice_rows`: a grid field's values at every stride-th cell as such rows, in lattice order (x
  slowest): each device takes the lattice points of its own real-space block, and one all-to-all along each
  mesh axis that splits y (or z) turns the blocks into runs of whole x planes, the rows' order;
* :func:`place`: rows laid out as owned particles (:mod:`simulator.fft.owned`): each device's chunk of rows
  goes round the ring of devices (P - 1 ppermutes of R/P rows), and each device keeps, of every chunk it
  sees, the particles whose cell lies in its block, in slots ordered by row (each chunk's offsets from one
  all-gather of a P x P table of counts). The layout is :func:`simulator.fft.owned.distribute`'s of the
  same rows replicated, slot for slot: with one chunk in flight per device instead of the whole set.

A device thus holds its slots, its chunk and the one passing through, about three times its share, where the
replicated placement held the whole set and its temporaries on every device: more devices take more
particles (docs/PERFORMANCE.md, 2026-11-27).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from simulator.fft.owned import distribute, owner, sharded_axes


def spread(fft: Any, count: int) -> bool:
    """Whether ``count`` rows are sharded over ``fft``'s devices (:func:`rows_sharding`): several devices, a
    split axis (one holds every particle otherwise), and ``count`` a positive multiple of their number (no rows:
    the replicated path, which lays out none)."""
    return fft.devices > 1 and bool(sharded_axes(fft)) and count > 0 and count % fft.devices == 0


def rows_sharding(fft: Any, count: int, ndim: int = 2) -> NamedSharding:
    """The sharding of ``count`` rows of ``ndim`` dimensions: along the rows over every mesh axis in mesh order
    where :func:`spread`, else replicated."""
    if not spread(fft, count):
        return fft.replicated_sharding()
    return NamedSharding(fft.mesh, PartitionSpec(tuple(fft.mesh.axis_names), *([None] * (ndim - 1))))


def row_index(fft: Any, count: int) -> jax.Array:
    """0 .. ``count`` - 1 ``(count,)`` int32, sharded by :func:`rows_sharding` (each device its own rows)."""
    return jax.lax.with_sharding_constraint(jnp.arange(count, dtype=jnp.int32), rows_sharding(fft, count, 1))


def _split_in_order(fft: Any, n: int) -> list[tuple[int, str]] | None:
    """(real axis, mesh axis) of the split axes after x whose blocks :func:`lattice_rows` exchanges, or None where
    it cannot (then XLA reshapes the lattice itself): ``n`` lattice points per axis divide over the devices, and
    the mesh axes split the real axes in the order of the mesh (so that the x planes a device ends with are the
    rows :func:`rows_sharding` gives it)."""
    moves = sharded_axes(fft)
    if not spread(fft, n**3) or n % fft.devices:
        return None
    order = [m for m, size in zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True) if size > 1]
    if [m for _, m, _ in moves] != order:
        return None
    return [(a, m) for a, m, _ in moves if a > 0]


def lattice_rows(fft: Any, field: jax.Array, n: int) -> jax.Array:
    """``field`` ``(Nx, Ny, Nz)`` (real-space layout) at the cells (i s_x, j s_y, k s_z), s = N / ``n`` along
    each axis, as rows ``(n^3,)`` in lattice order (row (i n + j) n + k), sharded by :func:`rows_sharding`."""
    stride = tuple(int(size) // n for size in fft.shape)
    later = _split_in_order(fft, n)
    if later is None:
        lattice = field[::stride[0], ::stride[1], ::stride[2]].reshape(n**3)
        return jax.lax.with_sharding_constraint(lattice, rows_sharding(fft, n**3, 1))
    body = functools.partial(_lattice_local, stride, later)
    return jax.shard_map(body, mesh=fft.mesh, in_specs=PartitionSpec(*fft.real_spec()),
                         out_specs=PartitionSpec(tuple(fft.mesh.axis_names)))(field)


def _lattice_local(stride: tuple[int, ...], later: list[tuple[int, str]], block: jax.Array) -> jax.Array:
    """One device's rows of :func:`lattice_rows`: its block's lattice points (the block starts on one: n divides
    over the devices), then its x planes split among the devices along each later split axis, whose blocks of
    that axis it gathers, so that it holds whole planes."""
    lattice = block[::stride[0], ::stride[1], ::stride[2]]
    for axis, mesh_axis in later:
        lattice = jax.lax.all_to_all(lattice, mesh_axis, split_axis=0, concat_axis=axis, tiled=True)
    return lattice.reshape(-1)


def place(fft: Any, box: Sequence[float], capacity: int, *arrays: jax.Array, valid: jax.Array | None = None
          ) -> tuple[jax.Array, ...]:
    """Rows ``arrays`` ``(R, ...)`` (the first the positions ``(R, 3)``), sharded by :func:`rows_sharding`
    (replicated ones are taken so), laid out as owned particles in ``capacity`` slots per device; ``valid``
    ``(R,)`` bool the rows that hold a particle (None: all; only where :func:`spread`). Returns
    :func:`simulator.fft.owned.distribute`'s ``(live, *arrays, counts)``, the same slots: where the rows are
    not spread, its result."""
    rows = arrays[0].shape[0]
    if not spread(fft, rows):
        if valid is not None:
            raise ValueError(f"place: {rows} rows on {fft.devices} device(s) are replicated, and take no valid mask")
        return distribute(fft, box, capacity, *arrays)
    valid = jnp.ones(rows, bool) if valid is None else valid
    shape = tuple(int(n) for n in fft.shape)
    spacing = tuple(float(length) / n for length, n in zip(box, shape, strict=True))
    axes = tuple(fft.mesh.axis_names)
    sizes = dict(zip(axes, (int(s) for s in fft.mesh.devices.shape), strict=True))
    strides = {m: math.prod(sizes[o] for o in axes[i + 1:]) for i, m in enumerate(axes)}
    moves = [(a, strides[m], size) for a, m, size in sharded_axes(fft)]
    body = functools.partial(_place_local, moves, shape, spacing, capacity, axes, fft.devices)
    spec = [PartitionSpec(axes, *([None] * (x.ndim - 1))) for x in arrays]
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=(PartitionSpec(axes), *spec),
                           out_specs=(PartitionSpec(axes), *spec, PartitionSpec()))
    return mapped(valid, *arrays)


def _place_local(moves: list[tuple[int, int, int]], shape: tuple[int, ...], spacing: tuple[float, ...], capacity: int,
                 axes: tuple[str, ...], devices: int, valid: jax.Array, *chunk: jax.Array) -> tuple[jax.Array, ...]:
    """One device's part of :func:`place`: ``moves`` (real axis, stride of its mesh axis in the device's
    index over ``axes``, devices along it) give each row's owner; the chunks go round the ring, chunk k placed
    after every row of chunks 0 .. k-1 that this device owns."""
    me = jax.lax.axis_index(axes)
    dest = jnp.zeros(valid.shape, jnp.int32)
    nowhere = ~valid
    for axis, stride, size in moves:
        along = owner(chunk[0][:, axis], shape[axis], spacing[axis], size)
        dest, nowhere = dest + along * stride, nowhere | (along < 0)
    finite = valid & ~nowhere
    dest = jnp.where(finite, dest, devices)  # devices: no one's
    table = jax.lax.all_gather(jnp.zeros(devices, jnp.int32).at[dest].add(1, mode="drop"), axes)  # chunk, owner
    mine = table[:, me]
    offset = jnp.cumsum(mine) - mine  # this device's rows of the chunks before each

    def put(held: list[jax.Array], k: jax.Array, dest: jax.Array, rows: list[jax.Array]) -> list[jax.Array]:
        ours = dest == me
        rank = offset[k] + jnp.cumsum(ours, dtype=jnp.int32) - 1
        slot = jnp.where(ours & (rank < capacity), rank, capacity)  # capacity: no slot, dropped
        live, *out, over = held
        out = [o.at[slot].set(r, mode="drop") for o, r in zip(out, rows, strict=True)]
        return [live.at[slot].set(ours, mode="drop"), *out, over + jnp.sum(ours & (rank >= capacity), dtype=jnp.int32)]

    empty = [jnp.zeros(capacity, bool), *(jnp.zeros((capacity, *x.shape[1:]), x.dtype) for x in chunk),
             jnp.zeros((), jnp.int32)]
    held = put(empty, me, dest, list(chunk))
    ring = [(i, (i + 1) % devices) for i in range(devices)]

    def turn(carry, t):
        held, dest, rows = carry
        dest, *rows = jax.lax.ppermute([dest, *rows], axes, ring)
        return (put(held, (me - t) % devices, dest, rows), dest, rows), None

    (held, _, _), _ = jax.lax.scan(turn, (held, dest, list(chunk)), jnp.arange(1, devices))
    live, *out, over = held
    lost = jax.lax.psum(jnp.stack([over, jnp.sum(valid & nowhere, dtype=jnp.int32)]), axes)
    return (live, *out, jnp.concatenate([jnp.zeros(1, jnp.int32), lost]))
