"""Checkpoints: the exact state, written per process, complete only when a marker says so.

Layout under the run directory::

    checkpoints/c00000120/p0000.h5 ...   each process's blocks of every state array (full precision)
    checkpoints/c00000120.h5             the index (virtual datasets), written by process 0
    checkpoints/c00000120.json           the completion marker, written last (temporary name + rename)

The marker holds step, time, dt, the step and time from which that dt holds (``epoch``), where each
state leaf lives (real space or k-space), the FFT backend and its spectrum kind, and the resolved
config. Every block of the shard files carries HDF5's Fletcher-32 checksum (per chunk), verified by
HDF5 whenever it is read.

A checkpoint counts only when it is intact: its marker is a JSON object whose step, time, dt, epoch,
config and leaf spaces are well formed and agree with its index file (step, time, dt, and array
shapes that fit the config's grid), and its shard files exist, are complete and record its step,
time and writer (the identity of the run segment that wrote it, also in the marker and the index): a
shard or index copied from another checkpoint, another run or another segment of this run is damage,
even with its own checksums intact. Anything else is damage: the checkpoint is skipped, with a warning
naming the file, in favour of the previous one. Damage found only when the data is read (a checksum
mismatch) makes the restart fall back the same way (:func:`damage`, used by the run loop). A checkpoint
a later segment superseded (a restart from an earlier step: :func:`simulator.output.segments.superseded`)
is another trajectory's: a run directory's latest checkpoint is the latest one not superseded, and of
those only the last ``checkpoint.keep`` are kept; pruning leaves the superseded ones in place.

Restoring re-shards on read: each process reads the blocks of its own devices from the index,
whatever device count, process count or backend wrote it. Spectral leaves are stored in canonical
axis order (kx, ky, kz), in the spectral layout of the run that wrote them (the marker's ``spectrum``
names it; the stored shape says it): the half spectrum ``(Nx, Ny, Nz/2)``, the compact one
``(Kx, Ky, Kz)`` (fft.layout) or the full one ``(Nx, Ny, Nz)`` (jaxdecomp). A restart in another layout
reads each mode from the stored mode of the same number, zero where the stored layout holds none (exact,
:func:`simulator.output.resample.exact_map`; block by block, no global array); a full spectrum wanted from
a half or compact one is completed through real space (:mod:`simulator.fft.relayout`). So a run restarts
in any layout, old (half-spectrum) run directories included. Finding checkpoints needs no JAX; writing and
restoring do.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.fft import plane
from simulator.log import get_logger
from simulator.output import hdf5, segments
from simulator.output.base import Moment, Schedule, Writer

DIR = "checkpoints"
#: where a stored leaf lives: real space, k-space, or a particle array (``(Np, 3)``, replicated, stored whole)
PARTICLES = "particles"
SPACES = ("real", "spectral", PARTICLES)


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint found on disk."""

    index: Path
    step: int
    time: float
    dt: float
    meta: dict[str, Any]

    @property
    def epoch(self) -> tuple[int, float]:
        """(step, time) from which the checkpoint's dt holds; (0, 0) for the first format."""
        step, t = self.meta.get("epoch", (0, 0.0))
        return int(step), float(t)

    def spaces(self, count: int) -> list[str]:
        """Where each of the ``count`` stored leaves lives ("spectral" or "real")."""
        if "spaces" in self.meta:
            return list(self.meta["spaces"])
        return ["spectral" if self.meta.get("spectral") else "real"] * count  # the first format: one for all


def _name(step: int) -> str:
    return f"c{step:08d}"


def leaf_names(state: Any) -> list[str]:
    """Dataset names of the state's arrays: the pytree path (``psi``), or ``state`` for a bare array."""
    import jax

    paths = jax.tree_util.tree_flatten_with_path(state)[0]
    return [jax.tree_util.keystr(p).strip(".[]'\"") or "state" for p, _ in paths]


