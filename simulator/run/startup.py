"""What a run segment killed in its start-up leaves in its directory, and what that start-up was (no JAX).

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
from pathlib import Path

from simulator.output import kinds, segments, timeseries
from simulator.output.leftovers import rowless

#: what a start-up leaves before its record besides its writers' files (beside ``segments/`` holding none yet): its
#: log, and where it stopped before its state existed (a signal, a failure) the resolved config and the status that
#: say so
BEFORE_RECORD = ("run.log", "config.yaml", "status.json", ".status.json.tmp")


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


def only_start_up(path: Path) -> bool:
    """Whether ``path`` holds nothing but a start-up's leftovers (:data:`BEFORE_RECORD` and :func:`opened`, beside a
    lock): its log, no record of a segment, no checkpoint, no row in any row file, and a config only beside the
    status of a start-up stopped or failed before its state existed. Taking such a directory over loses nothing
    of a run."""
    try:
        names = {p.name for p in path.iterdir() if not p.name.startswith(".lock")}
    except OSError:
        return False
    files = opened()
    if "run.log" not in names or not names - {segments.DIR} <= {*BEFORE_RECORD, *files} or segments.record_paths(path):
        return False  # segments/ without a record: killed as it wrote its first
    if any(not rowless(path / name) for name in files if name.endswith(".h5") and name in names):
        return False
    if not names & {"config.yaml", "status.json", ".status.json.tmp"}:
        return True
    try:  # a start-up stopped before its state existed says so; any other status is a run's
        state = json.loads((path / "status.json").read_text()).get("state")
    except (OSError, ValueError, AttributeError):
        return False
    return state in ("interrupted", "failed")
