"""The run loop of one run: a jitted chunk of steps, then the writers whose schedule is due, then the next.

The flow of one run: the validated config -> the runtime (processes, devices, mesh; set up by the
caller) -> :class:`~simulator.run.simulation.Simulation` (FFT backend, equation, parameters) -> the
initial state (or the checkpoint a restart continues from) -> per chunk: advance, agree on stop
requests and wall-clock triggers across processes, let the segment's writers act (time series and
spectra, then a check of NaN/Inf and of the bounds the equation declares physical, then snapshots and
checkpoints), report progress. With an adaptive dt each step's dt is chosen inside the chunk
(:meth:`~simulator.run.simulation.Simulation.adaptive_chunk`). Python runs only between compiled calls: a chunk
runs as calls of at most ``runtime.chunk_wall`` seconds (:mod:`simulator.run.calls`), between which a stop request,
``runtime.max_wall`` and a progress line are acted on (a stop there writes the checkpoint alone, the outputs keep
the chunks' cadence). Everything the run directory gets is the :class:`~simulator.run.segment.Segment`'s; this
module only advances the state (an ensemble's driver,
:mod:`simulator.run.ensemble`, advances K segments' states as one batch).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import jax

from simulator.log import ONCE, get_logger
from simulator.output.base import Moment, Writer
from simulator.particles.flow import lost_species
from simulator.run import joblimits
from simulator.run.calls import PROGRESS_EVERY, Calls, device_time, logged_step
from simulator.run.failures import NonFiniteError, barrier_interrupted
from simulator.run.programs import Ahead, counts, report, run_programs
from simulator.run.segment import Segment
from simulator.run.signals import EXIT_INTERRUPTED, StopRequest, agree
from simulator.run.simulation import Simulation
from simulator.run.states import abstract_state


def run(seg: Segment, mode: str) -> int:
    """Run the segment ``seg`` (its directory prepared by :meth:`Segment.take`) on the started runtime.

    Returns 0 when finished, EXIT_INTERRUPTED when a signal or runtime.max_wall stopped it (after a
    checkpoint). Raises NonFiniteError, OutputWriteError, ConfigError (bad restart), any other error,
    after recording the run as failed with its reason (``run.log``, ``status.json``:
    :meth:`Segment.fail`).
    """
    try:
        seg.resolve()
        if seg.finished_already():
            return 0
        seg.open_log()
        with StopRequest() as stop:
            return _run(seg, mode, stop)
    except BaseException as err:
        seg.fail(err)  # before close: run.log is still open
        raise
    finally:
        seg.close()


def _run(seg: Segment, mode: str, stop: StopRequest) -> int:
    cfg = seg.cfg
    if seg.interrupted_before_first_step(agree([stop.code()])[0]):
        return EXIT_INTERRUPTED
    sim = Simulation(cfg)
    ahead = Ahead(sim, run_programs(cfg), abstract_state(sim))  # compiling while the initial state is built
    try:
        state = seg.begin(sim, mode, lambda: (sim.initial_state(), sim.start_time()))
    except BaseException:
        ahead.abandon()
        raise
    ready = ahead.wait()
    seg.log.info("%s", report(counts(), ready))
    seg.progress.restart()
    stepper = seg.stepper
    step, t = seg.step, seg.t
    if cfg.particles:
        bound_by_drag(seg)
    def compute(program: str, m: Moment) -> object:  # the output kinds' programs, once per moment
        return sim.output(program, m.state, m.time, m.dt)

    shown = {"cells": math.prod(cfg.grid.cells), "progress": sim.info.progress}
    if seg.starts:  # a new run's t = 0, a branch's first time
        if stepper.adaptive:  # the dt the controller takes from the initial state (no step: n = 0); a branch's
            # checkpoint holds the dt of its source's grid and config, which its first row would show
            out = sim.advance_adaptive(state, 0, t, dt_max=stepper.dt_max, donate=True)
            state = out.state
            stepper.controlled(t, 0.0, False, out.dt_next)
            check_time_step(seg, step, t)
        seg.record(Moment(step, t, stepper.dt, -math.inf, state, compute), first=True)
    if seg.interrupted_before_first_step(agree([stop.code()])[0]):
        return EXIT_INTERRUPTED
    wall_start, last_chunk_s, dumps_s, chunks = wall_clock(seg), 0.0, 0.0, 0
    full: set[str] = set()  # the settings whose slots filled up in this segment (warned once each)
    rank0 = jax.process_index() == 0
    job = joblimits.job_signal() if rank0 else None  # the Slurm job's --signal, to check its lead time
    if job is not None and (advice := joblimits.limit_warning(job)):
        get_logger().warning("%s", advice)
    bound, lowered = joblimits.call_bound(job, cfg.runtime.chunk_wall)
    if lowered:
        get_logger().info("%s", lowered)
    calls = Calls(bound, *first_call(seg)) if bound is not None else Calls(None)
    line_at = time.monotonic()  # of the last progress line (the steps' start until the first)
    while not stepper.finished(t):
        chunk_start = time.monotonic()
        n, dt = stepper.next_chunk(t, step)
        t_prev, t_call, done = t, t, 0  # t_call: the time the chunk program's own sum holds (fixed dt)
        size = -agree([-calls.size(n)])[0]  # every process calls with the same count: the smallest asked
        while True:  # the chunk's compiled calls, each of at most `bound` seconds (simulator.run.calls)
            call_start = time.monotonic()
            if stepper.adaptive:  # each step's dt chosen on the device; dt: the one it allows next
                out = sim.advance_adaptive(state, size, t, stepper.target(t), dt_max=stepper.dt_max, donate=True)
                state, taken = out.state, out.steps
                t, dt = stepper.controlled(t, out.elapsed, out.landed, out.dt_next), stepper.dt
                ended = out.landed or done + taken >= n or stepper.finished(t)
            else:
                state, taken = sim.advance(state, size, dt, t_call, donate=True), size
                t_call = device_time(t_call, size, dt, sim.dtype)
                ended = done + taken >= n
                t = stepper.time_after(step + done + taken, t_prev, done + taken, dt)  # the host's float64 clock
            done += taken
            # the call's end, not its dispatch's (JAX returns at once): a stop request is read after the steps ran,
            # so that a signal that came during them is seen now (read at the dispatch, it waited a chunk more, and
            # one in the last chunk was never seen), and the seconds measured are the steps'
            jax.block_until_ready(state)
            if bound is not None and calls.measured(taken, time.monotonic() - call_start):
                seg.log.info("%s", calls.describe())
            if stepper.adaptive:
                check_time_step(seg, step + done, t)
            if ended:
                break
            seg.progress.mark(step + done, t)  # the recent rate, from the calls inside a long chunk too
            # between two calls of the chunk: a stop (its checkpoint here), the wall-clock limit, a progress line
            ask = calls.size(n - done)
            near = _near(cfg.runtime.max_wall, wall_start, calls.seconds(ask) + dumps_s)
            flags = agree([stop.code(), int(near), -ask])
            if flags[0] or flags[1]:
                end = ChunkEnd(flags[0], True, frozenset(), cfg.runtime.max_wall)
                return _stop_within(seg, sim, state, step + done, t, dt, compute, shown, full, end, stop)
            size = -flags[2]
            if time.monotonic() - line_at + calls.seconds(size) >= PROGRESS_EVERY:  # else none for a minute
                seg.log.info("step %d t=%.4f dt=%.3g (%d of the chunk's %s%d steps) %s", step + done, t, dt, done,
                             "at most " * stepper.adaptive, n, seg.progress.describe(shown["cells"]))
                line_at = time.monotonic()
        step += done
        if cfg.particles:
            check_particles(seg, lost_species(sim.equation, state, cfg)[0], step, t)
        check_lost(seg, sim, state, step, t)
        filling = check_room(seg, sim, state, step, full)
        finished = stepper.finished(t)
        end = chunk_end(stop, seg.writers, cfg.runtime.max_wall, wall_start,
                        last_chunk_s if bound is None else calls.longest + dumps_s)
        stopping = end.requested and not finished
        m = Moment(step, t, dt, t_prev, state, compute, final=finished, stopping=stopping,
                   wall_due=end.due(seg.writers) | ({"checkpoints"} if filling else set()))
        dumps_start, saved = time.monotonic(), seg.saver.last
        seg.record(m, **shown)  # and its progress line
        if seg.saver.last != saved:
            calls.checkpointed()
        line_at = time.monotonic()
        dumps_s = max(line_at - dumps_start, dumps_s)
        last_chunk_s, chunks = time.monotonic() - chunk_start, chunks + 1
        if job is not None and chunks == 2:  # the first chunk compiled; the second is a steady one
            longest = last_chunk_s - dumps_s if bound is None else calls.longest
            advice = joblimits.lead_warning(job, chunk_s=longest, checkpoint_s=dumps_s)
            if advice:
                get_logger().warning("%s", advice)
        if stopping:
            seg.stop(end.reason, stop.count)
            barrier_interrupted()
            return EXIT_INTERRUPTED
        if end.requested and end.signal:  # it came in the last chunk, which reached t_end: nothing left to stop
            seg.log.warning("%s came during the last chunk, which reached t_end = %.6g: the run finished, with its "
                            "final checkpoint", end.reason, t, extra=ONCE)
    seg.finish(chunk_programs(sim.traces))
    return 0


def first_call(seg: Segment) -> tuple[bool, float | None]:
    """Whether this segment's first chunk starts with a call of one step (a new run's, or a restart from a checkpoint
    of the schedule, after which the straight run's chunk started so: :mod:`simulator.run.calls`), and the seconds a
    step took by the log of the run that wrote its checkpoint (None: unknown, the first call measures it)."""
    ckpt = seg.ckpt
    if ckpt is None:
        return True, None
    every, dt = seg.cfg.checkpoint.every, seg.cfg.checkpoint.dt
    on_dt = bool(dt) and abs(ckpt.time / dt - round(ckpt.time / dt)) < 1e-9  # checkpoints by dt land on its multiples
    scheduled = bool(every and ckpt.step % every == 0) or on_dt
    try:
        return scheduled, logged_step((ckpt.index.parent.parent / "run.log").read_text(errors="replace"))
    except OSError:
        return scheduled, None


def _near(limit: float | None, wall_start: float, needed: float) -> bool:
    """Whether ``runtime.max_wall`` = ``limit`` would pass within ``needed`` seconds and 5 more."""
    return bool(limit) and time.monotonic() - wall_start + needed + 5.0 > limit


def _stop_within(seg: Segment, sim: Simulation, state: object, step: int, t: float, dt: float, compute, shown: dict,
                 full: set[str], end: ChunkEnd, stop: StopRequest) -> int:
    """A stop between two calls of a chunk: the state checked as at a chunk end, its checkpoint written (no other
    output: they keep their cadence), exit 75."""
    if seg.cfg.particles:
        check_particles(seg, lost_species(sim.equation, state, seg.cfg)[0], step, t)
    check_lost(seg, sim, state, step, t)
    check_room(seg, sim, state, step, full)
    seg.record(Moment(step, t, dt, t, state, compute, stopping=True, within=True), **shown)
    seg.stop(end.reason, stop.count)
    barrier_interrupted()
    return EXIT_INTERRUPTED


# ---- chunk-end checks, shared with the ensemble's driver (run.ensemble) ----------------------------------


def wall_clock(seg: Segment) -> float:
    """The :func:`time.monotonic` ``runtime.max_wall`` counts from, the start of the command (``seg.started``), so
    that a job whose limit is its scheduler's time limit checkpoints before it whatever its start-up took (imports,
    JAX's start, compiling, a checkpoint read); the run log says what the start-up took and what is left, as the
    steps begin."""
    limit, startup = seg.cfg.runtime.max_wall, time.monotonic() - seg.started
    if limit:
        left = limit - startup
        seg.log.info("runtime.max_wall = %g s counts from the start: the start-up took %.1f s, %s", limit,
                     startup, f"{left:.1f} s left for the steps" if left > 0 else
                     "past the limit: the run stops after its first call of steps, with a checkpoint")
    return seg.started


def chunk_programs(traces: int, what: str = "every chunk") -> str:
    """The chunk's programs, for the closing line: one (compiled, or loaded from the cache: a trace either way)
    unless something recompiled it, which a sweep point or a restart must never need."""
    return f"one program for {what}" if traces == 1 else f"{traces} programs for {what}"


@dataclass(frozen=True)
class ChunkEnd:
    """What every process agreed at a chunk end (:func:`chunk_end`): the stop request's signal (0: none),
    whether to stop (a signal, or ``runtime.max_wall`` = ``limit`` near) and which writers' wall-clock
    intervals passed (by ``id``)."""

    signal: int
    requested: bool
    wall: frozenset[int]
    limit: float | None

    def due(self, writers: Sequence[Writer]) -> frozenset[str]:
        """The names of those of ``writers`` whose wall-clock interval passed (a :class:`Moment`'s ``wall_due``)."""
        return frozenset(w.name for w in writers if id(w) in self.wall)

    @property
    def reason(self) -> str:
        return StopRequest.name(self.signal) or f"runtime.max_wall = {self.limit:g} s"


def chunk_end(stop: StopRequest, writers: Sequence[Writer], limit: float | None, wall_start: float,
              last_chunk_s: float) -> ChunkEnd:
    """The agreement of every process at a chunk end, one collective for a single run and an ensemble
    alike: a stop request, the wall-clock limit (near when the time so far, two more chunks and 5 s would
    pass it) and each writer's wall-clock trigger, so that collective writers and the stop never diverge."""
    near_limit = bool(limit) and time.monotonic() - wall_start + 2 * last_chunk_s + 5.0 > limit
    flags = agree([stop.code(), int(near_limit), *(int(w.wall_pending()) for w in writers)])
    return ChunkEnd(flags[0], bool(flags[0] or flags[1]),
                    frozenset(id(w) for w, f in zip(writers, flags[2:], strict=True) if f), limit)



def check_time_step(seg: Segment, step: int, t: float) -> None:
    """A collapsed adaptive time step (:meth:`~simulator.time.control.Stepper.collapsed`) is a blow-up, as a
    non-finite diagnostic is: NonFiniteError (exit 1) naming it and the last good checkpoint, not a run
    that steps for ever."""
    why = seg.stepper.collapsed()
    if why is not None:
        raise NonFiniteError(f"{why} at step {step}, t = {t:.6g}; last good checkpoint: {_last(seg)}")


def bound_by_drag(seg: Segment) -> None:
    """An adaptive step bounded by the inertial particles' drag as well (a fixed time.dt beyond it was
    refused at start-up: :func:`simulator.particles.setup.drag_limit`), said once in the log."""
    from simulator.particles.setup import drag_limit

    cfg = seg.cfg
    limit, i = drag_limit(cfg.particles, cfg.time.integrator)
    if seg.stepper.adaptive and limit < cfg.time.dt:
        seg.stepper.bound(limit)
        seg.log.info("the Stokes drag of particles[%d] (tau_p = %g) limits dt to %.3g, the stable limit of %s",
                     i, cfg.particles[i].tau_p, limit, cfg.time.integrator)


def check_particles(seg: Segment, lost: list[str], step: int, t: float) -> None:
    """Particles that blew up (``lost``: :func:`simulator.particles.flow.lost_species`: non-finite, or so far
    out that their position is lost) stop the run as a non-finite field does, before anything of the chunk
    is written: NonFiniteError (exit 1)."""
    if lost:
        raise NonFiniteError(f"particle species {', '.join(lost)} blew up (a position or velocity non-finite, or a "
                             f"position too far out to locate) at step {step}, t = {t:.6g}; last good checkpoint: "
                             f"{_last(seg)}")


def check_room(seg: Segment, sim: Simulation, state: object, step: int, full: set[str]) -> bool:
    """Whether particles kept per device fill :data:`~simulator.fft.particle_slots.FULL` of the fullest device's
    slots for the first time in this segment (the equation's :meth:`~simulator.equations.base.Equation.rooms`;
    ``full``: the settings already warned of, updated): a warning naming the setting, and the caller writes a
    checkpoint at this chunk end, so that a run stopped later for lack of slots restarts from there, not from
    its start. One integer per device moves to the host."""
    rooms = sim.equation.rooms(state)
    if not rooms:
        return False
    filling = False
    for room, occupied in zip(rooms, agree([r.occupied for r in rooms]), strict=True):
        room = dataclasses.replace(room, occupied=occupied)  # the fullest device of every process
        if room.key not in full and room.full:
            full.add(room.key)
            seg.log.warning("%s", room.warning(step))
            filling = True
    return filling


def check_lost(seg: Segment, sim: Simulation, state: object, step: int, t: float) -> None:
    """Particles kept per device that found no room in a chunk (the equation's :meth:`~simulator.equations.base.
    Equation.lost`; those of the hand-out stop :meth:`~simulator.run.segment.Segment.begin`) stop the run before
    anything of that state is written: NonFiniteError (exit 1) naming the setting and the step that lost them (the
    state's own count of the steps since)."""
    loss = sim.equation.lost(state)
    if loss is not None:
        raise NonFiniteError(loss.message(step, t, _last(seg)))


def _last(seg: Segment) -> str:
    return str(seg.saver.last) if seg.saver is not None and seg.saver.last else "none"
