"""Checkpoints: the exact state, written per process, complete only when a marker says so.

Layout under the run directory::

    checkpoints/c00000120/p0000.h5 ...   each process's blocks of every state array (full precision)
    checkpoints/c00000120.h5             the index (virtual datasets), written by process 0
    checkpoints/c00000120.json           the completion marker, written last (temporary name + rename)

The marker holds step, time, dt, the step and time from which that dt holds (``epoch``), where each
state leaf lives (real space or k-space), the FFT backend and its spectrum kind, and the resolved
config. A checkpoint without its marker, or whose shard files are missing or unreadable, is skipped in
favour of the previous one. Only the last ``checkpoint.keep`` complete checkpoints are kept.

Restoring re-shards on read: each process reads the blocks of its own devices from the index,
whatever device count, process count or backend wrote it. Spectral leaves are stored in canonical
axis order (kx, ky, kz); a full spectrum (jaxdecomp) read into a half-spectrum layout keeps its
kz >= 0 half, and a half spectrum read into a full-spectrum layout is completed through real space
(:mod:`simulator.fft.relayout`). Finding checkpoints needs no JAX; writing and restoring do.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.log import get_logger
from simulator.output import hdf5
from simulator.output.base import Moment, Schedule, Writer

DIR = "checkpoints"


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
          keep: int) -> Path:
    """Write a checkpoint of ``state`` (collective). Returns the marker path."""
    import jax

    root = run_dir / DIR
    stem = root / _name(step)
    leaves = jax.tree.leaves(state)
    fields = {name: hdf5.Field(leaf, perm if space == "spectral" else (0, 1, 2))
              for name, leaf, space in zip(leaf_names(state), leaves, spaces, strict=True)}
    index = hdf5.write(stem, fields, {"step": step, "time": time, "dt": dt})
    marker = stem.with_suffix(".json")
    if jax.process_index() == 0:
        info = {"step": step, "time": time, "dt": dt, "epoch": list(epoch), "index": index.name,
                "spaces": list(spaces), "full_spectrum": full_spectrum, "processes": jax.process_count(),
                "schema_version": hdf5.SCHEMA_VERSION, **meta}
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
    complete = sorted(root.glob("c*.json"))
    for marker in complete[:-keep] if keep > 0 else []:
        marker.unlink(missing_ok=True)
        marker.with_suffix(".h5").unlink(missing_ok=True)
        shutil.rmtree(marker.with_suffix(""), ignore_errors=True)


def find(path: Path) -> Checkpoint | None:
    """The latest complete checkpoint under run directory ``path`` (or the marker/index ``path`` itself).

    Incomplete or corrupt ones are skipped with a warning; None if there is none.
    """
    if path.is_file():
        candidates = [path.with_suffix(".json")]
    else:
        candidates = sorted((path / DIR).glob("c*.json"), reverse=True)
    log = get_logger()
    for marker in candidates:
        try:
            info = json.loads(marker.read_text())
            if not isinstance(info, dict):
                raise ValueError("the marker is not a JSON object")
            ckpt = Checkpoint(marker.with_suffix(".h5"), int(info["step"]), float(info["time"]), float(info["dt"]),
                              info)
            with hdf5.Snapshot(ckpt.index):
                pass
        except (OSError, ValueError, TypeError, KeyError, hdf5.IncompleteOutputError) as err:
            log.warning("skipping checkpoint %s: %s", marker.with_suffix(""), err)
            continue
        return ckpt
    return None


def restore(ckpt: Checkpoint, template: Any, fft: Any, spaces: Sequence[str]) -> Any:
    """The checkpointed state laid out like ``template`` (the new run's initial state) on ``fft``'s mesh;
    ``spaces`` says where each of its leaves lives."""
    import jax

    from simulator.fft.relayout import full_from_half

    leaves, treedef = jax.tree.flatten(template)
    stored_spaces = ckpt.spaces(len(leaves))
    out = []
    with hdf5.Snapshot(ckpt.index) as snap:
        for name, leaf, space, stored in zip(leaf_names(template), leaves, spaces, stored_spaces, strict=True):
            if name not in snap.fields:
                raise hdf5.IncompleteOutputError(f"{ckpt.index} has no array {name!r} (holds {', '.join(snap.fields)})")
            if space != stored:
                raise hdf5.IncompleteOutputError(f"{ckpt.index}: array {name!r} is stored in {stored} space, this "
                                                 f"run keeps it in {space} space")
            perm = fft.perm if space == "spectral" else (0, 1, 2)
            if space == "spectral" and not fft.has_real_transform and not ckpt.meta["full_spectrum"]:
                def read(shape, sharding, order, name=name, dtype=leaf.dtype):
                    return hdf5.read_into(snap, name, shape, sharding, order, dtype)

                out.append(full_from_half(read, fft, leaf.shape[:-3], leaf.dtype, leaf.sharding))
                continue
            _check_shape(ckpt, name, snap.file[name].shape, leaf.shape, perm)
            out.append(hdf5.read_into(snap, name, leaf.shape, leaf.sharding, perm, leaf.dtype))
    return jax.tree.unflatten(treedef, out)


def _check_shape(ckpt: Checkpoint, name: str, stored: tuple[int, ...], wanted: tuple[int, ...], perm) -> None:
    nb = len(wanted) - 3
    canon = (*wanted[:nb], *(wanted[nb + list(perm).index(a)] for a in range(3)))
    if len(stored) != len(canon) or any(s < w for s, w in zip(stored, canon, strict=True)) or stored[:-1] != canon[:-1]:
        raise hdf5.IncompleteOutputError(
            f"{ckpt.index}: array {name!r} has shape {list(stored)}, this run needs {list(canon)} (another grid?)")


class CheckpointWriter(Writer):
    """The exact state on the checkpoint schedule, at the end, and when the run is stopped (collective)."""

    name = "checkpoints"

    def __init__(self, schedule: Schedule, save: Callable[[Moment], Path], log: Callable[[str], None]):
        super().__init__()
        self.schedule, self.save, self.log = schedule, save, log
        self.last: Path | None = None

    def at_start(self) -> bool:
        return False  # the initial state is the config's: nothing to restart from

    def due(self, moment: Moment) -> bool:
        return moment.stopping or super().due(moment)

    def write(self, moment: Moment) -> None:
        self.last = self.save(moment).with_suffix("")
        self.log(f"checkpoint {self.last}")
