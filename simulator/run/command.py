"""What ``simulator run`` does, as a function: used by the CLI, by sweep array tasks and by the API.

The run directory is checked before JAX starts, then the runtime starts and the run's memory is checked
against its devices (the admission check its caller hands in), and only then is the directory prepared (a refused run
changes nothing) and the loop run. Bad input raises :class:`~simulator.errors.ConfigError` (the
caller reports it: exit 2); a failed run is logged and returns 1; a stopped run returns 75.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator import config as config_mod
from simulator.errors import ConfigError
from simulator.launch import ENV_COORDINATOR, ENV_NUM_PROCESSES, position, srun_tasks
from simulator.run.signals import EXIT_FAILED, EXIT_OK
from simulator.schema.overrides import command_words

#: the admission check a run is started with (configs, whether an ensemble) -> (configs to run, a run log line):
#: :func:`simulator.planning.admission.admit`, handed in by whoever starts the run (the planner sits above run/)
Admit = Callable[[Sequence[config_mod.Config], bool], tuple[list[config_mod.Config], str]]


def start(cfg: config_mod.Config) -> str:
    """Set up devices, processes and rank-aware logging for ``cfg``; returns the process mode."""
    from simulator import runtime
    from simulator.log import setup_logging
    from simulator.run.programs import count_compilations

    mode = runtime.setup(cfg, count=count_compilations)
    import jax

    setup_logging(jax.process_index())
    return mode


def exit_now_if_distributed(code: int) -> None:
    """In a multi-process run, leave at once with ``code`` (see :func:`exit_now`)."""
    runtime = sys.modules.get("simulator.runtime")  # only a command that started JAX can be distributed
    if runtime is not None and runtime.is_distributed():
        exit_now(code)


def exit_now(code: int) -> None:
    """End this process at once with ``code``, skipping jax.distributed's shutdown barrier.

    A normal exit runs that barrier, which waits (minutes) for peers that are themselves blocked
    waiting for this process in a collective. Leaving at once lets the launcher or
    ``srun --kill-on-bad-exit`` see the failure and end the others.

    Process 0 holds the coordination service: leaving before a peer that fails alike (a refusal every
    process makes) has said its own error, it made XLA end that peer with a fatal log of the lost
    service instead. Each other process says it is leaving (a key of the service), and process 0 waits
    for them, at most :data:`LEAVE_WAIT_S` (a peer blocked in a collective never says it).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    from jax._src import distributed  # no public API exposes the coordination client

    client, rank = distributed.global_state.client, distributed.global_state.process_id
    try:
        if client is not None and rank != 0:
            client.key_value_set(f"simulator/leaving/{rank}", "1")
        elif client is not None:
            deadline = time.monotonic() + LEAVE_WAIT_S
            for peer in range(1, distributed.global_state.num_processes):
                left_ms = int(max(deadline - time.monotonic(), 0.001) * 1000)
                client.blocking_key_value_get(f"simulator/leaving/{peer}", left_ms)
            time.sleep(LEAVE_GRACE_S)  # from its key to its exit a peer still polls the service: let it go first
    except Exception:  # a peer that never says it (blocked, or dead): leave all the same
        pass
    os._exit(code)


#: seconds process 0 waits, leaving on an error, for the other processes to leave first (:func:`exit_now`)
LEAVE_WAIT_S = 10.0
#: seconds process 0 then gives the others to be gone
LEAVE_GRACE_S = 0.5


def command_prefix() -> str:
    """How a command this process prints for the user to run (a resume hint) begins: ``simulator``; in a
    process of ``simulator launch -n N`` that launch, and in a task of an ``srun`` step of N tasks
    ``srun -n N simulator``, so that following it runs on as many processes again (launch's ``--cpu-devices D``
    reaches the command as its own flag, which the rest of the hint repeats)."""
    launched = os.environ.get(ENV_NUM_PROCESSES) if os.environ.get(ENV_COORDINATOR) else None
    if launched:
        return f"simulator launch -n {launched}"
    tasks = srun_tasks()
    return f"srun -n {tasks} simulator" if tasks > 1 else "simulator"


def resume_hint(words: Sequence[str], resubmit: str) -> str:
    """The command that resumes a run, ``simulator`` + ``words`` begun as :func:`command_prefix` says, quoted as a
    shell reads it; inside a Slurm job also ``resubmit``, how to resume from the login node: ``srun`` runs only
    within an allocation, and a job script that did not requeue itself is submitted again."""
    hint = " ".join([command_prefix(), shlex.join(words)])
    if not os.environ.get("SLURM_JOB_ID"):
        return hint
    return f"{hint} (within a Slurm allocation), or from the login node {resubmit}"


