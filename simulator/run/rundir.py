"""The run directory: where it is, what a run may do there (:func:`plan`), its lock, its status.

Nothing here imports JAX: the CLI decides all of this before JAX starts, so a refused run changes
nothing and costs nothing. The order is always: :func:`plan` (read only; bad input is refused here),
then the lock (:class:`simulator.run.lock.RunLock`, taken before anything is changed, so no live run
is ever touched), then :func:`plan` again under the lock (the directory may have changed meanwhile), then
:func:`apply` (the only place that removes a run's files).

What ``--resume`` does (the job scripts run it on every allocation):

* an empty or missing directory: a new run;
* a complete checkpoint (the latest one a later segment did not supersede: see
  :func:`simulator.output.checkpoints.find`): continue from it (a run whose checkpoint has reached
  ``time.t_end`` does nothing; a larger ``t_end`` extends it);
* a finished run (``status.json``) whose checkpoints were deleted: nothing to do if the config's
  ``t_end`` is not later, else refused (it cannot be extended);
* a run of the same physics and grid that died before its first checkpoint: its partial output is
  removed and it starts again from t = 0;
* a run killed in its start-up, before it recorded its config (``.lock``, ``run.log`` and the files its writers
  opened, none with a row: :func:`simulator.output.contents.only_start_up`): it starts again from t = 0, appending to
  its ``run.log``;
* a branch's leftovers (its record, or its ``run.log``, names the checkpoint of another run it began from): refused,
  with the branch command as the hint (from t = 0 it would be another run under the branch's name);
* anything else (another config's run, checkpoints that are all damaged or all superseded, a live run) is
  refused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shlex
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.config import Config
from simulator.errors import ConfigError
from simulator.log import get_logger
from simulator.output import checkpoints, contents
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.run.restart import physics_changes
from simulator.time.control import TOL

#: what a run writes into its directory, and what ``simulator plot`` and ``simulator export`` derive from
#: it there; --overwrite removes exactly these (in this order: the stored config last, so a directory
#: being cleared never looks like another run)
RUN_FILES = ("plots", "export", "particles", "aside", "checkpoints", "snapshots", "segments", "spectra.h5", "tasks.h5",
             "statistics.h5", "timeseries.csv", "timeseries.csv.tmp", "run.log", ".status.json.tmp", "status.json",
             ".config.yaml.tmp", "config.yaml")
#: what a run writes as it starts (run.log first) and steps: a directory with none of them holds no run to replace
RUN_MARKS = ("run.log", "config.yaml", "status.json", ".status.json.tmp", "segments", "checkpoints", "timeseries.csv")
#: ``<run>/status.json``: state (running, interrupted, finished, failed), step, time, exit code, host, time stamp,
#: and a failed run's reason
STATUS_FILE = "status.json"
#: ``<run>/.lock``: the owner of a running run (see :class:`simulator.run.lock.RunLock`)
LOCK_FILE = contents.LOCK
#: errors of a full disk or quota: a failed write (exit 1), not bad input
FULL = (errno.ENOSPC, errno.EDQUOT)


def output_dir(cfg: Config, override: str | None) -> Path:
    return Path(override or cfg.output.dir or Path("outputs") / cfg.name)


@dataclass(frozen=True)
class DirectoryPlan:
    """What a run does in its directory.

    ``restart``: "latest", a checkpoint path, or None (start at t = 0); ``clear``: remove the files
    of the run there first; ``done``: the run there has finished (why, for the log): do nothing;
    ``source``: what the restart continues from, as the plan read it (its latest intact checkpoint found
    without warnings; None for a run from t = 0).
    """

    restart: str | None
    clear: bool = False
    done: str | None = None
    why: str = ""
    warn: bool = False
    source: contents.Contents | None = None


def _check_path(path: Path) -> None:
    """One-line errors for an output path that cannot be a directory: a file, a name too long."""
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise ConfigError("--out", str(path), "use directory names of at most 255 bytes",
                              f"has a name of {len(os.fsencode(part))} bytes")
    try:
        if path.exists() and not path.is_dir():
            raise ConfigError("--out", str(path), "give a directory", "is a file")
    except OSError as err:
        raise ConfigError("--out", str(path), "choose a usable location", f"cannot be used ({err.strerror})") from None


def _holds(path: Path) -> str:
    """What a directory that is not empty holds, for a refusal: a run, or files of none (someone's own)."""
    if any((path / name).exists() for name in RUN_MARKS):
        return "already holds a run"
    names = sorted(p.name for p in path.iterdir() if not p.name.startswith(LOCK_FILE))
    return f"holds files of no run ({', '.join(names[:4])}{', ...' * (len(names) > 4)})"


def holds_nothing(path: Path) -> bool:
    """True for a missing or empty directory (a lock file alone counts as empty: it holds no output)."""
    try:
        return not path.exists() or all(p.name.startswith(LOCK_FILE) for p in path.iterdir())
    except OSError as err:
        raise ConfigError("--out", str(path), "choose a readable directory",
                          f"cannot be read ({err.strerror})") from None


def same_run(checkpoint: Path, path: Path) -> bool:
    """Whether ``checkpoint`` (a ``--restart PATH``: a run directory or a checkpoint file) belongs to the run in
    ``path`` (else a restart from it into ``path`` is a branch)."""
    run = checkpoint if checkpoint.is_dir() else checkpoint.parent
    if not checkpoint.is_dir() and run.name == checkpoints.DIR:
        run = run.parent
    return _same_place(run, path)


def _same_place(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def plan(cfg: Config, path: Path, *, overwrite: bool = False, restart: str | None = None,
         resume: bool = False) -> DirectoryPlan:
    """What a run of ``cfg`` does in ``path`` (read only). Bad input raises ConfigError, touching nothing."""
    _check_path(path)
    if resume and (restart is not None or overwrite):
        raise ConfigError("--resume", True, "it already chooses between a new run and --restart",
                          "cannot be combined with --restart or --overwrite")
    if restart is not None:
        if overwrite:
            raise ConfigError("--overwrite", True, "use --restart to continue a run or --overwrite to replace it",
                              "cannot be combined with --restart")
        target = path if restart == "latest" else Path(restart)
        try:
            found = target.exists()
        except OSError as err:
            raise ConfigError("--restart", str(target), "give a run directory or a checkpoint file",
                              f"cannot be used ({err.strerror})") from None
        if not found:  # --restart without PATH continues --out: named as the user gave it
            key, allowed = (("--out", "give the run's directory, --restart PATH, or no --restart for a new run")
                            if restart == "latest" else ("--restart", "give a run directory or a checkpoint file"))
            raise ConfigError(key, str(target), allowed, "does not exist")
    # what the directory and a restart's source hold, read once (the loop finds the checkpoint again, with warnings);
    # a new run's or a replacement's plan needs none of it
    held = contents.read(path) if resume or restart is not None else None
    source = contents.read(Path(restart)) if restart not in (None, "latest") else held
    if restart is not None:
        if (restart != "latest" and not same_run(target, path) and not holds_nothing(path)
                and not _retries(held, source)):
            raise ConfigError("--out", str(path), "branch from another run's checkpoint into a new or empty "
                              "directory", _holds(path))
        if source.latest is None:
            damaged = source.candidates
            why = (f" ({damaged[0].name}: {source.damage})" if damaged
                   else "" if target.is_file() else _all_superseded(source))
            raise ConfigError("--restart", restart, f"no intact checkpoint under {target}{why}; start a new run "
                              "instead", "has nothing to resume")
        return DirectoryPlan(restart, source=source)
    if holds_nothing(path):
        return DirectoryPlan(None)
    if not resume:
        what = _holds(path)  # --overwrite replaces a run's files, never someone's own named alike (plots/, export/)
        if not overwrite or what != "already holds a run":
            raise ConfigError("--out", str(path), "choose a new directory, pass --restart to continue it, or "
                              "--overwrite to replace it" if what == "already holds a run" else "choose a new or "
                              "empty directory", what)
        _keep_source(cfg, path)
        return DirectoryPlan(None, clear=True, why=f"replacing the run in {path}")
    return _resume_plan(cfg, path, held)


def _keep_source(cfg: Config, path: Path) -> None:
    """Refuse to clear ``path`` when the initial condition reads a file inside it (``initial.path``):
    the run would delete its own source before reading it."""
    from simulator.equations.spec import FromFile

    source = cfg.initial.path if isinstance(cfg.initial, FromFile) else ""
    if not source:
        return
    try:
        inside = Path(source).resolve().is_relative_to(path.resolve())
    except OSError:
        return  # the initial condition's own check names an unusable path
    if inside:
        raise ConfigError("initial.path", source, "copy the file out of the directory first or write the new run "
                          "into another --out", f"lies inside {path}, which replacing the run there would delete")


def _all_superseded(held: contents.Contents) -> str:
    """`` (its checkpoints, ..., are all superseded ...)`` when the run ``held`` holds checkpoints and a later
    segment superseded every one (:func:`simulator.output.segments.superseded`), else ""."""
    gone = held.superseded
    if not gone or len(gone) < len(held.markers):
        return ""
    later = max((pair[1] for pair in gone.values()), key=lambda record: record.number)
    return (f" (its checkpoints, {', '.join(sorted(m.name for m in gone))}, are all superseded: of the trajectory "
            f"before a restart from step {later.start_step}, none of them is the run's)")


def _resume_plan(cfg: Config, path: Path, held: contents.Contents) -> DirectoryPlan:
    """``--resume`` of ``path``, which holds ``held`` (not nothing)."""
    if held.latest is not None:
        return DirectoryPlan("latest", source=held)
    damaged = held.candidates
    if damaged:
        raise ConfigError("--resume", str(path), f"the latest, {damaged[0].name}: {held.damage}; restore a "
                          "checkpoint or start afresh with --overwrite", f"holds {len(damaged)} checkpoint(s), none "
                          "of them intact")
    old = held.stored
    if old is None and held.start_up:  # killed in its start-up, before its record: what its log says
        return _start_up_plan(path, held.logged)
    if old is None or physics_changes(old, cfg):
        raise ConfigError("--resume", str(path), "give the directory of this config's run, or a new one",
                          "holds files but no checkpoint of a run with this physics and grid")
    status = read_status(path)
    if status is None and (path / STATUS_FILE).exists():  # it may be a finished run's: replaced, it would be lost
        raise ConfigError("--resume", str(path), f"restore its {STATUS_FILE} from a copy, or start afresh with "
                          "--overwrite or into another --out", f"holds no checkpoint to continue and a {STATUS_FILE} "
                          "that does not read (damaged), so whether its run finished is unknown")
    status = status or {}
    finished = status.get("state") == "finished" and isinstance(status.get("time"), (int, float))
    reached = float(status["time"]) if finished else 0.0
    if finished and reached >= cfg.time.t_end * (1 - TOL):  # as the time stepper decides
        return DirectoryPlan(None, done=f"{path} already finished (step {status.get('step')}, "
                                       f"t = {reached:.6g}): nothing to do")
    superseded = _all_superseded(held)
    if superseded:  # another trajectory's checkpoints: neither continued nor removed as a partial run's output
        raise ConfigError("--resume", str(path), "start afresh with --overwrite or into another --out",
                          f"holds no checkpoint to continue{superseded}")
    if finished:
        raise ConfigError("--resume", str(path), "its checkpoints were deleted, so it cannot be extended: run it "
                          "again with --overwrite or into another --out", f"holds a run finished at t = {reached:.6g} "
                          f"< time.t_end = {cfg.time.t_end:g}")
    _refuse_branch(path, held.branched_from or held.logged)
    _keep_source(cfg, path)
    return DirectoryPlan(None, clear=True, why=f"{path} has no complete checkpoint: starting again from t = 0, "
                                               "replacing its partial output", warn=True)


def _refuse_branch(path: Path, source: str | None) -> None:
    """Refuse ``--resume`` of ``path`` when its run began as a branch from ``source`` (a checkpoint of another run):
    from t = 0 it would be another run than the branch begun here, under the branch's name."""
    if source:
        raise ConfigError("--resume", str(path), f"branch again from it: simulator run CONFIG --restart {source} "
                          f"--out {path}", "holds no checkpoint of its own and began as a branch from "
                          f"{source}, which --resume does not start again from t = 0")


def _start_up_plan(path: Path, logged: str | None) -> DirectoryPlan:
    """``--resume`` of ``path`` holding only what a start-up killed before its record leaves
    (:func:`simulator.output.contents.only_start_up`), whose log names the branch ``logged``
    (:func:`simulator.output.contents.logged_branch`): a new run's starts again from t = 0, its log appended to (its
    writers make their files anew: none holds a row); a branch's, or one whose log is empty, is refused."""
    _refuse_branch(path, logged)
    if logged is None:
        raise ConfigError("--resume", str(path), "run the command that began it again, or --overwrite",
                          "holds the start-up of a run killed before its log said whether it began as a branch")
    return DirectoryPlan(None, why=f"{path} holds only the start-up of a run killed before its first output: "
                                   "starting it again from t = 0", warn=True)


def _retries(mine: contents.Contents, branch: contents.Contents) -> bool:
    """Whether a branch from ``branch`` (a checkpoint; a run directory: its latest) into ``mine`` tries again one begun
    there and killed before its first checkpoint: its record names that checkpoint, or it has none and holds only a
    start-up's files (:func:`simulator.output.contents.only_start_up`) whose log names it, or nothing but a log
    that names no branch (a start-up killed before it could)."""
    if mine.markers:
        return False
    source = mine.branched_from
    if source is None and mine.start_up:  # no record: what its log says
        source = mine.logged
        if not source:  # a log that names no branch: taken over only when nothing else is there
            return {p.name for p in mine.path.iterdir() if not p.name.startswith(LOCK_FILE)} == {"run.log"}
    if source is None:
        return False
    target = branch.path
    target = branch.latest.index if target.is_dir() and branch.latest is not None else target
    return target.is_file() and _same_place(Path(source), target.with_suffix(".json"))


def branch_hint(hint: str, index: Path | None, path: Path, allow_physics_change: bool) -> str:
    """The command that carries on a segment into ``path`` stopped before its first step: ``hint`` (its
    ``--resume``), but for a branch from the checkpoint ``index`` of another run, ``path`` holding no checkpoint
    of its own, the branch again (which :func:`_retries`; ``--resume`` refuses it: :func:`_resume_plan`)."""
    if index is None or " --resume " not in hint or same_run(index, path) or checkpoints.markers(path):
        return hint
    again = f"--restart {shlex.quote(str(index.with_suffix('.json')))}"
    return hint.replace(" --resume ", f" {again}{' --allow-physics-change' * allow_physics_change} ", 1)


def apply(planned: DirectoryPlan, path: Path) -> None:
    """Carry out ``planned`` in ``path`` (process 0, holding the lock, which made it): remove the old run's files."""
    if planned.why:
        get_logger().log(logging.WARNING if planned.warn else logging.INFO, "%s", planned.why)
    if not planned.clear:
        return
    for name in RUN_FILES:
        target = path / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                target.unlink(missing_ok=True)


def read_status(path: Path) -> dict[str, Any] | None:
    """The run's ``status.json`` as a dict, or None where there is none (or it cannot be read)."""
    try:
        status = json.loads((path / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def write_status(path: Path, state: str, step: int | None, t: float | None, code: int | None = None,
                 reason: str | None = None) -> None:
    """Replace ``status.json`` atomically (a reader never sees half a file). Process 0 only. ``reason``:
    why a failed run failed (the line its log ends with), or what an interrupted one did not do (``nothing new
    to checkpoint``), recorded as ``reason``.

    On a full disk the new file cannot be written; the old one is then overwritten in place (its
    blocks are already allocated), so a run that fails for lack of space still says so."""
    fields = {"state": state, "step": step, "time": t, "exit_code": code, "host": socket.gethostname(),
              "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    text = json.dumps({**fields, "reason": reason} if reason is not None else fields)
    target, tmp = path / STATUS_FILE, path / f".{STATUS_FILE}.tmp"
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
        return
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if err.errno not in FULL or not target.is_file():
            raise OutputWriteError(f"writing {target} failed: {describe_os_error(err)}") from err
        first = err
    try:
        with open(target, "r+") as fh:
            fh.write(text)
            fh.truncate()
    except OSError:
        raise OutputWriteError(f"writing {target} failed: {describe_os_error(first)}") from first
