"""Ensembles: several runs of one structure (:mod:`simulator.run.grouping`) as ONE batched program.

The members' states are stacked along a leading member axis (unsharded: every device holds its
blocks of every member), their traced parameters, times, step counts and time steps are ``(K,)``
vectors, and the chunk is ``jax.vmap`` over members of :meth:`Simulation.chunk`, or of
:meth:`Simulation.adaptive_chunk` when a member adapts its dt to ``time.cfl`` (the FFT primitive
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

A member whose diagnostics become NaN/Inf, or whose particles kept per device (cold dark matter) found no
slot, is marked failed (its ``status.json`` says so, exit code 1, the error in its ``run.log``) and its writers
close; the others go on. Slots that fill up are warned of, with a checkpoint, per member as in a single run.
A stop request (signal, ``runtime.max_wall``) stops every member after a checkpoint (exit 75). The
programs of the ``records`` output kinds (diagnostics, spectra) are computed for all members in one
batched call per chunk.
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

from simulator.config import Config
from simulator.errors import ConfigError, RuntimeSetupError, show_value
from simulator.launch import position
from simulator.log import LOGGER_NAME, get_logger, setup_logging
from simulator.output import kinds
from simulator.output.base import Moment
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError
from simulator.particles.flow import lost_species
from simulator.particles.setup import check_drag
from simulator.run import grouping, preflight, rundir
from simulator.run.batched import batched_programs, stacked_shardings
from simulator.run.command import Admit
from simulator.run.failures import NonFiniteError, barrier_interrupted
from simulator.run.loop import (
    bound_by_drag,
    check_lost,
    check_particles,
    check_room,
    check_time_step,
    chunk_end,
    chunk_programs,
    wall_clock,
)
from simulator.run.segment import Segment
from simulator.run.signals import EXIT_INTERRUPTED, StopRequest, agree
from simulator.run.simulation import Simulation


def _member_log(index: int, out: Path) -> logging.Logger:
    """An ensemble member's logger: its lines go to its run.log; warnings also to the console, named."""
    log = logging.getLogger(f"{LOGGER_NAME}.member{index}")
    log.propagate = False
    log.handlers.clear()
    console = logging.StreamHandler()
    console.setLevel(logging.WARNING)
    console.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [{out.name}] %(message)s", "%H:%M:%S"))
    log.addHandler(console)
    log.setLevel(logging.INFO)
    return log


def run_configs(cfgs: Sequence[Config], outs: Sequence[str | Path | None] | None = None, *, admit: Admit,
                resume: bool = False, overwrite: bool = False, hint: str = "", started: float | None = None
                ) -> list[int]:
    """Run ``cfgs`` (one structure: see :mod:`simulator.run.grouping`) as one batched ensemble, each into its
    directory (default ``output.dir`` or ``outputs/<name>``), once ``admit`` lets the whole batch onto its
    devices (:func:`simulator.planning.admission.admit`, handed in by whoever starts it). ``resume``: continue
    each member from its latest checkpoint, or start it (finished members return 0 at once). Returns each member's exit
    status (0, 1 or 75). Bad input raises ConfigError before anything is written. ``hint``: the command that
    resumes the ensemble, which a stopped member's log gives (default: the member's own ``simulator run``). ``started``:
    the :func:`time.monotonic` of the command's start, which ``runtime.max_wall`` counts from (None: now).

    Each directory is a :class:`~simulator.run.segment.Segment`, taken through what a single run's is:
    planned before JAX starts (a refusal changes nothing), then every member's lock is taken by process
    0, the plans are made again under the locks, and only then is anything removed.
    """
    if not cfgs:
        raise ConfigError("ensemble", [], "give at least one config", "is empty")
    outs = list(outs) if outs is not None else [None] * len(cfgs)
    dirs = [rundir.output_dir(cfg, None if o is None else str(o)) for cfg, o in zip(cfgs, outs, strict=True)]
    for i, cfg in enumerate(cfgs[1:], 1):
        diffs = grouping.differences(cfgs[0], cfg)
        if diffs:
            first = show_value(_value(cfgs[0], diffs[0]))
            raise ConfigError(f"ensemble member {i}: {diffs[0]}", _value(cfg, diffs[0]), "members of one ensemble "
                              f"may differ only in traced values (member 0 has {first})",
                              "changes the compiled program")
    grouping.check_member(cfgs[0])
    if len({str(d.resolve()) for d in dirs}) != len(dirs):
        raise ConfigError("ensemble", [str(d) for d in dirs], "give every member its own directory", "repeats one")
    names = ", ".join(d.name for d in dirs)
    members = [Segment(cfg, out, log=_member_log(i, out), resume_hint=hint, started=started,
                       extra_meta={"ensemble": {"members": len(cfgs), "member": i}},
                       note=f"ensemble member {i} of {len(cfgs)}: one batched program for {names}")
               for i, (cfg, out) in enumerate(zip(cfgs, dirs, strict=True))]
    options = {"overwrite": overwrite, "resume": resume}
    index = position(cfgs[0].runtime).index  # runtime.num_processes and process_id it cannot honour: refused first
    # every process plans every member's directory before JAX starts: a refusal changes nothing
    done = [m.prepare(preflight.check(m.cfg, m.out, **options), resume=resume) for m in members]
    setup_logging(index)
    for why in filter(None, done):
        get_logger().info("%s", why)
    try:
        from simulator.run.command import exit_now_if_distributed, start_checked

        running = any(m.running for m in members)
        if running:  # the runtime, and the batch's fit check, before any directory is touched
            mode, _, _ = start_checked(cfgs, index, admit, ensemble=True)
            # each member's own fixed dt (traced) against the species' drag (structure), before any directory is
            # touched; the drag's limit runs a JAX program, so only once the runtime has its devices and threads
            for cfg in cfgs:
                if cfg.particles:
                    check_drag(cfg.particles, cfg.time)
        if index == 0:
            _take_directories(members, options)
        if running:
            agree([0])  # a collective: no process reads a directory before process 0 has taken them all
            with StopRequest() as stop:
                _run(members, mode, stop)
    except (ConfigError, RuntimeSetupError):  # refused (a live run holds a directory): nobody wrote anything
        for m in members:
            m.outcome = m.outcome or "refused"
        raise
    except (OutputWriteError, IncompleteOutputError) as err:
        get_logger().error("%s", err)
        for m in members:
            if m.running:
                m.fail(err)
    except BaseException as err:  # an unexpected error: every member still running failed with it
        for m in members:
            if m.running:
                m.fail(err)
        raise
    finally:
        for m in members:
            m.close()
    codes = [int(m.code) for m in members]  # type: ignore[arg-type]
    worst = max(codes, key=lambda c: (c == EXIT_INTERRUPTED, c != 0))
    if worst:
        exit_now_if_distributed(worst)
    return codes


