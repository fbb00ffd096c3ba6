"""Resolution diagnostics (simulator/equations/resolution.py): k_max eta for every flow equation, the
scalars' Batchelor analogue, k_max / k_rms of the de Broglie scale and the spectral tail of a wave, the
advice each equation declares, and the run log's warning."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from simulator.equations import resolution

from support import shared

GRID = [16, 8, 16]
KMAX = (2 / 3) * math.pi * 8 / (2 * math.pi)  # (2/3) min pi N_i / L_i in the 2 pi box: N = 8 is the smallest


def test_scales_and_thresholds_on_the_host():
    assert resolution.kolmogorov(1e-3, 1e-3, np) == pytest.approx(1e-3 ** 0.5)
    eta = 0.01
    assert resolution.smallest_scale(eta, 1e-3, 1e-3 / 4, np) == pytest.approx(eta / 2)  # Sc = 4: Batchelor
    assert resolution.smallest_scale(eta, 1e-3, 16e-3, np) == pytest.approx(eta * 16 ** 0.75)  # Obukhov-Corrsin
    assert resolution.smallest_scale(eta, 1e-3, 0.0, np) == 0.0
    assert np.isfinite(resolution.kolmogorov(1e-3, 0.0, np))  # a flow at rest: finite, resolved
    low = resolution.under_resolved({"kmax_eta": 0.4, "scalar1_kmax_eta": 3.0, "kmax_de_broglie": 1.5, "energy": 0.1,
                                     "psi_tail": 1.2e-2})
    assert low == [("kmax_eta", 0.4, 1.0, False), ("kmax_de_broglie", 1.5, 2.0, False),
                   ("psi_tail", 1.2e-2, 1e-3, True)]
    assert [str(c) for c in low] == ["kmax_eta = 0.4 < 1", "kmax_de_broglie = 1.5 < 2", "psi_tail = 0.012 > 0.001"]
    assert resolution.under_resolved({"psi_tail": 9e-4, "kmax_de_broglie": 3.2}) == []


def test_navier_stokes_with_scalars_reports_k_max_eta_and_the_batchelor_analogue():
    scalars = [{"diffusivity": 0.01 / 4}, {"diffusivity": 0.04}]
    sim = shared(grid__shape=GRID, physics__viscosity=0.01, physics__scalars=scalars)
    d = sim.report(sim.initial_state({"name": "random", "seed": 1}))
    eta = (0.01**3 / d["dissipation"]) ** 0.25
    assert d["kmax_eta"] == pytest.approx(KMAX * eta, rel=1e-12)
    assert d["scalar0_kmax_eta"] == pytest.approx(KMAX * eta / 2, rel=1e-12)  # Sc = 4
    assert d["scalar1_kmax_eta"] == pytest.approx(KMAX * (0.04**3 / d["dissipation"]) ** 0.25, rel=1e-12)


@pytest.mark.parametrize("name,dissipation,diffusivity", [
    ("mhd", ("viscous_dissipation", "ohmic_dissipation"), "resistivity"),
    ("boussinesq", ("kinetic_dissipation",), "diffusivity"),
])
def test_mhd_and_boussinesq_take_the_smaller_of_the_two_scales(name, dissipation, diffusivity):
    sim = shared(physics__name=name, grid__shape=GRID)
    nu, kappa = 2e-3, 5e-4  # Pm (Pr) = 4 > 1: the magnetic field's (buoyancy's) scale is eta / 2
    params = sim.parameters(viscosity=nu, **{diffusivity: kappa})
    d = sim.diagnostics(sim.initial_state(), params=params)
    d = {k: float(v) for k, v in d.items()}
    eta = (nu**3 / sum(d[k] for k in dissipation)) ** 0.25
    assert d["kmax_eta"] == pytest.approx(KMAX * eta / 2, rel=1e-12)


def test_schrodinger_poisson_reports_k_max_over_the_rms_de_broglie_wavenumber():
    sim = shared(physics__name="schrodinger_poisson", initial__name="jeans", grid__shape=16, grid__box=1.0)
    x = np.arange(16) / 16
    m = 3  # a plane wave e^{i k x}: |grad psi| / |psi| = k everywhere
    psi = np.broadcast_to(np.exp(2j * np.pi * m * x)[:, None, None], (16, 16, 16))
    d = sim.report(sim.state_from_fields(psi=psi))
    assert d["kmax_de_broglie"] == pytest.approx((math.pi * 16) / (2 * math.pi * m), rel=1e-10)
    assert d["psi_tail"] == pytest.approx(0.0, abs=1e-15)  # m = 3 lies inside the inner two thirds (|m| <= 16/3)
    # psi_tail, the fraction of |psi|^2 beyond 2/3 of the Nyquist wavenumber on some axis: e^{6 i k x} alone is there
    mixed = np.sqrt(0.75) + np.sqrt(0.25) * np.exp(2j * np.pi * 6 * x)[:, None, None]
    tail = sim.report(sim.state_from_fields(psi=np.broadcast_to(mixed, (16, 16, 16))))["psi_tail"]
    assert tail == pytest.approx(0.25, rel=1e-12)


def test_every_wave_reports_psi_tail_and_every_resolution_warning_advises_keys_its_equation_has():
    """Each equation declares what resolves each of its resolution diagnostics (the run log's advice when one
    crosses its limit): every key it names is a key of that equation's config (an fdm_cosmo run was told to
    raise a viscosity it does not have), and every equation with a wave function watches psi_tail."""
    import dataclasses

    from simulator import config as config_mod
    from simulator.equations import registry

    general = {key for key, *_ in config_mod.iter_fields()}
    for name, info in registry().items():
        keys = general | {key for key, *_ in config_mod.iter_fields(info.params, "physics.")}
        watched = [d for d in info.diagnostics if resolution.watched(d)]
        assert watched and set(info.resolution_advice) == set(watched), name
        assert ("psi" in info.state_fields) == ("psi_tail" in watched), name
        for diagnostic, advice in info.resolution_advice.items():
            named = re.findall(r"\b(?:grid|physics|time|fft|output|initial|runtime|checkpoint)\.[\w.\[\]{}]*\w", advice)
            assert named and "grid.shape" in named, (name, advice)
            unknown = [key for key in named if re.sub(r"\[[^\]]*\]", "[]", key) not in keys]
            assert not unknown, f"{name}: the advice on {diagnostic} names {unknown}, not keys of its config"
        with pytest.raises(ValueError, match="resolution_advice"):
            dataclasses.replace(info, resolution_advice={})
    assert registry()["navier_stokes"].advice("scalar1_kmax_eta").endswith("physics.scalars[1].diffusivity")


@pytest.mark.slow
def test_a_mixed_run_whose_wave_outgrows_the_grid_warns_once_with_its_own_advice(tmp_path):
    """configs/fdm_mixed.yaml at 32^3: its wave's spectral tail ends at 1.2e-2, twelve times the 1e-3 above which
    docs/explanation/cosmology.md calls the run wrong, while k_max / k_rms, an average, stays above 3. The log
    warns once, naming psi_tail and fdm_cosmo's own remedies (no viscosity)."""
    import subprocess
    import sys

    from simulator.output.timeseries import read_timeseries

    run = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "simulator", "run", "configs/fdm_mixed.yaml", "--set", "grid.shape=32",
                        "--set", "physics.cdm_particles=32768", "--out", str(run)], cwd=Path(__file__).parents[1],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    warnings = [line for line in (run / "run.log").read_text().splitlines() if "under-resolved" in line]
    assert len(warnings) == 1 and re.search(r" WARNING under-resolved at step \d+, t = [\d.]+: psi_tail = 0\.01\d* > "
                                            r"0\.001; ", warnings[0]), warnings
    assert "physics.z_end" in warnings[0] and "viscosity" not in warnings[0]
    table = read_timeseries(run / "timeseries.csv")
    assert table["psi_tail"][-1] > 1e-2 and table["kmax_de_broglie"].min() > 3  # the old watch alone saw nothing


