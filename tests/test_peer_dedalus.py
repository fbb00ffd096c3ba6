"""The walls' eigenvalue solvers (simulator/walls/eigen.py) against Dedalus 3's own eigenvalue solve of the same
linear problem (scripts/peer_dedalus.py, run in Dedalus' environment): no-slip Rayleigh-Benard convection in
free-fall units and the Orr-Sommerfeld problem of plane Poiseuille flow, a tau method on Dedalus' side, collocation
on ours; Dedalus' steady roll, the reference of the walled runs' Nusselt number; the channel the channel benchmark
times, steady on laminar Poiseuille flow; and the script's served mode, through which a benchmark times Dedalus'
steps interleaved with its own.

Dedalus is not a dependency: SIMULATOR_DEDALUS_PYTHON names the python of an environment with Dedalus 3.0.5
(scripts/peer_dedalus.py says how to build one). Where it is unset or does not run, these tests skip and say why;
SIMULATOR_REQUIRE_DEDALUS=1 turns that skip into a failure."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from simulator.benchmark import ServedPeer
from simulator.walls import eigen

from support import unavailable

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "scripts" / "peer_dedalus.py"


@pytest.fixture(scope="module")
def dedalus_python() -> str:
    python = os.environ.get("SIMULATOR_DEDALUS_PYTHON")
    if not python:
        unavailable("Dedalus peer", "SIMULATOR_REQUIRE_DEDALUS",
                    "SIMULATOR_DEDALUS_PYTHON (the python of an environment with Dedalus 3.0.5) is not set")
    found = subprocess.run([python, "-c", "import dedalus; print(dedalus.__version__)"], capture_output=True,
                           text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if found.returncode != 0:
        unavailable("Dedalus peer", "SIMULATOR_REQUIRE_DEDALUS", f"{python} cannot import dedalus")
    return python


def peer(python: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{args[0]}.json"
    done = subprocess.run([python, str(SCRIPT), *args, "--json", str(out)], capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_growth_rates_and_onset_equal_dedalus_eigenvalue_solves(dedalus_python, tmp_path):
    """At k = 3.117, Pr = 1, below onset (Ra = 1500) and above (Ra = 2000): the growth rate of
    eigen.rayleigh_benard_growth equals the largest growth rate of Dedalus' EVP (48 Chebyshev modes, converged: its
    72-mode solve agrees to 1e-11) to 1e-11 relative (found 8e-13); Dedalus' marginal problem gives Ra_c = 1707.76
    at k_c = 3.117, equal to eigen.rayleigh_benard_onset to 1e-11 relative in Ra (found 2e-13) and 1e-5 in k (found
    8e-7: a minimum is flat in k, so Ra's round-off moves k by about its square root), and Ra(3.117) to 1e-12
    (found 1e-14)."""
    growth = peer(dedalus_python, tmp_path, "evp", "--ra", "1500", "2000", "--pr", "1", "--k", "3.117")
    assert growth["peer"].startswith("dedalus 3.0.5 ")
    signs = []
    for row in growth["rows"]:
        ours = eigen.rayleigh_benard_growth(row["ra"], 1.0, 3.117)[0]
        assert abs(row["growth_rate_fine"] - row["growth_rate"]) < 1e-11, row
        assert ours == pytest.approx(row["growth_rate"], rel=1e-11, abs=0), row
        signs.append(ours > 0)
    assert signs == [False, True]

    onset = peer(dedalus_python, tmp_path, "onset", "--k", "3.117")
    ra_c, k_c = eigen.rayleigh_benard_onset(eigen.NO_SLIP)
    assert onset["ra_c"] == pytest.approx(1707.76, abs=0.01)
    assert ra_c == pytest.approx(onset["ra_c"], rel=1e-11, abs=0)
    assert k_c == pytest.approx(onset["k_c"], abs=1e-5)
    assert eigen.rayleigh_number(3.117) == pytest.approx(onset["ra_at_k"]["ra"], rel=1e-12, abs=0)


def test_the_served_example_names_itself_and_steps_on_request(dedalus_python):
    """``peer_dedalus.py step --serve`` (a benchmark interleaves its steps with ours through ServedPeer): it names
    Dedalus' version and the example's configuration, then answers each ``NX NZ STEPS`` with that many steps'
    seconds, wall and CPU."""
    peer = ServedPeer(dedalus_python, SCRIPT, "step", "--sizes", "16x8", "--warmup", "1")
    try:
        assert peer.name.startswith("dedalus 3.0.5 2D Rayleigh-Benard example (no-slip, Lx = 4, Ra = 1e6, Pr = 1, "
                                    "RK222, RealFourier x ChebyshevT, dealias 3/2), float64, 1 process, "
                                    "OMP_NUM_THREADS=1"), peer.name
        peer.request(16, "16 8 2")
        assert len(peer.cpu[16]) == 1 and peer.cpu[16][0] > 0
    finally:
        peer.close()


def test_dedalus_channel_holds_laminar_poiseuille_flow_and_steps_on_request(dedalus_python, tmp_path):
    """The channel case the channel benchmark times (``peer_dedalus.py channel``): started on laminar Poiseuille flow
    without noise, its velocity stays on the profile to round-off over 20 steps (found 2e-15 at 16 x 16 x 17); served,
    it names Dedalus' version and the case and answers ``NX NY NZ STEPS`` with that many steps' seconds."""
    laminar = peer(dedalus_python, tmp_path, "poiseuille", "--size", "16x16x17", "--steps", "20")
    assert laminar["peer"].startswith("dedalus 3.0.5 laminar plane Poiseuille flow"), laminar
    assert laminar["max_departure"] < 1e-13, laminar
    served = ServedPeer(dedalus_python, SCRIPT, "channel", "--sizes", "8x8x8", "--warmup", "0")
    try:
        assert served.name.startswith("dedalus 3.0.5 channel (no-slip plates, Moser-Kim-Mansour box 4 pi x 4 pi/3 x 2, "
                                      "Re = 2800, fixed pressure gradient"), served.name
        assert served.name.endswith("RK222, RealFourier^2 x ChebyshevT, dealias 3/2), float64, 1 process, "
                                    "OMP_NUM_THREADS=1"), served.name
        served.request(8, "8 8 8 2")
        assert len(served.cpu[8]) == 1 and served.cpu[8][0] > 0
    finally:
        served.close()


@pytest.mark.slow
def test_dedalus_steady_roll_carries_one_nusselt_number_through_plates_and_volume(dedalus_python, tmp_path):
    """The roll the walled runs are compared with (Ra = 2000, Pr = 1, one wavelength 2 pi / 3.117, 32 x 16 modes):
    steady (Nu moves less than 1e-11 in 100 steps), the same Nu through both plates to 1e-10 and through the
    volume, 1 + <w b> / kappa, to the resolution's truncation error (1.6e-7 here, 5e-11 at 48 x 24)."""
    roll = peer(dedalus_python, tmp_path, "nusselt", "--ra", "2000", "--k", "3.117", "--size", "32x16")
    assert roll["steady"] and roll["steps"] <= 3000, roll
    assert roll["nu_top"] == pytest.approx(roll["nu_bottom"], abs=1e-10)
    assert roll["nu_volume"] == pytest.approx(roll["nu_bottom"], abs=1e-6)
    assert roll["nu_bottom"] == pytest.approx(1.2120452, abs=1e-6)


def test_the_tollmien_schlichting_wave_equals_dedalus_orr_sommerfeld_solve(dedalus_python, tmp_path):
    """Plane Poiseuille flow at Re = 1e4, alpha = 1: eigen.tollmien_schlichting's c equals Dedalus' tau solve of
    the Orr-Sommerfeld problem (128 modes, converged: its 192-mode c agrees to 1e-10) to 1e-11 (found 3e-13), and
    both give Orszag's (1971) c = 0.23752649 + 0.00373967i to his digits."""
    wave = peer(dedalus_python, tmp_path, "orr", "--re", "1e4", "--alpha", "1")
    theirs, fine = complex(*wave["c"]), complex(*wave["c_fine"])
    assert abs(theirs - fine) < 1e-10, wave
    assert abs(eigen.tollmien_schlichting(1e4, 1.0)[0] - theirs) < 1e-11
    assert abs(theirs - (0.23752649 + 0.00373967j)) < 5e-9


#: the steady roll and the linear modes of the runs below: one wavelength 2 pi / 3.117 wide, Pr = 1
K_ROLL = 3.117


def noslip_run(devices, rayleigh: float, shape: list[int], amplitude: float):
    """A float64 ``convection2d_noslip`` Simulation one wavelength wide on one device, started from its linear mode
    m_x = 1."""
    import math

    import simulator

    return simulator.Simulation(simulator.load_config(ROOT / "configs" / "convection_2d_noslip.yaml", {
        "physics.rayleigh": rayleigh, "grid.shape": shape, "grid.box": [2 * math.pi / K_ROLL, 1.0],
        "fft.backend": "single", "initial.name": "mode", "initial.modes": [1], "initial.amplitude": amplitude}),
        devices[:1])


@pytest.mark.slow
@pytest.mark.parametrize("modes", [(32, 16), (48, 24)])
def test_a_steady_no_slip_roll_carries_dedalus_nusselt_number(dedalus_python, devices, tmp_path, modes):
    """The steady roll at Ra = 2000 of convection2d_noslip (IMEX RK222, dt = 0.1, until Nu moves less than 1e-11 in
    100 steps) on the grid whose 2/3 rule keeps Dedalus' modes (its 3/2 padding: 48 x 24 for 32 x 16 modes): the
    Nusselt number at each plate and through the volume equals Dedalus' at the plates (peer_dedalus.py nusselt, the
    same modes) to 1e-6 (found 3.7e-7 at 32 x 16, the truncation of Dedalus' coarser roll, and 9e-11 at 48 x 24)."""
    nx, nz = modes
    theirs = peer(dedalus_python, tmp_path, "nusselt", "--ra", "2000", "--k", str(K_ROLL), "--size", f"{nx}x{nz}")
    assert theirs["steady"], theirs
    sim = noslip_run(devices, 2000.0, [3 * nx // 2, 3 * nz // 2], 0.1)
    state, last = sim.initial_state(), None
    for _ in range(60):
        state = sim.advance(state, 100, 0.1, 0.0)
        now = {k: float(v) for k, v in sim.diagnostics(state, 0.1).items()
               if k in ("nusselt", "nusselt_bottom", "nusselt_top")}
        if last is not None and max(abs(now[k] - last[k]) for k in now) < 1e-11:
            break
        last = now
    else:
        pytest.fail(f"not steady after 6000 steps: {now}")
    for key, value in now.items():
        assert value == pytest.approx(theirs["nu_bottom"], abs=1e-6), (key, now, theirs)


@pytest.mark.slow
def test_a_linear_mode_from_a_no_slip_run_grows_at_dedalus_eigenvalue(dedalus_python, devices, tmp_path):
    """The mode m_x = 1 at amplitude 1e-8 of convection2d_noslip (8 x 24, float64) below and above onset (Ra = 1500,
    2000), its growth rate from the kinetic energy over t = 2 at dt = 0.02 and 0.01: its error against Dedalus' EVP
    of the same problem falls by 4 as dt halves (IMEX RK222 is second order: ratios 3.97 and 3.98 found), and the
    rate extrapolated to dt -> 0, (4 sigma(dt/2) - sigma(dt)) / 3, equals Dedalus' to 1e-6 relative (found 3e-8)."""
    import math

    growth = peer(dedalus_python, tmp_path, "evp", "--ra", "1500", "2000", "--pr", "1", "--k", str(K_ROLL))
    for row in growth["rows"]:
        sim = noslip_run(devices, row["ra"], [8, 24], 1e-8)
        start = sim.initial_state()
        before = float(sim.diagnostics(start, 0.01)["kinetic_energy"])

        def rate(dt: float, steps: int) -> float:
            after = float(sim.diagnostics(sim.advance(start, steps, dt, 0.0), dt)["kinetic_energy"])
            return math.log(after / before) / (2 * steps * dt)

        coarse, fine = rate(0.02, 100), rate(0.01, 200)
        exact = row["growth_rate"]
        assert (coarse - exact) / (fine - exact) == pytest.approx(4.0, abs=0.1), (row, coarse, fine)
        assert (4 * fine - coarse) / 3 == pytest.approx(exact, rel=1e-6), (row, coarse, fine)