def _take_directories(members: list[Segment], options: dict[str, bool]) -> None:
    """Process 0: every pending member's lock before anything is removed (a live run is never touched),
    then each plan made again under the lock and carried out."""
    pending = [m for m in members if m.running]
    for m in pending:
        m.acquire()
    for m in pending:
        why = m.take(**options)
        if why:
            get_logger().info("%s", why)


def _value(cfg: Config, dotted: str) -> Any:
    node: Any = grouping.structure(cfg)
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


class Batch:
    """The stacked state and the batched programs of one ensemble (each compiled once)."""

    def __init__(self, sim: Simulation, members: list[Segment], states: list[Any], params: list[Any]):
        self.sim, self.members = sim, members
        template = states[0]
        self.member_shardings = jax.tree.map(lambda a: a.sharding, template)
        self.shardings = stacked_shardings(sim, template)
        # per parameter (numbers, mean-gradient vectors, per-scalar entries) a (K, ...) replicated array
        self.params = jax.tree.map(lambda *v: self.vector(np.stack(v)), *params)
        stack = jax.jit(lambda *s: jax.tree.map(lambda *x: jnp.stack(x), *s), out_shardings=self.shardings)
        self.state = stack(*states)
        states.clear()
        #: with an adaptive member the batch runs the controlled chunk (fixed members: cfl 0, steps of their dt)
        self.adaptive = any(m.stepper.adaptive for m in members)
        #: the chunk, and the records kinds' programs over every member at once (:func:`batched_programs`)
        self.batched = batched_programs(sim, self.shardings, self.adaptive)
        self.chunk = self.batched.pop("chunk")
        self._take = jax.jit(lambda s, i: jax.tree.map(lambda x: x[i], s), out_shardings=self.member_shardings)
        self.dts = [m.stepper.dt for m in members]
        #: each member's dt the controller allows from its state (adaptive batches, after a chunk)
        self.allowed: list[float] = []
        #: each member's time at the latest chunk end (the batched programs are evaluated there)
        self.times = [m.t for m in members]
        self.cache: dict[str, Any] = {}

    def vector(self, values: Any, dtype: Any = None) -> jax.Array:
        """A ``(K, ...)`` host array (K members' values) as a replicated array on every process's devices."""
        return self.sim.fft.replicated(values, dtype or self.sim.dtype)

    def advance(self, plan: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
        """One chunk: member i takes ``plan[i]`` = (steps, dt) from its time (0 steps: held; an adaptive
        member takes at most that many, each chosen on the device, ending on its stepper's target if
        they reach it); returns each member's (steps taken, time reached) and sets :attr:`dts` to the dt
        each takes next (the driver sets :attr:`times`)."""
        t = self.vector(self.times)
        n = self.vector([p[0] for p in plan], np.int32)
        if not self.adaptive:
            dt = self.vector([p[1] for p in plan])
            # waited for (JAX returns at once): the stop request read after it is one that came during its steps
            self.state = jax.block_until_ready(self.chunk(self.sim.equation, self.state, t, n, dt, self.params))
            self.dts, self.cache = [p[1] for p in plan], {}
            return [(k, m.stepper.time_after(m.step + k, t0, k, h) if k else t0)
                    for m, t0, (k, h) in zip(self.members, self.times, plan, strict=True)]
        steppers = [m.stepper for m in self.members]
        dt = self.vector([s.dt_max if s.adaptive else h for s, (_, h) in zip(steppers, plan, strict=True)])
        span = self.vector([s.target(t0) - t0 for s, t0 in zip(steppers, self.times, strict=True)])
        cfl = self.vector([s.cfg.cfl if s.adaptive else 0.0 for s in steppers])
        self.state, *out = self.chunk(self.sim.equation, self.state, t, n, dt, span, cfl, self.params)
        steps, tau, dt_next, landed = (np.asarray(jax.device_get(a)) for a in out)
        self.cache, arrived, self.dts, self.allowed = {}, [], [], [float(a) for a in dt_next]
        for i, (s, t0, (k, h)) in enumerate(zip(steppers, self.times, plan, strict=True)):
            if not k:
                arrived.append((0, t0))
            elif s.adaptive:
                arrived.append((int(steps[i]), s.controlled(t0, float(tau[i]), bool(landed[i]), float(dt_next[i]))))
            else:
                arrived.append((k, s.time_after(self.members[i].step + k, t0, k, h)))
            self.dts.append(s.dt if s.adaptive else h)
        return arrived

    def start(self, fresh: Sequence[bool]) -> None:
        """Each adaptive member that starts anew takes the dt the controller chooses for its initial state
        (a chunk of no steps); a resumed one keeps its checkpoint's."""
        if self.adaptive and any(fresh):
            self.advance([(0, m.stepper.dt) for m in self.members])
            for m, new, dt in zip(self.members, fresh, self.allowed, strict=True):
                if new and m.stepper.adaptive:
                    m.stepper.controlled(m.t, 0.0, False, dt)
            self.dts = [m.stepper.dt for m in self.members]  # what the t = 0 diagnostics are taken with

    def _times(self) -> jax.Array:
        return self.vector(self.times)

    def output(self, i: int, name: str, moment: Moment, params: Any) -> Any:
        """Member i's values of the output program ``name`` at ``moment`` (``params``: its traced parameters): a
        batched program's evaluated once per chunk for every member (its state stays in the batch), any other on
        the member's state (:meth:`Simulation.output`)."""
        if name not in self.batched:
            return self.sim.output(name, moment.state, moment.time, moment.dt, params)
        if name not in self.cache:
            values = self.batched[name](self.sim.equation, self.state, self.params, self._times(),
                                        self.vector(self.dts))
            self.cache[name] = jax.tree.map(np.asarray, values)
        host = kinds.program(name).host
        member = jax.tree.map(lambda v: v[i], self.cache[name])
        return member if host is None else host(member)

    def member_state(self, i: int) -> Any:
        return self._take(self.state, jnp.asarray(i, jnp.int32))


class _MemberLeaves:
    """Member ``i``'s leaves of a stacked state, each taken when read (``view.live`` is ``state.live[i]``): what the
    host-side checks of particles kept per device read (the equation's ``lost`` and ``rooms``, a leaf or two),
    without copying the member's whole state at every chunk end."""

    def __init__(self, state: Any, i: int):
        self._state, self._i = state, i

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)[self._i]


