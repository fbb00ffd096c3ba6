"""Particle outputs: snapshots of every particle (per-process shards, an index, XDMF point clouds); the
trajectory file of a subset at a finer cadence is :mod:`simulator.output.trajectories`.

Layout under the run directory::

    particles/s00000120/p0000.h5 ...  each process's particles (consecutive rows of the index)
    particles/s00000120.h5            the index: virtual datasets id, species, position, unwrapped, velocity
    particles/s00000120.xdmf          this snapshot as a ParaView/VisIt point cloud (Polyvertex)
    particles/series.xdmf             every particle snapshot so far, a temporal collection
    particles/trajectories.h5         (output.trajectories) the first particles of each species, finer in time
    particles/aside/                  trajectory files a restart set aside (:mod:`simulator.output.rows`)

Particle snapshots are written with the field snapshots (``output.snapshots``: the same moments), so
opening ``snapshots/series.xdmf`` and ``particles/series.xdmf`` together shows the points on top of the
field under one time slider. The species are those of the state (:meth:`simulator.equations.base.Equation.
particles`): the ``particles`` section's, then the equation's own (the cold particles ``cdm`` of a mixed
``fdm_cosmo`` or ``schrodinger_poisson`` run). Each process writes its own rows (:func:`local_shares`): of
replicated species (flow particles) an equal slice, rows [r N / P, (r + 1) N / P) of their N rows for process r of P; of
species owned by devices (the cold particles) the occupied slots of its devices, a count that changes as particles
migrate. The counts are all-gathered (:func:`write_particles`) and process 0 maps the shards, process after process,
into one virtual dataset per quantity. Within a process, rows are species after species in config order.
The species are sampled from the state by the kind's device program ``particles`` (:func:`particles`).

Datasets: ``id`` the particle's identity, its species' offset (the particle counts of the species before
it) + its index within the species (a flow species' row in the state; the cold particles' lattice index),
the same in every snapshot wherever the particle moved, so :func:`read_series` orders each species by it;
``species`` the species' index in the attribute ``species_names`` (``counts``: each one's particle count).
A snapshot holds every particle of every species, each once: a species missing some (particles kept per
device that were lost) is never written (:func:`write_particles` refuses it; the run stops before, naming the
setting), and a snapshot whose identities are not each species' 0 .. N-1 is read as damaged.
``position`` is wrapped into [0, L) (what ParaView draws inside the box). ``unwrapped`` is the position as
the state holds it: the continuous trajectory of flow particles, but equal to ``position`` for the cold
particles (kept wrapped: their owner is found from their cell). ``velocity``: v for inertial species, u(x)
for tracers, the cold particles' peculiar velocity a dx/dt = p / a (code velocity (Mpc/h) H0 = 100 km/s;
p = a^2 dx/dt the comoving momentum the state holds). Lengths in the unit of ``grid.box``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.fft import plane
from simulator.output import hdf5
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Writer, WriterContext
from simulator.output.netcdf import clock_coordinates, particle_group, variable

# the reading side (:mod:`.particle_series`), importable from here as before
from simulator.output.particle_series import DIR, ParticleSeries, read_series, snapshot_files  # noqa: F401
from simulator.output.xdmf import NUMBER_TYPES, SeriesWriter, update_series, write_xdmf

QUANTITIES = ("id", "species", "position", "unwrapped", "velocity")


def rows(n: int, rank: int, processes: int) -> tuple[int, int]:
    """The rows [start, stop) of ``n`` that process ``rank`` of ``processes`` writes."""
    return rank * n // processes, (rank + 1) * n // processes


def species_sizes(cfg: Any) -> dict[str, int]:
    """The particle species a run of ``cfg`` carries, name -> particle count (no JAX): the ``particles``
    section's, then the equation's own (:meth:`~simulator.equations.spec.EquationParams.particle_species`)."""
    return {**{s.name: s.count for s in cfg.particles}, **cfg.physics.particle_species()}


@dataclass(frozen=True)
class Share:
    """Particles of one species, host arrays: ``ident`` (n,) their indices in the species (0 .. N-1),
    ``position`` (n, 3) as the state holds them (unwrapped for flow particles), ``velocity`` (n, 3)."""

    ident: np.ndarray
    position: np.ndarray
    velocity: np.ndarray


def local_shares(species: Sequence[str], arrays: Mapping[str, Any]) -> dict[str, Share]:
    """The particles of each of ``species`` (:class:`~simulator.equations.base.ParticleArrays` by name) that
    this process writes, in that order. Replicated species together (their rows in the index are species
    after species, as in the state): process r of P takes rows rows(N, r, P) of their N rows, so each
    process writes an equal share. Owned species: the occupied slots (``live``) of the blocks that this
    process's devices hold, each block once (its replica 0)."""
    import jax

    replicated = [s for s in species if arrays[s].ident is None]
    total = sum(arrays[s].position.shape[0] for s in replicated)
    start, stop = rows(total, jax.process_index(), jax.process_count())
    out, offset = {}, 0
    for s in species:
        a = arrays[s]
        if a.ident is None:  # this process's first copy is the whole of each
            n = a.position.shape[0]
            lo, hi = min(max(start - offset, 0), n), min(max(stop - offset, 0), n)
            offset += n
            out[s] = Share(np.arange(lo, hi, dtype=np.int64), np.asarray(a.position.addressable_data(0))[lo:hi],
                           np.asarray(a.velocity.addressable_data(0))[lo:hi])
        else:
            live = _local(a.live) > 0
            out[s] = Share(_local(a.ident)[live].astype(np.int64), _local(a.position)[live], _local(a.velocity)[live])
    return out


