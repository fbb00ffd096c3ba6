"""A plane's flow statistics (``output.statistics`` on every planar flow): the derivative and vorticity moments and
the structure functions along the plane's x and y against closed forms (float64), distributed equal to one device,
and the command line's run of the shipped forced_2d config with statistics on, read back and plotted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator import equations
from simulator.observables import statistics as st
from simulator.output.statistics import FILE, read_statistics

from support import command, shared

N = 16
ORDERS = (2, 3, 4, 5, 6)
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "forced_2d.yaml"


def _stats(sim, state, lay, params=None, hlo=None):
    """The statistics of ``state`` (one compilation); with a list ``hlo``, the compiled program's text appended."""
    import jax

    args = (sim.equation, state, sim.params if params is None else params, sim.time_array(0.0))
    program = jax.jit(lambda eq, s, p, t: st.statistics(eq.at(t), s, p, lay)).lower(*args).compile()
    if hlo is not None:
        hlo.append(program.as_text())
    return {k: np.asarray(v) for k, v in program(*args).items()}


def _plane():
    """x and y of the 2 pi square's N x N grid, as the vorticity field ``(1, N, N)``'s."""
    x = 2 * np.pi * np.arange(N) / N
    return np.meshgrid(x, x, indexing="ij")


def _abs_sin_mean(p):
    """<|sin|^p> over a period: Gamma((p+1)/2) / (sqrt(pi) Gamma(p/2 + 1)); for even p < N, the grid's mean too."""
    from scipy.special import gamma

    return gamma((p + 1) / 2) / (np.sqrt(np.pi) * gamma(p / 2 + 1))


