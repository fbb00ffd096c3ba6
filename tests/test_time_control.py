"""Where the stepper lands: output times scheduled by dt (simulator/time/control.py, simulator/config/model.py)."""



from simulator.time.control import Stepper


def test_snapshots_by_dt_land_on_their_times_with_an_adaptive_step():
    """An adaptive-dt run with snapshots every 0.7: chunks end exactly on 0.7, 1.4, ... (a Stepper fed the
    config's output times), so each snapshot is at a multiple of output.snapshots.dt."""
    import simulator
    from simulator.output.base import Schedule, landing_times

    cfg = simulator.load_config(None, {"time.cfl": 0.5, "time.dt": 0.13, "time.t_end": 3.0, "output.chunk": 4,
                                       "output.snapshots.dt": 0.7})
    stops = landing_times([Schedule.of(cfg.output.snapshots)], cfg.time.t_end)
    stepper, t, step, ends = Stepper(cfg.time, cfg.output.chunk, stops=stops), 0.0, 0, []
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
