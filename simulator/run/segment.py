"""One segment of one run: everything a run directory gets between a start (or resume) and a stop.

A run is a sequence of segments (one per ``simulator run``, ``--resume`` or requeued job). A
:class:`Segment` owns, for its directory: the plan (made before JAX starts, so that a refused run
changes nothing) and the lock (process 0; the plan made again under it, then carried out), the
checkpoint it continues from (falling back past a damaged one), ``run.log`` and the header, the
``segments/`` record and ``config.yaml``, the :class:`~simulator.time.control.Stepper`, the writers,
the progress lines and ``status.json``. Drivers only advance states: :func:`simulator.run.loop.run`
drives one segment over one state, :mod:`simulator.run.ensemble` drives K over one batched state. Both
call the same methods in the same order, so a status field, an output or a restart rule is added here
once and holds for single runs and ensemble members alike.

The calls, on every process::

    prepare(...)                  before JAX: plan the directory, refuse bad input
    take(options)                 process 0, holding the lock: plan again, then clear or keep files
    -- the runtime starts --
    resolve()                     the checkpoint to continue from (None: a new run), checked
    finished_already()            a checkpoint at t_end: record it, nothing to run
    open_log(); interrupted_before_first_step(flag) ...
    begin(sim, mode, initial)     header, state (restored, remapped or initial), record, writers
    record(moment, first=True)    the outputs of a trajectory's start: a new run's t = 0, a branch's first time
    record(moment)                after every chunk (raises NonFiniteError)
    stop(why) / finish(...) / fail(err)  the outcome in status.json (a failure's reason too)
    close()                       writers, run.log and lock released, whatever happened
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import yaml

from simulator import equations
from simulator.config import Config, to_dict
from simulator.equations import resolution
from simulator.errors import ConfigError
from simulator.log import ONCE, RunLog, get_logger
from simulator.output import checkpoints, contents, rows, segments
from simulator.output.base import Moment, Writer, landing_times
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError
from simulator.run import records, restart as restarts, rundir, superseded
from simulator.run.failures import FAILURES, NonFiniteError, check_diagnostics, describe_failure
from simulator.run.lock import RunLock
from simulator.run.progress import Progress
from simulator.run.signals import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, NOTHING_NEW, StopRequest, agree
from simulator.run.simulation import Simulation
from simulator.run.states import abstract_state
from simulator.time.control import Stepper

__all__ = ["EXIT_FAILED", "EXIT_OK", "Segment"]


#: seconds of wall time between the ``status.json`` updates of a running segment: a rewrite per chunk cost
#: 0.6 ms of a 9 ms chunk at 32^3 (a fifth of its Python time); the start and the end are always written
STATUS_EVERY = 2.0


class Segment:
    """One segment of the run in directory ``out`` (see the module docstring for the order of calls).

    ``log``: where its lines go (an ensemble member's own logger; default the package logger);
    ``resume_hint``: the command that resumes it, for the stop messages; ``note``: a line logged after
    the header (an ensemble member says which batched program it belongs to); ``extra_meta``: added to
    its segment record; ``started``: the time.monotonic() of the command's start (``runtime.max_wall``'s origin)."""

    def __init__(self, cfg: Config, out: Path, *, log: logging.Logger | None = None, resume_hint: str = "",
                 allow_physics_change: bool = False, note: str = "", extra_meta: dict[str, Any] | None = None,
                 started: float | None = None):
        self.cfg, self.out, self.log = cfg, Path(out), log or get_logger()
        self.started = time.monotonic() if started is None else started  # what runtime.max_wall counts from
        self.resume_hint = resume_hint or f"simulator run CONFIG --resume --out {out}"
        self.allow_physics_change, self.note, self.extra_meta = allow_physics_change, note, extra_meta or {}
        self.plan: rundir.DirectoryPlan | None = None
        self.resume = False  # --resume was asked (prepare)
        self.lock = RunLock(self.out)
        self.ckpt: checkpoints.Checkpoint | None = None
        self.branch = False  # the checkpoint is another run's: this directory's trajectory starts from it (begin)
        self.stepper: Stepper | None = None
        self.step: int | None = 0
        self.t: float | None = 0.0
        self.start_step = 0
        self.meta: dict[str, Any] = {}
        self.records: list[Writer] = []
        self.dumps: list[Writer] = []
        self.saver: checkpoints.CheckpointWriter | None = None
        self.progress: Progress | None = None
        self.outcome: str | None = None  # finished, failed, interrupted, refused; None while it runs
        self.code: int | None = None
        self._warned: set[str] = set()  # the resolution diagnostics warned about
        self._handler: RunLog | None = None
        self._status_written = -math.inf  # time.monotonic() of the last running status.json

    # ---- the directory, before and under the lock -------------------------------------------------

    def prepare(self, plan: rundir.DirectoryPlan, *, resume: bool = False) -> str | None:
        """Take the directory's ``plan`` (:func:`simulator.run.preflight.check`, made by every process before JAX
        starts: bad input was refused there and nothing touched). Returns why there is nothing to do (a finished
        run), else None."""
        self.resume = resume
        self.plan = plan
        if self.plan.done:
            self.outcome, self.code = "finished", EXIT_OK
        return self.plan.done

    def acquire(self) -> None:
        """Process 0: this directory's lock (before anything is removed: a live run is never touched)."""
        self.lock.acquire()

    def take(self, *, overwrite: bool = False, restart: str | None = None, resume: bool = False) -> str | None:
        """Process 0, holding the lock: plan again (the directory may have changed meanwhile) and carry
        the plan out (the only place a run's files are removed). Returns why there is nothing to do."""
        self.plan = rundir.plan(self.cfg, self.out, overwrite=overwrite, restart=restart, resume=resume)
        if self.plan.done:
            self.outcome, self.code = "finished", EXIT_OK
            return self.plan.done
        rundir.apply(self.plan, self.out)
        return None

    @property
    def running(self) -> bool:
        return self.outcome is None

    # ---- start -------------------------------------------------------------------------------------

    def resolve(self) -> None:
        """The checkpoint this segment continues from (all processes, once the directory is prepared)."""
        plan, self.ckpt = self.plan, None
        if plan is not None and plan.restart is not None and plan.source is not None:  # read again: damage is logged
            self.ckpt = restarts.checkpoint_to_resume(self.cfg, self.out, plan.restart,
                                                      contents.read(plan.source.path, warn=True),
                                                      self.allow_physics_change, resume=self.resume)

    def finished_already(self) -> bool:
        """Whether the checkpoint to continue from has reached t_end: then the run is recorded finished."""
        if self.ckpt is None or not Stepper(self.cfg.time, self.cfg.output.chunk).finished(self.ckpt.time):
            return False
        self.log.info("%s already finished (step %d, t = %.6g): nothing to do", self.out, self.ckpt.step,
                      self.ckpt.time)
        self.step, self.t = self.ckpt.step, self.ckpt.time
        record = (rundir.read_status(self.out) or {}).get("state") != "finished" and self.out.exists()
        self.end("finished", EXIT_OK, status=record)
        return True

    def open_log(self) -> None:
        """``run.log`` (process 0): every line this segment logs from now on is appended to it, a branch's first naming
        the checkpoint it branches from (what a retry or ``--resume`` of its start-up reads:
        :mod:`simulator.output.contents`)."""
        if jax.process_index() == 0 and self._handler is None:
            self._handler = RunLog(self.out / "run.log")
            self.log.addHandler(self._handler)
            if self.ckpt is not None and not rundir.same_run(self.ckpt.index, self.out):
                self.log.info("%s", contents.branching(self.ckpt.index))

    def interrupted_before_first_step(self, flag: int) -> bool:
        """A stop signal (``flag``, agreed by all processes) before this segment's first step: nothing
        new has been computed, so nothing is checkpointed; the run is marked interrupted (exit 75) and
        ``--resume`` starts it again from where it stood, a branch's hint the branch again (a new run's resolved
        config is recorded, so that ``--resume`` knows the directory as this config's)."""
        if not flag:
            return False
        if self.stepper is not None:  # after the t = 0 outputs
            step, t = self.step, self.t
        else:  # before the state exists: where the run stood (a new run's time is not known yet)
            step, t = (self.ckpt.step, self.ckpt.time) if self.ckpt is not None else (0, None)
        self.log.warning("stopped by %s before the first step (at step %d): %s; resume with: %s",
                         StopRequest.name(flag), step, NOTHING_NEW, rundir.branch_hint(
                             self.resume_hint, self.ckpt and self.ckpt.index, self.out, self.allow_physics_change),
                         extra=ONCE)
        if jax.process_index() == 0 and not (self.out / "config.yaml").exists():
            (self.out / "config.yaml").write_text(yaml.safe_dump({"config": to_dict(self.cfg)}, sort_keys=False))
        self.step, self.t = step, t
        self.end("interrupted", EXIT_INTERRUPTED, reason=NOTHING_NEW)  # the job script says what the run did
        return True

    def begin(self, sim: Simulation, mode: str, initial: Callable[[], tuple[Any, float]],
              fallback: bool | None = None) -> Any:
        """Log the header, make the state (the checkpoint's, interpolated from another grid's, or ``initial()`` =
        (state, start time) for a new run), record the segment, open the writers; particles that found no slot
        there raise NonFiniteError, no row cut back. Returns the state. ``fallback``: fall back past a damaged
        checkpoint (default: when resuming this directory's latest, not a checkpoint named by path)."""
        cfg = self.cfg
        self.meta = {**records.metadata(cfg, sim, mode, self.ckpt), **self.extra_meta}
        records.log_header(cfg, sim, self.meta, self.log)
        if self.note:
            self.log.info("%s", self.note)
        sim.scratch = self.out  # a state read from another grid is staged here
        ckpt = self.ckpt
        # another grid's checkpoint, or one without leaves this run's state has (a multistep scheme's history, resumed
        # from a scheme's that keeps none): the state from its fields, the history none held (the start step)
        if ckpt is not None and (restarts.on_other_grid(ckpt, cfg) or (
                sim.scheme.tableau is not None and restarts.lacks(ckpt, checkpoints.leaf_names(abstract_state(sim))))):
            state = sim.state_from_file(ckpt.index.with_suffix(".json"))
        elif ckpt is not None:
            latest = self.plan is not None and self.plan.restart == "latest"
            state, ckpt = self._restore(ckpt, sim, latest if fallback is None else fallback)
        else:
            state, self.t = initial()
        if ckpt is not None:
            self.ckpt, self.meta["restart"] = ckpt, records.source_of(ckpt)
            self.branch = not rundir.same_run(ckpt.index, self.out)
            self.step, self.t = ckpt.step, ckpt.time
            self.stepper = Stepper(cfg.time, cfg.output.chunk, step=self.step, t=self.t, dt=ckpt.dt,
                                   epoch=ckpt.epoch)
            changed = restarts.changes(ckpt, cfg, self.stepper.dt)
            self.log.info("resumed from %s: step %d, t = %.6g, dt = %.6g%s", ckpt.index.with_suffix(""), self.step,
                          self.t, ckpt.dt, changed)
        else:
            self.step = 0
            self.stepper = Stepper(cfg.time, cfg.output.chunk, t=self.t)
        self.start_step = self.step
        self.records, self.dumps, self.saver = records.writers(cfg, sim, self.meta, self.stepper, self.out,
                                                       jax.process_index() == 0, self.log)
        # one route from the outputs' schedules to the time stepping: chunks end on what they ask for
        self.stepper.land_on(landing_times([w.schedule for w in self.writers if w.lands], cfg.time.t_end))
        self.saver.last = None if ckpt is None else ckpt.index.with_suffix("")
        self.progress = Progress(self.step, self.t, self.stepper.t_end)
        # nothing of the run being restarted changes until its files are open, this segment recorded and its particles
        # handed out with none lost: then its derived files are set aside, then the rows past the checkpoint dropped
        with rows.staged():
            superseded.set_derived_aside(self.out, None if ckpt is None else ckpt.step, jax.process_index() == 0)
            kept = None if ckpt is None else ckpt.step - int(self.branch)  # a branch tried again: its start anew
            for w in self.writers:
                w.open(self.out, kept)
            if jax.process_index() == 0:
                segments.write_record(self.out, self.meta, self.step)
                superseded.warn_superseded(self.out, None if ckpt is None else ckpt.step)
                rundir.write_status(self.out, "running", self.step, self.t)
            if (loss := sim.equation.lost(state)) is not None:
                raise NonFiniteError(loss.message(self.step, self.t, str(self.saver.last or "none")))
        return state

    @property
    def starts(self) -> bool:
        """Whether this segment's first state is recorded (``record(moment, first=True)``): a new run's, a branch's
        from another run's checkpoint; not a restart's or resume's, whose directory holds it."""
        return self.ckpt is None or self.branch

    @property
    def writers(self) -> list[Writer]:
        return [*self.records, *self.dumps]

    def _restore(self, ckpt: checkpoints.Checkpoint, sim: Simulation,
                 fallback: bool) -> tuple[Any, checkpoints.Checkpoint]:
        """The state of ``ckpt`` laid out for ``sim``. Data that fails its checksum (or cannot be read)
        is damage: every process agrees on it, and with ``fallback`` the run continues from the previous
        intact checkpoint, with a warning naming the damaged file; IncompleteOutputError when there is
        none (or no fallback: a checkpoint given by path)."""
        template = abstract_state(sim)  # the layout and shardings a restored state must have (nothing allocated)
        spaces = sim.equation.leaf_spaces(template)
        while True:
            try:
                state, failed = checkpoints.restore(ckpt, template, sim.fft, spaces, sim.equation.reslot), None
            except (OSError, RuntimeError) as err:  # h5py: a block failed its checksum or could not be read
                state, failed = None, err
            if agree([int(failed is not None)])[0] == 0:
                return state, ckpt
            where = (checkpoints.damage(ckpt) if jax.process_index() == 0 else None) or f"{ckpt.index}: {failed}"
            found = checkpoints.find(self.out, before=ckpt.step) if fallback else None
            previous = None if found is None else restarts.checkpoint_to_resume(
                self.cfg, self.out, str(found.index), contents.read(found.index, warn=True), self.allow_physics_change)
            if previous is None:
                raise IncompleteOutputError(f"checkpoint {ckpt.index.with_suffix('')} is damaged ({where}) and "
                                            "there is no earlier intact checkpoint to restart from")
            self.log.warning("checkpoint %s is damaged (%s): restarting from the previous one, %s",
                             ckpt.index.with_suffix(""), where, previous.index.with_suffix(""))
            ckpt = previous

    # ---- at chunk ends ----------------------------------------------------------------------------

    def record(self, moment: Moment, *, first: bool = False, state: Callable[[], Any] | None = None,
               cells: int = 0, progress: tuple[str, ...] = ()) -> None:
        """Every writer due at ``moment`` (records, then the check of NaN/Inf and the equation's bounds, which raises
        NonFiniteError, then snapshots and checkpoints), the resolution warning, and (after a chunk)
        the progress line and status. ``first``: the outputs of a trajectory's start (:attr:`starts`). ``state()``: the
        state, when ``moment`` holds none (an ensemble member's is taken from the batch only when a dump needs
        it); ``progress``: the diagnostics shown on the progress line."""
        if first:
            due = [w for w in self.records if w.at_start(moment.time)]  # the time series always (its own at_start)
            dumps = [w for w in self.dumps if w.at_start(moment.time)]
        else:
            self.step, self.t = moment.step, moment.time
            due, dumps = self.records, [w for w in self.dumps if w.due(moment)]
        for w in due:
            w.write(moment) if first else w.maybe_write(moment)
        check_diagnostics(moment.get("diagnostics"), equations.registry()[self.cfg.physics.name], moment.step,
                          moment.time, str(self.saver.last or "none"))
        self._warn_resolution(moment)
        if dumps and moment.state is None and state is not None:
            moment.state = state()
        for w in dumps:
            w.write(moment) if first else w.maybe_write(moment)
        if first:
            return
        diag = moment.get("diagnostics")
        (self.progress.mark if moment.within else self.progress.update)(self.step, self.t)
        shown = " ".join(f"{k}={diag[k]:.6g}" for k in progress if k in diag)
        self.log.info("step %d t=%.4f dt=%.3g %s %s", self.step, self.t, moment.dt, shown,
                      self.progress.describe(cells))
        now = time.monotonic()
        due = now - self._status_written >= STATUS_EVERY
        if jax.process_index() == 0 and not (moment.final or moment.stopping) and due:
            rundir.write_status(self.out, "running", self.step, self.t)
            self._status_written = now

    def _warn_resolution(self, moment: Moment) -> None:
        """Warn once per segment and diagnostic when a resolution diagnostic (k_max eta, psi_tail, ...) crosses
        its limit, with what its equation advises."""
        crossed = [c for c in resolution.under_resolved(moment.get("diagnostics")) if c.name not in self._warned]
        if crossed:
            info = equations.registry()[self.cfg.physics.name]
            advice = "; ".join(dict.fromkeys(info.advice(c.name) for c in crossed if info.advice(c.name)))
            self.log.warning("under-resolved at step %d, t = %.6g: %s; the smallest scales are not resolved by the "
                             "grid%s", moment.step, moment.time, ", ".join(map(str, crossed)),
                             f" ({advice})" if advice else "", extra=ONCE)  # every process has the same
            self._warned.update(c.name for c in crossed)

    # ---- the end ----------------------------------------------------------------------------------

    def stop(self, why: str, count: int = 1) -> None:
        """Stopped (a signal, ``runtime.max_wall``) after its checkpoint was written: exit 75."""
        if count > 1:
            why += f" (received {count} times; acted on once)"
        self.log.warning("stopped by %s at step %d, t = %.6g after writing a checkpoint; resume with: %s", why,
                         self.step, self.t, self.resume_hint, extra=ONCE)
        self.end("interrupted", EXIT_INTERRUPTED)

    def finish(self, compilations: str) -> None:
        """Reached t_end: the closing line (``compilations``: what the driver compiled) and the status."""
        first = self.progress.first_chunk_s
        first_chunk = f"; first chunk {first:.1f} s" if first else ""
        self.log.info("finished: this segment %d steps in %.1f s (%s%s); run total %d steps, t = %.6g; output in %s",
                      self.step - self.start_step, self.progress.elapsed, compilations, first_chunk, self.step,
                      self.t, self.out)
        self.end("finished", EXIT_OK)

    def fail(self, err: BaseException | None = None) -> None:
        """Failed (NaN/Inf, a write that failed, an unexpected error ``err``): status ``failed`` with the
        reason, exit 1. The error is logged in ``run.log``, and on the console when it is one of the run's
        own (:data:`FAILURES`: one line); any other the caller reports there itself (bad input in one line,
        an unexpected error with its traceback, which ``run.log`` gets too)."""
        reason = None if err is None else describe_failure(err)
        if err is not None:
            if jax.process_index() == 0 and self.out.is_dir():
                self.open_log()  # a failure before the segment's first line still leaves its reason there
            if isinstance(err, FAILURES):
                self.log.error("%s", reason)
            elif self._handler is not None:
                self._handler.alone(self.log, reason, None if isinstance(err, ConfigError) else err)
        if not self.running:
            return
        if self.stepper is None:  # failed before it began: the status keeps where the run stood
            last = (rundir.read_status(self.out) or {}) if jax.process_index() == 0 else {}
            self.step, self.t = last.get("step"), last.get("time")
        try:
            self.end("failed", EXIT_FAILED, reason=reason)
        except OutputWriteError:  # e.g. the disk is full: the error being reported is the one that matters
            pass

    def end(self, outcome: str, code: int, status: bool = True, reason: str | None = None) -> None:
        """Close the writers and record the outcome in ``status.json`` (process 0), with ``reason`` (why it
        failed). A writer that fails to close (its last data not written) makes the segment failed, that
        failure its reason: raised after all are closed."""
        failures = self._close_writers()
        self.outcome, self.code = ("failed", EXIT_FAILED) if failures else (outcome, code)
        if failures:
            reason = reason or str(failures[0])
        if status and jax.process_index() == 0 and self.out.exists():
            rundir.write_status(self.out, self.outcome, self.step, self.t, self.code, reason)
        if failures:
            raise failures[0]

    def _close_writers(self) -> list[OutputWriteError]:
        writers, self.records, self.dumps = self.writers, [], []
        failures = []
        for w in writers:
            try:
                w.close()
            except OutputWriteError as err:
                failures.append(err)
        return failures

    def close(self) -> None:
        """Release what the segment holds, whatever happened: writers, ``run.log``, the lock."""
        self._close_writers()
        if self._handler is not None:
            self.log.removeHandler(self._handler)
            self._handler.close()
            self._handler = None
        self.lock.release()
