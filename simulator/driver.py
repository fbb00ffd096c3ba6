"""Build a run from a config and drive it: a jitted chunk of steps, host work only between chunks.

The chunk function ``(equation, state, t, n_steps, dt, params) -> state`` is compiled once per
run: the step count, dt and the physical parameters are traced arguments, so the last, shorter chunk,
an adaptive dt and a sweep over viscosity or G reuse the same program. Between chunks the host
computes diagnostics and spectra (mesh reductions; a few numbers come back), appends a row to
``timeseries.csv`` and to ``spectra.h5``, checks for NaN/Inf, chooses the next dt when it is adaptive,
and prints progress from process 0.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from jax.sharding import NamedSharding, PartitionSpec

from simulator import runtime
from simulator.output import checkpoints as checkpoint
from simulator.output import hdf5 as io
from simulator.output.snapshots import write_snapshot
from simulator.output.spectra import SpectraFile
from simulator.output.timeseries import TimeSeries
from simulator import config as config_mod
from simulator import spectra as spectra_mod
from simulator.errors import ConfigError
from simulator.integrators import INTEGRATORS
from simulator.log import get_logger
from simulator.physics import EQUATIONS

#: exit status of a run stopped by SIGTERM/SIGUSR1/SIGINT after writing a checkpoint (EX_TEMPFAIL:
#: "try again", which is what a requeued Slurm job does with --restart)
EXIT_INTERRUPTED = 75
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)
#: what a run writes into its directory; --overwrite removes exactly these
RUN_FILES = ("config.yaml", "status.json", "run.log", "timeseries.csv", "spectra.h5", "segments", "snapshots",
             "checkpoints")
#: ``<run>/status.json``: state (running, interrupted, finished, failed), step, time, exit code, host, time stamp
STATUS_FILE = "status.json"


class NonFiniteError(RuntimeError):
    """A diagnostic became NaN or Inf."""


def output_dir(cfg: config_mod.Config, override: str | None) -> Path:
    return Path(override or cfg.output.dir or Path("outputs") / cfg.name)


def prepare_output(path: Path, overwrite: bool, restart: str | None = None) -> None:
    """Check the run directory before anything starts: a new run needs a new or empty directory (or
    ``overwrite``, which removes the previous run's files); a restart needs the existing run."""
    if restart is not None:
        if overwrite:
            raise ConfigError("--overwrite", True, "use --restart to continue a run or --overwrite to replace it",
                              "cannot be combined with --restart")
        target = path if restart == "latest" else Path(restart)
        if not target.exists():
            raise ConfigError("--restart", str(target), "give a run directory or a checkpoint file that exists",
                              "does not exist")
        return
    if path.exists() and not path.is_dir():
        raise ConfigError("--out", str(path), "give a directory", "is a file")
    if path.exists() and any(path.iterdir()):
        if not overwrite:
            raise ConfigError("--out", str(path), "choose a new directory, pass --restart to continue it, or "
                              "--overwrite to replace it", "already holds a run")
        for name in RUN_FILES:
            target = path / name
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", str(path), "choose a writable location", f"cannot be created ({err.strerror})") from None


def resume_target(cfg: config_mod.Config, path: Path) -> str | None:
    """What ``--resume`` does in ``path``: "latest" when it holds a complete checkpoint, None (start
    from t = 0) when it holds no run, or a run of the same physics and grid that never reached its
    first checkpoint (that partial output is replaced). A job script can therefore run the same
    command on every (re)queued allocation. Anything else is refused, so no other run is touched."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    if checkpoint.find(path) is not None:
        return "latest"
    earlier = path / "config.yaml"
    try:
        old = yaml.safe_load(earlier.read_text())["config"]
        same = not checkpoint.same_physics(old, config_mod.to_dict(cfg))
    except (OSError, TypeError, KeyError, yaml.YAMLError):
        same = False
    if not same:
        raise ConfigError("--resume", str(path), "give the directory of this config's run, or a new one",
                          "holds files but no checkpoint of a run with this physics and grid")
    get_logger().warning("%s has no complete checkpoint: starting again from t = 0, replacing its partial output",
                         path)
    prepare_output(path, overwrite=True)
    return None


def read_status(path: Path) -> dict[str, Any] | None:
    """The run's ``status.json`` as a dict, or None where there is none (or it cannot be read)."""
    try:
        return json.loads((path / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None


def _write_status(path: Path, state: str, step: int | None, t: float | None, code: int | None = None) -> None:
    """Replace ``status.json`` atomically (a reader never sees half a file). Process 0 only."""
    tmp = path / f".{STATUS_FILE}.tmp"
    try:
        tmp.write_text(json.dumps({"state": state, "step": step, "time": t, "exit_code": code,
                                   "host": socket.gethostname(), "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
        os.replace(tmp, path / STATUS_FILE)
    except OSError as err:
        raise io.OutputWriteError(f"writing {path / STATUS_FILE} failed: {io.describe_os_error(err)}") from err


class RunLock:
    """``<run>/.lock`` (pid and host), held by process 0 while a run writes into the directory.

    A second run into the same directory is refused while the first one lives; a lock left by a
    process that no longer exists on this host is recognised as stale and replaced.
    """

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        self.held = False

    def acquire(self) -> None:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._stale():
                    break
                get_logger().warning("removing the stale lock %s of a process that no longer runs", self.path)
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return
        try:
            other = json.loads(self.path.read_text())
        except (OSError, ValueError):
            other = {}
        raise ConfigError("--out", str(self.path.parent), "wait for that run to end, or remove the .lock file if it "
                          "is dead", f"is in use by a running process (pid {other.get('pid')} on "
                          f"{other.get('host')})")

    def _stale(self) -> bool:
        try:
            other = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return True  # unreadable: a writer died between creating and filling it
        if other.get("host") != socket.gethostname():
            return False  # cannot tell for another host: assume it lives
        try:
            os.kill(int(other["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


class StopRequest:
    """Turns SIGTERM, SIGUSR1 and SIGINT into a request to stop at the next chunk boundary."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal = signal.Signals(signum).name

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def agreed(self) -> str | None:
        """The signal if any process received one (all processes must stop together)."""
        if jax.process_count() == 1:
            return self.signal
        from jax.experimental import multihost_utils

        names = [s.name for s in STOP_SIGNALS]
        mine = np.int32(names.index(self.signal) + 1 if self.signal else 0)
        got = int(np.max(multihost_utils.process_allgather(mine)))
        return names[got - 1] if got else None


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


def _attach_log_file(path: Path) -> logging.Handler:
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    get_logger().addHandler(handler)
    return handler


def run(cfg: config_mod.Config, out: Path, mode: str, restart: str | None = None,
        allow_physics_change: bool = False, resume_hint: str = "") -> int:
    """Run ``cfg`` into ``out`` (already prepared); ``restart`` = "latest" or a checkpoint path.

    Returns 0 when finished, EXIT_INTERRUPTED when a signal stopped it (after a checkpoint).
    Raises NonFiniteError, io.OutputWriteError, ConfigError (bad restart).
    """
    rank0 = jax.process_index() == 0
    ckpt = _checkpoint_to_resume(cfg, out, restart, allow_physics_change) if restart is not None else None
    if ckpt is not None and Stepper(cfg.time, cfg.output.every).finished(ckpt.step, ckpt.time):
        get_logger().info("%s already finished (step %d, t = %.6g): nothing to do", out, ckpt.step, ckpt.time)
        return 0
    lock = RunLock(out)
    handler = None
    if rank0:
        lock.acquire()
        handler = _attach_log_file(out / "run.log")
    try:
        with StopRequest() as stop:
            return _run(cfg, out, mode, ckpt, resume_hint, stop)
    except BaseException:
        if rank0:
            last = read_status(out) or {}
            try:
                _write_status(out, "failed", last.get("step"), last.get("time"), 1)
            except io.OutputWriteError:  # e.g. the disk is full: the error being raised is the one to report
                pass
        raise
    finally:
        if handler is not None:
            get_logger().removeHandler(handler)
            handler.close()
        lock.release()


def _checkpoint_to_resume(cfg: config_mod.Config, out: Path, restart: str,
                          allow_physics_change: bool) -> checkpoint.Checkpoint:
    """The checkpoint a restart continues from, checked against this run's config (nothing is written)."""
    ckpt = checkpoint.find(out if restart == "latest" else Path(restart))
    if ckpt is None:
        raise ConfigError("--restart", restart, f"no complete checkpoint under {out}; start a new run instead",
                          "has nothing to resume")
    if tuple(ckpt.meta["config"]["grid"]["shape"]) != tuple(cfg.grid.shape):
        raise ConfigError("--restart", str(ckpt.index), f"this run's grid.shape is {list(cfg.grid.shape)}",
                          f"holds grid {ckpt.meta['config']['grid']['shape']}")
    if ckpt.meta["config"]["physics"]["name"] != cfg.physics.name:
        raise ConfigError("--restart", str(ckpt.index), f"this run solves {cfg.physics.name}",
                          f"holds a {ckpt.meta['config']['physics']['name']} state")
    diffs = checkpoint.same_physics(ckpt.meta["config"], config_mod.to_dict(cfg))
    if diffs and not allow_physics_change:
        raise ConfigError("--restart", str(ckpt.index), "pass --allow-physics-change to continue with the new "
                          f"values (changed: {', '.join(diffs)})", "was written with other physics or grid")
    return ckpt


def _run(cfg: config_mod.Config, out: Path, mode: str, ckpt: checkpoint.Checkpoint | None, resume_hint: str,
         stop: StopRequest) -> int:
    log = get_logger()
    rank0 = jax.process_index() == 0
    sim = Simulation(cfg)
    eq = sim.equation
    meta = {
        "config": config_mod.to_dict(cfg), "versions": runtime.versions(), "git_revision": _git_revision(),
        "process_mode": mode, "processes": jax.process_count(), "devices": jax.device_count(),
        "platform": jax.default_backend(), "layout": sim.fft.describe(),
        "slurm": runtime.slurm_environment(), "restart": None if ckpt is None else str(ckpt.index),
    }
    log.info("run %s: %s on grid %s, box %s, %s, %s, dt %s, t_end %s", cfg.name, cfg.physics.name,
             list(cfg.grid.shape), [round(b, 6) for b in cfg.grid.box], cfg.precision, cfg.time.integrator,
             cfg.time.dt, cfg.time.t_end)
    log.info("physics: %s; initial: %s", config_mod.to_dict(cfg.physics), cfg.initial.name)
    log.info("devices: %d %s on %d process(es) (%s); %s", jax.device_count(), jax.default_backend(),
             jax.process_count(), mode, sim.fft.describe())
    log.info("versions: %s; git %s; slurm: %s", " ".join(f"{k}={v}" for k, v in meta["versions"].items()),
             meta["git_revision"], {k: v for k, v in meta["slurm"].items() if v} or "none")

    stepper = Stepper(cfg.time, cfg.output.every)
    spectral = eq.state_space == "spectral"
    step, t_host, resumed_from = 0, 0.0, None
    if ckpt is not None:
        state = checkpoint.restore(ckpt, sim.initial_state(), sim.fft, spectral)
        step, t_host, stepper.dt, resumed_from = ckpt.step, ckpt.time, ckpt.dt, ckpt.step
        log.info("resumed from %s: step %d, t = %.6g, dt = %.3g", ckpt.index.with_suffix(""), step, t_host, stepper.dt)
    else:
        state = sim.initial_state()
    if rank0:
        segments = out / "segments"
        segments.mkdir(exist_ok=True)
        number = len(list(segments.glob("segment_*.yaml")))
        text = yaml.safe_dump({**meta, "segment": number, "start_step": step}, sort_keys=False)
        (segments / f"segment_{number:03d}.yaml").write_text(text)
        (out / "config.yaml").write_text(text)
        _write_status(out, "running", step, t_host)

    cells = math.prod(cfg.grid.shape)
    series = TimeSeries(out / "timeseries.csv", resumed_from) if rank0 else None
    spectra_file = (SpectraFile(out / "spectra.h5", spectra_mod.shell_wavenumbers(cfg.grid.shape, cfg.grid.box),
                                resumed_from) if rank0 and cfg.output.spectra else None)
    output_fields = jax.jit(lambda e, s: e.output_fields(s))
    last_checkpoint = [None]

    def record(step: int, t_now: float, dt: float) -> dict[str, float]:
        diag = {k: float(v) for k, v in sim.diagnostics(state, dt).items()}
        if series is not None:
            series.append({"step": step, "time": t_now, "dt": dt, **diag})
        if cfg.output.spectra:
            shells = {k: np.asarray(jax.device_get(v)) for k, v in sim.spectra(state).items()}
            if spectra_file is not None:
                spectra_file.append(step, t_now, shells)
        bad = [k for k, v in diag.items() if not math.isfinite(v)]
        if bad:
            raise NonFiniteError(f"{', '.join(bad)} became non-finite at step {step}, t = {t_now:.6g}; last good "
                                 f"checkpoint: {last_checkpoint[0] or 'none'}")
        return diag

    def snapshot(step: int, t_now: float) -> None:
        fields = output_fields(eq, state)
        stem = out / "snapshots" / f"s{step:08d}"
        attrs = {"step": step, "time": t_now, "config": meta["config"], "versions": meta["versions"],
                 "layout": meta["layout"], "box": list(cfg.grid.box)}
        index = write_snapshot(stem, fields, attrs, cfg.grid.box, t_now)
        log.info("snapshot %s", index)

    def save(step: int, t_now: float) -> None:
        marker = checkpoint.write(out, state, step=step, time=t_now, dt=stepper.dt, spectral=spectral,
                                  perm=sim.fft.perm, full_spectrum=spectral and not sim.fft.has_real_transform,
                                  meta={"config": meta["config"], "backend": cfg.fft.backend}, keep=cfg.checkpoint.keep)
        last_checkpoint[0] = marker.with_suffix("")
        log.info("checkpoint %s", marker.with_suffix(""))

    def snapshot_due(step: int, t_prev: float, t_now: float) -> bool:
        by_step = cfg.output.snapshot_every and step % cfg.output.snapshot_every == 0
        by_time = cfg.output.snapshot_dt and math.floor(t_now / cfg.output.snapshot_dt + 1e-9) > math.floor(
            t_prev / cfg.output.snapshot_dt + 1e-9)
        return bool(by_step or by_time)

    start, steps_done = time.perf_counter(), 0
    try:
        if resumed_from is None:
            stepper.adapt(record(0, 0.0, stepper.dt)["cfl"])
            if cfg.output.snapshot_every or cfg.output.snapshot_dt:
                snapshot(0, 0.0)
        while not stepper.finished(step, t_host):
            n, dt = stepper.next_chunk(step, t_host)
            state = sim.advance(state, t_host, n, dt)
            t_prev = t_host
            step, steps_done = step + n, steps_done + n
            t_host = stepper.time_after(step, t_host, n, dt)
            diag = record(step, t_host, dt)
            stepper.adapt(diag["cfl"])
            elapsed = time.perf_counter() - start
            rate = steps_done / elapsed
            shown = " ".join(f"{k}={diag[k]:.6g}" for k in eq.progress)
            log.info("step %d t=%.4f dt=%.3g %s steps/s=%.2f cells/s=%.3g ETA %.0fs", step, t_host, dt, shown,
                     rate, rate * cells, stepper.eta(step, t_host, elapsed, steps_done))
            if rank0:
                _write_status(out, "running", step, t_host)
            if snapshot_due(step, t_prev, t_host):
                snapshot(step, t_host)
            received = stop.agreed()
            if received:
                save(step, t_host)
                log.warning("stopped by %s at step %d, t = %.6g after writing a checkpoint; resume with: %s",
                            received, step, t_host, resume_hint or f"simulator run CONFIG --restart --out {out}")
                if rank0:
                    _write_status(out, "interrupted", step, t_host, EXIT_INTERRUPTED)
                # srun --kill-on-bad-exit ends every task once one exits 75: nobody leaves before all is written
                io.barrier("interrupted")
                return EXIT_INTERRUPTED
            if cfg.checkpoint.every and step % cfg.checkpoint.every == 0 and not stepper.finished(step, t_host):
                save(step, t_host)
        save(step, t_host)
        if rank0:
            _write_status(out, "finished", step, t_host, 0)
    finally:
        if series is not None:
            series.close()
        if spectra_file is not None:
            spectra_file.close()
    log.info("finished %d steps in %.1f s (%d compilation(s)); output in %s", step,
             time.perf_counter() - start, sim.traces, out)
    return 0
