"""Flow particles owned by the device whose real-space block holds them (``particles[].distribution: owned``),
the JAX side: their layout in the state, the hand-over after each step, the losses that stop a run, and the
layout of a checkpoint's particles on other devices. The hand-over itself is the cold dark matter's
(:mod:`simulator.fft.owned`, one implementation for both).

Layout (per owned species ``name``, state keys as :func:`keys` names them): ``position`` (unwrapped, as for
replicated species) and, for inertial species, ``velocity`` ``(devices * capacity, 3)``, ``ident``
``(devices * capacity,)`` int32 (the particle's index in its species, 0 .. N-1: the row it would have if
replicated) and ``live`` ``(devices * capacity,)`` bool, all sharded along their rows over every mesh axis
(:func:`simulator.fft.owned.distribute`); ``lost`` ``(4,)`` int32 replicated, the particles lost so far: over
an exchange buffer, without a free slot, outside the halo (:func:`settle`), and the steps since the first of them
(:data:`simulator.particles.slots.LOST`, the slot policy both kinds of owned particles share). The Runge-Kutta
stages carry ``ident``, ``live`` and ``lost`` unchanged (integer leaves: :func:`simulator.time.integrators._axpy`).

Runge-Kutta stages: a stage's provisional position may leave its owner's block. The owner evaluates u there
from a halo ``particles[].halo`` cells wider than the interpolant needs (:func:`simulator.fft.points.
interpolate_local` with ``reach``), which covers the furthest a particle moves in a step when |u| dt <= halo
dx (``time.cfl`` <= halo bounds it for tracers); a stage position further out gives NaN, and :func:`settle`
counts it, with anything else that stopped being finite, as lost: the run stops naming ``particles[i].halo``.
After each whole step :func:`settle` hands the particles that left their block to the neighbour that holds
them (inside the compiled step), as the cold dark matter does after each drift.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.particles import slots

if TYPE_CHECKING:  # the config imports this package (simulator.particles) for its checks
    from simulator.particles.species import Species


def keys(name: str) -> dict[str, str]:
    """The state keys of an owned species' arrays, by role: ``position``, ``velocity`` (inertial only),
    ``ident``, ``live``, ``lost`` (also their dataset names in checkpoints)."""
    return {role: f"particles.{name}.{role}" for role in ("position", "velocity", "ident", "live", "lost")}


def capacity(species: Species, devices: int) -> int:
    """Slots per device: all the particles on one device, else ``capacity`` times the mean count per device."""
    return slots.slots(species.count, species.capacity, devices)


def exchange_rows(species: Species, devices: int) -> int:
    """Rows of each send buffer of a hand-over: ``exchange`` of a device's slots."""
    return slots.send_rows(species.exchange, capacity(species, devices))


def state_bytes(species: Species, devices: int, itemsize: int) -> int:
    """Bytes of an owned species' state on one device: its slots' positions (and velocities), identities
    (int32) and occupancy (bool)."""
    return capacity(species, devices) * (3 * itemsize * (2 if species.inertial else 1) + 4 + 1)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def distribute(fft: Any, box: tuple[float, ...], species: Species, position: jax.Array,
               velocity: jax.Array | None = None, ident: jax.Array | None = None,
               lost: jax.Array | None = None) -> dict[str, jax.Array]:
    """Replicated rows ``position`` (and ``velocity``) ``(Np, 3)`` with identities ``ident`` ``(Np,)`` (default
    the row index) laid out by owner: the species' state entries (:func:`keys`), ``lost`` (default none) plus
    the particles that found no slot."""
    from simulator.fft.owned import counted
    from simulator.fft.owned import distribute as spread

    ident = jnp.arange(position.shape[0], dtype=jnp.int32) if ident is None else ident.astype(jnp.int32)
    arrays = [position] + ([velocity] if velocity is not None else []) + [ident]
    live, *laid, over = spread(fft, box, capacity(species, fft.devices), *arrays)
    k = keys(species.name)
    new = counted(None, jnp.zeros(3, jnp.int32).at[1].set(over))
    lost = new if lost is None else new + lost.astype(jnp.int32)
    out = {k["position"]: laid[0], k["ident"]: laid[-1], k["live"]: live, k["lost"]: lost}
    if velocity is not None:
        out[k["velocity"]] = laid[1]
    return out


