"""Build a run from a config and drive it: a jitted chunk of steps, host work only between chunks.

The chunk function ``(equation, state, t, n_steps, dt, params) -> state`` is compiled once per
run: the step count, dt and the physical parameters are traced arguments, so the last, shorter chunk,
an adaptive dt and a sweep over viscosity or G reuse the same program. Between chunks the host
computes diagnostics and spectra (mesh reductions; a few numbers come back), appends a row to
``timeseries.csv`` and to ``spectra.h5``, checks for NaN/Inf, chooses the next dt when it is adaptive,
and prints progress from process 0.
"""

from __future__ import annotations

import csv
import math
import subprocess
import time
from pathlib import Path
from typing import Any

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import yaml
from jax.sharding import NamedSharding, PartitionSpec

from simulator import config as config_mod
from simulator import runtime
from simulator import spectra as spectra_mod
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
        self.equation = EQUATIONS[cfg.physics.name].from_config(self.fft, cfg, self.dtype)
        self.params = self.equation.params(cfg.physics)
        self.traces = 0
        self.scalar_sharding = NamedSharding(self.fft.mesh, PartitionSpec())
        self._chunk = None
        self._diagnostics = jax.jit(lambda eq, s, dt, params: eq.diagnostics(s, dt, params))
        self._spectra = jax.jit(lambda eq, s: eq.spectra(s))

    def _compile_chunk(self, state: Any):
        make_step = INTEGRATORS[self.cfg.time.integrator]

        def chunk(eq, state, t, n, dt, params):
            self.traces += 1  # Python runs only while tracing: this counts compilations
            step = make_step(eq)

            def body(_, carry):
                state, t = carry
                return step(state, t, dt, params), t + dt

            return jax.lax.fori_loop(0, n, body, (state, t))[0]

        # Outputs pinned to the initial state's shardings: the first chunk's inputs and every later
        # chunk's carry then look alike to jit, so one compilation serves the whole run. The state is
        # donated: the new state reuses its buffers, so a run holds one copy, not two.
        return jax.jit(chunk, out_shardings=jax.tree.map(lambda a: a.sharding, state), donate_argnums=(1,))

    def diagnostics(self, state: Any, dt: float) -> dict[str, jax.Array]:
        return self._diagnostics(self.equation, state, jnp.asarray(dt, self.dtype), self.params)

    def spectra(self, state: Any) -> dict[str, jax.Array]:
        return self._spectra(self.equation, state)

    def initial_state(self) -> Any:
        """The configured initial condition at t = 0, in the backend's layouts."""
        return self.equation.initial(self.cfg.initial.name, self.cfg.initial, self.params)

    def advance(self, state: Any, t: float, n: int, dt: float, params: Any = None) -> Any:
        """``n`` steps of size ``dt`` from time ``t`` in one call of the compiled chunk. ``state`` is
        donated (its buffers are reused for the result): do not use it afterwards.

        The host keeps the time in float64 and hands it in per chunk, so a float32 run does not
        accumulate rounding in t and every chunk starts from the same t however the run was split.
        """
        if self._chunk is None:
            self._chunk = self._compile_chunk(state)
        t0 = np.asarray(t, self.dtype)
        t_dev = jax.make_array_from_callback((), self.scalar_sharding, lambda _: t0, dtype=self.dtype)
        return self._chunk(self.equation, state, t_dev, jnp.asarray(n, jnp.int32), jnp.asarray(dt, self.dtype),
                           self.params if params is None else params)


class Stepper:
    """Chunk lengths and time steps: a fixed dt for ceil(t_end/dt) steps, or an adaptive dt that
    holds the CFL number at ``time.cfl`` (never above ``time.dt``) and lands exactly on t_end."""

    def __init__(self, time_cfg: config_mod.TimeConfig, every: int):
        self.cfg, self.every = time_cfg, every
        self.dt = time_cfg.dt
        self.total = None if time_cfg.cfl else max(1, math.ceil(time_cfg.t_end / time_cfg.dt - 1e-9))

    def finished(self, step: int, t: float) -> bool:
        if self.total is not None:
            return step >= self.total
        return t >= self.cfg.t_end * (1 - 1e-12)

    def adapt(self, cfl: float) -> None:
        """Choose the next dt from the CFL number measured with the current one (adaptive runs only)."""
        if self.total is None:
            self.dt = self.cfg.dt if cfl <= 0 else min(self.cfg.dt, self.dt * self.cfg.cfl / cfl)

    def next_chunk(self, step: int, t: float) -> tuple[int, float]:
        if self.total is not None:
            return min(self.every, self.total - step), self.dt
        remaining = self.cfg.t_end - t
        if self.every * self.dt < remaining:
            return self.every, self.dt
        n = max(1, math.ceil(remaining / self.dt - 1e-9))
        return n, remaining / n

    def time_after(self, step: int, t: float, n: int, dt: float) -> float:
        """Host time after a chunk: step * dt for a fixed dt (no accumulated rounding), else t + n dt."""
        return step * self.dt if self.total is not None else t + n * dt

    def eta(self, step: int, t: float, elapsed: float, done_steps: int) -> float:
        if self.total is not None:
            return (self.total - step) * elapsed / max(done_steps, 1)
        return (self.cfg.t_end - t) * elapsed / max(t, 1e-300)


