"""Flow particles owned by the device whose real-space block holds them (``particles[].distribution: owned``),
the JAX side: their layout in the state, the hand-over after each step, the losses that stop a run, and the
layout of a checkpoint's particles on other devices: the species' keys and settings handed to the per-device
stack the cold dark matter goes through too (:mod:`.stack`, one implementation for both).

Layout (per owned species ``name``, state keys as :func:`keys` names them): ``position`` (unwrapped, as for
replicated species) and, for inertial species, ``velocity`` ``(devices * capacity, 3)``, ``ident``
``(devices * capacity,)`` int32 (the particle's index in its species, 0 .. N-1: the row it would have if
replicated) and ``live`` ``(devices * capacity,)`` bool, all sharded along their rows over every mesh axis
(:func:`simulator.fft.owned.distribute`); ``lost`` ``(4,)`` int32 replicated, the particles lost so far: over
an exchange buffer, without a free slot, outside the halo (:func:`settle`), and the steps since the first of them
(:data:`simulator.fft.particle_slots.LOST`, the slot policy both kinds of owned particles share). The Runge-Kutta
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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jax

from simulator.fft import particle_slots as slots, particle_stack as stack

if TYPE_CHECKING:  # the config imports this package (simulator.particles) for its checks
    from simulator.particles.species import Species


def keys(name: str) -> dict[str, str]:
    """The state keys of an owned species' arrays, by role: ``position``, ``velocity`` (inertial only),
    ``ident``, ``live``, ``lost`` (also their dataset names in checkpoints)."""
    return {role: f"particles.{name}.{role}" for role in ("position", "velocity", "ident", "live", "lost")}


def sizes(species: Species, devices: int) -> tuple[int, int]:
    """Slots per device and rows of each send buffer (:func:`.stack.sizes` of ``count``, ``capacity``, ``exchange``)."""
    return stack.sizes(species.count, species.capacity, species.exchange, devices)


def state_bytes(species: Species, devices: int, itemsize: int) -> int:
    """Bytes of an owned species' state on one device: its slots' positions (and velocities), identities
    (int32) and occupancy (bool)."""
    return sizes(species, devices)[0] * (3 * itemsize * (2 if species.inertial else 1) + 4 + 1)


def _moving(species: Species) -> list[str]:
    """The keys of the arrays that travel with an owned species' particles: positions (and velocities)."""
    k = keys(species.name)
    return [k["position"]] + ([k["velocity"]] if species.inertial else [])


def _entries(species: Species, live: jax.Array, arrays: dict[str, jax.Array], ident: jax.Array, lost: jax.Array
             ) -> dict[str, jax.Array]:
    """A stack's ``(live, arrays, ident, lost)`` (:mod:`.stack`) as the species' state entries."""
    k = keys(species.name)
    return {**arrays, k["ident"]: ident, k["live"]: live, k["lost"]: lost}


def distribute(fft: Any, box: Sequence[float], species: Species, position: jax.Array) -> dict[str, jax.Array]:
    """Replicated positions ``(Np, 3)`` (row i particle i) laid out by owner (:func:`.stack.hand_out`): the
    species' state entries (:func:`keys`), ``lost`` the particles that found no slot."""
    held = sizes(species, fft.devices)[0]
    return _entries(species, *stack.hand_out(fft, box, held, {keys(species.name)["position"]: position}))


def settle(fft: Any, box: Sequence[float], species: Species, state: Mapping[str, Any]) -> dict[str, jax.Array]:
    """After a whole step: a live particle whose position or velocity is not finite (a stage left the halo,
    or it blew up) is counted in ``lost[2]`` and its slot freed; the others are handed to the device whose
    block holds them (:func:`.stack.hand_over`, losses counted and dated). Returns the species' entries."""
    k, names = keys(species.name), _moving(species)
    live, moved, ident, lost = stack.hand_over(fft, box, sizes(species, fft.devices)[1], state[k["live"]],
                                               [state[n] for n in names], state[k["ident"]], state[k["lost"]],
                                               stray=True)
    return _entries(species, live, dict(zip(names, moved, strict=True)), ident, lost)