def _local(a: Any) -> np.ndarray:
    """The blocks of the row-sharded array ``a`` that this process's devices hold, each once, in row order."""
    blocks = {s.index[0].start or 0: s.data for s in a.addressable_shards if s.replica_id == 0}
    if not blocks:
        return np.zeros((0, *a.shape[1:]), a.dtype)
    return np.concatenate([np.asarray(blocks[k]) for k in sorted(blocks)])


def gather_rows(species: Sequence[str], shares: Mapping[str, Share], offsets: Sequence[int], box: Sequence[float]
                ) -> dict[str, np.ndarray]:
    """The rows of each quantity of ``shares`` (host arrays), species after species: ``id`` = the species'
    offset (``offsets``, in the order of ``species``) + its particle's index, ``position`` wrapped into
    [0, L), ``unwrapped`` as stored."""
    unwrapped = np.concatenate([np.asarray(shares[s].position) for s in species])
    counts = [len(shares[s].ident) for s in species]
    return {"id": np.concatenate([o + np.asarray(shares[s].ident, np.int64) for o, s in zip(offsets, species)]),
            "species": np.repeat(np.arange(len(species), dtype=np.int32), counts),
            "position": wrapped(unwrapped, box),
            "unwrapped": unwrapped,
            "velocity": np.concatenate([np.asarray(shares[s].velocity) for s in species])}


def wrapped(x: np.ndarray, box: Sequence[float]) -> np.ndarray:
    """Positions ``x`` ``(..., 3)`` folded into [0, L) per axis, in x's precision. x mod L is L - d for x a
    distance d below 0 (or below any multiple of L), which rounds to L itself when d is under half the spacing of
    floats at L (3.7e-9 below a face of a 2 pi box in float32): that point is at 0, as its cell says."""
    length = np.asarray(box, x.dtype)
    folded = np.mod(x, length)
    return np.where(folded < length, folded, np.zeros((), x.dtype))


def _row_counts(mine: np.ndarray) -> np.ndarray:
    """Every process's ``mine`` (its row count per species), ``(processes, species)``: one small all-gather
    (none in a single-process run)."""
    import jax

    if jax.process_count() == 1:
        return mine[None]
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(mine)).reshape(jax.process_count(), len(mine))


