"""The particles of a state read from a file (a restart, or ``initial.name: file``): the species the source's
checkpoint holds, read whatever the grid (particle arrays do not depend on it), laid out for this run.
"""

from __future__ import annotations

from typing import Any

import jax

from simulator.particles import owned as owning
from simulator.particles.flow import WithParticles, position_key, velocity_key


def from_source(eq: WithParticles, flow_state: Any, source: Any) -> dict[str, Any]:
    """The state of a file source (:class:`simulator.output.sources.Source`) on this run's grid:
    ``flow_state`` (already remapped onto it), and the particles the source's checkpoint holds (particle
    arrays do not depend on the grid: a restart at another resolution keeps them exactly); a species the
    source lacks (a snapshot, or a run without it) starts at its configured placement. A species kept per device
    (``distribution: owned``) takes the stored rows by identity whatever their layout, and so does a replicated
    one stored per device (:func:`simulator.particles.owned.replicated`), as a restart lays them out."""
    from simulator.errors import ConfigError
    from simulator.output import hdf5

    ckpt = getattr(source, "checkpoint", None)
    if ckpt is None:
        return eq.attach(flow_state)
    sharding = eq.fft.replicated_sharding()
    stored: dict[str, jax.Array] = {}
    laid: dict[str, dict[str, jax.Array]] = {}
    with hdf5.IndexedFile(ckpt.index) as snap:
        for i, s in enumerate(eq.species):
            datasets = {k: snap.file[k] for k in owning.keys(s.name).values() if k in snap.fields}
            if s.owned:  # whatever the source's layout: each process its devices' rows by identity, laid out
                rows = owning.counted_rows(eq.fft, s, i, datasets, f"the checkpoint {ckpt.index}")
                if rows is not None:
                    laid[s.name] = owning.lay_out(eq.fft, eq.box, eq.dtype, s, rows)
                continue
            if owning.keys(s.name)["live"] in snap.fields:  # stored per device: every row by identity, replicated
                stored.update(owning.replicated(eq.fft, s, i, datasets, eq.dtype, f"the checkpoint {ckpt.index}")
                              or {})
                continue
            keys = [position_key(s.name)] + ([velocity_key(s.name)] if s.inertial else [])
            for key in keys:
                if key not in snap.fields:
                    continue
                shape = tuple(snap.file[key].shape)
                if shape != (s.count, 3):
                    raise ConfigError(f"particles[{i}].count", s.count, f"the checkpoint {ckpt.index} holds {shape[0]} "
                                      f"particles of species {s.name!r}: give that count", "differs")
                stored[key] = hdf5.read_into(snap, key, shape, sharding, (0, 1, 2), eq.dtype)
    start = {s.name: laid.get(s.name, stored.get(position_key(s.name), eq.start[s.name])) for s in eq.species}
    state = eq.attach(flow_state, start)
    for s in eq.species:
        if s.owned and velocity_key(s.name) in laid.get(s.name, {}):
            state[velocity_key(s.name)] = laid[s.name][velocity_key(s.name)]
        if s.inertial and velocity_key(s.name) in stored and position_key(s.name) in stored:
            state[velocity_key(s.name)] = stored[velocity_key(s.name)]
    return state
