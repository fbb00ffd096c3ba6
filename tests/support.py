"""Shared test helpers: the backend cases every equation is checked on (from the registry, not a hand
list), and simulations built through the public API exactly as a user script would."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.api import load_config
from simulator.fft import BACKENDS
from simulator.run.simulation import Simulation

#: devices used for the "several devices" case of each backend
SEVERAL = 4
#: the 2D mesh of the several-device case of a backend that takes one
MESH_2D = (2, 2)


def backend_cases(several: int = SEVERAL) -> list[tuple[str, int, tuple[int, ...] | None]]:
    """(backend, devices, mesh) for every registered backend on 1 and on ``several`` devices."""
    cases = []
    for name in sorted(BACKENDS):
        cases.append((name, 1, None))
        if name == "single":
            continue
        cases.append((name, several, MESH_2D if len(BACKENDS[name].axis_names) == 2 else None))
    return cases


def mesh_cases(several: int = SEVERAL) -> list[tuple[str, int, tuple[int, ...] | None]]:
    """(backend, devices, mesh) for every registered backend on one device, and on ``several`` in every mesh
    shape its layout accepts (each factor pair of a 2D mesh, less those its ``check_mesh_request`` refuses):
    the matrix of what runs along each sharded axis in turn (particles kept per device, their hand-over)."""
    from simulator.errors import ConfigError

    cases = []
    for name in sorted(BACKENDS):
        layout = BACKENDS[name]
        cases.append((name, 1, None))
        if math.prod(layout.mesh_shape(several, None)) != several:  # a one-device layout
            continue
        shapes = ([(several,)] if len(layout.axis_names) == 1
                  else [(p, several // p) for p in range(1, several + 1) if several % p == 0])
        for shape in shapes:
            try:
                layout.check_mesh_request(shape)
            except ConfigError:
                continue
            cases.append((name, several, shape))
    return cases


def distributed_cases(several: int = SEVERAL) -> list[tuple[str, int, tuple[int, ...] | None]]:
    """The cases that exercise a decomposition (several devices), for checks against single-device."""
    return [c for c in backend_cases(several) if c[1] > 1]


def plane_cases(several: int = SEVERAL) -> list[tuple[str, int, tuple[int, ...] | None]]:
    """(backend, devices, mesh) for every backend that takes a plane (:func:`simulator.config.grid.plane_backends`) on
    one device and, where its layout splits, on 2 and ``several``."""
    from simulator.config.grid import plane_backends

    cases = []
    for name in plane_backends():
        layout = BACKENDS[name]
        cases += [(name, n, None) for n in (1, 2, several) if n == 1 or math.prod(layout.mesh_shape(n, None)) == n]
    return cases


def by_identity(state: Any, name: str, quantity: str) -> np.ndarray:
    """An owned species' ``quantity`` rows of its live slots, sorted by identity (checked: 0 .. N-1)."""
    live = np.asarray(state[f"particles.{name}.live"])
    ident = np.asarray(state[f"particles.{name}.ident"])[live]
    order = np.argsort(ident)
    assert np.array_equal(ident[order], np.arange(len(ident)))
    return np.asarray(state[f"particles.{name}.{quantity}"])[live][order]


def species_rows(state: Any, species: Any, quantity: str) -> np.ndarray:
    """A species' ``quantity`` (``position``, ``velocity``) of ``state``, row i particle i, replicated or owned
    (:func:`by_identity`)."""
    if species.owned:
        return by_identity(state, species.name, quantity)
    return np.asarray(state[f"particles.{species.name}.{quantity}"])


def grid_of(equation: str, shape: list[int]) -> list[int]:
    """A box's ``grid.shape`` as the equation takes it: its last two entries for a planar one (a plane)."""
    from simulator.equations import get

    return list(shape[-2:]) if get(equation).dimensions == 2 else list(shape)


def case_id(case: tuple[str, int, Any]) -> str:
    name, n, mesh = case
    return f"{name}-{'x'.join(map(str, mesh)) if mesh else n}"


def simulation(devices, case=("single", 1, None), **overrides: Any) -> Simulation:
    """A float64 Simulation of the default config with ``overrides`` (dotted keys, ``__`` for ``.``)
    on backend case ``case``."""
    name, n, mesh = case
    values = {"precision": "float64", "fft.backend": name, "fft.mesh": list(mesh) if mesh else None}
    values.update({k.replace("__", "."): v for k, v in overrides.items()})
    return Simulation(load_config(None, values), devices[:n])


_SHARED: dict[Any, Simulation] = {}


def shared(case=("single", 1, None), **overrides: Any) -> Simulation:
    """Like :func:`simulation`, but one object per (case, overrides) for the whole test session, so
    tests that differ only in initial states or traced parameters share its compiled programs (pass
    states from ``sim.initial_state({...})`` and parameters from ``sim.parameters(...)``)."""
    key = (case, tuple(sorted((k, repr(v)) for k, v in overrides.items())))
    if key not in _SHARED:
        _SHARED[key] = simulation(jax.devices(), case, **overrides)
    return _SHARED[key]


