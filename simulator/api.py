"""The public Python API: build, run and read simulations from a script (documented in
docs/reference/api.md; a promise to users: changed only with that page and the README).

    import simulator
    sim = simulator.Simulation.from_config("configs/taylor_green.yaml", {"grid.shape": 32}, cpu_devices=2)
    state = sim.initial_state()                 # or sim.state_from_fields(velocity=u) from NumPy
    state = sim.advance(state, steps=100, dt=0.01, t=0.0)
    sim.report(state)                            # {"energy": 0.1249, ...}
    u = sim.to_numpy(sim.fields(state, "velocity")["velocity"])
    simulator.run_config(sim.cfg, out="outputs/scripted")   # what `simulator run` does, files and all
    run = simulator.load_run("outputs/quickstart")          # no JAX needed to read results
    sweep = simulator.load_sweep("outputs/tg_viscosity")    # a sweep's points, each with .params and .run

    g = jax.grad(lambda p: sim.rollout(state, 50, 0.01, params=p).history["energy"].sum())(sim.params)
    simulator.run_ensemble([cfg_a, cfg_b], ["outputs/a", "outputs/b"])  # one batched program, two run dirs

Everything here is also reachable as ``simulator.<name>``; importing ``simulator`` imports no JAX.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator import config as config_mod
from simulator.config import Config
from simulator.results.load import RunResults, SnapshotRef, SweepPoint, SweepResults, load_run, load_sweep

__all__ = ["Config", "RunResults", "Simulation", "SnapshotRef", "SweepPoint", "SweepResults",  # noqa: F822
           "load_config", "load_run", "load_sweep", "run_config", "run_ensemble"]


def load_config(source: str | Path | Mapping[str, Any] | None = None,
                overrides: Mapping[str, Any] | Sequence[str] = ()) -> Config:
    """A validated, resolved config from a YAML file, a mapping, or the defaults (``None``), with
    overrides as ``{"dotted.key": value}`` or ``["dotted.key=value", ...]`` (as ``--set``)."""
    return config_mod.load(source, overrides)


def run_config(cfg: Config, out: str | Path | None = None, *, overwrite: bool = False, resume: bool = False,
               restart: str | None = None, allow_physics_change: bool = False) -> int:
    """Run ``cfg`` as ``simulator run`` would, writing every output into ``out``; returns the exit
    status (0 finished, 1 failed, 75 stopped by a signal). Bad input raises ConfigError."""
    from simulator.planning.admission import admit
    from simulator.run.command import run_config as run

    return run(cfg, out, admit=admit, overwrite=overwrite, resume=resume, restart=restart,
               allow_physics_change=allow_physics_change)


def run_ensemble(cfgs: Sequence[Config], outs: Sequence[str | Path | None] | None = None, *, resume: bool = False,
                 overwrite: bool = False) -> list[int]:
    """Run configs that differ only in traced values (physical parameters, initial conditions, time
    steps, outputs: see :mod:`simulator.run.grouping`) as ONE batched program, each into its own run
    directory exactly as :func:`run_config` would write it; returns each member's exit status (0
    finished, 1 failed, 75 stopped). ``resume``: continue every member from its latest checkpoint.
    Configs of other structures raise ConfigError (group them with ``simulator.run.grouping.groups``)."""
    from simulator.planning.admission import admit
    from simulator.run.ensemble import run_configs

    return run_configs(cfgs, outs, admit=admit, resume=resume, overwrite=overwrite)


def __getattr__(name: str) -> Any:
    if name == "Simulation":  # imports JAX: only when asked for
        from simulator.run.simulation import Simulation

        return Simulation
    raise AttributeError(f"module 'simulator.api' has no attribute {name!r}")
