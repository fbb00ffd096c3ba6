"""Ensembles: several runs of one structure (:mod:`simulator.ensemble`) as ONE batched program.

The members' states are stacked along a leading member axis (unsharded: every device holds its
blocks of every member), their traced parameters, times, step counts and time steps are ``(K,)``
vectors, and the chunk is ``jax.vmap`` of :meth:`Simulation.chunk` over members (the FFT primitive
batches: :mod:`simulator.fft.linear`): one compilation for the whole group, one program in flight.

Each member is still a run of its own: it has its own run directory, written exactly as a separate
``simulator run`` writes it (``config.yaml``, ``segments/``, ``run.log``, ``timeseries.csv``,
``spectra.h5``, snapshots, checkpoints, ``status.json``; the writers are the run loop's), its own
:class:`~simulator.time.control.Stepper` and therefore its own chunk lengths and time step, fixed or
adaptive (CFL), so a member reproduces its separate run; ``--resume`` continues every member from its
own latest checkpoint, whatever step each reached. The batched chunk takes each member's step count:
a member that has finished, failed or has fewer steps left gets fewer (zero), and its lanes are held
unchanged by the batched loop (``vmap`` of a loop with a per-member trip count runs the longest and
masks the others, so a finished member still costs its share of each chunk until the group ends).

A member whose diagnostics become NaN/Inf is marked failed (its ``status.json`` says so, exit code 1,
the error in its ``run.log``) and its writers close; the others go on. A stop request (signal,
``runtime.max_wall``) stops every member after a checkpoint (exit 75). Diagnostics and spectra are
computed for all members in one batched call per chunk.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from simulator import ensemble as grouping
from simulator.config import Config
from simulator.config.model import output_times
from simulator.errors import ConfigError, RuntimeSetupError
from simulator.log import LOGGER_NAME, get_logger, setup_logging
from simulator.output import checkpoints
from simulator.output.base import Moment
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError, barrier, describe_os_error
from simulator.run import loop, rundir
from simulator.run.lock import RunLock
from simulator.run.progress import Progress
from simulator.run.signals import EXIT_INTERRUPTED, StopRequest, agree
from simulator.run.simulation import Simulation
from simulator.time.control import Stepper
from simulator.time.integrators import CHUNK_COMPILER_OPTIONS

EXIT_OK, EXIT_FAILED = 0, 1


class Member:
    """One run of an ensemble: config, directory, time stepping, writers, log and outcome."""

    def __init__(self, index: int, cfg: Config, out: Path):
        self.index, self.cfg, self.out = index, cfg, out
        self.plan: rundir.Plan | None = None
        self.ckpt: checkpoints.Checkpoint | None = None
        self.step, self.t = 0, 0.0
        self.outcome: str | None = None  # finished, failed, interrupted (None while it runs)
        self.code: int | None = None
        self.log = logging.getLogger(f"{LOGGER_NAME}.member{index}")
        self.log.propagate = False  # its lines go to its run.log; warnings also to the console, named
        self.log.handlers.clear()
        console = logging.StreamHandler()
        console.setLevel(logging.WARNING)
        console.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [{out.name}] %(message)s", "%H:%M:%S"))
        self.log.addHandler(console)
        self.log.setLevel(logging.INFO)
        self.lock = RunLock(out)
        self.writers: list[Any] = []

    @property
    def running(self) -> bool:
        return self.outcome is None

    def end(self, outcome: str, code: int, status: bool = True) -> None:
        """Close the member's outputs and record its outcome (status.json on process 0)."""
        writers, self.writers = self.writers, []
        for w in writers:
            w.close()
        self.outcome, self.code = outcome, code
        if status and jax.process_index() == 0:
            rundir.write_status(self.out, outcome, self.step, self.t, code)
        self.release()

    def release(self) -> None:
        for h in [h for h in self.log.handlers if isinstance(h, logging.FileHandler)]:
            self.log.removeHandler(h)
            h.close()
        self.lock.release()