def lost_message(species: Sequence[Species], state: Mapping[str, Any]) -> slots.Loss | None:
    """Why the run must stop, read on the host: the first owned species that lost particles, in one line
    naming the setting to raise, and when (:func:`.stack.loss`); None when none did."""
    for i, s in enumerate(species):
        if not s.owned:
            continue
        key = f"particles[{i}]"
        why = stack.loss(state[keys(s.name)["lost"]], f"particles of species {s.name}",
                         (f"{key}.exchange", s.exchange), (f"{key}.capacity", s.capacity),
                         f"moved more than {key}.halo = {s.halo} cells outside their device's block within a step, "
                         f"or stopped being finite: raise {key}.halo, or lower time.dt (time.cfl)")
        if why is not None:
            return why
    return None


def rooms(fft: Any, species: Sequence[Species], state: Mapping[str, Any]) -> list[slots.Room]:
    """The slots of each owned species (:func:`.stack.room`) on several devices."""
    out = []
    for i, s in enumerate(species):
        if s.owned and (r := stack.room(fft, state[keys(s.name)["live"]], f"particles of species {s.name}",
                                        f"particles[{i}].capacity", s.capacity, sizes(s, fft.devices)[0],
                                        s.count)) is not None:
            out.append(r)
    return out


def read_rows(fft: Any, species: Species, index: int, stored: Mapping[str, Any], whole: bool = False
              ) -> stack.Rows | None:
    """A stored species (datasets or arrays by name, read a bounded chunk at a time) as this process's rows by
    identity (:func:`.stack.read_rows`): positions and, for inertial species, velocities, from an owned layout
    or a replicated one; the rows its devices take to lay them out (:func:`lay_out`), or ``whole``: every row
    (a replicated species'). None when ``stored`` lacks the species' positions; an identity outside the
    species' count: a one-line ConfigError naming ``particles[index].count``."""
    k = keys(species.name)
    wanted = (stack.Share(species.count, [(0, species.count)]) if whole
              else stack.share(fft, stack.padded(fft, species.count)))
    return stack.read_rows(stored, _moving(species), k["live"], k["ident"], k["lost"], wanted,
                           f"particles[{index}].count", species.count)


def lay_out(fft: Any, box: Sequence[float], dtype: Any, species: Species, rows: stack.Rows) -> dict[str, jax.Array]:
    """Rows of an owned species (:func:`read_rows`) laid out on ``fft``'s devices (:func:`.stack.lay_out`):
    the species' state entries, the stored lost counts carried on."""
    return _entries(species, *stack.lay_out(fft, box, sizes(species, fft.devices)[0], dtype, rows))


def counted_rows(fft: Any, species: Species, index: int, stored: Mapping[str, Any], what: str, whole: bool = False
                 ) -> stack.Rows | None:
    """:func:`read_rows` of a file a run starts from (``what``: the file, for messages), whose particles must be
    the species' count: another count is a one-line ConfigError naming ``particles[index].count``, and rows that
    lost particles cannot become a replicated species' (``whole``), one naming ``particles[index].distribution``."""
    from simulator.errors import ConfigError

    rows = read_rows(fft, species, index, stored, whole)
    if rows is None or rows.count == species.count:
        return rows
    lost = int(rows.lost[:3].sum())  # over a buffer, without a slot, out of reach: particles the rows lack
    if whole and lost:
        raise ConfigError(f"particles[{index}].distribution", species.distribution, f"{what} holds {rows.count} of "
                          f"the {rows.count + lost} particles of species {species.name!r} (the others were lost): "
                          "give distribution: owned", "cannot take them")
    raise ConfigError(f"particles[{index}].count", species.count, f"{what} holds {rows.count} particles of species "
                      f"{species.name!r}: give that count", "differs")


def replicated(fft: Any, species: Species, index: int, stored: Mapping[str, Any], dtype: Any, what: str
               ) -> dict[str, jax.Array] | None:
    """A species kept on every device (replicated) from ``stored`` in an owned layout (``what``: the file, for
    messages): every row by identity (:func:`counted_rows` ``whole``), row i particle i, positions and the
    velocities stored; None without its positions."""
    rows = counted_rows(fft, species, index, stored, what, whole=True)
    if rows is None:
        return None
    return {key: fft.replicated(a, dtype) for key, a in rows.blocks[0].arrays.items()}
