"""What a restart from an earlier step leaves behind it in the run directory (process 0, as the segment begins): the
files derived from output it drops or writes again set aside whole, and one warning each on the snapshots and
checkpoints past its step that the new segment supersedes. No JAX.
"""

from __future__ import annotations

from pathlib import Path

from simulator.log import get_logger
from simulator.output import checkpoints, particles, rows, segments, snapshots, timeseries

#: what ``simulator export`` and ``simulator plot`` derive from the run's output in its directory: a restart that
#: drops or writes again output they were made from sets them aside (:func:`set_derived_aside`)
DERIVED = ("export", "snapshots/merged", "plots")


def set_derived_aside(path: Path, step: int | None, rank0: bool) -> None:
    """On a restart from the checkpoint at ``step`` (None: a new run, nothing to do; process 0 does it): when
    the run went further (its time series has rows past ``step``, or none to tell), the files derived from its
    output (:data:`DERIVED`: exports, merged snapshots, figures) describe output this restart drops or writes
    again, so each moves whole into ``<run>/aside/`` as ``<name>.until-<step>`` (a counter when taken), with a
    warning naming it. ``aside/`` is made now, the moves wait until every file of the segment is open
    (:func:`simulator.output.rows.later`): a restart that fails before changes nothing. Called before the writers
    open, so the moves come before any row is cut: a restart stopped between them still finds the rows past
    ``step`` that say the derived files are to go."""
    if step is None or not rank0:
        return
    found = [path / name for name in DERIVED if (path / name).exists()]
    reached = timeseries.last_step(path) if found else None  # the time series read only when something may go
    if not found or (reached is not None and reached <= step):
        return
    folder = rows.aside_folder(path / DERIVED[0])  # <run>/aside/, for every derived file wherever it lies

    def move() -> None:
        for derived in [d for d in found if d.exists()]:  # one removed meanwhile is no reason to fail the restart
            aside = rows.set_aside(derived, derived.name + rows.until(step), "", folder)
            get_logger().warning("%s was made from output this restart drops or writes again (past step %d): kept "
                                 "whole in %s", derived, step, aside)

    rows.later(move)


def warn_superseded(path: Path, step: int | None) -> None:
    """On a restart from the checkpoint at ``step`` (None: a new run, nothing to do; process 0, its segment recorded):
    one warning counting the field and particle snapshots past ``step``, which the new segment supersedes
    (:func:`simulator.output.segments.superseded`): the readers leave them out from now on, and the steps this
    segment reaches are written again; one naming the checkpoints past ``step`` it supersedes, which restarts and
    pruning pass over; nothing when there are none. Logged with the row files' cut-backs, once every file of the
    segment is open (:func:`simulator.output.rows.later`): a restart that fails before supersedes nothing
    (:func:`simulator.output.segments.write_record`)."""
    if step is not None:
        rows.later(lambda: _warn_superseded(path, step))


def _warn_superseded(path: Path, step: int) -> None:
    # superseded, not merely past: files without a writer (earlier versions) are still read, as the rule says
    past = {folder: list(segments.superseded(path, [p for p in sorted((path / folder).glob("s*.h5"))
                                                    if (segments.step_of(p) or 0) > step]))
            for folder in (snapshots.DIR, particles.DIR)}
    found = [p for files in past.values() for p in files]
    if found:
        counts = ", ".join(f"{len(files)} in {path / folder}" for folder, files in past.items() if files)
        steps = sorted({segments.step_of(p) or 0 for p in found})
        get_logger().warning("%d snapshot file(s) past step %d, of steps %d .. %d (%s), are of the run before this "
                             "restart: superseded, readers leave them out until this run writes those steps again "
                             "(load_run(...).superseded lists them)", len(found), step, steps[0], steps[-1], counts)
    later = [m for m in checkpoints.markers(path) if (segments.step_of(m) or 0) > step]
    replaced = sorted(segments.superseded(path, later))  # those with a writer: older ones are read as before
    if replaced:
        get_logger().warning("%d checkpoint(s) past step %d (%s) are of the run before this restart: superseded, "
                             "--restart, --resume and checkpoint.keep pass them over; they stay in %s until this "
                             "run writes those steps again", len(replaced), step, ", ".join(m.stem for m in replaced),
                             path / checkpoints.DIR)