def run_configs(cfgs: Sequence[Config], outs: Sequence[str | Path | None] | None = None, *, resume: bool = False,
                overwrite: bool = False) -> list[int]:
    """Run ``cfgs`` (one structure: see :mod:`simulator.ensemble`) as one batched ensemble, each into its
    directory (default ``output.dir`` or ``outputs/<name>``). ``resume``: continue each member from its
    latest checkpoint, or start it (finished members return 0 at once). Returns each member's exit
    status (0, 1 or 75). Bad input raises ConfigError before anything is written.

    Each directory goes through what :func:`simulator.run.command.run_config` does for one run: planned
    before JAX starts (a refusal changes nothing), then every member's lock is taken by process 0, the
    plans are made again under the locks, and only then is anything removed.
    """
    if not cfgs:
        raise ConfigError("ensemble", [], "give at least one config", "is empty")
    outs = list(outs) if outs is not None else [None] * len(cfgs)
    dirs = [rundir.output_dir(cfg, None if o is None else str(o)) for cfg, o in zip(cfgs, outs, strict=True)]
    for i, cfg in enumerate(cfgs[1:], 1):
        diffs = grouping.differences(cfgs[0], cfg)
        if diffs:
            raise ConfigError(f"ensemble member {i}: {diffs[0]}", _value(cfg, diffs[0]), "members of one ensemble "
                              f"may differ only in traced values (member 0 has {_value(cfgs[0], diffs[0])!r})",
                              "changes the compiled program")
    if len({str(d.resolve()) for d in dirs}) != len(dirs):
        raise ConfigError("ensemble", [str(d) for d in dirs], "give every member its own directory", "repeats one")
    members = [Member(i, cfg, out) for i, (cfg, out) in enumerate(zip(cfgs, dirs, strict=True))]
    options = {"overwrite": overwrite, "resume": resume}
    for m in members:  # every process, before JAX starts: a refused member changes nothing
        m.plan = rundir.plan(m.cfg, m.out, **options)
        if m.plan.restart is not None:
            m.ckpt = loop.checkpoint_to_resume(m.cfg, m.out, m.plan.restart, False)
        elif not m.plan.done:
            m.cfg.initial.check_start(m.cfg)
    index, _ = rundir.process_position(cfgs[0])
    setup_logging(index)
    for m in members:
        if m.plan.done:
            get_logger().info("%s", m.plan.done)
            m.outcome, m.code = "finished", EXIT_OK
    try:
        if index == 0:
            _take_directories(members, options)
        from simulator.run.command import exit_now_if_distributed, start

        if any(m.running for m in members):
            mode = start(cfgs[0])
            if jax.process_index() != index:
                raise RuntimeSetupError(f"this process was expected to be process {index} of its run, JAX made it "
                                        f"process {jax.process_index()}")
            with StopRequest() as stop:
                _run(members, mode, stop)
    except (ConfigError, RuntimeSetupError):  # refused (a live run holds a directory): nobody wrote anything
        for m in members:
            m.outcome = m.outcome or "refused"
            m.release()
        raise
    except (OutputWriteError, IncompleteOutputError) as err:
        get_logger().error("%s", err)
        for m in members:
            if m.running:
                m.log.error("%s", err)
                m.end("failed", EXIT_FAILED)
    finally:
        for m in members:
            if m.running:  # an unexpected error: every member still running failed with it
                m.end("failed", EXIT_FAILED)
            m.release()
    codes = [int(m.code) for m in members]  # type: ignore[arg-type]
    worst = max(codes, key=lambda c: (c == EXIT_INTERRUPTED, c != 0))
    if worst:
        exit_now_if_distributed(worst)
    return codes


def _take_directories(members: list[Member], options: dict[str, bool]) -> None:
    """Process 0: every pending member's lock before anything is removed (a live run is never touched),
    its plan made again under the lock (the directory may have changed), then the plans carried out."""
    pending = [m for m in members if m.running]
    for m in pending:
        m.lock.acquire()
    for m in pending:
        m.plan = rundir.plan(m.cfg, m.out, **options)
        if m.plan.done:
            get_logger().info("%s", m.plan.done)
            m.outcome, m.code = "finished", EXIT_OK
            m.release()
    for m in pending:
        if m.running:
            rundir.apply(m.plan, m.out)