def settle(fft: Any, box: Sequence[float], species: Species, state: Mapping[str, Any]) -> dict[str, jax.Array]:
    """After a whole step: a live particle whose position or velocity is not finite (a stage left the halo,
    or it blew up) is counted in ``lost[2]`` and its slot freed; the others are handed to the device whose
    block holds them (:func:`simulator.fft.owned.migrate`, losses counted and dated). Returns the species' entries."""
    from simulator.fft.owned import counted, migrate

    k = keys(species.name)
    position, live = state[k["position"]], state[k["live"]]
    moving = [position] + ([state[k["velocity"]]] if species.inertial else [])
    finite = functools.reduce(jnp.logical_and, [jnp.all(jnp.isfinite(a), axis=1) for a in moving])
    strayed = live & ~finite
    moving = [jnp.where(strayed[:, None], jnp.zeros((), a.dtype), a) for a in moving]
    live, *moved, ident, counts = migrate(fft, box, exchange_rows(species, fft.devices), live & finite, *moving,
                                          state[k["ident"]])
    lost = counted(state[k["lost"]], counts.at[2].add(jnp.sum(strayed).astype(jnp.int32)))
    out = {k["position"]: moved[0], k["ident"]: ident, k["live"]: live, k["lost"]: lost}
    if species.inertial:
        out[k["velocity"]] = moved[1]
    return out


def lost_message(species: Sequence[Species], state: Mapping[str, Any]) -> slots.Loss | None:
    """Why the run must stop, read on the host: the first owned species that lost particles, in one line
    naming the setting to raise, and when (:class:`simulator.particles.slots.Loss`); None when none did."""
    for i, s in enumerate(species):
        if not s.owned:
            continue
        key = f"particles[{i}]"
        why = slots.loss(np.asarray(state[keys(s.name)["lost"]].addressable_data(0)), f"particles of species {s.name}",
                         (f"{key}.exchange", s.exchange), (f"{key}.capacity", s.capacity),
                         f"moved more than {key}.halo = {s.halo} cells outside their device's block within a step, "
                         f"or stopped being finite: raise {key}.halo, or lower time.dt (time.cfl)")
        if why is not None:
            return why
    return None


def host_rows(species: Species, stored: Mapping[str, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray] | None:
    """A stored species (arrays by dataset name, NumPy, whole) as rows by identity: positions, velocities
    (inertial), identities and the lost counts ``(4,)``; from an owned layout (its live slots sorted by ``ident``) or
    a replicated one (row i particle i). None when ``stored`` lacks the species' positions."""
    k = keys(species.name)
    if k["position"] not in stored:
        return None
    position = np.asarray(stored[k["position"]])
    velocity = np.asarray(stored[k["velocity"]]) if species.inertial and k["velocity"] in stored else None
    if k["live"] not in stored:  # replicated rows
        return position, velocity, np.arange(position.shape[0], dtype=np.int32), slots.stored_lost(None)
    live = np.asarray(stored[k["live"]]) > 0
    ident = np.asarray(stored[k["ident"]])[live]
    order = np.argsort(ident, kind="stable")
    lost = slots.stored_lost(stored.get(k["lost"]))
    return (position[live][order], None if velocity is None else velocity[live][order],
            ident[order].astype(np.int32), lost)


def replicated(fft: Any, host: np.ndarray, dtype: Any) -> jax.Array:
    """A host array (the same on every process) as a replicated device array of ``dtype``."""
    host = np.asarray(host).astype(dtype)
    return jax.make_array_from_callback(host.shape, fft.replicated_sharding(), lambda index: host[index])


def lay_out(fft: Any, box: Sequence[float], dtype: Any, species: Species, position: np.ndarray,
            velocity: np.ndarray | None, ident: np.ndarray, lost: np.ndarray) -> dict[str, jax.Array]:
    """Host rows of an owned species (:func:`host_rows`: ``(Np, 3)`` positions and velocities, ``(Np,)``
    identities, ``(4,)`` lost counts, the same on every process) laid out on ``fft``'s devices
    (:func:`distribute`): the species' state entries."""
    return distribute(fft, tuple(float(b) for b in box), species, replicated(fft, position, dtype),
                      None if velocity is None else replicated(fft, velocity, dtype), replicated(fft, ident, np.int32),
                      replicated(fft, lost, np.int32))
