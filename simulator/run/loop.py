"""The run loop: a jitted chunk of steps, then the writers whose schedule is due, then the next chunk.

The flow of one run: the validated config -> the runtime (processes, devices, mesh; set up by the
caller) -> :class:`~simulator.run.simulation.Simulation` (FFT backend, equation, parameters) -> the
initial state (or the checkpoint a restart continues from) -> per chunk: advance, agree on stop
requests and wall-clock triggers across processes, let every writer act (time series and spectra,
then a NaN/Inf check, then snapshots and checkpoints), choose the next dt, report progress. Python runs
only between chunks.
"""

from __future__ import annotations

import logging
import math
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from simulator import runtime
from simulator import spectra as spectra_mod
from simulator.config import Config, to_dict
from simulator.config.model import output_times
from simulator.equations import resolution
from simulator.errors import ConfigError
from simulator.log import get_logger
from simulator.output import checkpoints
from simulator.output.base import Moment, Schedule, Writer
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError, barrier, describe_os_error
from simulator.output.snapshots import SnapshotWriter
from simulator.output.spectra import SpectraWriter
from simulator.output.timeseries import TimeSeriesWriter
from simulator.run import rundir
from simulator.run.progress import Progress
from simulator.run import joblimits
from simulator.run.signals import EXIT_INTERRUPTED, StopRequest, agree
from simulator.run.simulation import Simulation
from simulator.time.control import Stepper


class NonFiniteError(RuntimeError):
    """A diagnostic became NaN or Inf."""


def git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def checkpoint_to_resume(cfg: Config, out: Path, restart: str, allow_physics_change: bool) -> checkpoints.Checkpoint:
    """The checkpoint a restart continues from, checked against this run's config (nothing is written)."""
    ckpt = checkpoints.find(out if restart == "latest" else Path(restart))
    if ckpt is None:
        raise ConfigError("--restart", restart, f"no complete checkpoint under {out}; start a new run instead",
                          "has nothing to resume")
    old = ckpt.meta["config"]
    if old["physics"]["name"] != cfg.physics.name:
        raise ConfigError("--restart", str(ckpt.index), f"this run solves {cfg.physics.name}",
                          f"holds a {old['physics']['name']} state")
    diffs = rundir.physics_changes(old, cfg)
    if _remapped(ckpt, cfg):  # another resolution: interpolated, into a new directory (its files hold one grid)
        if ckpt.index.parent.parent.resolve() == out.resolve():
            raise ConfigError("--restart", str(ckpt.index), f"a run on grid {list(cfg.grid.shape)} is a new run: "
                              f"branch it with --restart {ckpt.index.with_suffix('.json')} --out NEW_DIR",
                              f"holds grid {old['grid']['shape']}")
        if "grid.box" in diffs:
            raise ConfigError("--restart", str(ckpt.index), f"this run's grid.box is {list(cfg.grid.box)}",
                              f"holds a state in the box {old['grid']['box']}")
        diffs.remove("grid.shape")
    if diffs and not allow_physics_change:
        raise ConfigError("--restart", str(ckpt.index), "pass --allow-physics-change to continue with the new "
                          f"values (changed: {', '.join(diffs)})", "was written with other physics or grid")
    return ckpt


def _remapped(ckpt: checkpoints.Checkpoint, cfg: Config) -> bool:
    """Whether the checkpoint was written on another grid than ``cfg``'s (a restart that interpolates)."""
    return tuple(ckpt.meta["config"]["grid"]["shape"]) != tuple(cfg.grid.shape)


