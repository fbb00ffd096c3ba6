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
