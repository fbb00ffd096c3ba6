"""What ``simulator run`` does, as a function: used by the CLI, by sweep array tasks and by the API.

The run directory is checked and prepared before JAX starts (a refused run changes nothing), then the
runtime starts, then the loop runs. Bad input raises :class:`~simulator.errors.ConfigError` (the
caller reports it: exit 2); a failed run is logged and returns 1; a stopped run returns 75.
"""

from __future__ import annotations

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
    if resume and (restart is not None or overwrite):
        raise ConfigError("--resume", True, "it already chooses between a new run and --restart",
                          "cannot be combined with --restart or --overwrite")
    mode = start(cfg)
    from simulator.plan import check_run

    check_run(cfg)  # a grid that cannot fit the devices is refused before anything is allocated or written
    if resume:
        restart = rundir.resume_target(cfg, out)
    rundir.prepare_output(out, overwrite, restart)  # a refused run changes nothing
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


def run_file(config: str, overrides: Sequence[str] = (), out: str | None = None, **options: bool | str | None) -> int:
    """``simulator run CONFIG [--set ...] [--out OUT] [options]``; returns the exit status."""
    cfg = config_mod.load(config, overrides)
    out_dir = None if out is None else Path(out)
    hint = " ".join(["simulator run", config, *sum((["--set", o] for o in overrides), []), "--resume", "--out",
                     str(out_dir or f"outputs/{cfg.name}")])
    return run_config(cfg, out_dir, hint=hint, **options)  # type: ignore[arg-type]
