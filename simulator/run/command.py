"""What ``simulator run`` does, as a function: used by the CLI, by sweep array tasks and by the API.

The run directory is checked and prepared before JAX starts (a refused run changes nothing), then the
runtime starts, then the loop runs. Bad input raises :class:`~simulator.errors.ConfigError` (the
caller reports it: exit 2); a failed run is logged and returns 1; a stopped run returns 75.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from simulator import config as config_mod
from simulator.errors import ConfigError

EXIT_OK, EXIT_FAILED = 0, 1


def start(cfg: config_mod.Config) -> str:
    """Set up devices, processes and rank-aware logging for ``cfg``; returns the process mode."""
    from simulator import runtime
    from simulator.log import setup_logging

    mode = runtime.setup(cfg)
    import jax

    setup_logging(jax.process_index())
    return mode


def exit_now_if_distributed(code: int) -> None:
    """In a multi-process run, leave at once with ``code`` (see :func:`simulator.runtime.exit_now`)."""
    runtime = sys.modules.get("simulator.runtime")  # only a command that started JAX can be distributed
    if runtime is not None and runtime.is_distributed():
        runtime.exit_now(code)


def run_config(cfg: config_mod.Config, out: str | Path | None = None, *, overwrite: bool = False,
               restart: str | None = None, resume: bool = False, allow_physics_change: bool = False,
               hint: str = "") -> int:
    """Run a validated config into ``out`` (default ``output.dir`` or ``outputs/<name>``).

    ``restart``: "latest" or a checkpoint path; ``resume``: continue if there is a checkpoint, else
    start (a finished run returns 0 at once). Returns the exit status (0, 1 or 75).
    """
    from simulator.run import rundir

    out = rundir.output_dir(cfg, None if out is None else str(out))
    if resume:
        if restart is not None or overwrite:
            raise ConfigError("--resume", True, "it already chooses between a new run and --restart",
                              "cannot be combined with --restart or --overwrite")
        restart = rundir.resume_target(cfg, out)
    rundir.prepare_output(out, overwrite, restart)  # before JAX starts: a refused run changes nothing
    mode = start(cfg)
    from simulator.log import get_logger
    from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError
    from simulator.run.loop import NonFiniteError, run

    try:
        code = run(cfg, out, mode, restart, allow_physics_change, hint)
    except (NonFiniteError, OutputWriteError, IncompleteOutputError) as err:
        get_logger().error("%s", err)
        exit_now_if_distributed(EXIT_FAILED)
        return EXIT_FAILED
    if code != EXIT_OK:
        exit_now_if_distributed(code)
    return code


def extend_t_end(cfg: config_mod.Config, out: Path, restart: str | None, resume: bool, extra: float) -> config_mod.Config:
    """``cfg`` with ``time.t_end`` = the t_end of the run the restart continues + ``extra`` (``--add-to-t-end``).

    The run's t_end is the one its checkpoint was written with (a finished run's is its last time), so
    an interrupted run is extended past its planned end, not from where it stopped. Needs ``restart``;
    refused with ``resume``, which a requeued job runs again and again (each would extend once more).
    """
    from simulator.output import checkpoints

    if not extra > 0:
        raise ConfigError("--add-to-t-end", extra, "give a positive time", "is not allowed")
    if resume or restart is None:
        raise ConfigError("--add-to-t-end", extra, "extend once with --restart [PATH] --add-to-t-end T, then "
                          "resume with the new t_end (the log and the resume hint name it)",
                          "needs --restart (with --resume every requeued job would extend the run again)")
    source = out if restart == "latest" else Path(restart)
    ckpt = checkpoints.find(source)
    if ckpt is None:
        raise ConfigError("--restart", restart, f"no complete checkpoint under {source}", "has nothing to extend")
    t_end = float(ckpt.meta["config"]["time"]["t_end"]) + extra
    return dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, t_end=t_end))


def run_file(config: str, overrides: Sequence[str] = (), out: str | None = None, add_to_t_end: float | None = None,
             **options: bool | str | None) -> int:
    """``simulator run CONFIG [--set ...] [--out OUT] [--add-to-t-end T] [options]``; returns the exit status."""
    cfg = config_mod.load(config, overrides)
    out_dir = None if out is None else Path(out)
    if add_to_t_end is not None:
        from simulator.run import rundir

        cfg = extend_t_end(cfg, rundir.output_dir(cfg, out), options.get("restart"),  # type: ignore[arg-type]
                           bool(options.get("resume")), add_to_t_end)
        overrides = [*overrides, f"time.t_end={cfg.time.t_end!r}"]  # what resuming the extended run needs
    hint = " ".join(["simulator run", config, *sum((["--set", o] for o in overrides), []), "--resume", "--out",
                     str(out_dir or f"outputs/{cfg.name}")])
    return run_config(cfg, out_dir, hint=hint, **options)  # type: ignore[arg-type]
