"""Snapshots: the real-space output fields of one moment, per-process shards, an index and an XDMF file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

from simulator.output import hdf5
from simulator.output.xdmf import write_xdmf


def write_snapshot(stem: Path, fields: Mapping[str, jax.Array], attrs: Mapping[str, Any], box: Sequence[float],
                   time: float) -> Path:
    """Write real-space ``fields`` (global shapes ``(N0, N1, N2)`` or ``(3, N0, N1, N2)``) as the snapshot
    ``stem`` (collective): shard files, the index ``stem.h5`` and, on process 0, ``stem.xdmf``."""
    index = hdf5.write(stem, {k: hdf5.Field(v) for k, v in fields.items()}, attrs)
    if jax.process_index() == 0:
        write_xdmf(index, {k: (v.shape, v.dtype.itemsize) for k, v in fields.items()}, box, time)
    return index