def test_a_planes_single_mode_has_the_closed_form_moments_and_structure_functions_along_x_and_y():
    """psi = sin(x + 2y): u = d psi/dy = 2 cos(theta), v = -cos(theta), omega = 5 sin(theta). du/dx, dv/dy and
    omega are sines: skewness 0, flatness <sin^4>/<sin^2>^2 = 3/2. The increments along x by r cells are
    du = -4 sin(r dx/2) sin(theta + r dx/2): S_p^L = |4 sin(r dx/2)|^p <|sin|^p>, the transverse (v) half of it;
    along y (shift 2 r dy) the longitudinal is v's and the transverse u's. Even p (the grid's means are exact)."""
    sim = shared(physics__name="ns2d", grid__shape=[N, N])
    x, y = _plane()
    state = sim.state_from_fields(vorticity=(5 * np.sin(x + 2 * y))[None])
    lay = st.layout((N, N), ORDERS, None, 41, 6.0, (1, 4))
    out = _stats(sim, state, lay)
    assert not any(name.endswith("_z") or name.endswith("dwdz") for name in out)
    for name in ("dudx", "dvdy", "vorticity"):
        assert abs(out[f"skewness_{name}"]) < 1e-12, name
        assert out[f"flatness_{name}"] == pytest.approx(1.5, rel=1e-12, abs=0), name
    assert out["derivative_variance"] == pytest.approx(2.0, rel=1e-12)  # (du/dx)^2 = 4 sin^2: mean 2
    r = np.arange(1, N // 2 + 1)
    h = 2 * np.pi / N
    for axis, shift, longitudinal, transverse in (("x", r * h, 2.0, 1.0), ("y", 2 * r * h, 1.0, 2.0)):
        for i, p in enumerate(ORDERS):
            if p % 2:
                continue
            for kind, amplitude in (("longitudinal", longitudinal), ("transverse", transverse)):
                exact = np.abs(2 * amplitude * np.sin(shift / 2)) ** p * _abs_sin_mean(p)
                np.testing.assert_allclose(out[f"structure_{kind}_{axis}"][i], exact, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{kind} {axis} p={p}")
        np.testing.assert_allclose(out[f"structure_signed3_{axis}"], 0.0, atol=1e-12)
    # the PDFs of du/dx, dv/dy and of the increments along x and y, pooled: densities
    width = lay.edges[1] - lay.edges[0]
    assert np.sum(out["pdf_dudx"]) * width + out["pdf_dudx_outside"] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(np.sum(out["pdf_increment"], axis=1) * width + out["pdf_increment_outside"], 1.0,
                               atol=1e-12)


def test_a_planes_two_mode_field_has_skewness_3_4_and_flatness_9_4():
    """psi = G(theta), theta = x + y, G'' = cos(theta) + cos(2 theta) = f: u = G', v = -G', du/dx = f,
    dv/dy = -f, omega = -lap psi = -2 f. <f^2> = 1, <f^3> = 3/4, <f^4> = 9/4: du/dx has skewness 3/4, dv/dy and
    omega -3/4, each flatness 9/4; pooled over du/dx and dv/dy the third moments cancel (2D incompressibility)."""
    sim = shared(physics__name="ns2d", grid__shape=[N, N])
    x, y = _plane()
    f = np.cos(x + y) + np.cos(2 * (x + y))
    out = _stats(sim, sim.state_from_fields(vorticity=(-2 * f)[None]), st.layout((N, N), ORDERS, (1, 3), 41, 6.0, (1,)))
    for name, skewness in (("dudx", 0.75), ("dvdy", -0.75), ("vorticity", -0.75)):
        assert out[f"skewness_{name}"] == pytest.approx(skewness, rel=1e-12), name
        assert out[f"flatness_{name}"] == pytest.approx(2.25, rel=1e-12), name
    assert abs(out["skewness"]) < 1e-12 and out["flatness"] == pytest.approx(2.25, rel=1e-12)
    assert out["structure_longitudinal_x"].shape == (len(ORDERS), 2)


@pytest.mark.parametrize("case", [("slab", 1, None), ("slab", 2, None)], ids=["slab-1", "slab-2"])
def test_a_planes_statistics_distributed_equal_one_devices(case):
    """A random ns2d state with a passive scalar (mean gradient along x): every statistic, the scalar's gradient
    moments in x and y and along its mean gradient among them, on the slab equal to the single backend's; on two
    devices no field is gathered (the shifts along the split x move the planes that cross a device boundary)."""
    over = {"physics__name": "ns2d", "grid__shape": [N, N], "initial__name": "random",
            "physics__scalars": [{"diffusivity": 1e-2, "mean_gradient": [1, 0, 0]}], "initial__scalars__name": "random"}
    lay = st.layout((N, N), ORDERS, None, 41, 6.0, None)
    single = shared(**over)
    reference = _stats(single, single.initial_state(), lay)
    assert {"scalar0_gradient_skewness_x", "scalar0_gradient_flatness_y"} <= set(reference)
    for what in ("skewness", "flatness"):  # the mean gradient (Gx, Gy, 0) = (1, 0, 0) is along the plane's x
        assert reference[f"scalar0_gradient_{what}_parallel"] == pytest.approx(
            reference[f"scalar0_gradient_{what}_x"], rel=1e-12)
    sim, hlo = shared(case, **over), []
    out = _stats(sim, sim.initial_state(), lay, hlo=hlo)
    if case[1] > 1:
        assert "all-gather" not in hlo[0] and "collective-permute" in hlo[0]
    assert set(out) == set(reference)
    for name, value in reference.items():
        # a skewness to 1e-12 of 1: the pooled one is 0 to round-off (dv/dy = -du/dx in the plane)
        error = np.max(np.abs(out[name] - value)) / max(np.max(np.abs(value)), 1.0 if "skewness" in name else 1e-300)
        assert error < 1e-12, (name, error)


def test_every_planar_flow_takes_the_statistics():
    """No periodic planar flow refuses ``output.statistics`` (each has a velocity); a separation past half the
    plane's shorter side is refused naming the key; between plates the periodic statistics are refused."""
    from simulator.errors import ConfigError

    planar = sorted(name for name, info in equations.registry().items()
                    if info.dimensions == 2 and info.walls != "required")
    assert {"ns2d", "boussinesq2d", "mhd2d", "sw1l"} <= set(planar)
    for name in planar:
        simulator.load_config(None, {"physics.name": name, "output.statistics.every": 10})
    with pytest.raises(ConfigError, match=r"^output\.statistics = 'enabled' is not available"):
        simulator.load_config(None, {"physics.name": "convection2d", "output.statistics.every": 10})
    with pytest.raises(ConfigError, match=r"^output\.statistics\.separations = \[1, 9\] .*N/2 = 8 cells"):
        simulator.load_config(None, {"physics.name": "ns2d", "grid.shape": [16, 32],
                                     "output.statistics.at_end": True, "output.statistics.separations": [1, 9]})


def test_forced_2d_from_the_command_line_writes_reads_and_plots_the_planes_statistics(tmp_path, capfd):
    """``simulator run configs/forced_2d.yaml`` with statistics on (a 32^2 plane, a few steps): statistics.h5 names
    the plane's x and y (no z), its shape and cell sizes are the plane's, load_run reads it, and ``simulator plot``
    draws the three statistics figures."""
    run = tmp_path / "run"
    code, _, err = command(capfd, "run", str(CONFIG), "--out", str(run), "--set", "grid.shape=[32, 32]",
                           "--set", "physics.forcing_wavenumber=4", "--set", "initial.k_peak=4",
                           "--set", "time.t_end=0.04", "--set", "output.chunk=2", "--set", "output.spectra.every=2",
                           "--set", "output.snapshots.dt=null", "--set", "output.statistics.every=2",
                           "--set", "output.statistics.separations=[1, 2, 4, 8]")
    assert code == 0, err
    data = simulator.load_run(run).statistics
    assert read_statistics(run / FILE).keys() == data.keys()
    assert list(data["r_x"]) == list(data["r_y"]) == [1, 2, 4, 8] and "r_z" not in data
    assert data["structure_longitudinal_y"].shape == (len(data["step"]), len(ORDERS), 4)
    assert not any(name.endswith("_z") or "dwdz" in name for name in data)
    assert data["attrs"]["shape"] == [32, 32]
    np.testing.assert_allclose(data["attrs"]["spacing"], [2 * np.pi / 32] * 2, rtol=1e-15)
    assert np.all(np.isfinite(data["flatness_vorticity"])) and np.all(data["flatness_vorticity"] > 1)
    code, _, err = command(capfd, "plot", str(run))
    assert code == 0, err
    for png in ("structure_functions.png", "pdfs.png", "derivative_moments.png"):
        assert (run / "plots" / png).is_file(), png


def test_a_planes_isotropic_s2_of_a_spectrum_is_the_2d_relation():
    """The reference ``structure_functions.png`` draws for a plane: for E(k) = a delta(k - k0) (one ring),
    <|du|^2> = 4a (1 - J0(k0 r)), and the longitudinal part obeys the 2D incompressible isotropic relation
    S_T = d(r S_L)/dr, i.e. <|du|^2> = S_L + S_T = r^-1 d(r^2 S_L)/dr, checked by second-order differences. And a
    random solenoidal 64^2 field with its energy at k ~ 2-4: its measured <|du|^2> along x and y against the
    relation of its ring spectrum (each ring's kernel averaged with the weight k), within 3% for r <= L/16."""
    from scipy.special import j0

    from simulator.plots.statistics import isotropic_s2

    k = np.arange(10.0)
    energy = np.where(k == 3, 0.5, 0.0)
    errors = []
    for points in (1001, 2001):
        r = np.linspace(0.1, 3, points)
        trace, longitudinal = isotropic_s2(k, energy, r, dimensions=2)
        np.testing.assert_allclose(trace, 2 * (1 - j0(3 * r)), rtol=1e-14)
        derived = np.gradient(r**2 * longitudinal, r) / r
        errors.append(np.max(np.abs(derived[1:-1] - trace[1:-1])))
    assert errors[1] < 1e-4 and 3.5 < errors[0] / errors[1] < 4.5, errors
    n = 64
    m = np.fft.fftfreq(n, 1.0 / n)
    kx, ky = np.meshgrid(m, m, indexing="ij")
    kk = np.hypot(kx, ky)
    psi = np.fft.fft2(np.random.default_rng(2).standard_normal((n, n))) * np.exp(-((kk / 3) ** 2))
    u = np.real(np.fft.ifft2(np.stack([1j * ky * psi, -1j * kx * psi])))  # (d psi/dy, -d psi/dx): solenoidal
    u_hat = np.fft.fft2(u) / n**2
    energy = np.bincount(np.rint(kk).astype(int).ravel(), 0.5 * np.sum(np.abs(u_hat) ** 2, axis=0).ravel())
    for cells in (1, 2, 4):
        direct = np.mean([np.mean(np.sum((np.roll(u, -cells, axis=a + 1) - u) ** 2, axis=0)) for a in range(2)])
        ring = isotropic_s2(np.arange(energy.size, dtype=float), energy, np.asarray([cells * 2 * np.pi / n]),
                            width=1.0, dimensions=2)[0][0]
        assert abs(ring / direct - 1) < 0.03, (cells, ring / direct)
        box = isotropic_s2(np.arange(energy.size, dtype=float), energy, np.asarray([cells * 2 * np.pi / n]),
                           width=1.0)[0][0]
        assert abs(box / direct - 1) > 0.2, (cells, box / direct)  # the box's relation is not a plane's
