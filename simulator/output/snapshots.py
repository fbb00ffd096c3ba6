"""Snapshots: the real-space output fields of one moment, per-process shards, an index and an XDMF file.

``snapshots/sNNNNNNNN/pRRRR.h5`` holds the blocks process RRRR owns, ``snapshots/sNNNNNNNN.h5`` is the
index (one virtual dataset per field, global shape), ``snapshots/sNNNNNNNN.xdmf`` describes it for
ParaView and VisIt. Read them with :class:`simulator.output.hdf5.Snapshot` (no JAX needed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.output import hdf5
from simulator.output.base import Moment, Schedule, Writer
from simulator.output.xdmf import write_xdmf

if TYPE_CHECKING:
    import jax

DIR = "snapshots"


def write_snapshot(stem: Path, fields: Mapping[str, jax.Array], attrs: Mapping[str, Any], box: Sequence[float],
                   time: float) -> Path:
    """Write real-space ``fields`` (global shapes ``(N0, N1, N2)`` or ``(3, N0, N1, N2)``) as the snapshot
    ``stem`` (collective): shard files, the index ``stem.h5`` and, on process 0, ``stem.xdmf``."""
    import jax

    index = hdf5.write(stem, {k: hdf5.Field(v) for k, v in fields.items()}, attrs)
    if jax.process_index() == 0:
        write_xdmf(index, {k: (v.shape, v.dtype.itemsize) for k, v in fields.items()}, box, time)
    return index


def snapshot_files(run_dir: Path) -> list[Path]:
    """The snapshot index files of a run, oldest first."""
    return sorted((run_dir / DIR).glob("s*.h5"))


class SnapshotWriter(Writer):
    """The fields named ``names`` on the snapshot schedule (collective: every process writes its blocks)."""

    name = "snapshots"

    def __init__(self, schedule: Schedule, names: Sequence[str], attrs: Callable[[Moment], dict[str, Any]],
                 box: Sequence[float], log: Callable[[str], None]):
        super().__init__()
        self.schedule, self.names, self.attrs, self.box, self.log = schedule, tuple(names), attrs, box, log
        self.run_dir: Path | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        self.run_dir = run_dir

    def write(self, moment: Moment) -> None:
        assert self.run_dir is not None
        fields = moment.get("fields")
        stem = self.run_dir / DIR / f"s{moment.step:08d}"
        index = write_snapshot(stem, {n: fields[n] for n in self.names}, self.attrs(moment), self.box, moment.time)
        self.log(f"snapshot {index}")
