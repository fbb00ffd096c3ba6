"""An equation added from outside the package: a toy advection-diffusion equation in tests/plugins,
registered only by the environment variable SIMULATOR_EQUATIONS. It validates, runs, writes every
output, restarts, plots and appears in the config reference without any edit to simulator/."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator.output.hdf5 import Snapshot
from simulator.output.timeseries import read_timeseries

from support import command

ROOT = Path(__file__).parents[1]
PLUGINS = Path(__file__).parent / "plugins"
ENV = {**os.environ, "SIMULATOR_EQUATIONS": "toy_equation",
       "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
CONFIG = """\
name: toy
precision: float64
grid: {shape: [16, 8, 8], box: [1.0, 1.0, 1.0]}
physics: {name: advection_diffusion, velocity_x: 0.5, diffusivity: 0.01}
initial: {name: wave, amplitude: 2.0, modes: [2, 0, 0]}
time: {dt: 0.01, t_end: 0.5}
output: {chunk: 10, snapshots: {every: 50}}
"""


def simulator(cwd, *args):
    return subprocess.run([sys.executable, "-m", "simulator", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=300)


def here(capfd, *args):
    """``simulator ARGS`` made by the command's own function in this process (:func:`support.command`), in the
    current directory, with the plug-in named as the test has set it up (the variable is read when the registry is
    first asked for under its value, not at start-up): its exit status, stdout and stderr, as a process's."""
    code, out, err = command(capfd, *args)
    return subprocess.CompletedProcess(["simulator", *args], code, out, err)


def with_plugin(monkeypatch, modules, path):
    """SIMULATOR_EQUATIONS = ``modules``, importable from ``path``, for this test alone."""
    monkeypatch.setenv("SIMULATOR_EQUATIONS", modules)
    monkeypatch.syspath_prepend(str(path))


def exact(t, x):
    """A sin(2 pi m (x - c t)) exp(-kappa (2 pi m)^2 t) with A = 2, m = 2, c = 0.5, kappa = 0.01."""
    k = 2 * np.pi * 2
    return 2.0 * np.sin(k * (x - 0.5 * t)) * np.exp(-0.01 * k**2 * t)


def test_nothing_in_the_package_names_the_plugin():
    for path in (ROOT / "simulator").rglob("*.py"):
        assert "toy_equation" not in path.read_text() and "advection_diffusion" not in path.read_text(), path


