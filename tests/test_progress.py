"""Progress lines: the step rate and the ETA follow the recent chunks (a fake clock drives them), and the
first chunk's compilation is reported once, apart."""

from simulator.run.progress import WINDOW, Progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_rate_and_eta_come_from_recent_chunks_not_the_average_since_the_start():
    """10 s of compilation in the first chunk, then 1 s per chunk of 10 steps (t += 0.1) to t_end = 5:
    the rate is 10 steps/s and the ETA the remaining time at that pace, from the second chunk end on.
    Averaged since the start (compilation included) the ETA would be far too long at first, then shrink
    faster than the clock (the issue's "23 s, 11 s, 0 s")."""
    clock = Clock()
    progress = Progress(0, 0.0, 5.0, clock=clock)
    clock.now += 10.0  # the first chunk: compilation
    progress.update(10, 0.1)
    assert progress.first_chunk_s == 10.0 and progress.rate() is None and progress.eta() is None
    assert "first chunk 10.0 s;" in progress.describe(1000)
    etas = []
    for chunk in range(2, 30):
        clock.now += 1.0
        progress.update(10 * chunk, 0.1 * chunk)
        assert progress.rate() == 10.0
        etas.append(progress.eta())
        assert abs(progress.eta() - (5.0 - 0.1 * chunk) / 0.1) < 1e-9
    assert abs(etas[0] - etas[1] - 1.0) < 1e-9  # one second later, one second less to go
    assert "steps/s=10 cells/s=1e+04 ETA" in progress.describe(1000)


def test_a_slow_stretch_shows_within_the_window_and_passes():
    """A chunk slowed by a snapshot write counts while it is in the window, then drops out of it."""
    clock = Clock()
    progress = Progress(0, 0.0, 100.0, clock=clock)
    clock.now += 5.0
    progress.update(10, 0.1)
    for chunk in range(2, 5):
        clock.now += 1.0
        progress.update(10 * chunk, 0.1 * chunk)
    clock.now += 4.0  # a snapshot: 4 s for this chunk
    progress.update(50, 0.5)
    slowed = progress.rate()
    assert slowed < 10.0
    for chunk in range(6, 6 + WINDOW):
        clock.now += 1.0
        progress.update(10 * chunk, 0.1 * chunk)
    assert progress.rate() == 10.0 and slowed == 40 / 7
