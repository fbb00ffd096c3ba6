"""Rayleigh-Benard convection in a box between no-slip plates (simulator.equations.convection_noslip), in float64
against the dense eigen-solver (simulator.walls.eigen) and the plane's equation, on the single backend and a slab of
2 devices, on 8 x 8 x 16 grids."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest

import simulator
from simulator.fft.bases import Chebyshev
from simulator.output.hdf5 import Snapshot
from simulator.walls import eigen

from support import advance, case_id, command, simulation

CASES = [("single", 1, None), ("slab", 2, None)]
RA_C, K_C = eigen.rayleigh_benard_onset()
#: one critical wavelength along a side: the mode (1, 0) is the onset's; (1, 1) is in a box sqrt(2) times wider
LX = 2 * math.pi / K_C
SHAPE = (8, 8, 16)


def box(devices, case=("single", 1, None), shape=SHAPE, side=LX, **overrides):
    values = {"physics__name": "convection_noslip", "grid__shape": list(shape), "grid__box": [side, side, 1.0],
              "grid__walls__axis": "z", "grid__walls__velocity": ["no-slip", "no-slip"], **overrides}
    return simulation(devices, case, **values)


def grid_fields(sim, state, params=None) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in sim.fields(state, "velocity", "theta", "temperature", params=params).items()}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_conductive_state_in_a_no_slip_box_is_steady(devices, case):
    """No noise: no flow, the temperature 1 - z at the Gauss-Lobatto heights, Nu = 1 at both plates and through
    the volume, after 10 steps."""
    sim = box(devices, case, initial__name="conductive", initial__amplitude=0.0)
    state = advance(sim, sim.initial_state(), 0.05, 10)
    fields = grid_fields(sim, state)
    assert np.max(np.abs(fields["velocity"])) == 0.0 and np.max(np.abs(fields["theta"])) == 0.0
    z = Chebyshev(SHAPE[2], 1.0).points()
    np.testing.assert_allclose(fields["temperature"], np.broadcast_to(1 - z, SHAPE), rtol=0, atol=1e-15)
    report = sim.diagnostics(state, 0.05)
    for key in ("nusselt", "nusselt_bottom", "nusselt_top"):
        assert float(report[key]) == pytest.approx(1.0, abs=1e-14)


def test_moving_plates_in_a_box_hold_the_couette_flow_and_drive_it_from_rest(devices):
    """Plates moving along x at U0 = -0.5 and U1 = 1 (physics.plate_velocity), on a slab of 2: the conductive state,
    their Couette flow U0 + (U1 - U0) z with b = 1 - z, stays steady to round-off (no v, no w); started from rest,
    the flow reaches it (the implicit solves hold the plates' velocities) to 1e-12."""
    shape = (4, 4, 16)
    sim = box(devices, ("slab", 2, None), shape=shape, initial__name="conductive", initial__amplitude=0.0,
              physics__rayleigh=1e3, physics__plate_velocity=[-0.5, 1.0])
    z = Chebyshev(shape[2], 1.0).points()
    want = np.broadcast_to(-0.5 + 1.5 * z, shape)
    fields = grid_fields(sim, advance(sim, sim.initial_state(), 0.05, 10))
    assert np.max(np.abs(fields["velocity"][0] - want)) < 1e-14 and np.max(np.abs(fields["velocity"][1:])) < 1e-14
    assert np.max(np.abs(fields["temperature"] - (1 - z))) < 1e-14
    rest = sim.state_from_fields(velocity=np.zeros((3, *shape)), theta=np.zeros(shape))
    fields = grid_fields(sim, advance(sim, rest, 1.0, 150))
    assert np.max(np.abs(fields["velocity"][0] - want)) < 1e-12 and np.max(np.abs(fields["velocity"][1:])) < 1e-14


def test_an_oblique_mode_grows_at_the_eigen_solvers_rate_and_changes_sign_at_the_onset(devices):
    """The eigen-solver's mode (m_x, m_y) = (1, 1) in a box sqrt(2) critical wavelengths wide, |k_h| = k_c: at
    Ra = 2000 it grows at the solver's rate for k = |k_h| to the scheme's O(dt^2) (2e-4 relative at dt = 0.05 over
    t = 1), its divergence and its velocity at the plates round-off after every step; at Ra_c (1 -+ 1e-4) its rate
    changes sign."""
    sim = box(devices, side=LX * math.sqrt(2), initial__name="mode", initial__amplitude=1e-8,
              initial__modes=[1, 1], physics__rayleigh=2000.0)

    def rate(rayleigh: float, dt: float, steps: int) -> tuple[float, float]:
        params = sim.parameters(rayleigh=rayleigh)
        state = sim.initial_state(params=params)
        before = float(sim.diagnostics(state, dt, params=params)["kinetic_energy"])
        worst = 0.0
        for _ in range(steps):
            state = advance(sim, state, dt, 1, params)
            velocity = grid_fields(sim, state, params)["velocity"]
            plates = np.abs(velocity[..., [0, -1]]).max() / np.abs(velocity).max()
            divergence = float(sim.diagnostics(state, dt, params=params)["divergence"]) / np.abs(velocity).max()
            worst = max(worst, plates, divergence)
        after = float(sim.diagnostics(state, dt, params=params)["kinetic_energy"])
        return math.log(after / before) / (2 * dt * steps), worst

    measured, worst = rate(2000.0, 0.05, 20)
    assert measured == pytest.approx(eigen.rayleigh_benard_growth(2000.0, 1.0, K_C)[0], rel=2e-4)
    assert worst < 1e-13
    (below, _), (above, _) = (rate(RA_C * (1 + s * 1e-4), 0.1, 10) for s in (-1, 1))
    assert below < 0 < above


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_roll_uniform_along_y_is_the_planes_run(devices, case):
    """The mode (1, 0) at Ra = 5000, amplitude 0.1 (nonlinear), 20 steps: every y-line of the box's (u, w, theta)
    is the plane equation's run from its mode m_x = 1, to 1e-12, and v stays 0."""
    values = {"initial__name": "mode", "initial__amplitude": 0.1, "physics__rayleigh": 5000.0}
    plane = simulation(devices, ("single", 1, None), physics__name="convection2d_noslip", grid__shape=[8, 16],
                       grid__box=[LX, 1.0], **values)
    # the plane's (1, Nx, Nz) as one y-line (Nx, 1, Nz) of the box
    want = {k: np.swapaxes(v, -3, -2) for k, v in grid_fields(plane, advance(plane, plane.initial_state(), 0.02,
                                                                                20)).items()}
    sim = box(devices, case, shape=(8, 4, 16), initial__modes=[1, 0], **values)
    got = grid_fields(sim, advance(sim, sim.initial_state(), 0.02, 20))
    scale = np.abs(want["velocity"]).max()
    assert np.abs(got["velocity"][1]).max() < 1e-12 * scale
    for component, plane_component in ((0, 0), (2, 1)):
        assert np.abs(got["velocity"][component] - want["velocity"][plane_component]).max() < 1e-12 * scale
    assert np.abs(got["theta"] - want["theta"]).max() < 1e-12 * np.abs(want["theta"]).max()


def test_a_distributed_no_slip_box_equals_the_single_device_one(devices):
    """Noise at Ra = 1e5 for 10 steps: a slab of 2 devices ends where one device ends, to 1e-12."""
    values = {"initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5}
    single = box(devices, **values)
    want = grid_fields(single, advance(single, single.initial_state(), 0.01, 10))
    sim = box(devices, CASES[1], **values)
    got = grid_fields(sim, advance(sim, sim.initial_state(), 0.01, 10))
    assert np.abs(want["velocity"]).max() > 1e-3
    for name in ("velocity", "theta"):
        assert np.abs(got[name] - want[name]).max() < 1e-12 * np.abs(want[name]).max()


CONFIG = {"physics.name": "convection_noslip", "physics.rayleigh": 1e4, "grid.shape": list(SHAPE),
          "grid.box": [LX, LX, 1.0], "grid.walls.axis": "z", "grid.walls.velocity": ["no-slip", "no-slip"],
          "precision": "float64", "initial.name": "conductive", "initial.amplitude": 0.1,
          "time.dt": 0.01, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10,
          "output.snapshots.every": 20, "runtime.cpu_devices": 8, "fft.mesh": [2]}


def test_a_no_slip_box_restart_ends_bitwise_where_the_straight_run_ends(tmp_path):
    """From the step-10 checkpoint of a run on a slab of 2, restarted there: its step-20 snapshot is the straight
    run's, bit for bit."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, CONFIG), straight) == 0
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    restart = str(run / "checkpoints" / "c00000010.json")
    assert simulator.run_config(simulator.load_config(None, CONFIG), run, restart=restart) == 0
    with Snapshot(run / "snapshots" / "s00000020.h5") as got, Snapshot(straight / "snapshots" / "s00000020.h5") \
            as want:
        for name in ("theta", "velocity"):
            assert np.array_equal(got.read(name), want.read(name))


BAD = [
    ({"grid.walls.velocity": "[free-slip,free-slip]"}, r"^error: grid\.walls\.velocity = \['free-slip', 'free-slip'\] "
     r"has no no-slip plate; a no-slip plate at least for physics\.name = convection_noslip \(the Chebyshev "
     r"basis\), or grid\.walls\.basis: chebyshev; free-slip plates on sine and cosine series: "
     r"physics\.name convection$"),
    ({"initial.name": "mode", "initial.modes": "[3,0]"}, r"^error: initial\.modes = \[3, 0\] is out of range"),
    ({"initial.name": "mode", "initial.modes": "[0,0]"}, r"^error: initial\.modes = \[0, 0\] is out of range"),
    ({"initial.name": "mode", "physics.plate_velocity": "[0,1]"}, r"^error: initial\.name = 'mode' is not available "
     r"with moving plates"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_no_slip_box_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "rb.yaml"
    config.write_text("physics: {name: convection_noslip}\ngrid: {shape: [8, 8, 16], box: [2, 2, 1], walls: {axis: z, "
                      "velocity: [no-slip, no-slip]}}\n")
    args = [a for key, value in values.items() for a in ("--set", f"{key}={value}")]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("plane", [True, False], ids=["plane", "box"])
def test_the_velocitys_products_are_u_cross_omega_and_give_the_advective_forms_terms(devices, plane):
    """The explicit terms' velocity products are u x omega (the rotational form), pointwise to round-off for a
    divergence-free no-slip flow given in closed form (poloidal and toroidal parts and a mean flow, its products
    resolved by the grid: modes |m| <= 2 of 16, degree <= 10 of 17 across); and h_w, h_zeta and h_(U, V) built from
    them equal those built from the advective form -(u . grad) u of the same flow to round-off: the dropped gradient
    of |u|^2/2 leaves no trace where nothing aliases."""
    from numpy.polynomial import Polynomial

    shape = (16, 17) if plane else (16, 16, 17)
    sim = simulation(devices, ("single", 1, None), physics__name="convection", grid__shape=list(shape),
                     grid__box=[4.0, 1.0] if plane else [4.0, 4.0, 1.0], grid__walls__axis="z",
                     grid__walls__velocity=["no-slip", "no-slip"], precision="float64")
    eq = sim.equation
    n = 16
    x1 = np.arange(n) * 4.0 / n
    z = np.asarray(Chebyshev(17, 1.0).points())
    if plane:
        x, y, z = x1[None, :, None], 0.0, z[None, None, :]
    else:
        x, y, z = x1[:, None, None], x1[None, :, None], z[None, None, :]
    k = 2 * np.pi / 4.0
    a, b = (k, 0.0) if plane else (k, 2 * k)
    s, t = a * a + b * b, 0.0 if plane else 1.0  # t: the toroidal part's amplitude (none in a plane)
    p, r = Polynomial([0, 0, 1, -2, 1]), Polynomial([0, 0, 1, -1, -1, 1])  # z^2 (1 - z)^2, times (1 + z)
    q, m = Polynomial([0, 1, -1]), Polynomial([0, 0.3, -0.3])  # z (1 - z)
    cos, sin = np.cos(a * x + b * y), np.sin(a * x + b * y)
    # w = P cos + R sin; its poloidal partner (a, b)/s (R' cos - P' sin) by continuity; a toroidal (-b, a) Q cos
    poloidal = r.deriv()(z) * cos - p.deriv()(z) * sin
    poloidal_z = r.deriv(2)(z) * cos - p.deriv(2)(z) * sin
    poloidal_h = -(p.deriv()(z) * cos + r.deriv()(z) * sin)  # d/d(a x + b y) of the poloidal profile
    u = a / s * poloidal - t * b * q(z) * cos + m(z)
    v = b / s * poloidal + t * a * q(z) * cos + 0.5 * m(z)
    w = p(z) * cos + r(z) * sin
    w_h = -p(z) * sin + r(z) * cos
    grad = {  # (component, direction) -> the derivative
        ("u", "x"): a * a / s * poloidal_h + t * a * b * q(z) * sin,
        ("u", "y"): a * b / s * poloidal_h + t * b * b * q(z) * sin,
        ("u", "z"): a / s * poloidal_z - t * b * q.deriv()(z) * cos + m.deriv()(z),
        ("v", "x"): a * b / s * poloidal_h - t * a * a * q(z) * sin,
        ("v", "y"): b * b / s * poloidal_h - t * a * b * q(z) * sin,
        ("v", "z"): b / s * poloidal_z + t * a * q.deriv()(z) * cos + 0.5 * m.deriv()(z),
        ("w", "x"): a * w_h, ("w", "y"): b * w_h, ("w", "z"): p.deriv()(z) * cos + r.deriv()(z) * sin}
    velocity = {"u": u, "v": v * (not plane), "w": w}
    names, directions = (("u", "w"), ("x", "z")) if plane else (("u", "v", "w"), ("x", "y", "z"))
    full = (1, n, 17) if plane else (n, n, 17)
    # the velocity field's components: (u, w, 0) in a plane, (u, v, w) in a box
    stored = [velocity[i] for i in names] + ([0.0] if plane else [])
    fields = {"velocity": np.stack([np.broadcast_to(f, full) for f in stored]), "theta": np.zeros(full)}
    state = sim.state_from_fields(**fields)
    omega = {"x": grad[("w", "y")] - grad[("v", "z")], "y": grad[("u", "z")] - grad[("w", "x")],
             "z": grad[("v", "x")] - grad[("u", "y")]}
    cross = {"u": velocity["v"] * omega["z"] - w * omega["y"], "v": w * omega["x"] - u * omega["z"],
             "w": u * omega["y"] - velocity["v"] * omega["x"]}
    got = np.asarray(eq._advected(state))
    for i, name in enumerate(names):
        exact = np.broadcast_to(cross[name], full)
        assert np.abs(got[i] - exact).max() < 1e-12 * np.abs(exact).max(), name
    advective = [-sum(velocity[j] * grad[(i, dj)] for j, dj in zip(names, directions, strict=True)) for i in names]
    rotational = eq.explicit(state, 0.0)
    reference = np.asarray(eq._advected(state)).copy()
    reference[:len(names)] = [np.broadcast_to(f, full) for f in advective]
    object.__setattr__(eq, "_advected", lambda _: reference)
    try:
        advected_form = eq.explicit(state, 0.0)
    finally:
        object.__delattr__(eq, "_advected")
    for name in ("w", "zeta", "mean"):
        one, other = getattr(rotational, name), getattr(advected_form, name)
        if one is not None:
            one, other = np.asarray(one), np.asarray(other)
            assert np.abs(other).max() > 1e-3, name  # each term is not zero for this flow (not a vacuous check)
            assert np.abs(one - other).max() < 1e-12 * np.abs(other).max(), name