def advance(sim: Simulation, state: Any, dt: float, steps: int, params: dict | None = None) -> Any:
    """``steps`` steps through the simulation's compiled chunk (one compilation per simulation)."""
    return sim.advance(state, steps, dt, 0.0, params)


def integrate(sim: Simulation, state: Any, dt: float, steps: int, params: dict | None = None,
              record=None) -> tuple[Any, np.ndarray]:
    """``steps`` steps of the simulation's scheme; with ``record`` (a function of (equation, state)),
    also its value after every step (as a NumPy array)."""
    step = sim.scheme.load()(sim.equation)
    p = sim.params if params is None else params
    dt_arr = jnp.asarray(dt, sim.dtype)

    @jax.jit
    def run(eq, state, p):
        def body(s, i):
            s = step(s, i * dt_arr, dt_arr, p)
            return s, (record(eq, s) if record else jnp.zeros(()))

        return jax.lax.scan(body, state, jnp.arange(steps))

    state, values = run(sim.equation, state, p)
    return state, np.asarray(values)


_NONLINEAR = jax.jit(lambda eq, state, p: eq.fft.irfft(eq.nonlinear(state, 0.0, p)))


def nonlinear_field(sim: Simulation, state: Any, params: dict | None = None) -> np.ndarray:
    """The nonlinear term N(u) at t = 0 in real space, ``(components, Nx, Ny, Nz)``, as one compiled program
    (called outside jit, the term compiles each of its operations as a program of its own: seconds)."""
    return sim.to_numpy(_NONLINEAR(sim.equation, state, sim.params if params is None else params))


def on_grid(config: str | Path, n: int) -> dict[str, Any]:
    """Overrides that put a shipped config on an n^3 grid: ``grid.shape``, and a mixed dark matter run's
    ``physics.cdm_particles`` (one per cell, as the lattice needs n^3 particles dividing the grid); a planar config
    on an n^2 grid, its forcing at mode 2 (a Tollmien-Schlichting start keeps its own count across the plates, which
    it needs to be resolved)."""
    import yaml

    from simulator.config import load
    from simulator.equations import get

    data = yaml.safe_load(Path(config).read_text())
    physics = data.get("physics", {})
    # the equation the config runs (a physics' name, `convection`, takes the plane or the box from grid.shape)
    if get(load(config).physics.name).dimensions == 2:  # a plane: n^2, its forcing on the grid's modes
        forced = {"physics.forcing_wavenumber": 2} if physics.get("forcing_wavenumber") else {}
        if (data.get("initial") or {}).get("name") == "tollmien_schlichting":  # refused unless resolved across
            return {"grid.shape": [n, data["grid"]["shape"][-1]], **forced}
        return {"grid.shape": [n] * 2, **forced}
    return {"grid.shape": [n] * 3, **({"physics.cdm_particles": n**3} if physics.get("cdm_particles") else {})}


def relative_error(a: Any, b: Any) -> float:
    """max |a - b| / max |b| over every leaf of two state pytrees (gathered: small grids only); NaN when
    either holds a NaN (np.max propagates it, where Python's max would drop it and report agreement)."""
    errors = [np.max(np.abs(np.asarray(x) - np.asarray(y))) / np.max(np.abs(np.asarray(y)))
              for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)]
    return float(np.max(errors))


def checkpoint(sim: Simulation, state: Any, run_dir: Path) -> Any:
    """``state`` of ``sim`` written as a step-3 checkpoint of ``run_dir``, its marker as a run's (with the
    devices' division of real space); returns it found (:class:`simulator.output.checkpoints.Checkpoint`)."""
    from simulator.config import to_dict
    from simulator.output import checkpoints

    checkpoints.write(run_dir, state, step=3, time=0.1, dt=0.01, epoch=(0, 0.0), writer="test",
                      spaces=sim.equation.leaf_spaces(state), perm=sim.fft.perm, full_spectrum=False,
                      meta={"config": to_dict(sim.cfg), "backend": sim.cfg.fft.backend,
                            "real_blocks": checkpoints.real_blocks(sim.fft)}, keep=2)
    return checkpoints.find(run_dir)


def particle_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """From now on, every read of an HDF5 dataset of one or two dimensions (a checkpoint's particle arrays,
    not its fields) as (name, rows it returned), appended to the list returned."""
    import h5py

    reads: list[tuple[str, int]] = []
    read = h5py.Dataset.__getitem__

    def counted(self: h5py.Dataset, key: Any, *args: Any, **kwargs: Any) -> Any:
        out = read(self, key, *args, **kwargs)
        if 1 <= self.ndim <= 2:
            reads.append((self.name, int(np.shape(out)[0]) if np.ndim(out) else 1))
        return out

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counted)
    return reads


