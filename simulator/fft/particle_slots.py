"""The slot policy of particles kept by the device whose block holds them, one for both kinds: owned flow
particles (``particles[].distribution: owned``, :mod:`.owned`) and the cold dark matter of a mixed run
(:mod:`simulator.equations.cold`). No JAX: the config reads it. The hand-over itself is
:mod:`simulator.fft.owned`.

* Slots: on one device all the particles; on P devices ``capacity`` times the mean count per device
  (:func:`slots`); a hand-over sends at most ``exchange`` of a device's slots to each neighbour (:func:`send_rows`),
  in buffers of one plane's mean count (:func:`first_rows`) when no device has more to send.
* The least capacity a run may ask (:func:`check_capacity`): slots for the mean count plus :data:`SPREAD`
  standard deviations of a uniform spread of the particles over the devices (binomial: a device holds each
  particle with probability 1/P). Below it, particles spread evenly through the box overflow some device
  from the first steps on; more clustered particles need more (the run stops naming the setting).
* Losses: a state's ``lost`` ``(4,)`` int32 (:data:`LOST`) counts the particles lost so far, over a send
  buffer, without a free slot, outside the reach of a step, and the hand-overs (one per step) since the
  first of them, which dates the loss (:class:`Loss`). A particle that finds no room is counted, never
  dropped silently, and the run stops at the end of the chunk, before anything of it is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulator.errors import ConfigError

#: standard deviations of a uniform spread above the mean that a device's slots must hold (:func:`check_capacity`)
SPREAD = 4.0
#: the entries of a state's ``lost`` counts: particles over a send buffer, without a slot, beyond a step's
#: reach; and the hand-overs (steps) taken since the first loss
LOST = ("over", "no_room", "far", "since")


def slots(count: int, capacity: float, devices: int) -> int:
    """Slots per device for ``count`` particles: all of them on one device, else ``capacity`` times the mean."""
    return count if devices == 1 else math.ceil(capacity * count / devices)


def send_rows(exchange: float, held: int) -> int:
    """Rows of each send buffer of a hand-over: ``exchange`` of a device's ``held`` slots (at least one)."""
    return max(1, math.ceil(exchange * held))


def first_rows(held: int, planes: int, rows: int) -> int:
    """Rows of each send buffer a hand-over along one axis tries first (at most ``rows``, the buffers of
    ``exchange``): a device's ``held`` slots over twice its block's ``planes`` of cells along the axis, the mean
    count of one plane at the default capacity of 2. A step moving particles less than a cell (the CFL) sends
    about that many or fewer; when any device has more to send, every device then sends the rest, up to
    ``rows`` (:func:`simulator.fft.owned.migrate`)."""
    return max(1, min(rows, math.ceil(held / (2 * planes))))


def least_capacity(count: int, devices: int) -> float:
    """The smallest capacity (times the mean per device, rounded up to 0.01) whose slots hold the mean count
    plus :data:`SPREAD` standard deviations of ``count`` particles spread uniformly over ``devices``; 1 on one
    device."""
    if devices == 1:
        return 1.0
    mean = count / devices
    need = mean + SPREAD * math.sqrt(count * (1 / devices) * (1 - 1 / devices))
    return math.ceil(100 * need / mean) / 100


def check_capacity(key: str, capacity: float, count: int, devices: int) -> None:
    """A one-line ConfigError naming ``key`` when ``capacity`` is below :func:`least_capacity` for ``count``
    particles on ``devices`` devices (then the run would lose particles from its first steps)."""
    least = least_capacity(count, devices)
    if capacity < least:
        mean = count / devices
        spread = math.ceil(mean + SPREAD * math.sqrt(count * (1 / devices) * (1 - 1 / devices)))
        raise ConfigError(key, capacity, f"{slots(count, capacity, devices)} slots per device for {count} particles "
                          f"on {devices} devices, where a uniform spread puts up to {spread} on one ({SPREAD:g} "
                          f"standard deviations above the mean {mean:g}): use {key} >= {least:g}",
                          f"is too small for {devices} devices")


def stored_lost(lost: np.ndarray | None) -> np.ndarray:
    """A checkpoint's ``lost`` counts as ``(4,)`` int32 (none: zeros; one written before losses were dated,
    ``(3,)``: no hand-over counted since)."""
    out = np.zeros(len(LOST), np.int32)
    if lost is not None:
        lost = np.asarray(lost, np.int32).reshape(-1)
        out[: len(lost)] = lost
    return out


@dataclass(frozen=True)
class Loss:
    """Particles lost: ``reason``, one line naming the setting that gives them room, and ``since``, the steps
    taken after the one that lost them (0: the last step of the chunk, or the hand-out itself)."""

    reason: str
    since: int

    def step(self, now: int) -> int:
        """The step that lost them, for a state at step ``now``."""
        return now - self.since

    def message(self, now: int, t: float, last: str) -> str:
        """The line a run stops with, for a state at step ``now``, time ``t``: the reason, the step that lost
        them (and where a chunk's end found them later), and ``last``, the last good checkpoint."""
        at = self.step(now)
        found = "" if at == now else f" (found at step {now}, t = {t:.6g}, the end of the chunk)"
        return f"{self.reason}; lost at step {at}{found}; last good checkpoint: {last}"


#: the share of a device's slots past which a run warns and writes a checkpoint (:class:`Room`)
FULL = 0.9


@dataclass(frozen=True)
class Room:
    """The slots of a stack of particles kept by owner: ``what`` (e.g. "cold particles"), the setting ``key``
    that sizes them and its ``value``, the ``slots`` per device and the ``occupied`` slots of the fullest device
    (of this process's devices as an equation reports it; of all, once a run has agreed it over its processes)."""

    what: str
    key: str
    value: float
    slots: int
    occupied: int

    @property
    def full(self) -> bool:
        """Whether the fullest device's occupied slots reach :data:`FULL` of them."""
        return self.occupied >= FULL * self.slots

    def warning(self, step: int) -> str:
        """The line a run logs when the fullest device's slots crossed :data:`FULL` at ``step``."""
        return (f"{self.what} fill {self.occupied / self.slots:.0%} of one device's slots at step {step} "
                f"({self.occupied} of {self.slots}: {self.key} = {self.value:g}); a checkpoint is written now: "
                f"should a later chunk find no slot for some, restart from it with a larger {self.key}")


def loss(lost: Sequence[int], what: str, exchange: tuple[str, float], capacity: tuple[str, float], far: str
         ) -> Loss | None:
    """The :class:`Loss` of a state's ``lost`` counts (:data:`LOST`, read on the host) for particles ``what``
    (e.g. "particles of species tracers"), whose send buffers and slots are set by the ``(key, value)`` pairs
    ``exchange`` and ``capacity``, and ``far`` saying what a particle beyond a step's reach did and what to
    change; None when none was lost."""
    over, no_room, beyond, since = (int(v) for v in stored_lost(np.asarray(lost)))
    if over:
        reason = (f"{over} {what} did not fit a device's send buffer in the hand-over to a neighbouring device: "
                  f"raise {exchange[0]} (now {exchange[1]:g} of a device's slots)")
    elif no_room:
        reason = (f"{no_room} {what} found no free slot on the device whose block holds them: raise {capacity[0]} "
                  f"(now {capacity[1]:g} times the mean per device)")
    elif beyond:
        reason = f"{beyond} {what} {far}"
    else:
        return None
    return Loss(reason, since)