def _value(cfg: Config, dotted: str) -> Any:
    node: Any = grouping.structure(cfg)
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _start(members: list[Member], sim: Simulation, mode: str) -> dict[int, Any]:
    """Per member: nothing to do (a finished checkpoint), or run.log, the header, its state (restored,
    falling back past a damaged checkpoint, or its initial condition), the segment record and the
    writers, as :func:`simulator.run.loop.run` does for one run. Returns the states by member index."""
    rank0 = jax.process_index() == 0
    states: dict[int, Any] = {}
    for m in members:
        if m.ckpt is not None and Stepper(m.cfg.time, m.cfg.output.every).finished(m.ckpt.time):
            get_logger().info("%s already finished (step %d, t = %.6g): nothing to do", m.out, m.ckpt.step,
                              m.ckpt.time)
            m.step, m.t = m.ckpt.step, m.ckpt.time
            m.end("finished", EXIT_OK, status=(rundir.read_status(m.out) or {}).get("state") != "finished")
    for m in [m for m in members if m.running]:
        if rank0:
            handler = loop._RunLog(m.out / "run.log")
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            m.log.addHandler(handler)
        m.meta = {**loop._metadata(m.cfg, sim, mode, m.ckpt), "ensemble": {"members": len(members), "member": m.index}}
        loop._log_header(m.cfg, sim, m.meta, m.log)
        m.log.info("ensemble member %d of %d: one batched program for %s", m.index, len(members),
                   ", ".join(x.out.name for x in members))
        sim.scratch = m.out  # a state read from another grid is staged here
        stops = output_times(m.cfg)
        if m.ckpt is not None:
            def previous(step: int, m: Member = m) -> checkpoints.Checkpoint | None:
                found = checkpoints.find(m.out, before=step)
                return None if found is None else loop.checkpoint_to_resume(m.cfg, m.out, str(found.index), False)

            states[m.index], m.ckpt = loop._restore(m.ckpt, sim, previous)
            m.meta["restart"] = str(m.ckpt.index)
            m.step, m.t = m.ckpt.step, m.ckpt.time
            m.stepper = Stepper(m.cfg.time, m.cfg.output.every, step=m.step, t=m.t, dt=m.ckpt.dt,
                                epoch=m.ckpt.epoch, stops=stops)
            changed = f"; time step now {m.stepper.dt:.6g}" if m.stepper.dt != m.ckpt.dt else ""
            m.log.info("resumed from %s: step %d, t = %.6g, dt = %.6g%s", m.ckpt.index.with_suffix(""), m.step,
                       m.t, m.ckpt.dt, changed)
        else:
            states[m.index] = sim.initial_state(m.cfg.initial, m.params)
            m.step, m.t = 0, sim.start_time(m.cfg.initial)
            m.stepper = Stepper(m.cfg.time, m.cfg.output.every, t=m.t, stops=stops)
        if rank0:
            segments = m.out / "segments"
            number = len(list(segments.glob("segment_*.yaml")))
            text = yaml.safe_dump({**m.meta, "segment": number, "start_step": m.step}, sort_keys=False)
            for path in (segments / f"segment_{number:03d}.yaml", m.out / "config.yaml"):
                try:
                    path.parent.mkdir(exist_ok=True)
                    path.write_text(text)
                except OSError as err:
                    raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
            rundir.write_status(m.out, "running", m.step, m.t)
        m.records, m.dumps, m.saver = loop._writers(m.cfg, sim, m.meta, m.stepper, m.out, rank0, m.log)
        m.saver.last = None if m.ckpt is None else m.ckpt.index.with_suffix("")
        m.writers = [*m.records, *m.dumps]
        m.start_step, m.progress = m.step, Progress(m.step, m.t, m.stepper.t_end)
        for w in m.writers:
            w.open(m.out, None if m.ckpt is None else m.ckpt.step)
    return states