def bitwise(a: Any, b: Any) -> bool:
    """Whether two arrays hold the same bits: dtype, shape and bytes (a -0.0 is not a 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def unavailable(what: str, env: str, reason: str) -> NoReturn:
    """Skip a test whose tool (Slurm, ParaView, FFTW, ...) is not available here, saying why; where the
    environment variable ``env`` is 1 (``.ci/run`` sets it: CI installs the tool) fail instead."""
    message = f"{what} not run: {reason}"
    print(message)
    if os.environ.get(env) == "1":
        pytest.fail(f"{message} ({env}=1 makes this a failure)")
    pytest.skip(message)


_SPECTRA = jax.jit(lambda eq, state, p: eq.spectra(state, p))


def shell_budget(sim: Simulation, state: Any, p: dict, budgets: Any, h: float = 1e-5) -> dict[str, np.ndarray]:
    """Per budgeted spectrum ``(name, rows of the state, rate, scale)`` or ``(name, rows, rate, scale,
    hyper)`` in ``budgets``: asserts that dE(k)/dt = T + C (+ F) - 2 (rate k^2 + hyper k^(2p)) E / scale in
    every shell to 1e-8 of the largest right-hand side (p the equation's ``hyperviscosity_order``), dE/dt
    by central differences of one step each way from ``state`` at t = 0, and that each term matters (a
    missing or flipped one fails). Returns the spectra at t = 0, by name."""
    from simulator.observables import spectra

    eq = sim.equation
    s0, plus, minus = (_SPECTRA(eq, s, p) for s in (state, advance(sim, state, h, 1, p), advance(sim, state, -h, 1, p)))
    ops = eq.ops
    norm = ops.weight / float(eq.fft.size) ** 2

    def shell(power):
        return np.asarray(spectra.shell_sum(power, ops.k, eq.fft.shape, eq.box))

    for name, rows, rate, scale, *hyper in budgets:
        power = norm * jnp.sum(jnp.abs(state[rows]) ** 2, axis=0) / scale  # 2 E(k) per mode
        terms = [np.asarray(s0[f"{t}_{name}"]) for t in ("transfer", "conversion", "injection") if f"{t}_{name}" in s0]
        if hyper:
            terms.append(-float(hyper[0]) * shell(ops.k2**eq.physics.hyperviscosity_order * power))
        expected = sum(terms) - float(rate) * shell(ops.k2 * power)
        measured = (np.asarray(plus[name]) - np.asarray(minus[name])) / (2 * h)
        largest = np.max(np.abs(expected))
        error = np.max(np.abs(measured - expected)) / largest
        assert error < 1e-8, (name, error)
        assert all(np.max(np.abs(t)) > 0.05 * largest for t in terms), name
    return s0


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``path`` (a full disk, or a read-only one once remounted so); skips, saying why,
    where it cannot be mounted (needs root)."""
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a full or read-only disk is a tmpfs mounted by root; not root here")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def command(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``simulator ARGS`` made by the command's own function (:func:`simulator.cli.main`) in this process: its exit
    status, stdout and stderr (read at the file descriptors, the call's alone), where a process of its own would
    start JAX again. The package logger is left as it was: a run sets its handler on the stderr of the moment,
    ``capfd``'s, which closes with the test, and a later test's warning would then be a logging error."""
    from simulator.cli import main
    from simulator.log import LOGGER_NAME

    logger = logging.getLogger(LOGGER_NAME)
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    capfd.readouterr()
    try:
        code = main(list(args))
    except SystemExit as stop:  # argparse's refusal of an option exits: its status is the process's
        code = 0 if stop.code is None else int(stop.code)
    finally:
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)
    out, err = capfd.readouterr()
    return code, out, err


def assert_failure_recorded(run_dir, r, reason, console=True):
    """A failed run's reason is in its files: run.log (of its last segment) ends with the ERROR line (then the
    traceback of an unexpected error), status.json says failed with that reason; the console shows the ERROR
    line once (``console``) or not at all (the CLI's own report of an unexpected error)."""
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and status["exit_code"] == 1 and reason in status["reason"], status
    log = (run_dir / "run.log").read_text()
    segment = log[log.rindex(" INFO run "):]  # each segment's log starts with its header
    errors = [line for line in segment.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and errors[0].endswith(f"ERROR {status['reason']}"), log[-3000:]
    after = log[log.rindex(errors[0]):].splitlines()[1:]  # nothing logged after it but an unexpected error's traceback
    assert not after or (after[0].startswith("Traceback") and not any(re.match(r"\d{4}-\d\d-\d\d ", line)
                                                                       for line in after)), log[-3000:]
    assert sum(f"ERROR {status['reason']}" in line for line in r.stderr.splitlines()) == int(console), r.stderr
