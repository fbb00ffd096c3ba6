"""An odd point count across the plates (channel papers' 65 and 129 Gauss-Lobatto points), float64: laminar Poiseuille
flow steady, divergence and no-slip held and a convection mode growing at the eigen-solver's rate at 17 Chebyshev
points, a state read on 33 points from 17, a free-slip temperature layer decaying exactly at 9 cell centres, a slab
of 2 devices equal to one device, what `simulator validate` says of odd sizes between plates and in a periodic box,
and the grids `simulator plan` proposes."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from simulator.config import to_dict
from simulator.fft.bases import Chebyshev
from simulator.output import checkpoints
from simulator.planning import plan
from simulator.walls import channel, eigen

from support import advance, command, shared, simulation


def test_an_odd_count_across_no_slip_plates_holds_laminar_flow_divergence_free(devices):
    """A channel box of 8 x 4 x 17 under a fixed flux at Re = 2000: laminar Poiseuille flow stays on the 17
    Gauss-Lobatto points to round-off for 5 steps, no cross-flow made; from the laminar profile plus noise (0.1),
    divergence and slip stay at round-off after every step and the bulk velocity is held."""
    sim = shared(physics__name="channel", grid__shape=[8, 4, 17], physics__drive="flux", physics__reynolds=2000.0,
                 initial__name="laminar", initial__amplitude=0.1)
    calm = advance(sim, sim.initial_state({"name": "laminar", "amplitude": 0.0}), 0.02, 5)
    u = np.asarray(sim.fields(calm, "velocity")["velocity"])
    assert np.abs(u[0] - channel.poiseuille(Chebyshev(17, 2.0).points() - 1)).max() < 1e-14
    assert np.abs(u[1:]).max() == 0.0
    state, worst = sim.initial_state(), 0.0
    for _ in range(4):
        state = advance(sim, state, 0.02, 1)
        report = sim.diagnostics(state, 0.02)
        worst = max(worst, float(report["divergence"]), float(report["slip"]))
        assert float(report["bulk_velocity"]) == pytest.approx(2 / 3, abs=1e-15)
    assert np.abs(np.asarray(sim.fields(state, "velocity")["velocity"])[1]).max() > 1e-3  # the noise is there
    assert worst < 1e-12


def test_a_convection_mode_grows_at_the_eigen_solvers_rate_on_17_points(devices):
    """No-slip convection on 8 x 17, one critical wavelength wide: the eigen-solver's mode at (Ra, k) = (2000, k_c)
    grows at its rate to the scheme's O(dt^2) (2e-4 relative at dt = 0.05 over t = 1), the velocity's divergence and
    its values at the plates round-off after every step."""
    k_c = eigen.rayleigh_benard_onset()[1]
    sim = simulation(devices, physics__name="convection2d_noslip", grid__shape=[8, 17],
                     grid__box=[2 * math.pi / k_c, 1.0], initial__name="mode", initial__amplitude=1e-8,
                     physics__rayleigh=2000.0)
    state, dt, steps, worst = sim.initial_state(), 0.05, 20, 0.0
    before = float(sim.diagnostics(state, dt)["kinetic_energy"])
    for _ in range(steps):
        state = advance(sim, state, dt, 1)
        velocity = np.asarray(sim.fields(state, "velocity")["velocity"])
        plates = np.abs(velocity[..., [0, -1]]).max() / np.abs(velocity).max()
        worst = max(worst, plates, float(sim.diagnostics(state, dt)["divergence"]) / np.abs(velocity).max())
    rate = math.log(float(sim.diagnostics(state, dt)["kinetic_energy"]) / before) / (2 * dt * steps)
    assert rate == pytest.approx(eigen.rayleigh_benard_growth(2000.0, 1.0, k_c)[0], rel=2e-4)
    assert worst < 1e-13


def test_a_state_on_17_points_is_read_on_33_by_its_chebyshev_series(devices, tmp_path):
    """A noisy channel state on 8 x 4 x 17 (one device, one step on), checkpointed, read on 8 x 4 x 33 over a slab of
    2: at every second Gauss-Lobatto height, the stored grid's, the velocity is the one read on 17 points to
    round-off (a series of degree 16 is exact on 33 points), its divergence and slip round-off, its bulk velocity the
    same."""
    values = {"physics__name": "channel", "physics__drive": "flux", "physics__reynolds": 2000.0,
              "initial__name": "laminar", "initial__amplitude": 0.1}
    coarse = shared(grid__shape=[8, 4, 17], **values)
    state = advance(coarse, coarse.initial_state(), 0.02, 1)
    marker = checkpoints.write(tmp_path / "coarse", state, step=1, time=0.02, dt=0.02, epoch=(0, 0.0), writer="test",
                               spaces=coarse.equation.leaf_spaces(state), perm=coarse.fft.perm, full_spectrum=False,
                               meta={"config": to_dict(coarse.cfg), "backend": "single"}, keep=2)
    fine = simulation(devices, ("slab", 2, None), grid__shape=[8, 4, 33], **values)
    fine.scratch = tmp_path
    remapped = fine.state_from_file(marker)
    stored = coarse.state_from_file(marker)
    want = np.asarray(coarse.fields(stored, "velocity")["velocity"])
    got = np.asarray(fine.fields(remapped, "velocity")["velocity"])
    assert np.abs(want[1]).max() > 1e-3 and np.abs(got[..., ::2] - want).max() < 1e-13 * np.abs(want).max()
    report = {k: float(v) for k, v in fine.diagnostics(remapped, 0.02).items()}
    assert report["divergence"] < 1e-12 and report["slip"] < 1e-13
    assert report["bulk_velocity"] == pytest.approx(float(coarse.diagnostics(stored, 0.02)["bulk_velocity"]), abs=1e-14)


def test_an_odd_count_across_free_slip_plates_decays_a_layer_exactly(devices):
    """Free-slip convection on 8 x 9 (sine and cosine series of 9 cell centres): theta = sin(2 pi z), uniform in x,
    decays as exp(-kappa (2 pi)^2 t), kappa = (Ra Pr)^-1/2, to round-off, and drives no flow."""
    ra, pr, dt, steps = 2000.0, 0.7, 0.05, 20
    sim = simulation(devices, physics__name="convection2d", grid__shape=[8, 9], grid__box=[2.0, 1.0],
                     grid__walls__axis="y", initial__name="mode", initial__modes=[0, 2], initial__amplitude=1.0,
                     physics__rayleigh=ra, physics__prandtl=pr)
    state = np.asarray(advance(sim, sim.initial_state(), dt, steps))
    expected = math.exp(-(2 * math.pi) ** 2 * dt * steps / math.sqrt(ra * pr))
    assert float(np.real(state[1, 0, 0, 2])) / sim.fft.size == pytest.approx(expected, rel=1e-13, abs=0)
    assert np.max(np.abs(state[0])) == 0.0


def test_a_slab_steps_an_odd_count_across_the_plates_as_one_device_does(devices):
    """A channel box of 8 x 4 x 17 at Re = 5000 from laminar flow plus noise (0.1), 5 steps: a slab of 2 devices,
    whose walled spectrum is split along kx (17 coefficients whole on each device), ends where one device ends, to
    1e-12."""
    values = {"physics__name": "channel", "grid__shape": [8, 4, 17], "physics__reynolds": 5000.0,
              "initial__name": "laminar", "initial__amplitude": 0.1}
    runs = []
    for case in (("single", 1, None), ("slab", 2, None)):
        sim = simulation(devices, case, **values)
        runs.append(np.asarray(sim.fields(advance(sim, sim.initial_state(), 0.01, 5), "velocity")["velocity"]))
    want, got = runs
    assert np.abs(want[2]).max() > 1e-3
    assert np.abs(got - want).max() < 1e-12 * np.abs(want).max()


@pytest.mark.parametrize(("physics", "shape", "sets", "code", "pattern"), [
    ("channel", [64, 64, 65], [], 0, None),
    ("channel", [128, 128, 129], ["fft.backend=slab", "runtime.cpu_devices=8"], 0, None),
    ("navier_stokes", [8, 8, 17], [], 2, r"^error: grid\.shape = \[8, 8, 17\] has an odd Nz; Nz must be even: the "
     r"real-to-complex transform keeps Nz/2 planes \(Nyquist dropped\)$"),
    ("channel2d", [8, 17], ["fft.backend=slab", "runtime.cpu_devices=2"], 2,
     r"^error: grid\.shape = \[8, 17\] does not divide over the mesh; slab on mesh \[2\] needs Ny = 17 divisible "
     r"by 2; choose sizes that are multiples of the device counts$"),
    ("channel", [8, 8, 17], ["fft.backend=pencil", "runtime.cpu_devices=2"], 2,
     r"^error: grid\.shape = \[8, 8, 17\] does not divide over the mesh; pencil with grid\.walls on mesh \[2, 1\] "
     r"needs Nz = 17 divisible by 2, the device count"),
], ids=["channel-65", "channel-129-slab-8", "periodic-odd", "plane-slab-2-odd", "pencil-2-odd"])
def test_validate_takes_an_odd_count_only_across_plates(tmp_path, capfd, physics, shape, sets, code, pattern):
    """`simulator validate`: 65 and 129 points across a channel's plates (the last axis) are valid, 64 x 64 x 65 on
    one device and 128 x 128 x 129 on a slab of 8; an odd Nz of a periodic box, an odd count across a plane's
    plates on a slab of 2 (whose walled spectrum it splits) or across a box's on a pencil of 2 (whose exchange splits
    it over every device) is one line, exit 2."""
    config = tmp_path / "odd.yaml"
    config.write_text(f"physics: {{name: {physics}}}\ngrid: {{shape: {shape}}}\n")
    got, out, err = command(capfd, "validate", str(config), *(a for s in sets for a in ("--set", s)))
    assert got == code, err
    if pattern is None:
        assert f"shape: {shape}" in out
    else:
        assert len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err


def test_the_plan_of_a_gauss_lobatto_grid_proposes_grids_one_point_more_across(devices):
    """The plan of a channel on 8 x 4 x 17 (a Chebyshev transform of 2 x 16 points across) names the largest grid of
    its aspect as 2N x N x (4N + 1), 4N FFT-friendly, where it named none (17 is no multiple's size)."""
    sim = shared(physics__name="channel", grid__shape=[8, 4, 17], physics__drive="flux", physics__reynolds=2000.0,
                 initial__name="laminar", initial__amplitude=0.1)
    line = plan.largest_grid_line(plan.make_plan(sim, programs=("chunk",), memory=1 << 30))
    assert "grid of this run's aspect (a multiple of [2, 1, 4] and one point more across the plates)" in line, line
    nx, ny, nz = (int(v) for v in re.search(r"\[(\d+), (\d+), (\d+)\]$", line).groups())
    assert nx == 2 * ny and nz == 4 * ny + 1 and ny > 4 and plan.fft_friendly(4 * ny)
