"""scripts/bench_accuracy.py's error, Pareto front and target check on synthetic data: pure functions, nothing
run or timed (well under a second)."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "bench_accuracy.py"
spec = importlib.util.spec_from_file_location("bench_accuracy", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_the_error_is_the_largest_deviation_on_the_reference_times_over_the_reference_peak():
    t_ref = np.linspace(0, 10, 101)
    eps_ref = 0.01 * np.sin(t_ref / 10 * np.pi) + 0.002
    # a run on other times (every 0.07), off by 1e-4 for 4 < t < 6, exact elsewhere
    t = np.arange(0, 10.0001, 0.07)
    t[-1] = 10.0
    eps = 0.01 * np.sin(t / 10 * np.pi) + 0.002 + 1e-4 * ((t > 4) & (t < 6))
    err = bench.relative_error(t, eps, t_ref, eps_ref, t_max=10)
    peak = eps_ref.max()
    assert err == pytest.approx(1e-4 / peak, rel=0.02)  # and the linear interpolation of the sine
    # only times <= t_max count: the deviation is outside t <= 3.5
    assert bench.relative_error(t, eps, t_ref, eps_ref, t_max=3.5) < 0.01 * err  # interpolation alone
    # a reference denser than the run (a DNS file every 0.01): the run's own times, the reference interpolated
    t_dns = np.linspace(0, 10, 1001)
    eps_dns = 0.01 * np.sin(t_dns / 10 * np.pi) + 0.002
    t_run = np.linspace(0, 10, 101)
    eps_run = 0.01 * np.sin(t_run / 10 * np.pi) + 0.002 + 2e-4 * (t_run == 5)
    assert bench.relative_error(t_run, eps_run, t_dns, eps_dns, t_max=10) == pytest.approx(2e-4 / 0.012, rel=1e-3)
    # a run that stops early, or blew up, has no error
    assert bench.relative_error(t[:50], eps[:50], t_ref, eps_ref, t_max=10) == math.inf
    assert bench.relative_error(t, np.where(t > 3, np.nan, eps), t_ref, eps_ref, t_max=10) == math.inf


def test_the_pareto_front_keeps_the_points_nothing_beats_in_cost_and_error():
    points = [(1.0, 0.1), (2.0, 0.05), (2.5, 0.08), (3.0, 0.01), (0.5, 0.3), (3.0, 0.02), (4.0, 0.01),
              (math.inf, 1e-9), (1.5, math.inf)]
    assert bench.pareto_front(points) == [4, 0, 1, 3]  # by cost; (2.5, 0.08) and (4, 0.01) are beaten
    assert bench.pareto_front([]) == []


def test_the_target_compares_the_cheapest_configurations_at_each_peer_accuracy_level():
    # (cost per unit time, error, whole run's wall seconds)
    peer = [(1.0, 0.1, 10), (4.0, 0.01, 40), (100.0, 0.001, 1000)]  # the last took over 600 s: no level
    ours = [(0.4, 0.2, 4), (0.45, 0.09, 4.5), (2.5, 0.005, 25)]
    levels = bench.target_check(ours, peer, max_run_s=600)
    assert [lv["error"] for lv in levels] == [0.1, 0.01]
    assert [lv["our_cost"] for lv in levels] == [0.45, 2.5]
    assert [lv["ratio"] for lv in levels] == pytest.approx([0.45, 0.625])
    assert [lv["met"] for lv in levels] == [True, False]
    # a level we never reach is not met
    assert bench.target_check([(0.1, 0.5, 1)], peer, 600)[0]["ratio"] == math.inf


def test_the_time_step_divides_the_output_period_and_is_about_cfl_times_dx():
    for n, cfl in [(32, 0.5), (48, 0.5), (64, 0.5), (64, 1.0), (128, 0.25)]:
        dt = bench.time_step(n, cfl)
        steps = 0.1 / dt
        assert abs(steps - round(steps)) < 1e-9
        assert dt <= cfl * 2 * math.pi / n + 1e-12 and dt > 0.5 * cfl * 2 * math.pi / n
    assert bench.time_step(16, 0.5) == 0.1  # one step per period at most


def test_the_reference_csv_is_read_past_its_header(tmp_path):
    path = tmp_path / "ref.csv"
    path.write_text("# made by: a command\n# converged: 1e-3\nt,dissipation,energy\n0,0.002,0.125\n0.1,0.0021,0.12\n")
    t, eps = bench.read_reference(path, dns=False)
    assert t.tolist() == [0.0, 0.1] and eps.tolist() == [0.002, 0.0021]
    gdiag = tmp_path / "dns.gdiag"
    gdiag.write_text("0.0 0.125 0.0018 0.375\n0.5 0.124 0.0019 0.38\n")
    t, eps = bench.read_reference(gdiag, dns=True)
    assert t.tolist() == [0.0, 0.5] and eps.tolist() == [0.0018, 0.0019]


@pytest.mark.parametrize("name", ["tg_re400_ref.csv", "tg_re1600_ref.csv"])
def test_each_committed_reference_states_the_command_of_its_own_run(name):
    """A reference's 'made by' line is the command of the run its header describes (Re, grid, scheme, step,
    precision, dealiasing), written from that run's config: the Re = 1600 file does not carry the Re = 400 one's."""
    path = SCRIPT.parent / "data" / name
    head = [line[2:].strip() for line in path.read_text().splitlines() if line.startswith("# ")]
    parts = [s.strip() for s in head[0].split(";")[0].split(",")]  # Taylor-Green, Re, box, N^3, scheme, dt, ...
    re_, (n, scheme, dt, precision, dealias) = parts[1], parts[3:8]
    cfg = {"precision": precision, "grid": {"shape": [int(n.split("^")[0])] * 3},
           "physics": {"viscosity": 1 / float(re_.split("=")[1]), "dealias": dealias},
           "time": {"integrator": scheme, "dt": float(dt.split("=")[1]), "t_end": 20.0 if "1600" in re_ else 10.0}}
    assert head[1].startswith("made by: " + bench.reference_command(cfg)), head[1]