def write_particles(stem: Path, shares: Mapping[str, Share], sizes: Mapping[str, int], box: Sequence[float],
                    attrs: Mapping[str, Any], time: float, units: Mapping[str, str] | None = None) -> Path:
    """Write one particle snapshot ``stem`` (collective: every process passes its own ``shares``, by species
    name in config order, of the species' particle counts ``sizes``): this process's rows, and on process 0 the
    index and the XDMF files. Returns the index path. A species whose rows on all processes are not its count
    (particles were lost) is an OutputWriteError naming it, and nothing is written.

    The processes' row counts are all-gathered before anything is written, rather than read back from the
    shard files by process 0: every process then knows its rows of the index (kept in its file's ``start``
    and ``stop``) and the species' totals (the ``id`` offsets), and nothing depends on when one node sees
    another's freshly renamed file on a shared filesystem.

    ``units`` names the run's units as a field snapshot's do (``length``, ``time``, ``velocity``; code units where
    not named): the file's ``units`` attribute (JSON) and each position's and velocity's ``units``."""
    import jax

    rank, processes = jax.process_index(), jax.process_count()
    species = list(shares)
    counts = _row_counts(np.array([len(shares[s].ident) for s in species], np.int64))
    totals = [int(c) for c in counts.sum(axis=0)]
    for name, held in zip(species, totals, strict=True):  # the same on every process: the counts are gathered
        if held != sizes[name]:
            raise hdf5.OutputWriteError(f"particle snapshot {stem} not written: species {name} holds {held} of its "
                                        f"{sizes[name]} particles (the others were lost)")
    data = gather_rows(species, shares, np.cumsum([0, *totals[:-1]]), box)
    bounds = np.cumsum([0, *counts.sum(axis=1)])
    n, start, stop = int(bounds[-1]), int(bounds[rank]), int(bounds[rank + 1])
    units = {**CODE_UNITS, **(units or {})}
    attrs = {**attrs, "time": float(time), "species_names": species, "counts": totals, "units": units}
    try:
        stem.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise hdf5.OutputWriteError(f"creating {stem} failed: {hdf5.describe_os_error(err)}") from err

    def fill(f: h5py.File) -> None:
        for key, value in {**attrs, "process": rank, "processes": processes, "start": start, "stop": stop}.items():
            f.attrs[key] = json.dumps(value) if isinstance(value, (dict, list, tuple)) else value
        for name in QUANTITIES:
            f.create_dataset(name, data=data[name])
        label(f, units)

    hdf5.write_atomically(hdf5.process_file(stem, rank), fill)
    hdf5.barrier(f"write {stem}")
    index = stem.with_suffix(".h5")
    if rank == 0:
        shapes = {k: ((n, *data[k].shape[1:]), data[k].dtype) for k in QUANTITIES}

        def fill_index(f: h5py.File) -> None:
            for key, value in attrs.items():
                f.attrs[key] = json.dumps(value) if isinstance(value, (dict, list, tuple)) else value
            sources = [f"{stem.name}/{hdf5.process_file(stem, r).name}" for r in range(processes)]
            f.attrs["sources"] = json.dumps(sources)
            for name in QUANTITIES:
                shape, dtype = shapes[name]
                layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
                for source, a, b in zip(sources, bounds[:-1], bounds[1:]):
                    if b > a:
                        layout[a:b] = h5py.VirtualSource(source, name, shape=(b - a, *shape[1:]))
                f.create_virtual_dataset(name, layout)
            label(f, units)

        hdf5.write_atomically(index, fill_index)
        hdf5.remove_stale_shards(stem, processes)
        grid = particle_grid(index.name, n, shapes, time, int(attrs["step"]))
        write_xdmf(index, grid)
        update_series(index.parent, grid)
    hdf5.barrier(f"index {stem}")
    return index


def label(f: h5py.File, units: Mapping[str, str]) -> None:
    """Each position's and velocity's ``units`` in ``f`` (a particle snapshot or the trajectory file), from the run's
    ``units`` (:data:`CODE_UNITS` and the equation's)."""
    for name, unit in (("position", units["length"]), ("unwrapped", units["length"]),
                       ("velocity", units.get("velocity", "code units")), ("time", units["time"])):
        if name in f:
            f[name].attrs["units"] = unit


def particle_grid(index: str, count: int, shapes: Mapping[str, tuple[tuple[int, ...], Any]], time: float,
                  step: int) -> ET.Element:
    """The XDMF point cloud of one particle snapshot: Polyvertex topology (a vertex per row) over ``position``,
    ``velocity`` and ``unwrapped`` as vectors, ``id`` and ``species`` as scalars (all node-centred)."""
    grid = ET.Element("Grid", Name=Path(index).stem, GridType="Uniform")
    ET.SubElement(grid, "Time", Value=repr(float(time)))
    ET.SubElement(grid, "Information", Name="step", Value=str(int(step)))
    # one vertex cell per particle, its connectivity the id column (a permutation of the rows 0 .. Np-1: each
    # particle once): without it ParaView's default (Xdmf3) reader makes points but no cells, which it
    # neither draws nor filters
    topology = ET.SubElement(grid, "Topology", TopologyType="Polyvertex", NumberOfElements=str(count),
                             NodesPerElement="1")
    topology.append(_item(index, "id", shapes["id"]))
    geometry = ET.SubElement(grid, "Geometry", GeometryType="XYZ")
    geometry.append(_item(index, "position", shapes["position"]))
    for name in ("velocity", "unwrapped", "id", "species"):
        shape, _ = shapes[name]
        attribute = ET.SubElement(grid, "Attribute", Name=name, AttributeType="Vector" if len(shape) == 2 else "Scalar",
                                  Center="Node")
        attribute.append(_item(index, name, shapes[name]))
    return grid


