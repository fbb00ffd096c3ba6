"""The time step: where chunks land (output times scheduled by dt) and the CFL controller that keeps the
CFL number it promises on every step (simulator/time/control.py, Simulation.adaptive_chunk)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulator
from simulator import config as config_mod
from simulator.output.base import Schedule, landing_times
from simulator.time.control import Stepper

from support import assert_failure_recorded

#: a small Navier-Stokes run whose flow speeds up (random initial field, band forcing) in float64
FORCED = {"grid.shape": 16, "precision": "float64", "physics.name": "navier_stokes", "physics.viscosity": 0.02,
          "physics.forcing": "band", "physics.forcing_power": 0.1, "physics.forcing_band": 2.5,
          "initial.name": "random", "initial.amplitude": 0.5, "initial.k_peak": 2.0, "initial.seed": 1,
          "time.dt": 0.5, "time.cfl": 0.5}


@pytest.fixture(scope="module")
def forced():
    return simulator.Simulation.from_config(None, {**FORCED, "time.t_end": 3.0, "output.chunk": 4,
                                                   "output.snapshots.dt": 0.7})


def test_snapshots_by_dt_land_on_their_times_with_an_adaptive_step(forced):
    """An adaptive-dt run with snapshots every 0.7: chunks end exactly on 0.7, 1.4, ... (a Stepper fed the
    config's output times, the device landing each chunk whose steps reach it), so each snapshot is at a
    multiple of output.snapshots.dt, and no chunk ends on a sliver of a step before its target."""
    sim, cfg = forced, forced.cfg
    stops = landing_times([Schedule.of(cfg.output.snapshots)], cfg.time.t_end)
    stepper, t, step, ends = Stepper(cfg.time, cfg.output.chunk, stops=stops), 0.0, 0, []
    state = sim.initial_state()
    while not stepper.finished(t):
        n, _ = stepper.next_chunk(t, step)
        out = sim.advance_adaptive(state, n, t, stepper.target(t))
        assert 1 <= out.steps <= n and (out.landed or out.steps == n)
        state, step, t = out.state, step + out.steps, stepper.controlled(t, out.elapsed, out.landed, out.dt_next)
        ends.append(t)
    for multiple in (0.7, 1.4, 2.1, 2.8):
        assert any(abs(e - multiple) < 1e-12 for e in ends), (multiple, ends)
    assert ends[-1] == 3.0
    gaps = np.diff([0.0, *ends])
    assert gaps.min() > 0.5 * stepper.dt, ends  # landing steps are spread evenly: no sliver chunk


def test_every_step_keeps_the_cfl_number(forced):
    """Each step of a controlled chunk takes the largest dt whose CFL number, measured on the state the step
    starts from, is time.cfl (never above time.dt): a chunk of 12 steps is the same as 12 chunks of one step
    each checked against the CFL of its own start, and the flow here speeds up, so a dt chosen once per chunk
    (what the controller did before) would exceed it."""
    sim = forced
    state0 = sim.initial_state()
    chunk = sim.advance_adaptive(state0, 12, 0.0)
    state, t, dts, cfls = state0, 0.0, [], []
    for _ in range(12):
        rate = sim.report(state, 1.0, t)["cfl"]  # the CFL number at dt = 1: the state's fastest rate
        out = sim.advance_adaptive(state, 1, t)
        dts.append(out.elapsed)
        cfls.append(out.elapsed * rate)
        state, t = out.state, t + out.elapsed
    np.testing.assert_allclose(cfls, 0.5, rtol=1e-12)  # held exactly, never above, on every step
    assert max(dts) < 0.5 and dts[-1] < 0.95 * dts[0]  # below the cap time.dt, and shrinking as the flow speeds up
    assert chunk.steps == 12 and chunk.elapsed == pytest.approx(t, rel=1e-12) and not chunk.landed
    for a, b in zip(jax.tree.leaves(chunk.state), jax.tree.leaves(state), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12 * np.abs(np.asarray(b)).max())
    # the CFL number of a fixed dt chosen from the start of the chunk, at its end: above the target
    assert dts[0] * sim.report(state, 1.0, t)["cfl"] > 0.5 * 1.05
    # a target within reach: the chunk stops there, exactly, in fewer steps
    near = sim.advance_adaptive(state0, 12, 0.0, until=sum(dts[:3]) * 0.9)
    assert near.landed and near.steps == 3 and near.elapsed == pytest.approx(sum(dts[:3]) * 0.9, rel=1e-12)


@pytest.mark.parametrize("precision, span, dt, steps", [("float32", 0.1, 0.01, 10), ("float32", 0.7, 0.01, 70),
                                                        ("float32", 1.0, 0.001, 1000), ("float64", 1.1, 0.05, 22)])
def test_an_interval_of_whole_steps_of_dt_takes_that_many_steps(precision, span, dt, steps):
    """An output interval that holds a whole number of steps of time.dt (here dt, not the CFL number, limits the
    step) takes that many steps of dt and lands on its end: in float32 0.1 / 0.01 is 10.000001, and every such
    interval took one step more than dt allows (11 of 0.00909: a tenth more work, and the dt column was not the
    step taken); so did float64's 1.1 / 0.05 (23). The thousand steps of 0.001 land as well: the time they cover
    is summed compensated. On 8^3 (the count of steps and the time they cover do not depend on the grid, and
    the CFL number, which does, is further from limiting the step there), on one device (the controller's
    reductions over devices are held by the tests above): 12 s for the four cases where 16^3 on the suite's 8
    devices took 47."""
    sim = simulator.Simulation.from_config(None, {**FORCED, "grid.shape": 8, "fft.mesh": [1], "precision": precision,
                                                  "physics.forcing": "none", "time.dt": dt})
    out = sim.advance_adaptive(sim.initial_state(), 2 * steps, 0.0, until=span)
    assert out.landed and out.steps == steps, (out.steps, out.landed)
    assert out.elapsed == pytest.approx(span, rel=4 * float(np.finfo(precision).eps))


def test_time_cfl_needs_an_equation_that_declares_a_cfl_number(monkeypatch):
    """An equation without a CFL diagnostic (a plug-in may declare none) cannot adapt its step: one line
    naming the key, where the controller had silently kept time.dt."""
    import dataclasses

    from simulator.config import model
    from simulator.errors import ConfigError

    infos = dict(model.registry())
    infos["navier_stokes"] = dataclasses.replace(infos["navier_stokes"], cfl=None)
    monkeypatch.setattr(model, "registry", lambda: infos)
    with pytest.raises(ConfigError, match=r"^time.cfl = 0.5 cannot adapt the time step; leave it null: "
                                          r"navier_stokes declares no CFL number$"):
        simulator.load_config(None, {"time.cfl": 0.5})
    simulator.load_config(None, {"time.cfl": None})


@pytest.mark.parametrize("settings, code, expected", [
    (["time.cfl=1e-300"], 2, "error: time.cfl = 1e-300 is out of range; it must be >= 0.0001"),
    (["time.dt=1e-300"], 2, ("error: time.dt = 1e-300 is too small; give at least 1e-12 x time.t_end = 2e-14: a "
                             "smaller step would need more than 1e12 steps to reach time.t_end")),
    (["time.cfl=0.5", "initial.amplitude=1e14"], 1,
     ("ERROR the time step collapsed to dt = 3.93e-15 < 2e-14 (1e-12 of time.t_end; time.cfl = 0.5): the run cannot "
      "reach time.t_end, a symptom of a blow-up at step 0, t = 0; last good checkpoint: none")),
], ids=["absurd-cfl", "absurd-dt", "collapse"])
def test_a_collapsing_time_step_stops_the_run(tmp_path, settings, code, expected):
    """A CFL number of 1e-300, or a fixed dt below 1e-12 of t_end, is refused in one line before the run starts
    (the fixed dt stepped for ever too); a time step the controller
    shrinks below 1e-12 of t_end (here a flow of speed 1e14) stops the run with exit 1 like a NaN does.
    Both stepped for ever at dt ~ 1e-300 (here ~ 1e-15) without a word. The collapse's reason is in run.log and
    status.json."""
    import subprocess
    import sys
    from pathlib import Path

    config = Path(__file__).parents[1] / "configs" / "taylor_green.yaml"
    sets = [a for s in ["grid.shape=8", "precision=float64", "output.chunk=2", "time.t_end=0.02", *settings]
            for a in ("--set", s)]
    try:
        r = subprocess.run([sys.executable, "-m", "simulator", "run", str(config), *sets, "--out", "run"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the run was still stepping after 120 s")
    assert r.returncode == code and expected in r.stderr, r.stderr[-3000:]
    if code == 1:
        assert_failure_recorded(tmp_path / "run", r, "the time step collapsed")
    else:
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_the_stability_limit_on_the_real_axis_is_the_schemes_own():
    """The drag limit of inertial particles (dt <= r tau_p) comes from the scheme's step itself: classical
    RK4's interval is 2.7853 (the real root of 1 - x + x^2/2 - x^3/6 + x^4/24 = 1), and every scheme's
    amplification at its r itself is at most 1 (the limit is conservative) and just outside above 1."""
    from simulator.time.control import real_stability_limit
    from simulator.time.schemes import SCHEMES, SEMILINEAR

    assert real_stability_limit("rk4") == pytest.approx(2.785293563, abs=1e-3)
    for name, scheme in SCHEMES.items():
        if scheme.protocol != SEMILINEAR:
            continue
        r = real_stability_limit(name)

        rates = -np.array([r, 1.01 * r])

        class Decay:
            def at_stage(self, step, shift):  # unshifted at every stage
                return self

            settle = staticmethod(lambda state, t, dt, params: state)
            exp_linear = staticmethod(lambda u, tau, params: u)
            linear_map = staticmethod(lambda fn, u, tau, params: fn(jnp.zeros(())) * u)
            nonlinear = staticmethod(lambda u, t, params, rates=rates: rates * u)

        inside, outside = np.abs(np.asarray(scheme.load()(Decay())(np.ones(2), 0.0, 1.0, {})))
        assert inside <= 1 + 1e-9 < outside, name  # the sampling's own slack


def test_the_cfl_number_weighs_each_component_by_its_own_grid_spacing():
    """On a grid of 8 x 16 x 32 cells in a 2 pi box, u = (sin z, 2 sin x, 3 sin y) (solenoidal; each sine reaches
    +-1 on the grid's points together) has the CFL number dt max(sum_i |u_i| / dx_i) = dt (8 + 2 * 16 + 3 * 32) /
    (2 pi): each component over the spacing along its own axis."""
    sim = simulator.Simulation.from_config(None, {"grid.shape": [8, 16, 32], "precision": "float64",
                                                  "physics.name": "navier_stokes", "time.dt": 0.01})
    x, y, z = np.meshgrid(*(np.arange(n) * 2 * np.pi / n for n in (8, 16, 32)), indexing="ij")
    state = sim.state_from_fields(velocity=np.stack([np.sin(z), 2 * np.sin(x), 3 * np.sin(y)]))
    assert sim.report(state, 0.01)["cfl"] == pytest.approx(0.01 * 136 / (2 * np.pi), rel=1e-12)



@pytest.mark.parametrize("dt, t_end, every, expected", [
    (0.01, 0.05, 10, (5, 0.01)),  # whole steps of dt reach t_end: that many, of dt
    (0.1, 0.3, 10, (3, 0.1)),  # 0.3 / 0.1 = 2.9999999999999996 in floating point: still 3 steps of dt
    (0.01, 0.055, 10, (6, 0.055 / 6)),  # 5.5 steps: 6, shortened evenly
    (0.01, 1.0, 10, (10, 0.01))])  # a whole chunk short of t_end
def test_a_fixed_dt_chunk_takes_whole_steps_where_they_fit_and_shortens_them_evenly_where_not(dt, t_end, every,
                                                                                                expected):
    """Stepper.next_chunk with time.cfl null, from t = 0: the steps and dt of the first chunk."""
    n, step = Stepper(config_mod.TimeConfig(dt=dt, t_end=t_end), every).next_chunk(0.0)
    assert n == expected[0] and step == pytest.approx(expected[1], rel=1e-15)


def test_the_adaptive_controller_never_plans_a_step_above_time_dt_or_a_bound():
    """Stepper.controlled keeps the dt the device allows next, capped by time.dt and by a bound (a particle drag's
    stability limit, Stepper.bound); a dt that is not finite or not positive keeps the last one."""
    stepper = Stepper(config_mod.TimeConfig(dt=0.1, t_end=1.0, cfl=0.5), 4)
    assert stepper.controlled(0.0, 0.2, False, 5.0) == 0.2 and stepper.dt == 0.1
    stepper.bound(0.05)
    assert stepper.dt == 0.05 and stepper.controlled(0.2, 0.1, False, 1.0) == pytest.approx(0.3) and stepper.dt == 0.05
    stepper.controlled(0.3, 0.1, False, 0.01)
    assert stepper.dt == 0.01
    for bad in (float("nan"), 0.0, -1.0, float("inf")):
        stepper.controlled(0.4, 0.01, False, bad)
        assert stepper.dt == 0.01, bad