class SpectraFile:
    """``spectra.h5``: ``k`` (shell centres), ``step``, ``time``, and one (rows, shells) dataset per
    spectrum, grown by a row at each diagnostics output. Written by process 0 only."""

    def __init__(self, path: Path, k: np.ndarray):
        self.file = h5py.File(path, "w")
        self.file.create_dataset("k", data=k)
        self.file["k"].attrs["doc"] = "shell centre |k| = j * 2 pi / max(box); shell j holds round(|k|/dk) = j"
        for name, dtype in (("step", np.int64), ("time", np.float64)):
            self.file.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)

    def append(self, step: int, t: float, spectra: dict[str, np.ndarray]) -> None:
        row = self.file["step"].shape[0]
        for name, value in (("step", step), ("time", t)):
            self.file[name].resize((row + 1,))
            self.file[name][row] = value
        for name, values in spectra.items():
            if name not in self.file:
                self.file.create_dataset(name, shape=(0, values.size), maxshape=(None, values.size), dtype=np.float64)
            self.file[name].resize((row + 1, values.size))
            self.file[name][row] = values
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def run(cfg: config_mod.Config, out: Path, mode: str) -> int:
    """Run ``cfg`` into ``out`` (already prepared). Returns an exit status."""
    log = get_logger()
    sim = Simulation(cfg)
    eq = sim.equation
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
    stepper = Stepper(cfg.time, cfg.output.every)
    state = sim.initial_state()
    cells = math.prod(cfg.grid.shape)
    csv_file = open(out / "timeseries.csv", "w", newline="") if rank0 else None
    spectra_file = (SpectraFile(out / "spectra.h5", spectra_mod.shell_wavenumbers(cfg.grid.shape, cfg.grid.box))
                    if rank0 and cfg.output.spectra else None)
    writer = None

    def record(step: int, t_now: float, dt: float) -> dict[str, float]:
        nonlocal writer
        diag = {k: float(v) for k, v in sim.diagnostics(state, dt).items()}
        row = {"step": step, "time": t_now, "dt": dt, **diag}
        if csv_file is not None:
            if writer is None:
                writer = csv.DictWriter(csv_file, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            csv_file.flush()
        if cfg.output.spectra:
            shells = {k: np.asarray(jax.device_get(v)) for k, v in sim.spectra(state).items()}
            if spectra_file is not None:
                spectra_file.append(step, t_now, shells)
        bad = [k for k, v in diag.items() if not math.isfinite(v)]
        if bad:
            raise NonFiniteError(f"{', '.join(bad)} became non-finite at step {step}, t = {t_now:.6g}")
        return diag

    step, t_host, start = 0, 0.0, time.perf_counter()
    try:
        stepper.adapt(record(0, 0.0, stepper.dt)["cfl"])
        while not stepper.finished(step, t_host):
            n, dt = stepper.next_chunk(step, t_host)
            state = sim.advance(state, t_host, n, dt)
            step = step + n
            t_host = stepper.time_after(step, t_host, n, dt)
            diag = record(step, t_host, dt)
            stepper.adapt(diag["cfl"])
            elapsed = time.perf_counter() - start
            rate = step / elapsed
            shown = " ".join(f"{k}={diag[k]:.6g}" for k in eq.progress)
            log.info("step %d t=%.4f dt=%.3g %s steps/s=%.2f cells/s=%.3g ETA %.0fs", step, t_host, dt, shown,
                     rate, rate * cells, stepper.eta(step, t_host, elapsed, step))
    finally:
        if csv_file is not None:
            csv_file.close()
        if spectra_file is not None:
            spectra_file.close()
    log.info("finished %d steps in %.1f s (%d compilation(s)); output in %s", step,
             time.perf_counter() - start, sim.traces, out)
    return 0