def resubmit_sweep(manifest: Mapping[str, Any], directory: Path, *extra: str) -> str:
    """How a sweep point's or group's hint says to resume it from the login node: the sweep (``manifest``: its
    :mod:`simulator.sweep` manifest, prepared in ``directory``) submitted again, which submits its unfinished
    points; ``extra``: the words that submit it as it was (``--ensemble``)."""
    return "submit the sweep again: " + shlex.join(["simulator", "sweep", str(manifest["source"]), "--out",
                                                    str(directory), "--submit", *extra])


def run_config(cfg: config_mod.Config, out: str | Path | None = None, *, admit: Admit, overwrite: bool = False,
               restart: str | None = None, resume: bool = False, allow_physics_change: bool = False,
               hint: str = "", started: float | None = None) -> int:
    """Run a validated config into ``out`` (default ``output.dir`` or ``outputs/<name>``), once ``admit``
    (:func:`simulator.planning.admission.admit`) lets it onto its devices.

    ``restart``: "latest" or a checkpoint path (of this run, or of another one to branch from into a
    new ``out``); ``resume``: continue if there is a checkpoint, else start (a finished run returns 0
    at once). The directory is planned (bad input refused, nothing touched), then process 0 takes
    its lock, plans again under it and only then removes anything (see :mod:`simulator.run.rundir`).
    Returns the exit status (0, 1 or 75). ``started``: the :func:`time.monotonic` of the command's start, which
    ``runtime.max_wall`` counts from (its start-up included); None: now.
    """
    from simulator.log import get_logger, setup_logging
    from simulator.output.hdf5 import OutputWriteError
    from simulator.run import preflight, rundir

    if allow_physics_change and restart is None:  # else a new run from t = 0, where the user meant to continue one
        raise ConfigError("--allow-physics-change", True, "add --restart [PATH]: it lets a restart take new physical "
                          "values (--resume refuses them even with it)", "needs --restart")
    out = rundir.output_dir(cfg, None if out is None else str(out))
    index = position(cfg.runtime).index  # runtime.num_processes and process_id it cannot honour: refused first
    options = {"overwrite": overwrite, "restart": restart, "resume": resume}
    # every process, before JAX starts (the segment's module imports it): a refused run changes nothing
    plan = preflight.check(cfg, out, allow_physics_change=allow_physics_change, **options)
    from simulator.run.segment import Segment

    seg = Segment(cfg, out, resume_hint=hint, allow_physics_change=allow_physics_change, started=started)
    done = seg.prepare(plan, resume=resume)
    setup_logging(index)
    if done:
        get_logger().info("%s", done)
        return EXIT_OK
    # a grid that cannot fit its devices is refused here, before anything is written
    # the note: fft.in_turn auto's choice, logged with the header
    mode, (seg.cfg,), seg.note = start_checked([cfg], index, admit)
    try:
        if index == 0:
            try:
                seg.acquire()
                done = seg.take(**options)
                if done:
                    get_logger().info("%s", done)
                    return EXIT_OK
            except OutputWriteError as err:  # e.g. the disk is already full
                get_logger().error("%s", err)
                return EXIT_FAILED
        code = _run_started(seg, mode)
    finally:
        seg.close()
    if code != EXIT_OK:
        exit_now_if_distributed(code)
    return code


def start_checked(cfgs: Sequence[config_mod.Config], expected_index: int, admit: Admit, *, ensemble: bool = False
                  ) -> tuple[str, list[config_mod.Config], str]:
    """The start-up of a single run (``cfgs`` = [cfg]) and of an ensemble alike, before any directory is
    touched: start the runtime, check that JAX made this process the one its run expects, and admit the
    run to its devices by ``admit`` (:func:`simulator.planning.admission.admit`: a single run, or an ensemble's
    whole batch), ConfigError (exit 2) if it cannot fit. Returns the process mode, the configs to run (a single
    run's ``fft.in_turn: auto`` resolved by its check) and a line for the run log on that choice ("" if none)."""
    from simulator.errors import RuntimeSetupError

    mode = start(cfgs[0])
    import jax

    if jax.process_index() != expected_index:
        raise RuntimeSetupError(f"this process was expected to be process {expected_index} of its run, JAX made it "
                                f"process {jax.process_index()}")
    admitted, why = admit(cfgs, ensemble)
    return mode, admitted, why


def _run_started(seg, mode: str) -> int:
    """Run the segment on the started runtime; failures of the run itself (logged and recorded by the
    segment) give 1."""
    from simulator.errors import RuntimeSetupError
    from simulator.run.failures import FAILURES
    from simulator.run.loop import run
    from simulator.run.signals import agree

    # a collective: no process reads the directory before process 0 has prepared it under its lock
    restarting = seg.plan.restart is not None
    if agree([int(restarting), int(not restarting)]) == [1, 1]:
        raise RuntimeSetupError(f"the processes of this run disagree on whether to restart in {seg.out}")
    try:
        return run(seg, mode)
    except FAILURES:
        return EXIT_FAILED