def write(run_dir: Path, state: Any, *, step: int, time: float, dt: float, epoch: tuple[int, float],
          spaces: Sequence[str], perm: tuple[int, int, int], full_spectrum: bool, meta: dict[str, Any],
          writer: str, keep: int) -> Path:
    """Write a checkpoint of ``state`` (collective). ``writer``: the identity of the run segment
    writing it, the same on every process (recorded in every file). Returns the marker path."""
    import jax

    root = run_dir / DIR
    stem = root / _name(step)
    leaves = jax.tree.leaves(state)
    fields = {name: hdf5.Field(leaf, perm if space == "spectral" else (0, 1, 2))
              for name, leaf, space in zip(leaf_names(state), leaves, spaces, strict=True)}
    index = hdf5.write(stem, fields, {"step": step, "time": time, "dt": dt, "writer": writer}, checksum=True)
    marker = stem.with_suffix(".json")
    if jax.process_index() == 0:
        info = {"step": step, "time": time, "dt": dt, "epoch": list(epoch), "index": index.name,
                "spaces": list(spaces), "names": list(fields), "full_spectrum": full_spectrum,
                "processes": jax.process_count(), "checksums": "fletcher32", "schema_version": hdf5.SCHEMA_VERSION,
                "writer": writer, **meta}
        tmp = marker.with_name(marker.name + ".tmp")
        try:
            tmp.write_text(json.dumps(info, indent=1))
            os.replace(tmp, marker)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise hdf5.OutputWriteError(f"writing {marker} failed: {hdf5.describe_os_error(err)}") from err
        _prune(root, keep)
    hdf5.barrier(f"checkpoint {step}")
    return marker


def _prune(root: Path, keep: int) -> None:
    """Delete all but the last ``keep`` checkpoints of the run's current trajectory (superseded ones: left alone)."""
    complete = sorted(markers(root.parent, current=True))
    for marker in complete[:-keep] if keep > 0 else []:
        marker.unlink(missing_ok=True)
        marker.with_suffix(".h5").unlink(missing_ok=True)
        shutil.rmtree(marker.with_suffix(""), ignore_errors=True)


def markers(path: Path, current: bool = False) -> list[Path]:
    """The checkpoint markers under run directory ``path``, latest first (intact or not); with ``current``, only
    those no later segment superseded (:func:`simulator.output.segments.current`)."""
    try:
        found = sorted((path / DIR).glob("c*.json"), reverse=True)
    except OSError:
        return []
    return segments.current(path, found) if current else found


def find(path: Path, before: int | None = None, warn: bool = True) -> Checkpoint | None:
    """The latest intact checkpoint under run directory ``path`` not superseded (or the marker/index ``path``
    itself, whatever it is: its callers refuse one superseded), with a step below ``before`` when given; None if
    there is none (:func:`first_intact`)."""
    found = [path.with_suffix(".json")] if path.is_file() else markers(path, current=True)
    return first_intact([m for m in found if before is None or (step := segments.step_of(m)) is None or step < before],
                        warn)


def first_intact(candidates: Sequence[Path], warn: bool = True) -> Checkpoint | None:
    """The checkpoint of the first intact marker of ``candidates``; the damaged or incomplete ones are passed over,
    with a warning naming them unless ``warn`` is False (:func:`why_damaged` says why)."""
    for marker in candidates:
        problem = why_damaged(marker)
        if isinstance(problem, Checkpoint):
            return problem
        if warn:
            get_logger().warning("skipping checkpoint %s: %s", marker, problem)
    return None


def why_damaged(marker: Path) -> Checkpoint | str:
    """The checkpoint of ``marker`` if it is intact, else what is wrong with it (one line)."""
    try:
        return load(marker)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, hdf5.IncompleteOutputError) as err:
        return str(err).splitlines()[0] if str(err) else type(err).__name__


def _number(info: dict[str, Any], key: str, kind: type) -> Any:
    value = info.get(key)
    ok = isinstance(value, int) if kind is int else isinstance(value, (int, float)) and math.isfinite(value)
    if isinstance(value, bool) or not ok:
        raise ValueError(f"its {key} is {value!r}, not a {'whole' if kind is int else 'finite'} number")
    return value


