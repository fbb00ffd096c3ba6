"""simulator run end to end: outputs, one compilation per run, refusing to overwrite, NaN stops."""

import csv
import math
import subprocess
import sys

import jax.numpy as jnp
import pytest

from simulator import config as C
from simulator.driver import Simulation


def test_one_compilation_over_chunks_and_viscosities(devices):
    cfg = C.load(None, ["grid.shape=[8,8,16]", "precision=float64", "initial.name=random"])
    sim = Simulation(cfg, devices[:4])
    u, t = sim.initial_state()
    for nu in (0.01, 0.02):
        params = {"viscosity": jnp.asarray(nu, jnp.float64)}
        for n in (5, 5, 3):  # full chunks and a shorter last one
            u, t = sim.advance(u, t, n, 0.01, params)
        sim.diagnostics(u, 0.01)
    assert sim.traces == 1
    assert float(t) == pytest.approx(0.26)


def run_cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "simulator", "run", *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)


def test_run_writes_timeseries_and_config(tmp_path):
    root = __import__("pathlib").Path(__file__).parents[1]
    r = run_cli(tmp_path, str(root / "configs" / "abc.yaml"), "--cpu-devices", "4", "--set", "precision=float64",
                "--set", "time.t_end=0.4", "--out", "abc_run")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "abc_run"
    rows = list(csv.DictReader(open(out / "timeseries.csv")))
    assert [int(r["step"]) for r in rows] == [0, 10, 20]
    assert list(rows[0])[:2] == ["step", "time"]
    for row in rows:  # ABC: E(t) = 3/2 exp(-2 nu t) exactly
        assert float(row["energy"]) == pytest.approx(1.5 * math.exp(-2 * 0.01 * float(row["time"])), rel=1e-12)
    meta = C.yaml.safe_load((out / "config.yaml").read_text())
    assert meta["config"]["precision"] == "float64" and meta["devices"] == 4 and "jax" in meta["versions"]
    assert "1 compilation(s)" in r.stderr and "steps/s=" in r.stderr and "ETA" in r.stderr
    # the same output directory again: refused, exit 2, nothing changed
    before = (out / "timeseries.csv").read_bytes()
    r2 = run_cli(tmp_path, str(root / "configs" / "abc.yaml"), "--out", "abc_run")
    assert r2.returncode == 2 and "already holds a run" in r2.stderr
    assert (out / "timeseries.csv").read_bytes() == before


def test_blow_up_stops_with_step_and_time(tmp_path):
    root = __import__("pathlib").Path(__file__).parents[1]
    r = run_cli(tmp_path, str(root / "configs" / "taylor_green.yaml"), "--set", "time.dt=2.0",
                "--set", "time.t_end=400", "--set", "physics.viscosity=0", "--set", "output.every=1", "--out", "nan")
    assert r.returncode == 1
    assert "became non-finite at step" in r.stderr and ", t = " in r.stderr
