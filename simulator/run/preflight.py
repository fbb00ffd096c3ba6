"""A run's paths checked before JAX is imported: its output directory planned (a ``--restart`` or ``--out`` that
does not exist, a directory that holds another run), the checkpoint a restart continues, a new run's input files
(``initial.path``, the particles' placement files). Every process checks, reading only; a refusal is one
ConfigError and touches nothing. Importable without JAX (:mod:`simulator.run.segment`, which needs it, calls it)."""

from __future__ import annotations

from pathlib import Path

from simulator import particles
from simulator.config import Config
from simulator.output import sources
from simulator.run import restart as restarts, rundir


def check(cfg: Config, out: Path, *, allow_physics_change: bool = False, overwrite: bool = False,
          restart: str | None = None, resume: bool = False) -> rundir.DirectoryPlan:
    """The plan of ``cfg``'s run in ``out`` (:func:`simulator.run.rundir.plan`), the checkpoint it restarts from
    checked against ``cfg`` or, for a new run, its input files there."""
    plan = rundir.plan(cfg, out, overwrite=overwrite, restart=restart, resume=resume)
    if plan.done:
        return plan
    if plan.restart is not None:
        restarts.checkpoint_to_resume(cfg, out, plan.restart, plan.source, allow_physics_change, resume=resume)
    else:
        sources.check_start(cfg.initial, cfg)  # a new run: its initial condition's sources must be there now
        particles.check_start(cfg)  # and its particles' placement files
    return plan