def _run(members: list[Segment], mode: str, stop: StopRequest) -> None:
    log = get_logger()
    for m in members:
        if m.running:
            m.resolve()
    active = [m for m in members if m.running and not m.finished_already()]
    for m in active:
        m.open_log()
    flag = agree([stop.code()])[0]
    if flag:
        for m in active:
            m.interrupted_before_first_step(flag)
        return
    sim = Simulation(members[0].cfg)
    begun = []
    for m in active:
        p = sim.equation.params(m.cfg.physics)
        try:
            state = m.begin(sim, mode, lambda m=m, p=p: (sim.initial_state(m.cfg.initial, p),
                                                        sim.start_time(m.cfg.initial)))
        except NonFiniteError as err:  # its particles found no slot as they were handed out: it fails alone
            log.warning("ensemble member %s failed: %s; the others go on", m.out.name, err)
            m.fail(err)
            continue
        begun.append((m, p, state))
    active, params, states = [m for m, _, _ in begun], [p for _, p, _ in begun], [s for _, _, s in begun]
    if not active:
        return
    if sim.cfg.particles:
        for m in active:
            bound_by_drag(m)
    batch = Batch(sim, active, states, params)
    log.info("ensemble of %d member(s) (%s): one batched program on %s", len(active),
             ", ".join(m.out.name for m in active), sim.fft.describe())
    shown = {"cells": math.prod(members[0].cfg.grid.cells), "progress": sim.info.progress}

    def moment(i: int, m: Segment, p: Any, **kw: Any) -> Moment:
        return Moment(kw.pop("step", m.step), kw.pop("time", m.t), kw.pop("dt", m.stepper.dt),
                      kw.pop("t_prev", -math.inf), None, lambda name, mo: batch.output(i, name, mo, p), **kw)

    def record(i: int, m: Segment, mo: Moment, first: bool) -> None:
        """The member's outputs for this moment; a member whose diagnostics are NaN/Inf fails alone."""
        try:
            m.record(mo, first=first, state=lambda: batch.member_state(i), **({} if first else shown))
        except NonFiniteError as err:
            log.warning("ensemble member %s failed: %s; the others go on", m.out.name, err)
            m.fail(err)

    batch.start([m.ckpt is None for m in active])
    for i, (m, p) in enumerate(zip(active, params, strict=True)):
        if m.starts:
            record(i, m, moment(i, m, p), first=True)
    if (flag := agree([stop.code()])[0]):
        for m in active:
            if m.running:
                m.interrupted_before_first_step(flag)
        return
    wall_start, last_chunk_s = min(wall_clock(m) for m in active), 0.0  # each member's log says the start-up
    full: list[set[str]] = [set() for _ in active]  # per member, the settings whose slots filled up (warned once)
    while any(m.running for m in active):
        chunk_start = time.monotonic()
        plan = [m.stepper.next_chunk(m.t, m.step) if m.running else (0, m.stepper.dt) for m in active]
        times = [m.t for m in active]
        arrived = batch.advance(plan)
        end = chunk_end(stop, [w for m in active for w in m.writers], active[0].cfg.runtime.max_wall, wall_start,
                        last_chunk_s)
        # every member's time first: the batched diagnostics evaluate each at its own
        batch.times = [t for _, t in arrived]
        lost = lost_species(sim.equation, batch.state, sim.cfg, batched=True) if sim.cfg.particles else None
        filling = [False] * len(active)
        for i, (m, (n, t_now)) in enumerate(zip(active, arrived, strict=True)):
            if m.running:  # a member whose time step collapsed or whose particles blew up or found no slot fails alone
                try:
                    if m.stepper.adaptive:
                        check_time_step(m, m.step + n, t_now)
                    if lost is not None:
                        check_particles(m, lost[i], m.step + n, t_now)
                    # particles kept per device (cold dark matter): checked as a single run checks them
                    check_lost(m, sim, _MemberLeaves(batch.state, i), m.step + n, t_now)
                    filling[i] = check_room(m, sim, _MemberLeaves(batch.state, i), m.step + n, full[i])
                except NonFiniteError as err:
                    log.warning("ensemble member %s failed: %s; the others go on", m.out.name, err)
                    m.fail(err)
        for i, (m, p, t, (n, _)) in enumerate(zip(active, params, times, arrived, strict=True)):
            if not m.running:
                continue
            t_now = batch.times[i]
            finished = m.stepper.finished(t_now)
            stopping = end.requested and not finished
            mo = moment(i, m, p, step=m.step + n, time=t_now, dt=batch.dts[i], t_prev=t, final=finished,
                        stopping=stopping, wall_due=end.due(m.writers) | ({"checkpoints"} if filling[i] else set()))
            record(i, m, mo, first=False)
            if not m.running:
                continue
            if finished:
                m.finish(chunk_programs(sim.traces, "the ensemble's chunks"))
            elif stopping:
                m.stop(end.reason, stop.count)
        running = sum(m.running for m in active)
        log.info("ensemble: chunk of %d step(s) in %.2f s; %d of %d member(s) running", max(p[0] for p in plan),
                 time.monotonic() - chunk_start, running, len(active))
        last_chunk_s = time.monotonic() - chunk_start
        if end.requested:
            barrier_interrupted()  # every process has written every member's checkpoint
            return