class Batch:
    """The stacked state and the batched programs of one ensemble (each compiled once)."""

    def __init__(self, sim: Simulation, members: list[Member], states: dict[int, Any]):
        self.sim, self.members = sim, members
        eq, fft = sim.equation, sim.fft
        template = states[members[0].index]
        spaces = eq.leaf_spaces(template)
        self.member_shardings = jax.tree.map(lambda a: a.sharding, template)
        leaves, treedef = jax.tree.flatten(template)
        stacked = [fft.replicated_sharding() if s == "particles"  # (K, Np, 3): every device holds all
                   else (fft.spectral_sharding if s == "spectral" else fft.real_sharding)(a.ndim - 2)
                   for a, s in zip(leaves, spaces, strict=True)]
        self.shardings = jax.tree.unflatten(treedef, stacked)
        self.replicated = fft.replicated_sharding()
        # per parameter (numbers, mean-gradient vectors, per-scalar entries) a (K, ...) replicated array
        self.params = jax.tree.map(lambda *v: self.vector(np.stack(v)), *(m.params for m in members))
        stack = jax.jit(lambda *s: jax.tree.map(lambda *x: jnp.stack(x), *s), out_shardings=self.shardings)
        self.state = stack(*(states.pop(m.index) for m in members))
        axes = (None, 0, 0, 0, 0, 0)
        self.chunk = jax.jit(jax.vmap(sim.chunk, in_axes=axes), out_shardings=self.shardings, donate_argnums=(1,),
                             compiler_options=CHUNK_COMPILER_OPTIONS)
        # each member at its own run time (Equation.at: equations that depend on it explicitly see it)
        self._diagnostics = jax.jit(jax.vmap(lambda e, s, h, p, t: e.at(t).diagnostics(s, h, p),
                                             in_axes=(None, 0, 0, 0, 0)))
        self._spectra = jax.jit(jax.vmap(lambda e, s, p, t: e.at(t).spectra(s, p), in_axes=(None, 0, 0, 0)))
        self._take = jax.jit(lambda s, i: jax.tree.map(lambda x: x[i], s), out_shardings=self.member_shardings)
        self.dts = [m.stepper.dt for m in members]
        self.cache: dict[str, Any] = {}

    def vector(self, values: Any, dtype: Any = None) -> jax.Array:
        """A ``(K, ...)`` host array (K members' values) as a replicated array on every process's devices."""
        host = np.asarray(values, dtype or self.sim.dtype)
        return jax.make_array_from_callback(host.shape, self.replicated, lambda idx: host[idx], dtype=host.dtype)

    def advance(self, plan: Sequence[tuple[int, float]]) -> None:
        """One chunk: member i takes ``plan[i]`` = (steps, dt) from its time (0 steps: held)."""
        t = self.vector([m.t for m in self.members])
        n = self.vector([p[0] for p in plan], np.int32)
        dt = self.vector([p[1] for p in plan])
        self.state = self.chunk(self.sim.equation, self.state, t, n, dt, self.params)
        self.dts = [p[1] for p in plan]
        self.cache = {}

    def _times(self) -> jax.Array:
        return self.vector([m.t for m in self.members])

    def diagnostics(self, i: int) -> dict[str, float]:
        if "diagnostics" not in self.cache:
            values = self._diagnostics(self.sim.equation, self.state, self.vector(self.dts), self.params, self._times())
            self.cache["diagnostics"] = {k: np.asarray(jax.device_get(v)) for k, v in values.items()}
        return {k: float(v[i]) for k, v in self.cache["diagnostics"].items()}

    def spectra(self, i: int) -> dict[str, np.ndarray]:
        if "spectra" not in self.cache:
            values = self._spectra(self.sim.equation, self.state, self.params, self._times())
            self.cache["spectra"] = {k: np.asarray(jax.device_get(v)) for k, v in values.items()}
        return {k: v[i] for k, v in self.cache["spectra"].items()}

    def member_state(self, i: int) -> Any:
        return self._take(self.state, jnp.asarray(i, jnp.int32))


