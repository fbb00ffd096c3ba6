"""Checkpoints: the exact state, written per process, complete only when a marker says so.

Layout under the run directory::

    checkpoints/c000120/p0000.h5 ...   each process's blocks of every state array (full precision)
    checkpoints/c000120.h5             the index (virtual datasets), written by process 0
    checkpoints/c000120.json           the completion marker, written last (temporary name + rename)

The marker holds step, time, dt, the FFT backend and its spectrum kind, and the resolved config. A
checkpoint without its marker, or whose shard files are missing or unreadable, is skipped in favour of
the previous one. Only the last ``checkpoint.keep`` complete checkpoints are kept.

Restoring re-shards on read: each process reads the blocks of its own devices from the index,
whatever device count, process count or backend wrote it. Spectral states are stored in canonical
axis order (kx, ky, kz); a full spectrum (jaxdecomp) read into a half-spectrum layout keeps its
kz >= 0 half, and a half spectrum read into a full-spectrum layout is completed through real space.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from simulator.output import hdf5 as io
from simulator.log import get_logger

DIR = "checkpoints"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint found on disk."""

    index: Path
    step: int
    time: float
    dt: float
    meta: dict[str, Any]


def _name(step: int) -> str:
    return f"c{step:08d}"


def leaf_names(state: Any) -> list[str]:
    """Dataset names of the state's arrays: the pytree path (``psi``), or ``state`` for a bare array."""
    paths = jax.tree_util.tree_flatten_with_path(state)[0]
    return [jax.tree_util.keystr(p).strip(".[]'\"") or "state" for p, _ in paths]


def write(run_dir: Path, state: Any, *, step: int, time: float, dt: float, spectral: bool, perm: tuple[int, int, int],
          full_spectrum: bool, meta: dict[str, Any], keep: int) -> Path:
    """Write a checkpoint of ``state`` (collective). Returns the marker path."""
    root = run_dir / DIR
    stem = root / _name(step)
    leaves = jax.tree.leaves(state)
    fields = {name: io.Field(leaf, perm if spectral else (0, 1, 2)) for name, leaf in zip(leaf_names(state), leaves,
                                                                                            strict=True)}
    index = io.write(stem, fields, {"step": step, "time": time, "dt": dt})
    marker = stem.with_suffix(".json")
    if jax.process_index() == 0:
        info = {"step": step, "time": time, "dt": dt, "index": index.name, "spectral": spectral,
                "full_spectrum": full_spectrum, "processes": jax.process_count(), "schema_version": io.SCHEMA_VERSION,
                **meta}
        tmp = marker.with_name(marker.name + ".tmp")
        try:
            tmp.write_text(json.dumps(info, indent=1))
            os.replace(tmp, marker)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise io.OutputWriteError(f"writing {marker} failed: {io.describe_os_error(err)}") from err
        _prune(root, keep)
    io.barrier(f"checkpoint {step}")
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
            with io.Snapshot(marker.with_suffix(".h5")):
                pass
        except (OSError, ValueError, io.IncompleteOutputError) as err:
            log.warning("skipping checkpoint %s: %s", marker.with_suffix(""), err)
            continue
        return Checkpoint(marker.with_suffix(".h5"), int(info["step"]), float(info["time"]), float(info["dt"]), info)
    return None


def restore(ckpt: Checkpoint, template: Any, fft: Any, spectral: bool) -> Any:
    """The checkpointed state laid out like ``template`` (the new run's initial state) on ``fft``'s mesh."""
    leaves, treedef = jax.tree.flatten(template)
    out = []
    with io.Snapshot(ckpt.index) as snap:
        for name, leaf in zip(leaf_names(template), leaves, strict=True):
            if name not in snap.fields:
                raise io.IncompleteOutputError(f"{ckpt.index} has no array {name!r} (holds {', '.join(snap.fields)})")
            stored = snap.file[name].shape
            if spectral and not fft.has_real_transform and not ckpt.meta["full_spectrum"]:
                out.append(_half_into_full(snap, name, leaf, fft))
                continue
            _check_shape(ckpt, name, stored, leaf.shape, fft.perm if spectral else (0, 1, 2))
            out.append(io.read_into(snap, name, leaf.shape, leaf.sharding, fft.perm if spectral else (0, 1, 2),
                                    leaf.dtype))
    return jax.tree.unflatten(treedef, out)


def _check_shape(ckpt: Checkpoint, name: str, stored: tuple[int, ...], wanted: tuple[int, ...], perm) -> None:
    nb = len(wanted) - 3
    canon = (*wanted[:nb], *(wanted[nb + list(perm).index(a)] for a in range(3)))
    if len(stored) != len(canon) or any(s < w for s, w in zip(stored, canon, strict=True)) or stored[:-1] != canon[:-1]:
        raise io.IncompleteOutputError(
            f"{ckpt.index}: array {name!r} has shape {list(stored)}, this run needs {list(canon)} (another grid?)")


def _half_into_full(snap: io.Snapshot, name: str, leaf: jax.Array, fft: Any) -> jax.Array:
    """A half spectrum (r2c backends) into a full-spectrum backend: through real space on a slab of the
    same devices, then the target's own forward transform (agrees to round-off)."""
    from simulator.fft import BACKENDS
    from simulator.fft.mesh import build_mesh

    slab_cls = BACKENDS["slab"]
    devices = list(fft.mesh.devices.flat)
    slab = slab_cls(fft.shape, build_mesh(slab_cls, None, devices))
    nb = leaf.ndim - 3
    half_shape = (*leaf.shape[:nb], *slab.spectral_shape(real=True))
    half = io.read_into(snap, name, half_shape, slab.spectral_sharding(nb), slab.perm, leaf.dtype)
    real = jax.device_put(slab.irfft(half), fft.real_sharding(nb))
    return jax.device_put(fft.rfft(real), leaf.sharding)


def same_physics(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Dotted keys of the physics section (and grid) that differ between two resolved configs."""
    diffs = []
    for section in ("physics", "grid"):
        for key in sorted(set(a.get(section, {})) | set(b.get(section, {}))):
            if np.any(np.asarray(a[section].get(key)) != np.asarray(b[section].get(key))):
                diffs.append(f"{section}.{key}")
    return diffs
