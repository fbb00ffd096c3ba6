"""What a run directory holds, read once: the facts on which :mod:`simulator.run.rundir` plans a run there and
:mod:`simulator.run.restart` checks the checkpoint a restart continues (no JAX; nothing is written).

:func:`read` gathers them into one :class:`Contents`: the checkpoint markers, those a later segment superseded
(:func:`simulator.output.segments.superseded`), the latest intact one (:func:`simulator.output.checkpoints.find`),
the segment records, the config the run recorded, and what a segment killed in its start-up left.

A segment writes, in this order (:class:`simulator.run.segment.Segment`): ``.lock``; ``run.log``, whose first line
of a branch names the checkpoint of another run it branches from (:func:`branching`); the files its writers open
(:func:`opened`: the time series' text beside its place, row files new and without a row); its record
(``segments/``, ``config.yaml``); ``status.json``; then its first rows and snapshots; then its first checkpoint. A
start-up stopped by a signal, or failing, before its state exists also leaves ``config.yaml`` and ``status.json``
without a record. Until its record exists nothing in the directory is output of a run: :func:`only_start_up` says
whether a directory holds no more than that, :func:`logged_branch` which branch its log says it began.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from simulator.output import checkpoints, kinds, segments, timeseries
from simulator.output.leftovers import rowless
from simulator.output.runconfig import CONFIG_FILE

#: what a start-up leaves before its record besides its writers' files (beside ``segments/`` holding none yet): its
#: log, and where it stopped before its state existed (a signal, a failure) the resolved config and the status that
#: say so
BEFORE_RECORD = ("run.log", CONFIG_FILE, "status.json", ".status.json.tmp")
#: the lock file's name (:class:`simulator.run.lock.RunLock`), and the start of its temporary files': no output
LOCK = ".lock"


@dataclass(frozen=True)
class Contents:
    """What ``path`` (a run directory, or a checkpoint's file ``.h5``/``.json``) holds, as :func:`read` found it.

    ``run``: the run directory (a checkpoint's: the one above its ``checkpoints/``); ``markers``: its checkpoint
    markers, latest first, intact or not; ``superseded``: those a later segment superseded, each with (the segment
    that wrote it, the later one); ``current``: the others, latest first; ``candidates``: what a restart from
    ``path`` tries, latest first (a checkpoint's own marker, or the run's current markers); ``latest``: the first
    intact of them (None: none is; :attr:`damage` says why the first is not); ``refusal``: why a later segment of
    its run superseded the checkpoint ``path`` names (None: it did not, or ``path`` is a directory). Of a run
    directory only: ``records``, its segment records, first to last; ``stored``: the resolved config it recorded
    (``config.yaml``, else its latest record); ``branched_from``: the checkpoint of another run that its first
    segment began from; ``start_up``: whether it holds only a killed start-up's leftovers (:func:`only_start_up`);
    ``logged``: the branch its ``run.log`` names (:func:`logged_branch`), read only where it holds no current
    checkpoint (the only case that asks), else None.
    """

    path: Path
    run: Path
    markers: tuple[Path, ...] = ()
    superseded: Mapping[Path, tuple[segments.SegmentRecord, segments.SegmentRecord]] = field(default_factory=dict)
    current: tuple[Path, ...] = ()
    candidates: tuple[Path, ...] = ()
    latest: checkpoints.Checkpoint | None = None
    refusal: str | None = None
    records: tuple[Path, ...] = ()
    stored: dict[str, Any] | None = None
    branched_from: str | None = None
    start_up: bool = False
    logged: str | None = None

    @property
    def damage(self) -> str:
        """Why the first of the ``candidates`` is not intact, when none is ("" otherwise): read when a refusal names
        it, not with the rest."""
        if self.latest is not None or not self.candidates:
            return ""
        return str(checkpoints.why_damaged(self.candidates[0]))


def read(path: Path, warn: bool = False) -> Contents:
    """What ``path`` holds (see :class:`Contents`); ``warn``: log the damaged checkpoints passed over on the way to
    the latest intact one. Reads only, and raises nothing for what it cannot read: that is what it holds."""
    marker = path.with_suffix(".json") if path.is_file() else None
    run = marker.parent.parent if marker is not None else path  # checkpoints/cNNNNNNNN.json of its run directory
    # the markers listed and the segment records read once: what is superseded, current and latest follows from them
    found, records = checkpoints.markers(run), segments.read_records(run)
    gone = segments.superseded(run, found, records)
    current = tuple(m for m in found if m not in gone)
    candidates = (marker,) if marker is not None else current
    refusal = segments.refusal(run, marker, records) if marker is not None else None
    held = Contents(path, run, tuple(found), gone, current, candidates, checkpoints.first_intact(candidates, warn=warn),
                    refusal=refusal)
    if marker is not None:
        return held
    records = tuple(segments.record_paths(run))
    return replace(held, records=records, stored=_stored(run, records), branched_from=_branched_from(records),
                   start_up=only_start_up(run, records), logged=logged_branch(run) if not current else None)


def _stored(path: Path, records: Sequence[Path]) -> dict[str, Any] | None:
    """The resolved config a run in ``path`` recorded (``config.yaml``, else its latest record), or None."""
    for candidate in [path / CONFIG_FILE, *reversed(records)]:
        try:
            stored = yaml.safe_load(candidate.read_text())["config"]
        except (OSError, TypeError, KeyError, ValueError, yaml.YAMLError):
            continue
        if isinstance(stored, dict):
            return stored
    return None


def _branched_from(records: Sequence[Path]) -> str | None:
    """The checkpoint of another run that the run of ``records`` began from (its first segment a restart, as ``--restart
    PATH --out DIR`` records it: an absolute path; a record of an older version holds PATH as given, relative to the
    directory the branch started from, and is read as it is), else None (a run from t = 0, or no readable record)."""
    try:
        source = yaml.safe_load(records[0].read_text()).get("restart") if records else None
    except (OSError, AttributeError, ValueError, yaml.YAMLError):
        return None
    return str(Path(source).with_suffix(".json")) if isinstance(source, str) and source else None


def opened() -> tuple[str, ...]:
    """What the writers make as they open, before the segment's record: the time series' text beside its place (it
    takes its place once every file is open) and the row files of the registered output kinds at the directory's
    root (``spectra.h5``, ``statistics.h5``, ``tasks.h5``, and a plug-in kind's), new and without a row."""
    rows = [name for kind in kinds.registry().values() for name in kind.files
            if name.endswith(".h5") and "/" not in name]
    return (f"{timeseries.FILE}.tmp", *rows)


_BRANCHING = re.compile(r" branching from (.+), a checkpoint of another run$")


def branching(source: Path) -> str:
    """The line a branch logs as it opens ``run.log`` (``source``: the checkpoint it branches from, any form)."""
    return f"branching from {source.resolve().with_suffix('.json')}, a checkpoint of another run"


def logged_branch(path: Path) -> str | None:
    """The checkpoint that ``path/run.log`` says its run branched from (:func:`branching`, the first such line: a
    directory's trajectory begins once); "" when its log names none, None when it has no line to tell (empty,
    missing or unreadable)."""
    try:
        lines = (path / "run.log").read_text(errors="replace").splitlines()
    except OSError:
        return None
    found = (_BRANCHING.search(line) for line in lines)
    return next((m.group(1) for m in found if m), "" if lines else None)


def only_start_up(path: Path, records: Sequence[Path]) -> bool:
    """Whether ``path`` (its segment ``records``) holds nothing but a start-up's leftovers (:data:`BEFORE_RECORD` and
    :func:`opened`, beside a lock): its log, no record of a segment, no checkpoint, no row in any row file, and a
    config only beside the status of a start-up stopped or failed before its state existed. Taking such a directory
    over loses nothing of a run."""
    try:
        names = {p.name for p in path.iterdir() if not p.name.startswith(LOCK)}
    except OSError:
        return False
    files = opened()
    if "run.log" not in names or not names - {segments.DIR} <= {*BEFORE_RECORD, *files} or records:
        return False  # segments/ without a record: killed as it wrote its first
    if any(not rowless(path / name) for name in files if name.endswith(".h5") and name in names):
        return False
    if not names & {CONFIG_FILE, "status.json", ".status.json.tmp"}:
        return True
    try:  # a start-up stopped before its state existed says so; any other status is a run's
        state = json.loads((path / "status.json").read_text()).get("state")
    except (OSError, ValueError, AttributeError):
        return False
    return state in ("interrupted", "failed")
