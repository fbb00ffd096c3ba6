"""The adaptive time step keeps the CFL number it promises (simulator/time/control.py)."""

from types import SimpleNamespace

import pytest

from simulator.time.control import Stepper


@pytest.mark.parametrize("growth", [1.0, 1.5, 3.0])
def test_adaptive_dt_meets_its_cfl_target_at_the_end_of_each_chunk(growth):
    """Speeds growing by a constant factor per chunk: the CFL number measured at the end of each chunk,
    with the dt chosen before it, stays at or below time.cfl once the growth has been seen."""
    cfg = SimpleNamespace(dt=1.0, cfl=0.5, t_end=1e9)
    stepper = Stepper(cfg, every=20)
    speed, measured = 1.0, []
    stepper.adapt(stepper.dt * speed)  # the CFL at t = 0
    for _ in range(8):
        dt = stepper.dt
        speed *= growth  # the flow speeds up over the chunk run with dt
        measured.append(dt * speed)
        stepper.adapt(dt * speed)
    assert max(measured[1:]) <= 0.5 * (1 + 1e-12), measured
    assert measured[-1] == pytest.approx(0.5, rel=1e-12)  # and not needlessly below it


def test_snapshots_by_dt_land_on_their_times_with_an_adaptive_step():
    """An adaptive-dt run with snapshots every 0.7: chunks end exactly on 0.7, 1.4, ... (a Stepper fed the
    config's output times), so each snapshot is at a multiple of output.snapshots.dt."""
    import simulator
    from simulator.config.model import output_times

    cfg = simulator.load_config(None, {"time.cfl": 0.5, "time.dt": 0.13, "time.t_end": 3.0, "output.every": 4,
                                       "output.snapshots.dt": 0.7})
    stepper, t, step, ends = Stepper(cfg.time, cfg.output.every, stops=output_times(cfg)), 0.0, 0, []
    stepper.adapt(0.3)
    while not stepper.finished(t):
        n, dt = stepper.next_chunk(t, step)
        t_prev, step = t, step + n
        t = stepper.time_after(step, t_prev, n, dt)
        ends.append(t)
        stepper.adapt(0.6 * dt / 0.13)  # some speed: dt changes from chunk to chunk
    for multiple in (0.7, 1.4, 2.1, 2.8):
        assert any(abs(e - multiple) < 1e-12 for e in ends), (multiple, ends)
    assert ends[-1] == 3.0
