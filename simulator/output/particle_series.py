"""Reading a run's particle snapshots (plain h5py, no JAX): each species along time, a
:class:`ParticleSeries` (what ``load_run(RUN).particles`` holds), read by snapshot as ``series[-1]``, a
:class:`ParticleSnapshot`. The files, their datasets and how they are written: :mod:`simulator.output.particles`.

    cdm = simulator.load_run("outputs/cold").particles["cdm"]
    len(cdm), cdm.position.shape          # T snapshots; (T, N, 3), axis 1 the particles by identity
    last = cdm[-1]                        # the last snapshot: last.step, last.time, last.redshift, last.path
    last.position, last.velocity          # (N, 3), row i particle i of the species (last.ids)
    for snap in cdm: ...                  # oldest first, as run.snapshots
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simulator.errors import counted, reading
from simulator.output import hdf5, segments
from simulator.output.netcdf import clocks_of

DIR = "particles"


@dataclass(frozen=True)
class ParticleSnapshot:
    """One species at one particle snapshot: ``species``, ``step``, ``time`` (the run time, as a field
    snapshot's :class:`~simulator.output.snapshots.SnapshotRef`), ``path`` its index file (``particles/sNNNNNNNN.h5``;
    None for a series built in memory); ``position`` (N, 3) wrapped into [0, L), ``unwrapped`` (N, 3), ``velocity``
    (N, 3), row i the species' particle i (``ids``); ``clocks`` a cosmological run's ``a`` and ``redshift`` at
    that snapshot ({} for another run)."""

    species: str
    step: int
    time: float
    position: np.ndarray
    unwrapped: np.ndarray
    velocity: np.ndarray
    clocks: dict[str, float] = field(default_factory=dict)
    path: Path | None = None

    @property
    def ids(self) -> np.ndarray:
        """(N,) int64: each row's particle, its index within the species (the same row in every snapshot)."""
        return np.arange(len(self.position), dtype=np.int64)

    @property
    def redshift(self) -> float | None:
        """The snapshot's redshift in a cosmological run; None in another."""
        return self.clocks.get("redshift")

    def __repr__(self) -> str:
        """One line: ``ParticleSnapshot(cdm: 32768 particles, step 80, t = 3.91202, z = 0)``."""
        z = f", z = {self.redshift:.6g}" if self.redshift is not None else ""
        return (f"ParticleSnapshot({self.species}: {counted(len(self.position), 'particle')}, step {self.step}, "
                f"t = {self.time:.6g}{z})")


