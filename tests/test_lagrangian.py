"""Lagrangian statistics (simulator.output.lagrangian, simulator.plots.lagrangian) against trajectories with known
answers: ballistic motion, an Ornstein-Uhlenbeck velocity, pairs with a given relative velocity; and one
tiny tracer run through `simulator plot`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator.cli import main
from simulator.output import lagrangian

ROOT = Path(__file__).parents[1]


def _tracks(time, x, v, name="tracers"):
    time = np.asarray(time, float)  # steps and wrapped positions: unused by the statistics
    return lagrangian.Trajectories(name, time, x, v, np.arange(x.shape[1]), np.arange(time.size), x)


def test_ballistic_particles_disperse_as_v2_t2_with_unit_correlation():
    rng = np.random.default_rng(0)
    time = np.linspace(0.0, 2.0, 41)
    x0, v = rng.uniform(0, 2 * np.pi, (50, 3)), rng.normal(size=(50, 3))
    x = x0 + time[:, None, None] * v  # unwrapped: leaves the box freely
    vel = np.broadcast_to(v, x.shape)
    s = lagrangian.statistics(_tracks(time, x, vel), box=np.full(3, 2 * np.pi))
    v2 = np.mean(np.sum(v**2, axis=1))
    np.testing.assert_allclose(s.dispersion, v2 * time**2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.ballistic(), s.dispersion, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.autocorrelation, 1.0, rtol=1e-12)
    np.testing.assert_allclose(s.structure_function, 0.0, atol=1e-20)
    np.testing.assert_allclose(s.tau, time[:21], rtol=1e-12, atol=1e-15)
    # R_L never crosses zero: T_L is the integral over the window, flagged as a lower bound
    assert not s.integral_time_converged and s.integral_time == pytest.approx(1.0, rel=1e-12)


def test_ornstein_uhlenbeck_velocity_recovers_exp_correlation_and_integral_time():
    """v_{n+1} = a v_n + sqrt(1 - a^2) sigma xi, a = exp(-dt/T) (the exact OU update, stationary start):
    R_L = exp(-tau/T), T_L = T, S_2^L = 2 <|v|^2> (1 - exp(-tau/T))."""
    rng = np.random.default_rng(1)
    big_t, dt, rows, n, sigma = 1.0, 0.1, 400, 1000, 0.7
    a = np.exp(-dt / big_t)
    v = np.empty((rows, n, 3))
    v[0] = sigma * rng.normal(size=(n, 3))
    for i in range(1, rows):
        v[i] = a * v[i - 1] + np.sqrt(1 - a * a) * sigma * rng.normal(size=(n, 3))
    time = dt * np.arange(rows)
    x = np.cumsum(v, axis=0) * dt
    s = lagrangian.statistics(_tracks(time, x, v), max_lag=150)
    # sampling error of R at a lag ~ 1/sqrt(3 n rows dt / 2T) ~ 5e-3 (independent samples per component)
    np.testing.assert_allclose(s.autocorrelation, np.exp(-s.tau / big_t), rtol=0, atol=0.02)
    assert s.integral_time_converged and s.integral_time == pytest.approx(big_t, rel=0.03)
    np.testing.assert_allclose(s.structure_function / (2 * 3 * sigma**2), 1 - np.exp(-s.tau / big_t), rtol=0,
                               atol=0.02)
    # long times: Taylor's diffusive regime 2 <|v|^2> T_L (t - T(1 - e^{-t/T})) -> the dispersion's slope
    late = time > 20 * big_t
    exact = 2 * 3 * sigma**2 * big_t * (time - big_t * (1 - np.exp(-time / big_t)))
    np.testing.assert_allclose(s.dispersion[late], exact[late], rtol=0.1)
    np.testing.assert_allclose(s.diffusive()[late], 2 * 3 * sigma**2 * big_t * time[late], rtol=0.04)


def test_pair_dispersion_of_pairs_with_a_known_relative_velocity():
    box = np.full(3, 2 * np.pi)
    time = np.linspace(0.0, 1.0, 11)
    # particles 0, 1: 0.1 apart, relative velocity w; 2, 3: 0.05 apart across the periodic boundary
    # (minimum image), relative velocity -w/2 plus a whole-box shift of 3's track; 4: far from all
    x0 = np.array([[1.0, 1.0, 1.0], [1.1, 1.0, 1.0], [0.02, 3.0, 3.0], [2 * np.pi - 0.03, 3.0, 3.0], [4.0, 5.0, 1.0]])
    w = np.array([0.3, -0.4, 1.2])
    base = np.array([1.0, 0.5, -0.2])
    vel = np.array([base, base + w, base, base - w / 2, -base])
    x = x0 + time[:, None, None] * vel
    x[:, 3] -= box  # the unwrapped track of 3 started one period over: the pair's statistics ignore it
    pairs, r0 = lagrangian.close_pairs(x[0], 0.2, box)
    assert r0 == 0.2 and sorted(map(tuple, pairs)) == [(0, 1), (2, 3)]
    d = lagrangian.pair_dispersion(x, pairs)
    np.testing.assert_allclose(d, 0.5 * (1 + 0.25) * np.sum(w**2) * time**2, rtol=1e-12, atol=1e-14)
    assert len(lagrangian.close_pairs(x[0], 0.2, None)[0]) == 1  # without the box, 2 and 3 are far apart
    # the default r0: the median nearest-neighbour distance (0.05, 0.05, 0.1, 0.1, far): pair (2, 3) and (0, 1)
    pairs, r0 = lagrangian.close_pairs(x[0], None, box)
    assert r0 == pytest.approx(0.1) and sorted(map(tuple, pairs)) == [(0, 1), (2, 3)]
    s = lagrangian.statistics(_tracks(time, x, np.broadcast_to(vel, x.shape)), box=box, r0=0.2, eps=0.5)
    assert s.pairs == 2
    np.testing.assert_allclose(s.richardson(), lagrangian.RICHARDSON_G * 0.5 * time**3)


def test_too_few_rows_is_a_one_line_error():
    with pytest.raises(simulator.errors.ConfigError, match="trajectories"):
        lagrangian.statistics(_tracks([0.0], np.zeros((1, 2, 3)), np.zeros((1, 2, 3))))


def test_a_tracer_run_plots_lagrangian_png_and_disperses_ballistically_at_first(tmp_path):
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", {
        "grid.shape": 16, "precision": "float64", "time.dt": 0.005, "time.t_end": 0.05, "output.chunk": 1,
        "output.snapshots.every": 10, "output.trajectories.every": 1, "output.trajectories.count": 64,
        "particles": [{"name": "tracers", "count": 64, "seed": 3}]})
    run = tmp_path / "run"
    assert simulator.run_config(cfg, run) == 0
    assert main(["plot", str(run)]) == 0
    assert (run / "plots" / "lagrangian.png").stat().st_size > 10_000
    stats = simulator.load_run(run).lagrangian()
    fig = simulator.load_run(run).plot.lagrangian()  # the figure itself, for a notebook
    assert fig.axes and any(line.get_label() for ax in fig.axes for line in ax.get_lines())
    # the slice draws the tracers within one cell of its mid-plane z = L/2, at their (x, y)
    last = simulator.load_run(run).particles["tracers"]
    dz, middle = 2 * np.pi / 16, 8 * 2 * np.pi / 16
    near = np.abs((last.position[-1][:, 2] - middle + np.pi) % (2 * np.pi) - np.pi) <= dz
    ax = simulator.load_run(run).plot.slice().axes[0]
    drawn = ax.collections[0].get_offsets()
    # at their (x, y), wrapped into the image, which spans [-dx/2, L - dx/2): the axes keep the image's limits
    shown = (last.position[-1][near][:, :2] + dz / 2) % (2 * np.pi) - dz / 2
    np.testing.assert_allclose(np.asarray(drawn), shown, rtol=1e-6, atol=1e-12)
    assert ax.get_xlim() == ax.get_ylim() == pytest.approx((-dz / 2, 2 * np.pi - dz / 2))
    assert 0 < near.sum() < 64
    s = stats["tracers"]
    assert list(stats) == ["tracers"] and s.particles == 64 and s.time.size == 11
    early = slice(1, 5)  # t = 0.005 .. 0.02: |u| t stays well below the flow's scale 1
    ratio = s.dispersion[early] / s.ballistic()[early]
    np.testing.assert_allclose(ratio, 1.0, rtol=2e-3)  # measured 1 - 1.3e-4 .. 5.3e-4
    assert s.autocorrelation[0] == pytest.approx(1.0) and s.structure_function[0] == 0.0


def test_trajectories_start_after_the_spin_up_that_output_trajectories_start_names(tmp_path):
    """``output.trajectories.start``: the first row is the first every-step row at or past it (no t = 0 row), so
    the tracks and their statistics begin in the developed flow; a start the run never reaches is refused."""
    settings = {"grid.shape": 8, "fft.backend": "single", "time.dt": 0.005, "time.t_end": 0.03, "output.chunk": 1,
                "output.trajectories.every": 2, "output.trajectories.count": 4, "output.trajectories.start": 0.012,
                "particles": [{"name": "t", "count": 4}]}
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", settings)
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    run = simulator.load_run(tmp_path / "run")
    np.testing.assert_allclose(run.trajectories["t"].time, [0.02, 0.03], rtol=1e-12)  # the even steps past 0.012
    assert run.lagrangian()["t"].tau[0] == 0.0 and len(run.lagrangian()["t"].tau) >= 1
    with pytest.raises(simulator.errors.ConfigError, match=r"^output\.trajectories\.start = 0\.03 records no row; "
                                                           r"give a time below time\.t_end = 0\.03$"):
        simulator.load_config(ROOT / "configs" / "taylor_green.yaml", {**settings, "output.trajectories.start": 0.03})
