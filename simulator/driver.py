"""Build a run from a config and drive it: a jitted chunk of steps, host work only between chunks.

The chunk function ``(u_hat, t, n_steps, dt, params) -> (u_hat, t)`` is compiled once per run: the
step count, dt and the physical parameters are traced arguments, so the last, shorter chunk and a
sweep over viscosity reuse the same program. Between chunks the host computes diagnostics (mesh
reductions, a few scalars come back), appends a row to ``timeseries.csv``, checks for NaN/Inf and
prints progress from process 0.
"""

from __future__ import annotations

import csv
import math
import subprocess
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from jax.sharding import NamedSharding, PartitionSpec

from simulator import config as config_mod
from simulator import runtime
from simulator.errors import ConfigError
from simulator.integrators import INTEGRATORS
from simulator.log import get_logger
from simulator.physics import EQUATIONS


class NonFiniteError(RuntimeError):
    """A diagnostic became NaN or Inf."""


def output_dir(cfg: config_mod.Config, override: str | None) -> Path:
    return Path(override or cfg.output.dir or Path("outputs") / cfg.name)


def prepare_output(path: Path, overwrite: bool) -> None:
    """Refuse to write into an existing, non-empty run directory unless ``overwrite``."""
    if path.exists() and any(path.iterdir()) and not overwrite:
        raise ConfigError("--out", str(path), "choose a new directory or pass --overwrite", "already holds a run")
    path.mkdir(parents=True, exist_ok=True)


def _git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Simulation:
    """Everything a run needs, built from a validated config (after the runtime is set up)."""

    def __init__(self, cfg: config_mod.Config, devices=None):
        self.cfg = cfg
        self.dtype = jnp.float64 if cfg.precision == "float64" else jnp.float32
        self.fft = runtime.make_fft(cfg, devices)
        self.equation = EQUATIONS[cfg.physics.name](self.fft, cfg.grid.box, self.dtype)
        self.params = self.equation.params(cfg.physics)
        make_step = INTEGRATORS[cfg.time.integrator]
        self.traces = 0

        def chunk(eq, u, t, n, dt, params):
            self.traces += 1  # Python runs only while tracing: this counts compilations
            step = make_step(eq)

            def body(_, carry):
                u, t = carry
                return step(u, t, dt, params), t + dt

            return jax.lax.fori_loop(0, n, body, (u, t))

        # Pinned shardings: the first chunk's inputs and every later chunk's carry look alike to jit,
        # so one compilation serves the whole run.
        self.state_sharding = self.fft.spectral_sharding(1)
        self.scalar_sharding = NamedSharding(self.fft.mesh, PartitionSpec())
        self.chunk = jax.jit(chunk, out_shardings=(self.state_sharding, self.scalar_sharding))
        self._diagnostics = jax.jit(lambda eq, u, dt, params: eq.diagnostics(u, dt, params))

    def diagnostics(self, u: jax.Array, dt: float) -> dict[str, jax.Array]:
        return self._diagnostics(self.equation, u, jnp.asarray(dt, self.dtype), self.params)

    def initial_state(self) -> tuple[jax.Array, jax.Array]:
        """(u_hat, t): the configured initial condition at t = 0, in the run's shardings."""
        u = jax.device_put(self.equation.initial(self.cfg.initial.name, self.cfg.initial), self.state_sharding)
        zero = np.zeros((), self.dtype)
        return u, jax.make_array_from_callback((), self.scalar_sharding, lambda _: zero, dtype=self.dtype)

    def advance(self, u: jax.Array, t: jax.Array, n: int, dt: float, params: Any = None):
        return self.chunk(self.equation, u, t, jnp.asarray(n, jnp.int32), jnp.asarray(dt, self.dtype),
                          self.params if params is None else params)


def run(cfg: config_mod.Config, out: Path, mode: str) -> int:
    """Run ``cfg`` into ``out`` (already prepared). Returns an exit status."""
    log = get_logger()
    sim = Simulation(cfg)
    rank0 = jax.process_index() == 0
    meta = {
        "config": config_mod.to_dict(cfg), "versions": runtime.versions(), "git_revision": _git_revision(),
        "process_mode": mode, "processes": jax.process_count(), "devices": jax.device_count(),
        "platform": jax.default_backend(), "layout": sim.fft.describe(),
    }
    if rank0:
        (out / "config.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    log.info("run %s: %s on grid %s, %s, %s", cfg.name, cfg.physics.name, list(cfg.grid.shape),
             cfg.precision, cfg.time.integrator)
    log.info("devices: %d %s on %d process(es); %s", jax.device_count(), jax.default_backend(),
             jax.process_count(), sim.fft.describe())
    dt, total = cfg.time.dt, max(1, math.ceil(cfg.time.t_end / cfg.time.dt - 1e-9))
    u, t = sim.initial_state()
    cells = math.prod(cfg.grid.shape)
    csv_file = open(out / "timeseries.csv", "w", newline="") if rank0 else None
    writer = None

    def record(step: int) -> dict[str, float]:
        nonlocal writer
        diag = {k: float(v) for k, v in sim.diagnostics(u, dt).items()}
        row = {"step": step, "time": float(t), **diag}
        if csv_file is not None:
            if writer is None:
                writer = csv.DictWriter(csv_file, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            csv_file.flush()
        bad = [k for k, v in diag.items() if not math.isfinite(v)]
        if bad:
            raise NonFiniteError(f"{', '.join(bad)} became non-finite at step {step}, t = {float(t):.6g}")
        return diag

    done, start = 0, time.perf_counter()
    try:
        record(0)
        while done < total:
            n = min(cfg.output.every, total - done)
            u, t = sim.advance(u, t, n, dt)
            done += n
            diag = record(done)
            rate = done / (time.perf_counter() - start)
            log.info("step %d/%d t=%.4f dt=%.3g E=%.6e cfl=%.3f steps/s=%.2f cells/s=%.3g ETA %.0fs", done, total,
                     float(t), dt, diag["energy"], diag["cfl"], rate, rate * cells, (total - done) / rate)
    finally:
        if csv_file is not None:
            csv_file.close()
    log.info("finished %d steps in %.1f s (%d compilation(s)); output in %s", done,
             time.perf_counter() - start, sim.traces, out)
    return 0