def extended(config: str, given: Sequence[str], cfg: config_mod.Config, out: Path, extra: float,
             restart: str | None, resume: bool) -> tuple[config_mod.Config, list[str]]:
    """``--add-to-t-end`` = ``extra``: the config ``config`` (``cfg``, loaded with the overrides ``given``, run into
    ``out``) loaded again to end at the t_end of the run the restart continues + ``extra``, with its overrides:
    ``given`` and those (``KEY=VALUE``) that end it there, ``time.t_end`` or the key of the equation's that sets it
    (:meth:`~simulator.equations.spec.EquationParams.end_settings`: a cosmological run's ``physics.z_end``), which
    resuming the extended run needs (the hint carries them).

    The run's t_end is the one its checkpoint was written with (a finished run's is its last time), so
    an interrupted run is extended past its planned end, not from where it stopped. Needs ``restart``;
    refused with ``resume``, which a requeued job runs again and again (each would extend once more).
    Validated as the hint's config is: an end the config cannot hold is refused now, not at the resume; a run that
    already ends at the latest end its config allows (a cosmological run at z = 0, which no T extends) is told so,
    else the value the extension would set is named, with the run's end.
    """
    from simulator.output import checkpoints

    if not (extra > 0 and math.isfinite(extra)):  # inf would make a run that never ends, as time.t_end refuses
        raise ConfigError("--add-to-t-end", extra, "give a positive, finite time", "is not allowed")
    if resume or restart is None:
        raise ConfigError("--add-to-t-end", extra, "extend once with --restart [PATH] --add-to-t-end T, then "
                          "resume with the new t_end (the log and the resume hint name it)",
                          "needs --restart (with --resume every requeued job would extend the run again)")
    source = out if restart == "latest" else Path(restart)
    ckpt = checkpoints.find(source)
    if ckpt is None:
        raise ConfigError("--restart", restart, f"no complete checkpoint under {source}", "has nothing to extend")
    t_end = float(ckpt.meta["config"]["time"]["t_end"])
    # the physics asked once for what the extension and its refusal say: the new end, an end by next to nothing
    # later (refused too by a config that already ends the run as late as it can) and how the run's end reads
    physics = cfg.physics
    end = physics.end_settings(t_end + extra)
    overrides = [*given, *(f"{key}={value!r}" for key, value in end.items())]
    later = physics.end_settings(t_end * (1 + 1e-9) + 1e-12)
    nudged = [*given, *(f"{key}={value!r}" for key, value in later.items())]
    where = physics.clock().time_label(t_end) or f"t = {t_end:.6g}"
    try:
        return config_mod.load(config, overrides), overrides
    except ConfigError as err:
        refused = err
    try:
        config_mod.load(config, nudged)
    except ConfigError:
        raise ConfigError("--add-to-t-end", extra, f"that is the latest end its config allows ({refused.key}: "
                          f"{refused.allowed})", f"cannot extend the run, which already ends at {where}") from None
    shown = ", ".join(f"{key} = {value:.6g}" for key, value in end.items())
    raise ConfigError("--add-to-t-end", extra, f"give a T that ends the run where its config can ({refused.key}: "
                      f"{refused.allowed}; the run ends at {where})", f"would set {shown}, which {refused.problem}")


def run_file(config: str, overrides: Sequence[str] = (), out: str | None = None, add_to_t_end: float | None = None,
             *, admit: Admit, **options: bool | str | float | None) -> int:
    """``simulator run CONFIG [--set ...] [--out OUT] [--add-to-t-end T] [options]``; returns the exit status
    (``admit``: :func:`run_config`'s)."""
    from simulator.run.rundir import output_dir

    cfg = config_mod.load(config, overrides)
    out_dir = output_dir(cfg, out)  # where the extension reads, the hint resumes and the run writes
    if add_to_t_end is not None:
        restart = options.get("restart")
        cfg, overrides = extended(config, overrides, cfg, out_dir, add_to_t_end, restart,  # type: ignore[arg-type]
                                  bool(options.get("resume")))
    # quoted as a shell needs it: a value such as [127, 63, 31] is one argument
    where = str(out_dir)
    hint = resume_hint(["run", config, *command_words(overrides), "--resume", "--out", where],
                       "submit the job script again with the same output directory (the shipped templates: "
                       f"sbatch JOB_SCRIPT {shlex.join([config, where])})")
    return run_config(cfg, out_dir, admit=admit, hint=hint, **options)  # type: ignore[arg-type]