@dataclass(frozen=True)
class ParticleSeries:
    """One species through the particle snapshots that hold it, oldest first: ``step``, ``time`` (T,);
    ``position`` (T, N, 3) wrapped into [0, L), ``unwrapped`` (T, N, 3) the continuous positions,
    ``velocity`` (T, N, 3) (see :mod:`simulator.output.particles`), in the run's precision; axis 1 is the species'
    particles by identity (particle i of the species at index i, whichever process wrote it; the
    trajectories hold the first ones); ``clocks`` the other clocks of those snapshots, each (T,): a cosmological
    run's ``a`` and ``redshift`` ({} for another run: :func:`simulator.output.netcdf.clocks_of`); ``paths`` the
    snapshots' index files (empty for a series built in memory).

    Read by snapshot as ``run.snapshots`` is: ``len(series)`` snapshots, ``series[i]`` (negative from the
    end) a :class:`ParticleSnapshot`, ``series[i:j]`` a series of those, ``for snap in series`` oldest first."""

    species: str
    step: np.ndarray
    time: np.ndarray
    position: np.ndarray
    unwrapped: np.ndarray
    velocity: np.ndarray
    clocks: dict[str, np.ndarray] = field(default_factory=dict)
    paths: tuple[Path, ...] = ()

    def __len__(self) -> int:
        """The number of snapshots."""
        return len(self.time)

    def __getitem__(self, index: int | slice) -> ParticleSnapshot | ParticleSeries:
        """Snapshot ``index`` (an integer, negative from the end) as a :class:`ParticleSnapshot`, or the
        snapshots of a slice as a series; IndexError naming the count for an index past it, TypeError for
        another key."""
        if isinstance(index, slice):
            rows = range(len(self))[index]
            return ParticleSeries(self.species, self.step[index], self.time[index], self.position[index],
                                  self.unwrapped[index], self.velocity[index],
                                  {k: v[index] for k, v in self.clocks.items()},
                                  tuple(self.paths[i] for i in rows) if self.paths else ())
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(f"a particle series is indexed by snapshot, an integer or a slice, not "
                            f"{type(index).__name__} {index!r}; its arrays are attributes: .position, .velocity, "
                            f".time") from None
        if not -len(self) <= i < len(self):
            raise IndexError(f"snapshot {i} of {self.species}'s {counted(len(self), 'particle snapshot')}")
        return ParticleSnapshot(self.species, int(self.step[i]), float(self.time[i]), self.position[i],
                                self.unwrapped[i], self.velocity[i], {k: float(v[i]) for k, v in self.clocks.items()},
                                self.paths[i] if self.paths else None)

    def __iter__(self) -> Iterator[ParticleSnapshot]:
        """The snapshots, oldest first."""
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        """One line, as a run's: ``ParticleSeries(tracers: 64 particles, 2 snapshots, t 0 .. 2)``, not every array
        (a notebook printing ``run.particles`` printed three arrays of every snapshot)."""
        times = f", t {self.time[0]:.6g} .. {self.time[-1]:.6g}" if len(self.time) else ""
        return (f"ParticleSeries({self.species}: {counted(self.position.shape[1], 'particle')}, "
                f"{counted(len(self.time), 'snapshot')}{times})")


def snapshot_files(run_dir: Path) -> list[Path]:
    """The particle snapshot indexes of a run, oldest first, those a later segment superseded left out
    (:func:`simulator.output.segments.superseded`)."""
    return segments.current(run_dir, sorted((run_dir / DIR).glob("s*.h5")))


def read_series(run_dir: Path) -> dict[str, ParticleSeries]:
    """Every species of the particle snapshots of ``run_dir`` along time, by name (a species a restart
    added or dropped over the snapshots that hold it; those a later segment superseded left out: see
    :func:`snapshot_files`); {} without particle snapshots. DamagedFileError naming the index of a damaged
    snapshot (its shard file missing, cut short, of another write: the reason says which), or of one that lacks
    particles of a species (its identities not each of 0 .. N-1 once: written while particles were lost, by a
    version that did not refuse it), and what to do."""
    found: dict[str, list[tuple[int, float, dict[str, np.ndarray], dict, Path]]] = {}
    for index in snapshot_files(run_dir):
        with reading(index):  # whatever its index or shards raise, named as the other files of a run are
            with hdf5.IndexedFile(index) as f:
                attrs, species, ids = f.attrs, f.read("species"), f.read("id")
                data = {name: f.read(name) for name in ("position", "unwrapped", "velocity")}
            offset = 0
            for s, name in enumerate(attrs["species_names"]):
                mine = np.flatnonzero(species == s)
                mine = mine[np.argsort(ids[mine], kind="stable")]  # rows follow the processes that wrote them
                count = int(attrs["counts"][s]) if "counts" in attrs else len(mine)
                if len(mine) != count or not np.array_equal(ids[mine], offset + np.arange(count)):
                    raise hdf5.IncompleteOutputError(
                        f"species {name} lacks particles (its {len(mine)} rows are not the identities "
                        f"{offset} .. {offset + count - 1}, each once): written while particles were lost")
                offset += count
                found.setdefault(name, []).append((attrs["step"], attrs["time"],
                                                   {k: v[mine] for k, v in data.items()}, attrs, index))
    return {name: ParticleSeries(name, np.array([r[0] for r in got], np.int64), np.array([r[1] for r in got], float),
                                 *(np.stack([r[2][k] for r in got]) for k in ("position", "unwrapped", "velocity")),
                                 clocks_of([r[3] for r in got]), tuple(r[4] for r in got))
            for name, got in found.items()}
