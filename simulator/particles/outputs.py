"""The device program of the trajectory file (JAX side of the ``trajectories`` output kind,
:mod:`simulator.output.trajectories`): the recorded rows of each species, gathered on the devices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.equations.base import ParticleArrays


def trajectories(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, ParticleArrays]:
    """The device program: of each species of the ``particles`` section, the ``output.trajectories.count``
    particles with the lowest identities (:func:`recorded_rows`)."""
    cfg = sim.cfg
    rows = {s.name: min(cfg.output.section("trajectories").count, s.count) for s in cfg.particles}
    return recorded_rows(eq.fft, rows, eq.at(t).particles(state, params))


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