def test_the_plan_says_what_epsilon_the_grid_resolves_and_the_forced_kmax_eta():
    """``simulator plan``'s resolution line: k_max = (2/3) pi N/L, epsilon <= nu^3 k_max^4 for k_max eta >= 1,
    and k_max (nu^3/P)^(1/4) at a forced run's injected power P; none for an equation without a viscosity."""
    from simulator import config as config_mod
    from simulator.equations.resolution import plan_line

    cfg = config_mod.load(None, {"grid.shape": [48, 48, 48], "physics.viscosity": 0.01, "physics.forcing": "band",
                                 "physics.forcing_power": 0.2, "time.cfl": 0.4})
    line = plan_line(cfg)
    kmax = 2 / 3 * np.pi * 48 / (2 * np.pi)
    number = lambda label: float(re.search(re.escape(label) + r" = ([0-9.e+-]+)", line)[1])  # noqa: E731
    assert number("k_max") == pytest.approx(kmax, rel=1e-3)
    assert number("nu^3 k_max^4") == pytest.approx(0.01**3 * kmax**4, rel=1e-2)
    assert number("k_max eta") == pytest.approx(kmax * (0.01**3 / 0.2) ** 0.25, rel=1e-2)
    assert "CFL 0.4" in line
    sphere = plan_line(config_mod.load(None, {"grid.shape": [48, 48, 48], "physics.dealias": "phase_shift_spherical"}))
    assert float(re.findall(r"k_max = ([0-9.]+)", sphere)[0]) == pytest.approx(2 * np.sqrt(2) / 3 * 24, rel=1e-3)
    assert plan_line(config_mod.load("configs/jeans.yaml")) is None


