"""The per-device particle stack, the JAX side: what both kinds of particles kept by the device whose block
holds them do on their devices, one implementation for owned flow particles (``particles[].distribution:
owned``, :mod:`.owned`) and the cold dark matter of a mixed or particle-only run (:mod:`simulator.equations.
cold`). Each kind names its own settings and state keys and calls these; the slot policy and the loss
counts are :mod:`.slots` (no JAX, read by the config), the hand-over itself :mod:`simulator.fft.owned`.

Layout of a stack on ``devices`` devices (:func:`simulator.fft.owned.distribute`): per-particle arrays
``(devices * held, ...)`` (positions ``(., 3)`` first, then whatever travels with them), identities ``ident``
``(devices * held,)`` int32 (the particle's index, 0 .. N-1, the row it has when replicated), the occupied
slots ``live`` ``(devices * held,)`` bool, all sharded along their rows over every mesh axis, and ``lost``
``(4,)`` int32 replicated (:data:`simulator.particles.slots.LOST`).

* :func:`sizes`: slots per device and rows of each send buffer;
* :func:`hand_out`: replicated rows (an initial condition, a restart's rows) laid out by owner;
* :func:`hand_over`: after a step, each particle to the device whose block holds it, losses counted;
* :func:`host_rows` and :func:`lay_out`: a checkpoint's particles, written on any device count (or replicated),
  as rows by identity on the host, then laid out on this run's devices;
* :func:`loss`: the one-line reason a run stops, read on the host;
* :func:`room`: how full the fullest device's slots are, read on the host.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft.owned import counted, fullest, migrate, split_planes
from simulator.fft.placement import host_rows as sharded_rows
from simulator.fft.placement import place, row_index, spread
from simulator.particles import slots


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
    device has more to send: :func:`simulator.particles.slots.first_rows`), the particles lost on the way added to
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


class Rows(NamedTuple):
    """A stored stack as rows by identity, on the host (NumPy, the same on every process): ``arrays`` by
    dataset name ``(Np, ...)``, row k the particle ``ident[k]``; ``ident`` ``(Np,)`` int32 ascending; ``lost``
    ``(4,)`` int32, the counts carried on (:func:`simulator.particles.slots.stored_lost`)."""

    arrays: dict[str, np.ndarray]
    ident: np.ndarray
    lost: np.ndarray


def host_rows(stored: Mapping[str, np.ndarray], names: Sequence[str], live: str, ident: str, lost: str
              ) -> Rows | None:
    """The arrays ``names`` of a stored stack (``stored``: arrays by dataset name, NumPy, whole; a name it lacks
    is left out) as :class:`Rows`: from a layout by owner (``live``, ``ident`` and ``lost`` the names of its
    slots' occupancy, identities and lost counts: the live slots sorted by identity) or from replicated rows
    (no ``live`` stored: row i particle i, none lost). None when ``stored`` lacks ``names[0]`` (the positions)."""
    if names[0] not in stored:
        return None
    arrays = {n: np.asarray(stored[n]) for n in names if n in stored}
    if live not in stored:
        count = arrays[names[0]].shape[0]
        return Rows(arrays, np.arange(count, dtype=np.int32), slots.stored_lost(None))
    mask = np.asarray(stored[live]) > 0
    held = np.asarray(stored[ident])[mask]
    order = np.argsort(held, kind="stable")
    return Rows({n: a[mask][order] for n, a in arrays.items()}, held[order].astype(np.int32),
                slots.stored_lost(stored.get(lost)))


def lay_out(fft: Any, box: Sequence[float], held: int, dtype: Any, rows: Rows
            ) -> tuple[jax.Array, dict[str, jax.Array], jax.Array, jax.Array]:
    """Host :class:`Rows` (a restart's) laid out on ``fft``'s devices in ``held`` slots each, the arrays in
    ``dtype``: :func:`hand_out`'s ``(live, arrays, ident, lost)``, the stored lost counts carried on. Each device
    takes its own share of the rows (padded with rows of no particle to a multiple of the devices), not the whole
    set (:func:`simulator.fft.placement.place`)."""
    count = len(rows.ident)
    padded = -(-count // fft.devices) * fft.devices
    if not spread(fft, padded):
        arrays = {n: fft.replicated(a, dtype) for n, a in rows.arrays.items()}
        return hand_out(fft, box, held, arrays, fft.replicated(rows.ident, np.int32),
                        fft.replicated(rows.lost, np.int32))

    def pad(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a, np.zeros((padded - count, *a.shape[1:]), a.dtype)])

    arrays = {n: sharded_rows(fft, pad(a), dtype) for n, a in rows.arrays.items()}
    ident = sharded_rows(fft, pad(rows.ident), np.int32)
    valid = sharded_rows(fft, np.arange(padded) < count, bool)
    return hand_out(fft, box, held, arrays, ident, fft.replicated(rows.lost, np.int32), valid)


def room(fft: Any, live: jax.Array, what: str, key: str, value: float, held: int, count: int) -> slots.Room | None:
    """The :class:`~simulator.particles.slots.Room` of a stack of ``count`` particles ``what`` in ``held`` slots
    per device, sized by the setting ``key`` = ``value``: the occupied slots of this process's fullest device.
    None on one device, or where a device's slots hold every particle (none can then lack a slot)."""
    if fft.devices == 1 or held >= count:
        return None
    return slots.Room(what, key, value, held, fullest(fft, live))


def loss(lost: jax.Array, what: str, exchange: tuple[str, float], capacity: tuple[str, float], far: str
         ) -> slots.Loss | None:
    """Why the run must stop, read on the host from a state's ``lost`` ``(4,)`` (replicated): particles ``what``
    lost, in one line naming the setting to raise (``exchange`` and ``capacity``: ``(key, value)``; ``far``
    what a particle beyond a step's reach did and what to change), and when (:func:`simulator.particles.slots.
    loss`); None when none was."""
    return slots.loss(np.asarray(lost.addressable_data(0)), what, exchange, capacity, far)