def _item(index: str, name: str, spec: tuple[tuple[int, ...], Any]) -> ET.Element:
    shape, dtype = spec
    dtype = np.dtype(dtype)
    item = ET.Element("DataItem", Dimensions=" ".join(map(str, shape)), NumberType=NUMBER_TYPES[dtype.kind],
                      Precision=str(dtype.itemsize), Format="HDF")
    item.text = f"{index}:/{name}"
    return item


def read(index: Path) -> dict[str, np.ndarray]:
    """Every quantity of a particle snapshot index, whole (plain h5py; no JAX); IncompleteOutputError
    naming a missing or incomplete shard."""
    with hdf5.IndexedFile(index) as f:
        return {name: f.read(name) for name in QUANTITIES}


class ParticleSnapshotWriter(SeriesWriter):
    """Every particle of the species ``sizes`` (name -> particle count, in config order) on the field snapshots'
    schedule (collective): each process writes its own (:func:`local_shares`, :func:`write_particles`)."""

    name = "particle_snapshots"
    directory = DIR

    def __init__(self, schedule: Schedule, sizes: Mapping[str, int], box: Sequence[float],
                 attrs: Callable[[Moment], dict[str, Any]], log: Callable[[str], None], rank0: bool,
                 units: Mapping[str, str] | None = None):
        super().__init__(rank0)
        self.schedule, self.sizes, self.box = schedule, dict(sizes), box
        self.attrs, self.log, self.units = attrs, log, units

    def write(self, moment: Moment) -> None:
        assert self.run_dir is not None
        mine = local_shares(list(self.sizes), moment.get("particles"))
        index = write_particles(self.run_dir / DIR / f"s{moment.step:08d}", mine, self.sizes, self.box,
                                self.attrs(moment), moment.time, self.units)
        self.log(f"particles {index}")


def particles(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> Mapping[str, Any]:
    """The device program: every species of the state at run time ``t`` (:meth:`simulator.equations.base.
    Equation.particles`; a dict through jit: in sorted order), device arrays by name."""
    return eq.at(t).particles(state, params)


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """Snapshots of every species of the state on the field snapshots' schedule."""
    return [ParticleSnapshotWriter(Schedule.of(cfg.output.section("snapshots")), species_sizes(cfg),
                                   plane.file_lengths(cfg.grid.shape, cfg.grid.box),
                                   ctx.snapshot_attrs, ctx.info, ctx.rank0, cfg.physics.clock().units())]


def export(group: Any, data: Mapping[str, ParticleSeries], units: dict[str, str]) -> None:
    """The ``particles`` group of a netCDF export: a group per species, time, step (time) and, for a cosmological
    run, a and redshift (time) as the root group's snapshots have them; particle (0 .. N-1); component; position
    (wrapped into the box), unwrapped, velocity (time, particle, component), in the run's precision."""
    velocity = units.get("velocity", "code units")  # as the snapshots' velocity field
    for name, p in data.items():
        g = particle_group(group.create_group(name), p.time, np.arange(p.position.shape[1]), units, "snapshot")
        variable(g, "step", ("time",), p.step, long_name="time step number of each snapshot")
        coordinates = " ".join(["step", *clock_coordinates(g, p.clocks)])
        for key, values, what, unit in (("position", p.position, "position wrapped into the box", units["length"]),
                                        ("unwrapped", p.unwrapped, "continuous (unwrapped) position", units["length"]),
                                        ("velocity", p.velocity, "velocity", velocity)):
            variable(g, key, ("time", "particle", "component"), values, units=unit, coordinates=coordinates,
                     long_name=f"{what} of each {name} particle")


#: the output kind (:mod:`simulator.output.kinds`): particle snapshots with the field snapshots
KIND = OutputKind(
    name="particles", doc="particles/: particle snapshots, with the field snapshots",
    active=lambda cfg: bool(species_sizes(cfg)), writers=writers, files=(DIR,), read=read_series, export=export,
    programs=(Program("particles", particles, computes=lambda cfg: cfg.output.section("snapshots").on),))
