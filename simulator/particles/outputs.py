"""The particle outputs of a run (JAX side of the ``particles`` output kind, :mod:`simulator.output.particles`):
the species of the equation's state sampled at a moment, and the writers of its snapshots and trajectories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax

from simulator.equations.base import ParticleArrays
from simulator.output.base import Moment, Schedule, Writer
from simulator.output.particles import ParticleSnapshotWriter, species_sizes
from simulator.output.trajectories import TrajectoryWriter


def particle_writers(cfg: Any, sim: Any, ctx: Any) -> list[Writer]:
    """The particle outputs of a run (the output kind's ``writers``; ``ctx`` a
    :class:`~simulator.output.kinds.WriterContext`): snapshots of every species of the equation's state
    (:meth:`simulator.equations.base.Equation.particles`) on the field snapshots' schedule, and the trajectory
    file of the ``particles`` section's species when ``output.trajectories.every`` is set."""
    sampled = jax.jit(lambda eq, state, p, t: eq.at(t).particles(state, p))
    params = sim.equation.params(cfg.physics)

    def sample(moment: Moment) -> Mapping[str, Any]:
        return sampled(sim.equation, moment.state, params, sim.time_array(moment.time))

    out: list[Writer] = [ParticleSnapshotWriter(Schedule.of(cfg.output.snapshots), species_sizes(cfg), sample,
                                                cfg.grid.box, ctx.snapshot_attrs, ctx.info, ctx.rank0)]
    if cfg.output.trajectories.every:
        rows = {s.name: min(cfg.output.trajectories.count, s.count) for s in cfg.particles}
        recorded = jax.jit(lambda eq, state, p, t: recorded_rows(eq.fft, rows, eq.at(t).particles(state, p)))

        def sample_recorded(moment: Moment) -> Mapping[str, Any]:
            return recorded(sim.equation, moment.state, params, sim.time_array(moment.time))

        schedule = Schedule(every=cfg.output.trajectories.every, start=cfg.output.trajectories.start)
        out.append(TrajectoryWriter(schedule, list(rows),
                                    [s.count for s in cfg.particles], cfg.output.trajectories.count, sample_recorded,
                                    cfg.grid.box, ctx.rank0))
    return out


def recorded_rows(fft: Any, rows: Mapping[str, int], arrays: Mapping[str, ParticleArrays]
                  ) -> dict[str, ParticleArrays]:
    """The particles a trajectory file records, inside compiled code: of each species named in ``rows``, the
    ``rows[name]`` with the lowest identities, replicated ``(rows, 3)`` positions and velocities, row i particle
    i. A replicated species' first rows; an owned species' slots gathered by identity
    (:func:`simulator.fft.owned.gather_identities`: one psum of those rows, never the whole species)."""
    from simulator.fft.owned import gather_identities

    out = {}
    for name, n in rows.items():
        a = arrays[name]
        if a.ident is None:
            out[name] = ParticleArrays(a.position[:n], a.velocity[:n])
        else:
            out[name] = ParticleArrays(*gather_identities(fft, n, a.live, a.ident, a.position, a.velocity))
    return out