def load(marker: Path) -> Checkpoint:
    """The checkpoint of ``marker``, checked: ValueError (or IncompleteOutputError) says what is damaged."""
    info = json.loads(marker.read_text())
    if not isinstance(info, dict):
        raise ValueError("the marker is not a JSON object")
    step, t, dt = _number(info, "step", int), float(_number(info, "time", float)), float(_number(info, "dt", float))
    if step < 0 or dt <= 0 or t < 0:
        raise ValueError(f"its step {step}, time {t} or dt {dt} is out of range")
    if marker.stem != _name(step):
        raise ValueError(f"its step {step} is not the one its name says")
    epoch = info.get("epoch", [0, 0.0])
    if (not isinstance(epoch, list) or len(epoch) != 2 or isinstance(epoch[0], bool) or not isinstance(epoch[0], int)
            or not isinstance(epoch[1], (int, float)) or not 0 <= epoch[0] <= step or not 0 <= epoch[1] <= t):
        raise ValueError(f"its epoch {epoch!r} is not a [step, time] at or before the checkpoint")
    config = info.get("config")
    grid = config.get("grid") if isinstance(config, dict) else None
    shape = grid.get("shape") if isinstance(grid, dict) else None
    if (not isinstance(shape, list) or len(shape) not in (2, 3) or not all(isinstance(n, int) and n > 0 for n in shape)
            or not isinstance(config.get("physics"), dict) or not isinstance(config["physics"].get("name"), str)):
        raise ValueError("it holds no run config with a grid and physics")
    spaces = info.get("spaces")
    if spaces is not None and (not isinstance(spaces, list) or not all(s in SPACES for s in spaces)):
        raise ValueError(f"its spaces {spaces!r} are not a list of {'/'.join(map(repr, SPACES))}")
    ckpt = Checkpoint(marker.with_suffix(".h5"), step, t, dt, info)
    with hdf5.IndexedFile(ckpt.index) as snap:
        attrs = snap.attrs
        writer = info.get("writer")  # checkpoints written before writers were recorded have none
        for key, value in (("step", step), ("time", t), ("dt", dt), ("writer", writer)):
            if (value is not None or key != "writer") and attrs.get(key) != value:
                raise ValueError(f"its {key} {value!r} differs from {attrs.get(key)!r} in {ckpt.index}")
        names = snap.fields
        stored = ckpt.spaces(len(names))
        if len(stored) != len(names):
            raise ValueError(f"it lists {len(stored)} arrays, {ckpt.index} holds {len(names)}")
        listed = info.get("names")
        if isinstance(listed, list) and sorted(map(str, listed)) == sorted(names):
            # the spaces are listed in the state's order, the file's arrays may come in another (by name)
            names = [str(n) for n in listed]
        for name, space in zip(names, stored, strict=True):
            have = snap.file[name].shape
            if space == PARTICLES:  # stored whole, any shape (positions (Np, 3), masks, counters)
                continue
            fits = _spectrum_fits if space == "spectral" else lambda sizes, grid: list(sizes) == grid
            if len(have) < 3 or not fits(have[-3:], list(plane.cells(shape))):  # a plane's arrays: its box's
                raise ValueError(f"array {name!r} of {ckpt.index} has shape {list(have)}, not one of grid {shape}")
        for rel in json.loads(snap.file.attrs["sources"]):
            _check_shard(ckpt.index.parent / rel, step, t)
    return ckpt


def _spectrum_fits(sizes: Sequence[int], grid: list[int]) -> bool:
    """Whether canonical spatial sizes are those of a spectrum of ``grid``: the full one (the grid's), or a
    half or compact one, which holds every mode the 2/3 rule keeps and at most the half spectrum's."""
    if list(sizes) == grid:
        return True
    from simulator.fft.layouts import kept_modes

    kept = kept_modes(grid)
    half = [grid[0], grid[1], grid[2] // 2]
    return all(lo <= k <= hi for k, lo, hi in zip(sizes, kept, half, strict=True))


def _check_shard(shard: Path, step: int, t: float) -> None:
    """A shard file records the step and time of its checkpoint: one copied from another checkpoint (its own
    checksums intact) is damage. (Its writer is the index's, which :class:`~simulator.output.hdf5.IndexedFile`
    checks, and the index's the marker's.)"""
    with h5py.File(shard, "r") as f:
        for key, value in (("step", step), ("time", t)):
            have = f.attrs.get(key)
            have = have.item() if hasattr(have, "item") else have
            if have is None:  # shards of old formats record less
                continue
            if have != value:
                raise ValueError(f"shard file {shard} holds {key} {have!r}, not the checkpoint's {value!r}")


def damage(ckpt: Checkpoint) -> str | None:
    """Where ``ckpt``'s data fails its checksum or cannot be read (reading every block of every shard
    file; the slow check, run only once a restore has failed), or None if all of it reads back."""
    with hdf5.IndexedFile(ckpt.index) as snap:
        sources = [ckpt.index.parent / rel for rel in json.loads(snap.file.attrs["sources"])]
    for source in sources:
        problem = _unreadable(source)
        if problem:
            return problem
    return None


def _unreadable(path: Path) -> str | None:
    """The first block of shard file ``path`` that fails its checksum or cannot be read, as a
    message naming the file, or None when all of it reads back."""
    try:
        with h5py.File(path, "r") as f:
            names: list[str] = []
            f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
            for name in names:
                try:
                    f[name][()]
                except (OSError, RuntimeError) as err:
                    return (f"{path}: {name} cannot be read back ({hdf5.describe_os_error(err)}; "
                            "a checksum mismatch is damage)")
    except (OSError, RuntimeError) as err:
        return f"{path} cannot be opened ({hdf5.describe_os_error(err)})"
    return None


def real_blocks(fft: Any) -> list[int]:
    """How ``fft`` divides real space among devices: the device count along x, y and z (what decides which
    device owns a particle kept per device; recorded in the marker as ``real_blocks``)."""
    sizes = dict(zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True))
    names = [() if entry is None else (entry,) if isinstance(entry, str) else tuple(entry) for entry in fft.real_spec()]
    return [math.prod(int(sizes[n]) for n in axis) for axis in names]


