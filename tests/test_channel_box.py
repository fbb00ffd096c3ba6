"""A channel between no-slip plates in a box (simulator.equations.channel), float64, on the single backend and a slab
of 2 devices: laminar Poiseuille flow under a fixed flux steady, a Tollmien-Schlichting wave uniform along y stepped
as the plane steps it, an oblique Orr-Sommerfeld mode decaying at Squire's rate, and a distributed run equal to one
device's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.fft.bases import Chebyshev
from simulator.walls import channel, chebyshev, eigen

from support import advance, case_id, simulation

CASES = [("single", 1, None), ("slab", 2, None)]


def box_run(devices, case=("single", 1, None), shape=(8, 4, 16), **overrides):
    return simulation(devices, case, **{"physics__name": "channel", "grid__shape": list(shape), **overrides})


def velocity(sim, state) -> np.ndarray:
    return np.asarray(sim.fields(state, "velocity")["velocity"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_box_holds_laminar_flow_under_a_fixed_flux_and_steps_a_plane_wave_as_the_plane(devices, case):
    """Laminar Poiseuille flow (Re = 2000, 8 x 4 x 16) under a fixed flux stays to round-off, no spanwise or
    wall-normal velocity made; a Tollmien-Schlichting wave of amplitude 1e-3 (Re = 500) uniform along y steps for 10
    steps as channel2d steps it (8 x 16), to round-off, with no spanwise velocity made."""
    values = {"physics__drive": "flux", "physics__reynolds": 2000.0}
    sim = box_run(devices, case, initial__name="laminar", **values)
    u = velocity(sim, advance(sim, sim.initial_state(), 0.02, 5))
    assert np.abs(u[0] - channel.poiseuille(Chebyshev(16, 2.0).points() - 1)).max() < 1e-14
    assert np.abs(u[1:]).max() == 0.0
    # at Re = 500, which 16 points across resolve (simulator.walls.channel.ts_resolved); at 2000 they do not
    wave = {"initial__name": "tollmien_schlichting", "initial__amplitude": 1e-3, **values, "physics__reynolds": 500.0}
    box = box_run(devices, case, grid__box=[2 * math.pi, math.pi, 2.0], **wave)
    deep = velocity(box, advance(box, box.initial_state(), 0.02, 10))
    plane = simulation(devices, case, physics__name="channel2d", grid__shape=[8, 16], **wave)
    flat = velocity(plane, advance(plane, plane.initial_state(), 0.02, 10))
    assert np.abs(deep[0] - flat[0, 0][:, None]).max() < 1e-14
    assert np.abs(deep[2] - flat[1, 0][:, None]).max() < 1e-14
    assert np.abs(deep[1]).max() == 0.0


def test_an_oblique_wave_decays_at_squires_rate(devices):
    """An Orr-Sommerfeld mode (alpha, beta) = (1, 1/2) of amplitude 1e-5 on laminar Poiseuille flow in a box at
    Re = 10^4 (8 x 4 x 64): its wall-normal velocity decays at alpha Im c of the two-dimensional problem at
    k = |(alpha, beta)| and Re alpha / k (Squire 1933), solved at the run's Chebyshev degree."""
    alpha, beta, re, n, dt, t_end = 1.0, 0.5, 1e4, 64, 0.04, 4.0
    k = math.hypot(alpha, beta)
    c, _, phi = eigen.orr_sommerfeld(re * alpha / k, k, "poiseuille", n - 1)
    sim = box_run(devices, shape=(8, 4, n), physics__reynolds=re, initial__name="laminar",
                  grid__box=[2 * math.pi / alpha, 2 * math.pi / beta, 2.0])
    start = sim.initial_state()
    mode = np.polynomial.chebyshev.chebval(Chebyshev(n, 2.0).points() - 1, np.asarray(chebyshev.forward(phi[0])))
    series = np.asarray(chebyshev.forward(1e-5 * mode / np.abs(mode).max()))
    # a real field: the mode (1, 1) and its conjugate (-1, -1)
    w = start.w.at[1, 1].set(series).at[-1, -1].set(np.conj(series))
    start = type(start)(w, start.zeta, start.mean, start.scalars)
    end = advance(sim, start, dt, round(t_end / dt))
    rate = math.log(float(np.linalg.norm(np.asarray(end.w)[1, 1]) / np.linalg.norm(series))) / t_end
    # RK222's error in this slowly decaying rate at dt = 0.04: 7e-5 relative, falling as dt^2
    assert rate == pytest.approx(alpha * c[0].imag, rel=2e-4)


def test_a_distributed_box_run_equals_the_single_device_one(devices):
    """Laminar Poiseuille flow plus noise (0.1) at Re = 5000 for 10 steps: a slab of 2 devices ends where one
    device ends, to 1e-12."""
    values = {"initial__name": "laminar", "initial__amplitude": 0.1, "physics__reynolds": 5000.0}
    single = box_run(devices, **values)
    want = velocity(single, advance(single, single.initial_state(), 0.01, 10))
    sim = box_run(devices, CASES[1], **values)
    got = velocity(sim, advance(sim, sim.initial_state(), 0.01, 10))
    assert min(np.abs(want[i]).max() for i in range(3)) > 1e-4
    assert np.abs(got - want).max() < 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("shape", [(8, 4, 16), (8, 16)], ids=["box", "plane"])
def test_a_noisy_start_is_divergence_free_and_the_state_of_its_own_fields(devices, shape):
    """The laminar profile plus noise (amplitude 0.3): before any step its velocity is divergence-free to round-off
    (no mean flow across the plates is kept) and the state made again from its own fields is the same state (no
    Nyquist mode, which a real field cannot hold, is kept)."""
    name = "channel" if len(shape) == 3 else "channel2d"
    sim = simulation(devices, ("single", 1, None), physics__name=name, grid__shape=list(shape))
    state = sim.initial_state({"name": "laminar", "amplitude": 0.3, "seed": 3})
    assert float(sim.report(state)["divergence"]) < 1e-13
    again = sim.equation.from_fields(sim.equation.fields(state, sim.params), sim.params)
    for a, b in zip((state.w, state.zeta, state.mean), (again.w, again.zeta, again.mean), strict=True):
        if a is not None:
            assert np.abs(np.asarray(a) - np.asarray(b)).max() < 1e-13