def test_the_plan_hints_the_cheaper_setups_the_accuracy_benchmark_found():
    """``simulator plan`` adds a hint from the accuracy benchmark where it applies: rk2 for an rk4 (or rk3)
    Navier-Stokes run at steps of at most a cell per unit velocity and Re <= 400, none for rk2, for a larger step
    or at the default job's Re = 1600 (where rk2 blew up); the phase-shifted sphere for a forced 2/3-rule run whose
    injected power it does not resolve, none when it does; etdrk4 for a stiff hyperviscous run; nothing for other
    equations. The CLI prints it."""
    import subprocess
    import sys

    from simulator import config as config_mod
    from simulator.equations.resolution import plan_hint

    re400 = {"physics.viscosity": "1/400"}
    hint = plan_hint(config_mod.load("configs/taylor_green.yaml", re400))
    assert "time.integrator=rk2" in hint and "phase_shift" not in hint
    # at the default Re = 1600 rk2 blew up where rk4 ran (the benchmark on an H100): no rk2 hint
    assert plan_hint(config_mod.load("configs/taylor_green.yaml")) is None
    assert plan_hint(config_mod.load("configs/taylor_green.yaml", {**re400, "time.integrator": "rk2"})) is None
    assert plan_hint(config_mod.load("configs/taylor_green.yaml", {**re400, "time.dt": 1.0})) is None  # 5 cells a step
    forced = {"grid.shape": [32, 32, 32], "physics.forcing": "band", "physics.forcing_power": 0.1,
              "time.integrator": "rk2", "time.cfl": 0.5}
    coarse = plan_hint(config_mod.load(None, {**forced, "physics.viscosity": 0.005}))   # k_max eta 0.36
    assert "physics.dealias=phase_shift_spherical" in coarse and "time.integrator" not in coarse
    assert plan_hint(config_mod.load(None, {**forced, "physics.viscosity": 0.05})) is None   # k_max eta 2.0
    assert plan_hint(config_mod.load("configs/jeans.yaml")) is None
    # a hyperviscous run whose step makes the largest wavenumbers' damping stiff: etdrk4, unless it runs it already
    stiff = {"grid.shape": [32, 32, 32], "physics.hyperviscosity": 1e-5, "physics.hyperviscosity_order": 4,
             "time.dt": 0.05}
    kmax = 32 / 3  # the 2/3 rule's, box 2 pi
    said = re.findall(r"time\.integrator=etdrk4: \|L dt\| = ([0-9.]+)", plan_hint(config_mod.load(None, stiff)))
    assert float(said[0]) == pytest.approx((kmax**2 / 1600 + 1e-5 * kmax**8) * 0.05, rel=1e-2)   # 84
    assert "etdrk4" not in (plan_hint(config_mod.load(None, {**stiff, "time.integrator": "etdrk4"})) or "")
    assert "etdrk4" not in (plan_hint(config_mod.load(None, {**stiff, "physics.hyperviscosity": 1e-8})) or "")
    done = subprocess.run([sys.executable, "-m", "simulator", "plan", "configs/taylor_green.yaml", "--set",
                           "physics.viscosity=1/400"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and hint in done.stdout, done.stdout + done.stderr


#: hyperviscosity as the only sink, at the usual order of FluidSim's nu_8: nu_p^3 = 1e-42 underflows float32
HYPER_ONLY = {"navier_stokes": {"scalars": [{"diffusivity": 1e-3}]},
              "boussinesq": {"diffusivity": 0.0, "hyperdiffusivity": 1e-14},
              "mhd": {"resistivity": 0.0, "hyperresistivity": 1e-14}, "ns2d": {},
              "boussinesq2d": {"diffusivity": 0.0, "hyperdiffusivity": 1e-14},
              "mhd2d": {"resistivity": 0.0, "hyperresistivity": 1e-14}}


@pytest.mark.parametrize("name", sorted(HYPER_ONLY))
@pytest.mark.parametrize("sink", ["hyperviscosity", "viscosity"])
def test_every_diagnostic_in_float32_agrees_with_float64(name, sink):
    """Each flow's diagnostics from the same initial field in float32 and float64, hyperviscosity alone (nu_p =
    1e-14, order 4) or a viscosity: they agree to float32's round-off (a scale that underflowed read 0)."""
    from simulator.api import Simulation, load_config

    from support import grid_of
    physics = ({"viscosity": 0.0, "hyperviscosity": 1e-14, "hyperviscosity_order": 4, **HYPER_ONLY[name]}
               if sink == "hyperviscosity" else {"viscosity": 1e-3})
    values = {"physics.name": name, "grid.shape": grid_of(name, [16, 16, 16])}
    values.update({f"physics.{k}": v for k, v in physics.items()})
    reports = {}
    for precision in ("float32", "float64"):
        sim = Simulation(load_config(None, {**values, "precision": precision}))
        reports[precision] = sim.report(sim.initial_state())
    single, double = reports["float32"], reports["float64"]
    assert set(single) == set(double)
    assert double["kmax_eta"] > 0
    for key, value in double.items():
        if abs(value) < 1e-12:  # zero but for round-off (max_div; the buoyancy flux of a flow without buoyancy)
            assert abs(single[key]) < 1e-6, key  # float32's round-off on this O(1) flow
        else:
            assert single[key] == pytest.approx(value, rel=1e-5), key


SHIPPED = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_config_is_resolved_at_its_start_or_its_header_says_why(path, monkeypatch):
    """Each shipped config at its own resolution and precision: no caution before it starts, and no resolution
    diagnostic past its limit at step 0, where the run's first chunk checks them (the diagnostics of its initial
    state; its steps are not taken: seconds for all of them), unless the config's header quotes the warning the
    run logs and says why. double_shear_layer.yaml said 128^2 resolved it and warned kmax_eta = 0.472."""
    import jax

    from simulator.api import Simulation, load_config

    # FFTW's plans by its cost model: measuring each transform of the initial state and the diagnostics once (what
    # a run pays before it steps them thousands of times) took 40 of channel_retau180's 45 CPU seconds at 128^3;
    # a plan changes the diagnostics by round-off only, far inside every limit checked here
    monkeypatch.setenv("SIMULATOR_FFTW_PLANNER", "estimate")
    cfg = load_config(path)
    assert list(cfg.physics.cautions(cfg)) == []
    sim = Simulation(cfg, jax.devices()[:1])
    crossed = resolution.under_resolved(sim.report(sim.initial_state()))
    header = " ".join(line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#"))
    for crossing in crossed:  # the run logs "under-resolved at step 0, t = 0: kmax_eta = 0.287 < 1; ..."
        assert str(crossing) in header, (str(crossing), header)