def restore(ckpt: Checkpoint, template: Any, fft: Any, spaces: Sequence[str],
            reslot: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None) -> Any:
    """The checkpointed state laid out like ``template`` (the new run's initial state) on ``fft``'s mesh;
    ``spaces`` says where each of its leaves lives. Particle arrays kept per device (slots) that were written
    on another device count are laid out again by ``reslot`` (the equation's :meth:`~simulator.equations.
    base.Equation.reslot`: every particle dataset of the file, by name -> those it lays out); where it cannot,
    that is a ConfigError."""
    import jax

    leaves, treedef = jax.tree.flatten(template)
    names = leaf_names(template)
    by_name: dict[str, str] = {}
    if isinstance(ckpt.meta.get("names"), list) and len(ckpt.meta["names"]) == len(ckpt.meta.get("spaces", ())):
        # by name: a template may hold part of what was stored (the flow of a run with particles)
        by_name = dict(zip(ckpt.meta["names"], ckpt.meta["spaces"], strict=True))
        stored_spaces = [by_name.get(name, space) for name, space in zip(names, spaces, strict=True)]
    else:
        stored_spaces = ckpt.spaces(len(leaves))
    out: list[Any] = []
    with hdf5.IndexedFile(ckpt.index) as snap:
        wanted = [n for n, space in zip(names, spaces, strict=True) if space == PARTICLES]
        particles = [n for n in wanted if n in snap.fields]
        # every particle array the file holds (the marker names them; an older marker: those this run keeps)
        held = [n for n in snap.fields if by_name.get(n) == PARTICLES] if by_name else particles
        # a species (the arrays sharing a name up to its last dot) stored with slots' occupancy (``<species>.live``)
        # where this run keeps replicated rows, or the other way round: its distribution changed
        group = {n: n.rpartition(".")[0] for n in (*wanted, *held)}
        changed = {g for g in set(group.values()) if any(group[n] == g for n in held)
                   and (f"{g}.live" in wanted) != (f"{g}.live" in held)}
        # arrays kept per device (not replicated) written with real space divided otherwise; a marker without
        # real_blocks (written before they were recorded) is judged by the shapes alone
        moved = ckpt.meta.get("real_blocks", real_blocks(fft)) != real_blocks(fft)
        foreign = [n for n, leaf in zip(names, leaves, strict=True) if n in wanted and (
            group[n] in changed or tuple(snap.file[n].shape) != tuple(leaf.shape)
            or (moved and not leaf.sharding.is_fully_replicated))]
        # written on other devices, or in the other distribution: laid out again from the datasets, read in chunks
        laid = reslot({n: snap.file[n] for n in held}) if foreign and reslot is not None else None
        for name, leaf, space, stored in zip(names, leaves, spaces, stored_spaces, strict=True):
            if space == PARTICLES and laid is not None and name in laid:
                out.append(laid[name])
                continue
            if name not in snap.fields and name not in foreign:
                raise hdf5.IncompleteOutputError(f"{ckpt.index} has no array {name!r} (holds {', '.join(snap.fields)})")
            if space != stored:
                raise hdf5.IncompleteOutputError(f"{ckpt.index}: array {name!r} is stored in {stored} space, this "
                                                 f"run keeps it in {space} space")
            if space == PARTICLES:
                if name in foreign:
                    # not damage: particles kept per device (slots) were written on other devices
                    from simulator.errors import ConfigError

                    holds = (f"holds {name!r} of shape {list(snap.file[name].shape)}" if name in snap.fields
                             else f"has no {name!r}")
                    raise ConfigError("checkpoint", str(ckpt.index.with_suffix(".json")), "restart on the devices "
                                      "and backend it was written on (this run's particles cannot be laid out "
                                      "again)", f"{holds} laid out for other devices, this run needs "
                                      f"{list(leaf.shape)}")
                out.append(hdf5.read_into(snap, name, leaf.shape, leaf.sharding, (0, 1, 2), leaf.dtype))
            elif space == "spectral":
                out.append(_read_spectrum(ckpt, snap, name, leaf, fft))
            else:
                _check_shape(ckpt, name, snap.shape(name), leaf.shape)
                out.append(hdf5.read_into(snap, name, leaf.shape, leaf.sharding, (0, 1, 2), leaf.dtype))
    return jax.tree.unflatten(treedef, out)