@pytest.mark.slow
def test_a_plugin_equation_runs_restarts_and_plots_through_the_cli(tmp_path, monkeypatch, capfd):
    """The runs on two of this process's devices, as a process started with --cpu-devices 2 has them."""
    (tmp_path / "toy.yaml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    with_plugin(monkeypatch, "toy_equation", PLUGINS)
    docs = here(capfd, "config-docs")
    assert "**`physics.name: advection_diffusion`**" in docs.stdout and "| `physics.diffusivity` |" in docs.stdout
    bad = here(capfd, "validate", "toy.yaml", "--set", "physics.viscosity=1")
    assert bad.returncode == 2 and "known keys for physics.name = advection_diffusion" in bad.stderr
    r = here(capfd, "run", "toy.yaml", "--set", "fft.mesh=[2]", "--set", "time.t_end=0.3", "--out", "run")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "slab fft on mesh 2 " in r.stderr, r.stderr[:2000]
    resumed = here(capfd, "run", "toy.yaml", "--set", "fft.mesh=[2]", "--out", "run", "--resume")
    assert resumed.returncode == 0 and "resumed from" in resumed.stderr, resumed.stderr[-3000:]
    series = read_timeseries(tmp_path / "run" / "timeseries.csv")
    k = 2 * np.pi * 2
    np.testing.assert_allclose(series["variance"], 2.0 * np.exp(-2 * 0.01 * k**2 * series["time"]), rtol=1e-12)
    assert math.isclose(series["time"][-1], 0.5, rel_tol=1e-12)
    with Snapshot(tmp_path / "run" / "snapshots" / "s00000050.h5") as snap:
        theta = snap.read("theta")
        t = float(snap.attrs["time"])
    x = np.arange(16) / 16
    np.testing.assert_allclose(theta, np.broadcast_to(exact(t, x)[:, None, None], theta.shape), atol=1e-12)
    plots = here(capfd, "plot", "run")
    assert plots.returncode == 0, plots.stderr
    assert {Path(p).name for p in plots.stdout.split()} == {"timeseries.png", "spectra.png", "slice.png"}


BROKEN_PLUGINS = {
    "a module that does not exist": ("no_such_plugin", "does not exist (no such module)", "advection_diffusion"),
    "a module that raises on import": ("raises_plugin", "fails on import (RuntimeError: broken on purpose)",
                                       "advection_diffusion"),
    "a module without INFO": ("empty_plugin", "has no INFO (an EquationInfo)", "advection_diffusion"),
    "a module re-registering a built-in": ("clash_plugin", "registers the equation 'navier_stokes' a second time",
                                           "navier_stokes"),
}


def _broken_plugin_env(tmp_path, module):
    (tmp_path / "raises_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    (tmp_path / "empty_plugin.py").write_text("VERSION = 1\n")
    (tmp_path / "clash_plugin.py").write_text("from simulator.equations.navier_stokes import INFO  # noqa: F401\n")
    return {**os.environ, "SIMULATOR_EQUATIONS": module,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("case", list(BROKEN_PLUGINS))
def test_a_broken_plugin_is_one_line_naming_the_variable_and_the_module(tmp_path, case, monkeypatch, capfd):
    """The run that asks for the equation the plug-in should have declared is refused in one line."""
    module, expected, equation = BROKEN_PLUGINS[case]
    _broken_plugin_env(tmp_path, module)
    monkeypatch.chdir(tmp_path)
    with_plugin(monkeypatch, module, tmp_path)
    r = here(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", f"physics.name={equation}", "--out",
             str(tmp_path / "run"))
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip() == r.stderr.strip().splitlines()[0], r.stderr[-2000:]
    assert r.stderr.startswith(f"error: SIMULATOR_EQUATIONS = '{module}' {expected}"), r.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_broken_plugin_does_not_stop_other_equations_from_resuming(tmp_path, monkeypatch, capfd):
    """A run of a built-in equation started before the variable named a broken module resumes with it
    set: one warning line naming the module, then the run goes on to its end. The resumed run is a process of its
    own: the warning is given once per process."""
    small = ["--set", "grid.shape=[8,8,8]", "--set", "time.t_end=0.05", "--set", "time.dt=0.01",
             "--set", "output.chunk=1", "--out", str(tmp_path / "run")]
    monkeypatch.chdir(tmp_path)
    first = here(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), *small, "--set", "fft.mesh=[1]")
    assert first.returncode == 0, first.stderr[-2000:]
    env = _broken_plugin_env(tmp_path, "raises_plugin")
    more = subprocess.run([sys.executable, "-m", "simulator", "run", str(ROOT / "configs" / "taylor_green.yaml"),
                           *small, "--restart", "--add-to-t-end", "0.03"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert more.returncode == 0, more.stderr[-2000:]
    warnings = [line for line in more.stderr.splitlines() if "SIMULATOR_EQUATIONS = 'raises_plugin'" in line]
    assert len(warnings) == 1 and "runs of the other equations go on" in warnings[0], more.stderr[-2000:]
    rows = read_timeseries(tmp_path / "run" / "timeseries.csv")
    assert rows["time"][-1] == pytest.approx(0.08)


def test_a_run_of_an_unregistered_equation_names_it_and_how_to_register_it(tmp_path, capfd):
    """A run directory written with a plug-in equation, read where the plug-in is not registered: one line naming the
    equation and the variable that registers it, exit 2 (not a complaint about the run's config)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("config:\n  name: toy\n  grid: {shape: [16, 8, 8]}\n"
                                     "  physics: {name: advection_diffusion}\n")
    r = here(capfd, "plot", str(run))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "physics.name = 'advection_diffusion'" in r.stderr and "is not a registered equation" in r.stderr
    assert "SIMULATOR_EQUATIONS=" in r.stderr
