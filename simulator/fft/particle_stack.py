"""The per-device particle stack, the JAX side: what both kinds of particles kept by the device whose block
holds them do on their devices, one implementation for owned flow particles (``particles[].distribution:
owned``, :mod:`.owned`) and the cold dark matter of a mixed or particle-only run (:mod:`simulator.equations.
cold`). Each kind names its own settings and state keys and calls these; the slot policy and the loss
counts are :mod:`.slots` (no JAX, read by the config), the hand-over itself :mod:`simulator.fft.owned`.

Layout of a stack on ``devices`` devices (:func:`simulator.fft.owned.distribute`): per-particle arrays
``(devices * held, ...)`` (positions ``(., 3)`` first, then whatever travels with them), identities ``ident``
``(devices * held,)`` int32 (the particle's index, 0 .. N-1, the row it has when replicated), the occupied
slots ``live`` ``(devices * held,)`` bool, all sharded along their rows over every mesh axis, and ``lost``
``(4,)`` int32 replicated (:data:`simulator.fft.particle_slots.LOST`).

* :func:`sizes`: slots per device and rows of each send buffer;
* :func:`hand_out`: replicated rows (an initial condition, a restart's rows) laid out by owner;
* :func:`hand_over`: after a step, each particle to the device whose block holds it, losses counted;
* :func:`read_rows` and :func:`lay_out`: a checkpoint's particles, written on any device count (or replicated),
  read in bounded chunks as rows by identity, each process keeping its own devices' rows on the host, then laid
  out on this run's devices;
* :func:`loss`: the one-line reason a run stops, read on the host;
* :func:`room`: how full the fullest device's slots are, read on the host.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft import particle_slots as slots
from simulator.fft.owned import counted, fullest, migrate, split_planes
from simulator.fft.placement import place, row_index, rows_sharding, spread


def sizes(count: int, capacity: float, exchange: float, devices: int) -> tuple[int, int]:
    """``(held, rows)``: the slots per device for ``count`` particles (all of them on one device, else
    ``capacity`` times the mean count per device) and the rows of each send buffer of a hand-over
    (``exchange`` of a device's slots)."""
    held = slots.slots(count, capacity, devices)
    return held, slots.send_rows(exchange, held)


def hand_out(fft: Any, box: Sequence[float], held: int, arrays: Mapping[str, jax.Array],
             ident: jax.Array | None = None, lost: jax.Array | None = None, valid: jax.Array | None = None
             ) -> tuple[jax.Array, dict[str, jax.Array], jax.Array, jax.Array]:
    """Rows ``arrays`` ``(R, ...)`` by name (the first the positions ``(R, 3)``) with identities ``ident``
    ``(R,)`` (default the row index) laid out by owner in ``held`` slots per device, in one program
    (:func:`simulator.fft.placement.place`: rows sharded over the devices, or replicated where they do not divide
    over them); ``valid`` ``(R,)`` the rows that hold a particle (None: all). Returns ``(live, arrays, ident,
    lost)`` (the layout above): ``lost`` the counts ``lost`` ``(4,)`` (default none) plus the particles that
    found no slot (``lost[1]``) and those whose position is not finite (``lost[2]``, as a hand-over counts
    them)."""
    return _hand_out(fft, tuple(float(b) for b in box), held, tuple(arrays), tuple(arrays.values()), ident, lost,
                     valid)


# one program (eagerly, each operation would compile its own); the names static and in order (a dict argument
# comes back from jit's flattening in sorted order, and the first array must stay the positions)
@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _hand_out(fft: Any, box: tuple[float, ...], held: int, names: tuple[str, ...], arrays: tuple[jax.Array, ...],
              ident: jax.Array | None, lost: jax.Array | None, valid: jax.Array | None
              ) -> tuple[jax.Array, dict[str, jax.Array], jax.Array, jax.Array]:
    ident = row_index(fft, arrays[0].shape[0]) if ident is None else ident.astype(jnp.int32)
    live, *laid, ident, counts = place(fft, box, held, *arrays, ident, valid=valid)
    new = counted(None, counts)
    return (live, dict(zip(names, laid, strict=True)), ident,
            new if lost is None else new + lost.astype(jnp.int32))


def hand_over(fft: Any, box: Sequence[float], rows: int, live: jax.Array, arrays: Sequence[jax.Array],
              ident: jax.Array, lost: jax.Array, stray: bool = False
              ) -> tuple[jax.Array, list[jax.Array], jax.Array, jax.Array]:
    """After a step (inside compiled code): every live particle handed to the device whose block holds it
    (:func:`simulator.fft.owned.migrate`, ``rows`` per send buffer at most, one plane's mean count when no
    device has more to send: :func:`simulator.fft.particle_slots.first_rows`), the particles lost on the way added to
    ``lost`` and dated (:func:`simulator.fft.owned.counted`: one hand-over per step). ``live`` ``(slots,)`` bool,
    ``arrays`` the per-particle arrays ``(slots, ...)``, positions first. ``stray``: a live particle with any
    entry of ``arrays`` not finite (it left a step's reach, or blew up) is counted in ``lost[2]``, its slot
    freed and its rows zeroed. Returns ``(live, arrays, ident, lost)``."""
    strayed = None
    if stray:
        finite = functools.reduce(jnp.logical_and, [jnp.all(jnp.isfinite(a), axis=1) for a in arrays])
        strayed = live & ~finite
        arrays = [jnp.where(strayed[:, None], jnp.zeros((), a.dtype), a) for a in arrays]
        live = live & finite
    held = live.shape[0] // fft.devices
    first = [slots.first_rows(held, planes, rows) for planes in split_planes(fft)]
    live, *moved, ident, counts = migrate(fft, box, rows, live, *arrays, ident, first=first)
    if strayed is not None:
        counts = counts.at[2].add(jnp.sum(strayed).astype(jnp.int32))
    return live, moved, ident, counted(lost, counts)


READ_ROWS = 1 << 20
"""Stored slots a process reads at once (:func:`read_rows`): beside its devices' own rows, all it holds of a
checkpoint's stack (1M rows of positions, momenta and forces in float64: 72 MiB)."""


class Share(NamedTuple):
    """Rows by identity, 0 .. ``extent`` - 1, laid out by :func:`simulator.fft.placement.rows_sharding`, and the
    ranges ``[start, stop)`` of them that this process's devices hold (:func:`share`)."""

    extent: int
    ranges: list[tuple[int, int]]


def share(fft: Any, extent: int) -> Share:
    """This process's :class:`Share` of ``extent`` rows: each of its devices' own rows where they are spread
    over the devices (:func:`simulator.fft.placement.spread`), else all of them."""
    if not spread(fft, extent):
        return Share(extent, [(0, extent)])
    rows = extent // fft.devices
    index = rows_sharding(fft, extent, 1).addressable_devices_indices_map((extent,))
    return Share(extent, [(start, start + rows) for start in sorted({i[0].start for i in index.values()})])


def padded(fft: Any, count: int) -> int:
    """``count`` rows padded to a multiple of ``fft``'s devices (rows of no particle at the end)."""
    return -(-count // fft.devices) * fft.devices


class Block(NamedTuple):
    """The particles of identities ``start`` .. ``start + len(held) - 1`` of a stored stack, on the host:
    ``arrays`` by dataset name, row k the particle ``start + k``; ``held`` ``(rows,)`` bool, the rows the
    checkpoint holds (a lost particle's row, or one past the count, stays zero)."""

    arrays: dict[str, np.ndarray]
    held: np.ndarray


class Rows(NamedTuple):
    """A stored stack as this process's blocks (:class:`Block`, by their first identity; :func:`read_rows`) of
    the rows :attr:`share` names; ``count`` the particles the checkpoint holds (all of them: every process reads
    every identity); ``lost`` ``(4,)`` int32, the counts carried on (:func:`simulator.fft.particle_slots.
    stored_lost`)."""

    blocks: dict[int, Block]
    share: Share
    count: int
    lost: np.ndarray


def read_rows(stored: Mapping[str, Any], names: Sequence[str], live: str, ident: str, lost: str, wanted: Share,
              key: str, count: int) -> Rows | None:
    """The arrays ``names`` of a stored stack (``stored``: datasets or arrays by name, sliced :data:`READ_ROWS`
    rows at a time; a name it lacks is left out) as :class:`Rows` of the identities ``wanted`` names: from a
    layout by owner (``live``, ``ident`` and ``lost`` the names of its slots' occupancy, identities and lost
    counts) or from replicated rows (no ``live`` stored: row i particle i, none lost). A process holds its
    blocks and one read's rows, never the whole set; a read whose identities miss its blocks reads only
    ``live`` and ``ident``. None when ``stored`` lacks ``names[0]`` (the positions). An identity outside
    0 .. ``count`` - 1 (a negative one counts as ``count``), or one held twice: a one-line ConfigError naming
    ``key`` (the setting of the count)."""
    if names[0] not in stored:
        return None
    from simulator.errors import ConfigError

    present = [n for n in names if n in stored]
    blocks = {a: Block({n: np.zeros((b - a, *stored[n].shape[1:]), stored[n].dtype) for n in present},
                       np.zeros(b - a, bool)) for a, b in wanted.ranges}
    slots_stored, found, top = int(stored[names[0]].shape[0]), 0, -1
    for first in range(0, slots_stored, READ_ROWS):
        last = min(first + READ_ROWS, slots_stored)
        if live in stored:
            mask = np.asarray(stored[live][first:last]) > 0
            ids = np.asarray(stored[ident][first:last])[mask].astype(np.int64)
        else:
            mask, ids = None, np.arange(first, last)
        found += ids.size
        if ids.size:  # an identity outside 0 .. count - 1 takes no block: refused below, once all are counted
            top = max(top, int(ids.max()), -1 if ids.min() >= 0 else count)
        picks = [(a, (ids >= a) & (ids < a + len(block.held))) for a, block in blocks.items()]
        picks = [(a, pick) for a, pick in picks if pick.any()]
        if not picks:
            continue
        chunk = {n: np.asarray(stored[n][first:last]) for n in present}
        chunk = chunk if mask is None else {n: x[mask] for n, x in chunk.items()}
        for a, pick in picks:
            block, rows = blocks[a], ids[pick] - a
            if block.held[rows].any() or np.unique(rows).size != rows.size:
                raise ConfigError(key, count, "a checkpoint holding each particle once",
                                  "finds a particle twice in the checkpoint")
            block.held[rows] = True
            for n in present:
                block.arrays[n][rows] = chunk[n][pick]
    if top >= count:
        raise ConfigError(key, count, f"the checkpoint holds {found} particles, identities up to {top}: give a count "
                          "that holds them", "differs")
    carried = stored[lost] if live in stored and lost in stored else None
    return Rows(blocks, wanted, found, slots.stored_lost(carried))


def on_devices(fft: Any, rows: Rows, take: Callable[[Block], np.ndarray], dtype: Any) -> jax.Array:
    """The host rows ``take(block)`` of each :class:`Block` of ``rows`` as one array ``(extent, ...)`` of
    ``dtype`` sharded by :func:`simulator.fft.placement.rows_sharding`: each device its own block's (where the
    rows are not spread, the one block every device takes whole)."""
    first = take(next(iter(rows.blocks.values())))
    shape = (rows.share.extent, *first.shape[1:])
    return jax.make_array_from_callback(shape, rows_sharding(fft, shape[0], len(shape)),
                                        lambda idx: take(rows.blocks[idx[0].start or 0]).astype(dtype),
                                        dtype=np.dtype(dtype))


def lay_out(fft: Any, box: Sequence[float], held: int, dtype: Any, rows: Rows
            ) -> tuple[jax.Array, dict[str, jax.Array], jax.Array, jax.Array]:
    """A restart's :class:`Rows` (read for :func:`share` of the count :func:`padded`) laid out on ``fft``'s
    devices in ``held`` slots each, the arrays in ``dtype``: :func:`hand_out`'s ``(live, arrays, ident, lost)``,
    the stored lost counts carried on. Each device takes its own block of rows by identity, the rows of no
    particle marked so (:func:`simulator.fft.placement.place`), not the whole set: the slots of the rows the
    checkpoint holds, sorted by identity and handed out replicated, slot for slot."""
    lost = fft.replicated(rows.lost, np.int32)
    if not spread(fft, rows.share.extent):  # one block, every row (on one device, or a device holding them all)
        block = rows.blocks[0]
        arrays = {n: fft.replicated(a[block.held], dtype) for n, a in block.arrays.items()}
        return hand_out(fft, box, held, arrays, fft.replicated(np.flatnonzero(block.held), np.int32), lost)
    names = next(iter(rows.blocks.values())).arrays
    arrays = {n: on_devices(fft, rows, lambda b, n=n: b.arrays[n], dtype) for n in names}
    # row k the particle k: the identities are the rows' indices (hand_out's default)
    return hand_out(fft, box, held, arrays, None, lost, on_devices(fft, rows, lambda b: b.held, bool))


def room(fft: Any, live: jax.Array, what: str, key: str, value: float, held: int, count: int) -> slots.Room | None:
    """The :class:`~simulator.fft.particle_slots.Room` of a stack of ``count`` particles ``what`` in ``held`` slots
    per device, sized by the setting ``key`` = ``value``: the occupied slots of this process's fullest device.
    None on one device, or where a device's slots hold every particle (none can then lack a slot)."""
    if fft.devices == 1 or held >= count:
        return None
    return slots.Room(what, key, value, held, fullest(fft, live))


def loss(lost: jax.Array, what: str, exchange: tuple[str, float], capacity: tuple[str, float], far: str
         ) -> slots.Loss | None:
    """Why the run must stop, read on the host from a state's ``lost`` ``(4,)`` (replicated): particles ``what``
    lost, in one line naming the setting to raise (``exchange`` and ``capacity``: ``(key, value)``; ``far``
    what a particle beyond a step's reach did and what to change), and when (:func:`simulator.fft.particle_slots.
    loss`); None when none was."""
    return slots.loss(np.asarray(lost.addressable_data(0)), what, exchange, capacity, far)