def _read_spectrum(ckpt: Checkpoint, snap: hdf5.IndexedFile, name: str, leaf: Any, fft: Any) -> Any:
    """Stored spectrum ``name`` in ``fft``'s layout, like ``leaf``. The stored one is a half ``(Nx, Ny, Nz/2)``,
    compact ``(Kx, Ky, Kz)`` or full ``(Nx, Ny, Nz)`` spectrum (canonical axes; its z size says which:
    only a full one has Nz), whichever layout wrote it; another layout is read mode by mode (exact:
    :func:`simulator.output.resample.exact_map`), a full one from a half or compact one through real space
    (:func:`simulator.fft.relayout.full_from_half`)."""
    from simulator.fft.relayout import full_from_half
    from simulator.output.resample import exact_map, read_mapped, spectrum_modes

    stored = snap.shape(name)
    nz = fft.shape[2]

    def read(shape: tuple[int, ...], sharding: Any, perm: Sequence[int], full: bool = False) -> Any:
        """``shape`` in axis order ``perm``, a full spectrum (``full``) or a real-to-complex one."""
        canonical = [shape[i] for i in np.argsort(hdf5.canonical_order(len(shape), perm))]
        _check_shape(ckpt, name, stored, canonical, spatial=False)
        wanted = canonical[-3:]
        if tuple(stored[-3:]) == tuple(wanted):  # the same layout: its blocks as they are
            return hdf5.read_into(snap, name, shape, sharding, perm, leaf.dtype)
        maps = [exact_map(spectrum_modes(n0, a == 2 and n0 != nz), spectrum_modes(n1, a == 2 and not full))
                for a, (n0, n1) in enumerate(zip(stored[-3:], wanted, strict=True))]
        return read_mapped(snap, name, shape, sharding, maps, perm, leaf.dtype)

    if fft.has_real_transform:
        return read(leaf.shape, leaf.sharding, fft.perm)
    if stored[-1] == nz:
        return read(leaf.shape, leaf.sharding, fft.perm, full=True)
    return full_from_half(read, fft, leaf.shape[:-3], leaf.dtype, leaf.sharding)


def _check_shape(ckpt: Checkpoint, name: str, stored: Sequence[int], wanted: Sequence[int],
                 spatial: bool = True) -> None:
    """The stored array's canonical shape ``stored`` is ``wanted`` (canonical too), or, with ``spatial`` False
    (a spectrum, whose spatial sizes are the layout's that wrote it), has its batch axes."""
    n = len(wanted) if spatial else len(wanted) - 3
    if len(stored) != len(wanted) or tuple(stored[:n]) != tuple(wanted[:n]):
        raise hdf5.IncompleteOutputError(
            f"{ckpt.index}: array {name!r} has shape {list(stored)}, this run needs {list(wanted)} (another grid?)")


class CheckpointWriter(Writer):
    """The exact state on the checkpoint schedule, at the end, and when the run is stopped (collective)."""

    name = "checkpoints"
    lands = False  # checkpoints by dt come at the first chunk end past each multiple

    def __init__(self, schedule: Schedule, save: Callable[[Moment], Path], log: Callable[[str], None]):
        super().__init__()
        self.schedule, self.save, self.log = schedule, save, log
        self.last: Path | None = None

    def at_start(self, t0: float = 0.0) -> bool:
        return False  # the initial state is the config's (or a branch's source checkpoint): nothing to restart from

    def due(self, moment: Moment) -> bool:
        return moment.stopping or super().due(moment)

    def write(self, moment: Moment) -> None:
        self.last = self.save(moment).with_suffix("")
        self.log(f"checkpoint {self.last}")