def run(cfg: Config, out: Path, mode: str, restart: str | None = None, allow_physics_change: bool = False,
        resume_hint: str = "") -> int:
    """Run ``cfg`` into ``out`` (already prepared); ``restart`` = "latest" or a checkpoint path.

    Returns 0 when finished, EXIT_INTERRUPTED when a signal or runtime.max_wall stopped it (after a
    checkpoint). Raises NonFiniteError, OutputWriteError, ConfigError (bad restart).
    """
    rank0 = jax.process_index() == 0
    ckpt = checkpoint_to_resume(cfg, out, restart, allow_physics_change) if restart is not None else None
    if ckpt is not None and Stepper(cfg.time, cfg.output.every).finished(ckpt.time):
        get_logger().info("%s already finished (step %d, t = %.6g): nothing to do", out, ckpt.step, ckpt.time)
        if rank0 and (rundir.read_status(out) or {}).get("state") != "finished" and out.exists():
            rundir.write_status(out, "finished", ckpt.step, ckpt.time, 0)
        return 0
    handler = None
    if rank0:  # the caller holds the run directory's lock (simulator.run.command)
        handler = _RunLog(out / "run.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        get_logger().addHandler(handler)

    def previous(step: int) -> checkpoints.Checkpoint | None:
        found = checkpoints.find(out, before=step)
        return None if found is None else checkpoint_to_resume(cfg, out, str(found.index), allow_physics_change)

    try:
        with StopRequest() as stop:
            return _run(cfg, out, mode, ckpt, resume_hint, stop, fallback=previous if restart == "latest" else None)
    except BaseException:
        if rank0:
            last = rundir.read_status(out) or {}
            try:
                rundir.write_status(out, "failed", last.get("step"), last.get("time"), 1)
            except OutputWriteError:  # e.g. the disk is full: the error being raised is the one to report
                pass
        raise
    finally:
        if handler is not None:
            get_logger().removeHandler(handler)
            handler.close()


class _RunLog(logging.FileHandler):
    """``run.log``; if it cannot be written (a full disk) it falls silent instead of printing a
    traceback per record: the failure that matters is reported by the writer that meets it."""

    def __init__(self, path: Path):
        super().__init__(path, delay=True)

    def handleError(self, record: logging.LogRecord) -> None:
        self.setLevel(logging.CRITICAL + 1)

    def close(self) -> None:
        try:
            super().close()
        except OSError:
            pass  # as above: what could not be written is lost, the run's own error is reported


def _metadata(cfg: Config, sim: Simulation, mode: str, ckpt: checkpoints.Checkpoint | None) -> dict[str, Any]:
    return {
        "config": to_dict(cfg), "versions": runtime.versions(), "git_revision": git_revision(),
        "process_mode": mode, "processes": jax.process_count(), "devices": jax.device_count(),
        "platform": jax.default_backend(), "layout": sim.fft.describe(),
        "slurm": runtime.slurm_environment(), "restart": None if ckpt is None else str(ckpt.index),
    }


def _log_header(cfg: Config, sim: Simulation, meta: dict[str, Any], log: logging.Logger | None = None) -> None:
    log = log or get_logger()
    log.info("run %s: %s on grid %s, box %s, %s, %s, dt %s, t_end %s", cfg.name, cfg.physics.name,
             list(cfg.grid.shape), [round(b, 6) for b in cfg.grid.box], cfg.precision, cfg.time.integrator,
             cfg.time.dt, cfg.time.t_end)
    log.info("physics: %s; initial: %s", to_dict(cfg.physics), to_dict(cfg.initial))
    log.info("devices: %d %s on %d process(es) (%s); %s", jax.device_count(), jax.default_backend(),
             jax.process_count(), meta["process_mode"], sim.fft.describe())
    log.info("versions: %s; git %s; slurm: %s", " ".join(f"{k}={v}" for k, v in meta["versions"].items()),
             meta["git_revision"], {k: v for k, v in meta["slurm"].items() if v} or "none")


def _writers(cfg: Config, sim: Simulation, meta: dict[str, Any], stepper: Stepper, out: Path,
             rank0: bool, log: logging.Logger | None = None) -> tuple[list[Writer], list[Writer],
                                                                     checkpoints.CheckpointWriter]:
    """The writers of a run: records (time series, spectra) come before the finiteness check, dumps
    (snapshots, checkpoints) after it. ``log``: where they report (default the package logger)."""
    log = log or get_logger()
    units = cfg.physics.units() or None  # the equation's unit system, if it has one
    records: list[Writer] = [TimeSeriesWriter(list(sim.info.diagnostics), rank0, cfg.physics.derived_columns)]
    spectra_schedule = Schedule.of(cfg.output.spectra)
    if spectra_schedule.periodic or spectra_schedule.at_end or spectra_schedule.times:
        records.append(SpectraWriter(spectra_schedule, spectra_mod.shell_wavenumbers(cfg.grid.shape, cfg.grid.box),
                                     rank0, sim.info.spectra, units, cfg.physics.time_coordinates))

    def snapshot_attrs(m: Moment) -> dict[str, Any]:
        return {"step": m.step, "time": m.time, "config": meta["config"], "versions": meta["versions"],
                "layout": meta["layout"], "box": list(cfg.grid.box), **cfg.physics.output_attrs(m.time)}

    info = sim.equation.field_info
    names = [n for n, f in info.items() if f.snapshot]
    dumps: list[Writer] = [SnapshotWriter(Schedule.of(cfg.output.snapshots), names, snapshot_attrs, cfg.grid.box,
                                          log.info, rank0, units, stacked=[n for n in names if info[n].stacked])]

    def save(m: Moment) -> Path:
        eq = sim.equation
        return checkpoints.write(out, m.state, step=m.step, time=m.time, dt=stepper.dt, epoch=stepper.epoch,
                                 spaces=eq.leaf_spaces(m.state), perm=sim.fft.perm,
                                 full_spectrum=not sim.fft.has_real_transform,
                                 meta={"config": meta["config"], "backend": cfg.fft.backend}, keep=cfg.checkpoint.keep)

    if cfg.particles:  # particle snapshots with the field's, and trajectories (simulator.output.particles)
        from simulator.particles.flow import particle_writers

        dumps.extend(particle_writers(cfg, sim, snapshot_attrs, log.info, rank0))
    ck = cfg.checkpoint
    saver = checkpoints.CheckpointWriter(Schedule(every=ck.every, dt=ck.dt, wall=ck.wall, at_end=True), save, log.info)
    dumps.append(saver)
    return records, dumps, saver


def _run(cfg: Config, out: Path, mode: str, ckpt: checkpoints.Checkpoint | None, resume_hint: str,
         stop: StopRequest, fallback: Callable[[int], checkpoints.Checkpoint | None] | None = None) -> int:
    log = get_logger()
    rank0 = jax.process_index() == 0
    if _stopped_before_first_step(cfg, stop, out, ckpt.step if ckpt else 0, ckpt.time if ckpt else None, resume_hint):
        return EXIT_INTERRUPTED
    sim = Simulation(cfg)
    sim.scratch = out  # a state read from another grid is staged here
    meta = _metadata(cfg, sim, mode, ckpt)
    _log_header(cfg, sim, meta)

    if ckpt is not None and _remapped(ckpt, cfg):
        state = sim.state_from_file(ckpt.index.with_suffix(".json"))
        meta["restart"] = str(ckpt.index)
    elif ckpt is not None:
        state, ckpt = _restore(ckpt, sim, fallback)
        meta["restart"] = str(ckpt.index)
    if ckpt is not None:
        step, t = ckpt.step, ckpt.time
        stepper = Stepper(cfg.time, cfg.output.every, step=step, t=t, dt=ckpt.dt, epoch=ckpt.epoch,
                          stops=output_times(cfg))
        changed = f"; time step now {stepper.dt:.6g}" if stepper.dt != ckpt.dt else ""
        log.info("resumed from %s: step %d, t = %.6g, dt = %.6g%s", ckpt.index.with_suffix(""), step, t, ckpt.dt,
                 changed)
    else:
        state, step, t = sim.initial_state(), 0, sim.start_time()
        stepper = Stepper(cfg.time, cfg.output.every, t=t, stops=output_times(cfg))
    if rank0:
        segments = out / "segments"
        number = len(list(segments.glob("segment_*.yaml")))
        text = yaml.safe_dump({**meta, "segment": number, "start_step": step}, sort_keys=False)
        for path in (segments / f"segment_{number:03d}.yaml", out / "config.yaml"):
            try:
                path.parent.mkdir(exist_ok=True)
                path.write_text(text)
            except OSError as err:
                raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        rundir.write_status(out, "running", step, t)

    records, dumps, saver = _writers(cfg, sim, meta, stepper, out, rank0)
    saver.last = None if ckpt is None else ckpt.index.with_suffix("")
    writers = [*records, *dumps]
    compute = {"diagnostics": lambda m: sim.report(m.state, m.dt, m.time),
               "spectra": lambda m: {k: np.asarray(jax.device_get(v)) for k, v in sim.spectra(m.state, m.time).items()},
               "fields": lambda m: sim.fields(m.state, t=m.time)}
    cells = math.prod(cfg.grid.shape)
    start_step = step
    progress = Progress(step, t, stepper.t_end)
    wall_start = time.monotonic()
    warned = False
    try:
        for w in writers:
            w.open(out, None if ckpt is None else ckpt.step)
        if ckpt is None:
            first = Moment(step, t, stepper.dt, -math.inf, state, compute)
            for w in records:  # t = 0: a time-series row always, spectra and snapshots when periodic
                if w is records[0] or w.at_start():
                    w.write(first)
            _check_finite(first, saver)
            warned = _warn_resolution(first, warned, log)
            for w in dumps:
                if w.at_start():
                    w.write(first)
            stepper.adapt(first.get("diagnostics").get(sim.info.cfl or "", 0.0))
        if _stopped_before_first_step(cfg, stop, out, step, t, resume_hint):
            return EXIT_INTERRUPTED
        last_chunk_s, dumps_s, chunks = 0.0, 0.0, 0
        job = joblimits.job_signal() if rank0 else None  # the Slurm job's --signal, to check its lead time
        if job is not None and (advice := joblimits.limit_warning(*job)):
            log.warning("%s", advice)
        while not stepper.finished(t):
            chunk_start = time.monotonic()
            n, dt = stepper.next_chunk(t, step)
            state = sim.advance(state, n, dt, t, donate=True)
            t_prev, step = t, step + n
            t = stepper.time_after(step, t, n, dt)
            finished = stepper.finished(t)
            limit = cfg.runtime.max_wall
            near_limit = bool(limit) and time.monotonic() - wall_start + 2 * last_chunk_s + 5.0 > limit
            flags = agree([stop.code(), int(near_limit), *(int(w.wall_pending()) for w in writers)])
            signal_name, stopping = StopRequest.name(flags[0]), bool(flags[0] or flags[1]) and not finished
            m = Moment(step, t, dt, t_prev, state, compute, final=finished, stopping=stopping,
                       wall_due=frozenset(w.name for w, f in zip(writers, flags[2:], strict=True) if f))
            for w in records:
                w.maybe_write(m)
            _check_finite(m, saver)
            warned = _warn_resolution(m, warned, log)
            dumps_start = time.monotonic()
            for w in dumps:
                w.maybe_write(m)
            dumps_s = max(dumps_s, time.monotonic() - dumps_start)
            stepper.adapt(m.get("diagnostics").get(sim.info.cfl or "", 0.0))
            progress.update(step, t)
            diag = m.get("diagnostics")
            shown = " ".join(f"{k}={diag[k]:.6g}" for k in sim.info.progress if k in diag)
            log.info("step %d t=%.4f dt=%.3g %s %s", step, t, dt, shown, progress.describe(cells))
            if rank0:
                rundir.write_status(out, "running", step, t)
            last_chunk_s, chunks = time.monotonic() - chunk_start, chunks + 1
            if job is not None and chunks == 2:  # the first chunk compiled; the second is a steady one
                advice = joblimits.lead_warning(*job[:2], chunk_s=last_chunk_s - dumps_s, checkpoint_s=dumps_s)
                if advice:
                    log.warning("%s", advice)
            if stopping:
                why = signal_name or f"runtime.max_wall = {cfg.runtime.max_wall:g} s"
                if stop.count > 1:
                    why += f" (received {stop.count} times; acted on once)"
                log.warning("stopped by %s at step %d, t = %.6g after writing a checkpoint; resume with: %s",
                            why, step, t, resume_hint or f"simulator run CONFIG --resume --out {out}")
                if rank0:
                    rundir.write_status(out, "interrupted", step, t, EXIT_INTERRUPTED)
                # srun --kill-on-bad-exit ends every task once one exits 75: nobody leaves before all is written
                barrier("interrupted")
                return EXIT_INTERRUPTED
        if rank0:
            rundir.write_status(out, "finished", step, t, 0)
    finally:
        failures = []
        for w in writers:
            try:
                w.close()
            except OutputWriteError as err:
                failures.append(err)
    if failures:
        raise failures[0]
    first_chunk = f"; first chunk {progress.first_chunk_s:.1f} s with compilation" if progress.first_chunk_s else ""
    log.info("finished: this segment %d steps in %.1f s (%d compilation(s)%s); run total %d steps, t = %.6g; "
             "output in %s", step - start_step, progress.elapsed, sim.traces, first_chunk, step, t, out)
    return 0


def _stopped_before_first_step(cfg: Config, stop: StopRequest, out: Path, step: int, t: float | None,
                               resume_hint: str) -> bool:
    """Whether a stop signal came before this segment's first step (start-up, compilation, the t = 0
    outputs): nothing new has been computed, so nothing is checkpointed; the run is marked interrupted
    (exit 75) and ``--resume`` starts it again from where it stood (a new run's resolved config is
    recorded, so that ``--resume`` knows the directory as this config's). Agreed by all processes."""
    flag = agree([stop.code()])[0]
    if not flag:
        return False
    get_logger().warning("stopped by %s before the first step (at step %d): nothing new to checkpoint; resume "
                         "with: %s", StopRequest.name(flag), step, resume_hint or f"simulator run CONFIG --resume --out {out}")
    if jax.process_index() == 0:
        if not (out / "config.yaml").exists():
            (out / "config.yaml").write_text(yaml.safe_dump({"config": to_dict(cfg)}, sort_keys=False))
        rundir.write_status(out, "interrupted", step, t, EXIT_INTERRUPTED)
    barrier("interrupted")
    return True


def _restore(ckpt: checkpoints.Checkpoint, sim: Simulation,
             fallback: Callable[[int], checkpoints.Checkpoint | None] | None) -> tuple[Any, checkpoints.Checkpoint]:
    """The state of ``ckpt`` laid out for ``sim``. Data that fails its checksum (or cannot be read)
    is damage: every process agrees on it, and the run continues from ``fallback(step)``, the
    previous intact checkpoint, with a warning naming the damaged file; IncompleteOutputError when
    there is none (or no fallback: a checkpoint given by path)."""
    template = sim.zero_state()  # the layout and shardings a restored state must have
    spaces = sim.equation.leaf_spaces(template)
    while True:
        try:
            state, failed = checkpoints.restore(ckpt, template, sim.fft, spaces), None
        except (OSError, RuntimeError) as err:  # h5py: a block failed its checksum or could not be read
            state, failed = None, err
        if agree([int(failed is not None)])[0] == 0:
            return state, ckpt
        where = (checkpoints.damage(ckpt) if jax.process_index() == 0 else None) or f"{ckpt.index}: {failed}"
        previous = fallback(ckpt.step) if fallback is not None else None
        if previous is None:
            raise IncompleteOutputError(f"checkpoint {ckpt.index.with_suffix('')} is damaged ({where}) and there "
                                        "is no earlier intact checkpoint to restart from")
        get_logger().warning("checkpoint %s is damaged (%s): restarting from the previous one, %s",
                             ckpt.index.with_suffix(""), where, previous.index.with_suffix(""))
        ckpt = previous


def _warn_resolution(m: Moment, warned: bool, log: logging.Logger) -> bool:
    """Warn once per segment when a resolution diagnostic (k_max eta, ...) drops below its threshold;
    True once warned."""
    low = [] if warned else resolution.under_resolved(m.get("diagnostics"))
    if low:
        log.warning("under-resolved at step %d, t = %.6g: %s; the smallest scales are not resolved by the grid "
                    "(refine grid.shape, or raise the viscosity/diffusivity)", m.step, m.time,
                    ", ".join(f"{name} = {value:.3g} < {limit:g}" for name, value, limit in low))
    return warned or bool(low)


def _check_finite(m: Moment, saver: checkpoints.CheckpointWriter) -> None:
    diag = m.get("diagnostics")
    bad = [k for k, v in diag.items() if not math.isfinite(v)]
    if bad:
        raise NonFiniteError(f"{', '.join(bad)} became non-finite at step {m.step}, t = {m.time:.6g}; last good "
                             f"checkpoint: {saver.last or 'none'}")