def _run(members: list[Member], mode: str, stop: StopRequest) -> None:
    log = get_logger()
    rank0 = jax.process_index() == 0
    sim = Simulation(members[0].cfg)
    for m in members:
        m.params = sim.equation.params(m.cfg.physics)
    states = _start(members, sim, mode)
    active = [m for m in members if m.running]
    if not active:
        return
    batch = Batch(sim, active, states)
    log.info("ensemble of %d member(s) (%s): one batched program on %s", len(active),
             ", ".join(m.out.name for m in active), sim.fft.describe())
    cells = math.prod(members[0].cfg.grid.shape)

    def moment(i: int, m: Member, **kw: Any) -> Moment:
        compute = {"diagnostics": lambda _: batch.diagnostics(i), "spectra": lambda _: batch.spectra(i),
                   "fields": lambda mo: sim.fields(mo.state, t=mo.time, params=m.params)}
        return Moment(m.step, m.t, m.stepper.dt if "dt" not in kw else kw.pop("dt"), kw.pop("t_prev", -math.inf),
                      None, compute, **kw)

    def write(i: int, m: Member, mo: Moment, first: bool) -> bool:
        """The member's outputs for this moment; False when it has failed (NaN/Inf)."""
        records = [w for w in m.records if (w is m.records[0] or w.at_start())] if first else m.records
        for w in records:
            w.write(mo) if first else w.maybe_write(mo)
        try:
            loop._check_finite(mo, m.saver)
        except loop.NonFiniteError as err:
            m.log.error("%s", err)
            log.warning("ensemble member %s failed: %s; the others go on", m.out.name, err)
            m.end("failed", EXIT_FAILED)
            return False
        dumps = [w for w in m.dumps if w.at_start()] if first else [w for w in m.dumps if w.due(mo)]
        if dumps:
            mo.state = batch.member_state(i)
            for w in dumps:
                w.write(mo) if first else w.maybe_write(mo)
        m.stepper.adapt(mo.get("diagnostics").get(sim.info.cfl or "", 0.0))
        return True

    for i, m in enumerate(active):
        if m.ckpt is None:
            write(i, m, moment(i, m), first=True)
    wall_start, last_chunk_s = time.monotonic(), 0.0
    while any(m.running for m in active):
        chunk_start = time.monotonic()
        plan = [m.stepper.next_chunk(m.t, m.step) if m.running else (0, m.stepper.dt) for m in active]
        batch.advance(plan)
        limit = active[0].cfg.runtime.max_wall
        near_limit = bool(limit) and time.monotonic() - wall_start + 2 * last_chunk_s + 5.0 > limit
        writers = [w for m in active for w in m.writers]
        flags = agree([stop.code(), int(near_limit), *(int(w.wall_pending()) for w in writers)])
        wall_due = {id(w) for w, f in zip(writers, flags[2:], strict=True) if f}
        requested = bool(flags[0] or flags[1])
        t_prev = {}
        for m, (n, dt) in zip(active, plan, strict=True):  # every member's time first: the batched
            if m.running:                                   # diagnostics evaluate each at its own
                t_prev[m.index], m.step = m.t, m.step + n
                m.t = m.stepper.time_after(m.step, m.t, n, dt)
        for i, (m, (n, dt)) in enumerate(zip(active, plan, strict=True)):
            if not m.running:
                continue
            finished = m.stepper.finished(m.t)
            stopping = requested and not finished
            mo = moment(i, m, dt=dt, t_prev=t_prev[m.index], final=finished, stopping=stopping,
                        wall_due=frozenset(w.name for w in m.writers if id(w) in wall_due))
            if not write(i, m, mo, first=False):
                continue
            m.progress.update(m.step, m.t)
            diag = mo.get("diagnostics")
            shown = " ".join(f"{k}={diag[k]:.6g}" for k in sim.info.progress if k in diag)
            m.log.info("step %d t=%.4f dt=%.3g %s %s", m.step, m.t, dt, shown, m.progress.describe(cells))
            if finished:
                m.log.info("finished: this segment %d steps in %.1f s (%d compilation(s) of the ensemble's chunk); "
                           "run total %d steps, t = %.6g; output in %s", m.step - m.start_step, m.progress.elapsed,
                           sim.traces, m.step, m.t, m.out)
                m.end("finished", EXIT_OK)
            elif stopping:
                why = StopRequest.name(flags[0]) or f"runtime.max_wall = {limit:g} s"
                m.log.warning("stopped by %s at step %d, t = %.6g after writing a checkpoint; resume with: "
                              "simulator run CONFIG --resume --out %s", why, m.step, m.t, m.out)
                m.end("interrupted", EXIT_INTERRUPTED)
            elif rank0:
                rundir.write_status(m.out, "running", m.step, m.t)
        running = sum(m.running for m in active)
        log.info("ensemble: chunk of %d step(s) in %.2f s; %d of %d member(s) running", max(p[0] for p in plan),
                 time.monotonic() - chunk_start, running, len(active))
        last_chunk_s = time.monotonic() - chunk_start
        if requested:
            barrier("interrupted")  # every process has written every member's checkpoint
            return
