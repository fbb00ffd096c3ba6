"""A run's segment records and the one rule on which per-step output files a later segment superseded (no JAX).

A run is a sequence of segments (:mod:`simulator.run.segment`: one per ``simulator run``, ``--restart``,
``--resume``), each recorded as ``segments/segment_NNN.yaml`` with its identity ``segment_id`` (the
``writer`` attribute of every snapshot and checkpoint file it writes), its number ``segment`` and the step
it started from, ``start_step``. A restart from a checkpoint the run had gone past writes the steps past
it again, possibly with other values (another viscosity, another dt); until it has, the files the earlier
segment wrote there are still in ``snapshots/`` and ``particles/``, but they are no longer the run's.

The rule (:func:`superseded`): a file of step s written by segment i is superseded when a later segment
j > i started from a step before s (``start_step`` < s). The files stay where they are, nothing is deleted;
the readers (:func:`simulator.output.snapshots.snapshot_files`, :func:`simulator.output.particle_series.snapshot_files`,
and through them ``load_run``, ``simulator export`` and ``simulator plot``) leave them out, and
``load_run(RUN).superseded`` lists them. Checkpoints follow the same rule (their markers ``cNNNNNNNN.json``
record the writer): the latest checkpoint of a run directory (``--restart``, ``--resume``, ``initial.path:
RUN``) is the latest one not superseded, and ``checkpoint.keep`` counts and prunes only those
(:func:`simulator.output.checkpoints.markers`). When the later segment writes step s again, its file replaces
the old one and is current (its writer is the latest segment). Files without a ``writer`` (written before
writers were recorded) or of a writer no record names, and segment records without ``start_step`` (runs of
earlier versions), read as before: nothing is left out for them. A segment that failed before it
changed anything of the run (:func:`write_record`) is recorded with ``start_step`` null: it supersedes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import yaml

from simulator.output import rows
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.runconfig import CONFIG_FILE

#: the folder of a run's segment records
DIR = "segments"
#: what reading an unreadable file raises through h5py
_UNREADABLE = (OSError, RuntimeError, KeyError, ValueError, TypeError)
#: the C parser where PyYAML has it: a record holds the whole resolved config, read once per segment
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class SegmentRecord:
    """One segment of a run, as its record says: its ``number``, its ``identity`` (the ``writer`` of its
    files; None when not recorded) and ``start_step`` (None in records of earlier versions)."""

    number: int
    identity: str | None
    start_step: int | None


def record_path(run_dir: Path, number: int) -> Path:
    """Where segment ``number`` of the run in ``run_dir`` is recorded."""
    return run_dir / DIR / f"segment_{number:03d}.yaml"


def record_paths(run_dir: Path) -> list[Path]:
    """The segment records of the run in ``run_dir``, first to last."""
    return sorted((run_dir / DIR).glob("segment_*.yaml"))


def write_record(run_dir: Path, meta: Mapping[str, Any], step: int) -> Path:
    """Record the segment that starts now from ``step`` (process 0, while it opens its files within
    :func:`simulator.output.rows.staged`): ``segments/segment_NNN.yaml``, numbered after the records there, and
    ``config.yaml``, each ``meta`` with ``segment`` and ``start_step``. When the opening fails after it (particles
    that find no slot, a full disk), nothing of the run changes: the record stays, saying the segment was tried,
    with ``start_step`` null, so that it supersedes nothing. OutputWriteError naming a file it cannot write."""
    number = len(record_paths(run_dir))
    path = record_path(run_dir, number)
    record = {**meta, "segment": number, "start_step": step}
    for target in (path, run_dir / CONFIG_FILE):
        tmp = target.with_name(f".{target.name}.tmp")  # whole or absent: a record killed half written names nothing
        try:
            target.parent.mkdir(exist_ok=True)
            tmp.write_text(yaml.safe_dump(record, sort_keys=False))
            os.replace(tmp, target)
        except OSError as err:
            tmp.unlink(missing_ok=True)
            raise OutputWriteError(f"writing {target} failed: {describe_os_error(err)}") from err
    # nothing more once every file is open; only an opening that fails has something to take back
    rows.later(lambda: None, undo=lambda: path.write_text(yaml.safe_dump({**record, "start_step": None},
                                                                          sort_keys=False)))
    return path


def read_records(run_dir: Path) -> list[SegmentRecord]:
    """The segments of the run in ``run_dir`` by number; a record that cannot be read is passed over."""
    out = []
    for path in record_paths(run_dir):
        try:
            record = yaml.load(path.read_text(), Loader=_LOADER)
        except (OSError, ValueError, yaml.YAMLError):
            continue
        if not isinstance(record, dict):
            continue
        number, start = record.get("segment"), record.get("start_step")
        if not isinstance(number, int) or isinstance(number, bool):
            digits = path.stem.removeprefix("segment_")
            if not digits.isdigit():
                continue
            number = int(digits)
        identity = record.get("segment_id")
        out.append(SegmentRecord(number, identity if isinstance(identity, str) else None,
                                 start if isinstance(start, int) and not isinstance(start, bool) else None))
    return sorted(out, key=lambda r: r.number)


def _writer(path: Path) -> str | None:
    """The ``writer`` attribute of the HDF5 file ``path``, or the ``writer`` entry of a checkpoint's JSON marker;
    None when it has none or cannot be read (its reader then says what is wrong with it, as before)."""
    if path.suffix == ".json":
        with contextlib.suppress(OSError, ValueError):
            info = json.loads(path.read_text())
            writer = info.get("writer") if isinstance(info, dict) else None
            return writer if isinstance(writer, str) else None
        return None
    with contextlib.suppress(*_UNREADABLE), h5py.File(path, "r") as f:
        writer = f.attrs.get("writer")
        return writer.decode() if isinstance(writer, bytes) else writer if isinstance(writer, str) else None
    return None


def step_of(path: Path) -> int | None:
    """The step of a per-step output file: a snapshot ``sNNNNNNNN.h5`` or a checkpoint's marker
    ``cNNNNNNNN.json``; else None."""
    digits = path.stem[1:]
    return int(digits) if path.stem[:1] in ("s", "c") and digits.isdigit() else None


def superseded(run_dir: Path, files: Iterable[Path], records: Sequence[SegmentRecord] | None = None
               ) -> dict[Path, tuple[SegmentRecord, SegmentRecord]]:
    """Of the per-step output files ``files`` of the run in ``run_dir`` (field and particle snapshots
    ``sNNNNNNNN.h5``, checkpoint markers ``cNNNNNNNN.json``, each naming its ``writer``), those a later segment
    superseded, each with (the segment that wrote it, the last segment that started from a step before its
    step): the file of step s written by segment i is superseded when a segment j > i has ``start_step`` < s
    (see the module docstring). ``records``: the run's records where the caller has read them
    (:func:`read_records`; read here otherwise). Only the files past a later segment's start are opened (their
    ``writer`` read), and none for a run of one segment."""
    records = read_records(run_dir) if records is None else records
    started = [r for r in records if r.start_step is not None]
    if len(records) < 2 or not started:
        return {}
    by_identity = {r.identity: r for r in records if r.identity is not None}
    out = {}
    for path in files:
        step = step_of(path)
        before = [r for r in started if step is not None and r.start_step < step]
        if not before or before[-1].number == records[0].number:  # no segment can have written it before that one
            continue
        wrote = by_identity.get(_writer(path))
        if wrote is not None and wrote.number < before[-1].number:
            out[path] = (wrote, before[-1])
    return out


def current(run_dir: Path, files: Iterable[Path]) -> list[Path]:
    """``files`` (as for :func:`superseded`) without those a later segment superseded, in their order."""
    files = list(files)
    gone = superseded(run_dir, files)
    return [p for p in files if p not in gone]


def refusal(run_dir: Path, path: Path, records: Sequence[SegmentRecord] | None = None) -> str | None:
    """Why the per-step file ``path`` of the run in ``run_dir`` (a snapshot, a checkpoint's marker) is no state to
    start from, when a later segment superseded it (what ``initial.path`` and ``--restart PATH`` refuse it
    with), else None. ``records``: as for :func:`superseded`."""
    gone = superseded(run_dir, [path], records)
    if not gone:
        return None
    wrote, later = gone[path]
    return (f"is superseded: segment {later.number} of its run restarted from step {later.start_step}, before it, "
            f"so this file of segment {wrote.number} is not on the run's current trajectory")
