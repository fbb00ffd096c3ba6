"""Fuzzy dark matter in an expanding universe (float64): linear growth against D(a) and against the
linear equation integrated here, the cosmic energy equation at the scheme's order, mass to round-off,
every backend against one device, the initial spectrum against its input within cosmic variance, the
background and spectrum against independent references, the redshift-driven config and a whole run."""

import csv
import json
import math
import subprocess
from pathlib import Path

import h5py
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad, solve_ivp

from simulator import config as C
from simulator.equations.fdm_cosmo import FDMCosmoParams, cosmology, power
from simulator.errors import ConfigError

from support import backend_cases, case_id, command, distributed_cases, integrate, relative_error, shared

ROOT = Path(__file__).parents[1]


def cosmo(case=("single", 1, None), shape=(32, 4, 4), box=(10.0, 1.25, 1.25), initial="mode", **kw):
    return shared(case, physics__name="fdm_cosmo", initial__name=initial, grid__shape=list(shape), grid__box=list(box),
                  **kw)


# ---- references computed here, independently of the package ------------------------------------------------


def hubble(a, om, ol):
    return math.sqrt(om / a**3 + (1 - om - ol) / a**2 + ol)


def heath_growth(a, om, ol):
    """D(a) = (5 om / 2) E(a) int_0^a da' / (a' E)^3 (Heath 1977), by adaptive quadrature."""
    return 2.5 * om * hubble(a, om, ol) * quad(lambda x: (x * hubble(x, om, ol)) ** -3, 0, a, epsabs=0,
                                                epsrel=1e-13, limit=200)[0]


def growth_rate(a, om, ol, h=1e-5):
    return (math.log(heath_growth(a * math.exp(h), om, ol))
            - math.log(heath_growth(a * math.exp(-h), om, ol))) / (2 * h)


def linear_mode(om, ol, nu, g, k, a0, s):
    """delta(s)/delta(0), s = ln(a/a0), of delta'' + 2H delta' + [(nu k^2 / 2a^2)^2 + g rho k^2 / a^5 - 4 pi G rho /
    a^3] delta = 0 (rho = om, 4 pi G = 3/2, H0 = 1) in ln a, from the growing mode's delta' = H f delta."""
    def rhs(x, y):
        a = a0 * math.exp(x)
        e = hubble(a, om, ol)
        dlne = -(1.5 * om / a**3 + (1 - om - ol) / a**2) / e**2
        w = (nu * k * k / (2 * a * a)) ** 2 + g * om * k * k / a**5 - 1.5 * om / a**3
        return [y[1], -(2 + dlne) * y[1] - w / e**2 * y[0]]

    sol = solve_ivp(rhs, (0, s[-1]), [1.0, growth_rate(a0, om, ol)], rtol=1e-12, atol=1e-14, dense_output=True)
    return sol.sol(s)[0]


def mode_amplitude(eq, state):
    """delta_k at mode 1 along x: 2 <(rho/<rho> - 1) cos(2 pi x / Lx)>."""
    rho = jnp.abs(state.psi) ** 2
    x = eq.fft.coordinates(eq.box, eq.dtype)[0]
    return 2 * jnp.mean((rho / jnp.mean(rho) - 1) * jnp.cos(2 * jnp.pi * x / eq.box[0]))


def evolve_mode(sim, p, eps, ds, steps):
    state = sim.initial_state({"name": "mode", "amplitude": eps}, p)
    return integrate(sim, state, ds, steps, p, mode_amplitude)[1] / eps


# ---- the background, the spectrum and the units ------------------------------------------------------------


def test_background_and_spectrum_against_independent_references():
    om, ol, h = 0.3, 0.7, 0.7
    for a in (1 / 128, 0.1, 0.5, 1.0):  # growth and age: Gauss-Legendre against adaptive quadrature
        assert cosmology.growth(a, om, ol) == pytest.approx(heath_growth(a, om, ol), rel=1e-12)
        assert cosmology.growth_rate(a, om, ol) == pytest.approx(growth_rate(a, om, ol), rel=1e-8)
        age = quad(lambda x: 1 / (x * hubble(x, om, ol)), 0, a, epsrel=1e-13)[0]
        assert cosmology.cosmic_time(a, om, ol) == pytest.approx(age, rel=1e-12)
    assert cosmology.growth(1e-3, 1.0, 0.0) == pytest.approx(1e-3, rel=1e-12)  # EdS: D = a
    # sub-step integrals int dt / a^p over [s, s + h] against adaptive quadrature in a
    a0 = 1 / 128
    for p in (1, 2, 3):
        got = float(cosmology.step_integrals(0.7, 0.3, a0, om, ol, (p,))[0])
        exact = quad(lambda a: a ** -p / (a * hubble(a, om, ol)), a0 * math.exp(0.7), a0 * math.exp(1.0),
                     epsrel=1e-13)[0]
        assert got == pytest.approx(exact, rel=1e-13)
    # Eisenstein & Hu's no-wiggle T(k) and the sigma8-normalised P(k, z = 0), from Colossus 1.4.0 (Diemer 2018,
    # ApJS 239, 35; model eisenstein98_zb, Om0 0.3, Ob0 0.049, H0 70, ns 0.965, sigma8 0.811, Tcmb0 2.7255)
    k = np.array([0.01, 0.1, 1.0, 10.0, 100.0])
    np.testing.assert_allclose(power.eisenstein_hu(k, om, 0.049, h),
                               [7.86141372e-01, 1.31992336e-01, 4.59154801e-03, 8.75077279e-05, 1.30666711e-06],
                               rtol=1e-8)
    p = {"h": h, "omega_m": om, "omega_lambda": ol, "omega_b": 0.049, "n_s": 0.965, "sigma8": 0.811, "m22": 1.0}
    np.testing.assert_allclose(power.linear_power(k, 1.0, p, None, False),
                               [2.22069426e+04, 5.77540612e+03, 6.44767827e+01, 2.16062699e-01, 4.44443079e-04],
                               rtol=1e-4)
    # sigma8 of the normalised spectrum, by adaptive quadrature (the package uses Simpson's rule)
    sigma2 = quad(lambda lnk: math.exp(3 * lnk) * float(power.linear_power(np.exp(lnk), 1.0, p, None, False))
                  * float(power.tophat(8 * np.exp(lnk))) ** 2 / (2 * math.pi**2), math.log(1e-5), math.log(1e3),
                  limit=400, epsrel=1e-10)[0]
    assert math.sqrt(sigma2) == pytest.approx(0.811, rel=1e-6)
    # the FDM cut-off halves the power at k_1/2 = 4.5 m22^(4/9) / Mpc (Hu, Barkana & Gruzinov 2000), to 3%
    from scipy.optimize import brentq
    for m22 in (0.1, 1.0, 10.0):
        half = brentq(lambda kk: float(power.fdm_transfer(kk, m22, h)) ** 2 - 0.5, 0.01, 100.0) * h
        assert half == pytest.approx(4.5 * m22 ** (4 / 9), rel=0.03)


def test_an_open_universe_s_age_and_growth_are_their_closed_forms():
    """Without a cosmological constant, omega_m = 0.3 (omega_k = 0.7, so the curvature term of H^2 is more than
    half of it at a = 1): the age is Friedmann's parametric solution a = omega_m (cosh eta - 1) / (2 omega_k),
    H0 t = omega_m (sinh eta - eta) / (2 omega_k^(3/2)), and the growing mode that of Groth & Peebles (1975;
    Peebles 1980, eq. 11.16), D ~ 1 + 3/x + 3 sqrt(1 + x) / x^(3/2) ln(sqrt(1 + x) - sqrt(x)), x = omega_k a / omega_m,
    its rate f = dln D/dln a by central differences; a step's K_p = int dt / a^p along the same t(a). Every flat check
    leaves the curvature term's sign unseen: here a flipped one is off by tens of per cent."""
    om, ok = 0.3, 0.7

    def age(a):
        eta = math.acosh(1 + 2 * ok * a / om)
        return om * (math.sinh(eta) - eta) / (2 * ok**1.5)

    def groth_peebles(a):
        x = ok * a / om
        return 1 + 3 / x + 3 * math.sqrt(1 + x) / x**1.5 * math.log(math.sqrt(1 + x) - math.sqrt(x))

    scale = None
    for a in (0.1, 0.3, 0.6, 1.0):
        assert cosmology.cosmic_time(a, om, 0.0) == pytest.approx(age(a), rel=1e-12)
        ratio = cosmology.growth(a, om, 0.0) / groth_peebles(a)
        scale = ratio if scale is None else scale
        assert ratio == pytest.approx(scale, rel=1e-9)  # the closed form's D loses digits to cancellation at small x
        h = 1e-4
        rate = (math.log(groth_peebles(a * math.exp(h))) - math.log(groth_peebles(a * math.exp(-h)))) / (2 * h)
        assert cosmology.growth_rate(a, om, 0.0) == pytest.approx(rate, rel=1e-7)
    # a step's int dt / a^p over s in [0.2, 0.5] of the clock from a = 0.25, dt/ds = a dt/da differentiated along
    # the parametric solution: a (cosh eta - 1) / (omega_k^(1/2) sinh eta)

    def dt_ds(a):
        eta = math.acosh(1 + 2 * ok * a / om)
        return a * (math.cosh(eta) - 1) / (math.sqrt(ok) * math.sinh(eta))

    a0 = 0.25
    for p in (1, 2, 3):
        got = float(cosmology.step_integrals(0.2, 0.3, a0, om, 0.0, (p,))[0])
        exact = quad(lambda s: dt_ds(a0 * math.exp(s)) / (a0 * math.exp(s)) ** p, 0.2, 0.5, epsrel=1e-13)[0]
        assert got == pytest.approx(exact, rel=1e-12)


def test_unit_system_and_the_self_interaction_mapping():
    # hbar/m for m = 1e-22 eV is 19.2 kpc km/s (e.g. Hui et al. 2017, PRD 95, 043541): in (Mpc/h) 100 km/s
    assert cosmology.nu_code(1.0, 0.7) == pytest.approx(19.17e-3 * 0.7 / 100, rel=1e-3)
    g = cosmology.self_interaction_of_decay_constant(1e17, 1.0, 0.7)
    assert g < 0  # an axion's quartic term attracts
    # g_n = 4 pi hbar^2 a_s / m = -(hbar c)^3 / (8 f_a^2) gives a_s = -(hbar c)(m c^2) / (32 pi f_a^2)
    m_c2 = 1e-22 * cosmology.EV
    a_s = -(cosmology.HBAR * cosmology.C) * m_c2 / (32 * math.pi * (1e17 * cosmology.GEV) ** 2)
    assert cosmology.scattering_length_of_self_interaction(g, 1.0, 0.7) == pytest.approx(a_s, rel=1e-12)


def test_config_resolves_redshifts_into_times():
    cfg = C.load(None, ["physics.name=fdm_cosmo", "physics.z_start=127", "physics.z_end=3",
                        "physics.output_redshifts=[127, 31, 3]", "physics.f_a=1e17"])
    assert cfg.time.t_end == pytest.approx(math.log(32))
    times = (0.0, math.log(4), math.log(32))
    assert cfg.output.snapshots.times == pytest.approx(times) and cfg.output.spectra.times == pytest.approx(times)
    assert cfg.output.spectra.every == 0  # spectra at the output redshifts only
    assert cfg.physics.self_interaction == pytest.approx(cosmology.self_interaction_of_decay_constant(1e17, 1, 0.7))
    assert C.from_dict(C.to_dict(cfg)) == cfg  # resolving is idempotent (a run's config.yaml loads back)
    params = FDMCosmoParams()
    assert params.clock().time_label(math.log(32)) == "redshift z = 3"
    assert params.clock().output_attrs(0.0)["redshift"] == pytest.approx(127)
    bad = {"time.t_end=2.0": "time.t_end", "physics.z_end=200": "physics.z_end",
           "physics.output_redshifts=[1]": "physics.output_redshifts",
           "physics.omega_lambda=5": "physics.omega_lambda",
           "physics.spectrum_file=/nonexistent": "physics.spectrum_file"}
    for override, key in bad.items():
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            C.load(None, ["physics.name=fdm_cosmo", override])



def test_a_spectrum_file_is_interpolated_in_log_log_and_continued_as_its_end_power_laws(tmp_path):
    """physics.spectrum_file read and shaped (power.read_table, power.shape): a file of P = 2 k^-1 below k = 1 and
    2 k^-3 above, from k = 0.1 to 10, gives those two power laws exactly inside its range (interpolated in
    ln k - ln P) and continued beyond it on both sides (k = 0.01 and 100)."""
    k = np.geomspace(0.1, 10.0, 9)
    path = tmp_path / "pk.txt"
    np.savetxt(path, np.stack([k, np.where(k < 1, 2 / k, 2 / k**3)], axis=1), header="k P")
    table = power.read_table(path)
    probe = np.array([0.01, 0.05, 0.2, 3.0, 50.0, 100.0])
    np.testing.assert_allclose(power.shape(probe, {}, table), np.where(probe < 1, 2 / probe, 2 / probe**3),
                               rtol=1e-12)

@pytest.mark.parametrize("column, value", [(1, "nan"), (1, "inf"), (0, "nan")], ids=["P nan", "P inf", "k nan"])
def test_a_spectrum_file_with_a_number_that_is_not_finite_is_refused(tmp_path, column, value):
    """A CAMB table with one NaN or inf (a failed column, a broken export) is refused as the config is read, in one
    line naming physics.spectrum_file and the row: NaN passes both ``k increasing`` and ``P > 0`` as comparisons
    (each is False for NaN), so before the check such a file validated, the run started, wrote its directory and
    stopped at step 0 with its diagnostics not finite."""
    rows = [[0.001, 10.0], [0.01, 100.0], [0.1, 50.0], [1.0, 5.0]]
    rows[2][column] = value
    path = tmp_path / "pk.txt"
    path.write_text("".join(f"{k} {p}\n" for k, p in rows))
    with pytest.raises(ConfigError, match=r"physics\.spectrum_file .*row 3 .*not a finite number") as err:
        C.load(None, ["physics.name=fdm_cosmo", f"physics.spectrum_file={path}"])
    assert "\n" not in str(err.value)


#: how the caution of a wave the grid does not resolve begins in a 100 Mpc/h box
WAVE = "grid.box = 100: the wave (m22 = 1) is not resolved"


def test_a_config_whose_answer_leans_on_a_continuation_or_a_trace_of_wave_is_cautioned(tmp_path, capfd, caplog):
    """A spectrum file that stops short of the grid's modes, or of the sigma8 integral, is continued as power laws
    of its end slopes (documented); a wave of fdm_fraction 1e-40 (float64) carries nothing yet sets an adaptive
    step (45 769 steps). Both ran without a word. Now each is one warning line naming the key: from ``simulator
    validate`` and ``plan`` on stderr and in the run's log as it starts; a table over the grid's modes and the sigma8
    integral, or a real fraction, gets none."""
    import logging
    import types

    from simulator.run import records

    short, wide = tmp_path / "short.txt", tmp_path / "wide.txt"
    for path, (lo, hi) in ((short, (-1.3, -0.3)), (wide, (-4.0, 2.0))):
        k = np.logspace(lo, hi, 60)
        path.write_text("".join(f"{a:.8g} {1e4 * a / (1 + (a / 0.02) ** 3):.8g}\n" for a in k))
    base = ["physics.name=fdm_cosmo", "grid.shape=[64,64,64]", "grid.box=100"]
    # the wave of these 100 Mpc/h boxes is not resolved either (its own caution: tests/test_wave_resolution.py)
    cautions = {name: [c for c in C.load(None, [*base, *extra]).physics.cautions(C.load(None, [*base, *extra]))
                       if not c.startswith(WAVE)]
                for name, extra in {"short": [f"physics.spectrum_file={short}"],
                                    "wide": [f"physics.spectrum_file={wide}"],
                                    "trace": ["physics.fdm_fraction=1e-20", "physics.cdm_particles=4096"],
                                    "real": ["physics.fdm_fraction=1e-3", "physics.cdm_particles=4096"]}.items()}
    assert cautions["wide"] == [] and cautions["real"] == []
    grid, sigma8 = cautions["short"]
    assert grid.startswith("physics.spectrum_file covers k = 0.0501 to 0.501 h/Mpc, the grid's modes k = 0.0628 to "
                           "3.48 h/Mpc") and "power law" in grid
    share = float(sigma8.split("% of the sigma8")[0].rsplit(" ", 1)[1])
    k, terms = power._sigma8_terms({"sigma8": 1.0, "h": 0.7}, power.read_table(short))
    assert share == pytest.approx(100 * terms[(k < 0.0501) | (k > 0.502)].sum() / terms.sum(), rel=2e-3) and share > 1
    assert cautions["trace"] == [("physics.fdm_fraction = 1e-20: the wave carries that little of the mass, yet it "
                                  "is allocated and stepped, and its phase limits an adaptive time step; "
                                  "physics.fdm_fraction = 0 runs the particles alone")]
    config = Path(__file__).parents[1] / "configs" / "cold_dark_matter.yaml"  # 64^3 cells, 100 Mpc/h as above
    code, out, err = command(capfd, "validate", str(config), "--set", f"physics.spectrum_file={short}")
    assert code == 0 and "spectrum_file:" in out and err.splitlines() == [f"warning: {c}" for c in cautions["short"]]
    cfg = C.load(None, [*base, "physics.fdm_fraction=1e-20", "physics.cdm_particles=4096"])
    meta = {"process_mode": "single", "versions": {}, "git_revision": "none", "slurm": {}}
    with caplog.at_level(logging.WARNING):
        records.log_header(cfg, types.SimpleNamespace(fft=types.SimpleNamespace(describe=lambda: "fft")), meta,
                           logging.getLogger("simulator.test"))
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [line for line in logged if not line.startswith(WAVE)] == cautions["trace"] and len(logged) == 2



def test_the_log_of_a_run_in_physical_units_says_them_as_it_starts(caplog):
    """A cosmological run's log began `run fdm_cosmo: ... box [1.0, 1.0, 1.0], ..., dt 0.05, t_end 0.693` and its
    progress lines `t=0.4951`, with no word that the box is in Mpc/h and t is ln(a/a_start): a line under the
    header now names the units; a run in code units (Navier-Stokes) gets none."""
    import logging
    import types

    from simulator.run import records

    meta = {"process_mode": "single", "versions": {}, "git_revision": "none", "slurm": {}}
    sim = types.SimpleNamespace(fft=types.SimpleNamespace(describe=lambda: "fft"))
    messages = {}
    for name in ("fdm_cosmo", "navier_stokes"):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            records.log_header(C.load(None, [f"physics.name={name}"]), sim, meta, logging.getLogger("simulator.test"))
        messages[name] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("units: ")]
    assert messages["navier_stokes"] == []
    assert messages["fdm_cosmo"] == [("units: length Mpc/h; time ln(a/a_start), a_start = 1/(1 + 127); code_length "
                                      "1 Mpc/h (comoving); code_time 1/H0 = 13.9685 Gyr; code_mass rho_crit,0 "
                                      "(Mpc/h)^3 = 3.96481e+11 Msun; code_velocity (Mpc/h) H0 = 100 km/s; "
                                      "code_G 3/(8 pi) = 0.1193662073; code_hbar_over_m 0.000134200665 (Mpc/h)^2 "
                                      "H0 for m22 = 1")]


def test_a_runs_config_yaml_runs_again_with_another_final_redshift_and_the_printed_t_end_is_taken(tmp_path):
    """getting-started.md: a run's config.yaml `is a config too`, run again `--set` another value. A cosmological
    one refused `--set physics.z_end=63`: `time.t_end = 1.386... contradicts z_end` (its t_end derived from the
    old z_end), then its snapshot times; and the t_end that message printed (12 digits) was refused too."""
    import yaml

    cfg = C.load(None, ["physics.name=fdm_cosmo", "physics.z_end=31", "physics.output_redshifts=[127, 63, 31]"])
    record = tmp_path / "config.yaml"
    record.write_text(yaml.safe_dump({"config": C.to_dict(cfg), "versions": {}}))
    assert C.to_dict(C.load(record)) == C.to_dict(cfg)  # the run again, unchanged
    again = C.load(record, ["physics.z_end=63", "physics.output_redshifts=[127, 63]"])
    t63 = again.physics.time_at(63)
    assert again.time.t_end == t63 == pytest.approx(math.log(2), rel=1e-12)
    assert again.output.snapshots.times == (0.0, t63) and again.output.spectra.times == (0.0, t63)
    with pytest.raises(ConfigError, match="time.t_end = 2.0 contradicts z_end"):  # what you set is still checked
        C.load(record, ["physics.z_end=63", "physics.output_redshifts=[63]", "time.t_end=2"])
    printed = C.load(None, ["physics.name=fdm_cosmo", "physics.z_end=63", f"time.t_end={t63:.12g}"])
    assert printed.time.t_end == t63
    ns = C.load(None, ["physics.name=navier_stokes", "time.t_end=3"])  # no derived keys: read as written
    record.write_text(yaml.safe_dump({"config": C.to_dict(ns), "versions": {}}))
    assert C.load(record).time.t_end == 3


def test_every_density_spectrum_and_particle_velocity_of_a_cosmological_run_is_labelled_in_its_units():
    """A mixed fdm_cosmo run labelled its snapshots' cdm_density and total_density, its spectra power_fdm and
    power_cdm and its cold particles' exported velocity "code units", beside density in rho_crit,0 and power in
    (Mpc/h)^3 (a 16^3 configs/fdm_mixed.yaml run): every writer looks its name up in the unit system."""
    from simulator.equations import get

    info = get("fdm_cosmo")
    cfg = C.load(None, ["physics.name=fdm_cosmo", "physics.fdm_fraction=0.3", "physics.cdm_particles=512"])
    units = cfg.physics.clock().units()
    named = [name for name, field in info.fields.items() if field.snapshot] + list(info.spectra) + ["velocity"]
    assert [name for name in named if name not in units] == []
    assert {units[name].split(" (")[0] for name in ("cdm_density", "total_density", "density")} == {
        units["density"].split(" (")[0]}  # rho_crit,0, each with its own share of omega_m as its mean
    assert {units[name] for name in info.spectra} == {"(Mpc/h)^3"}
    assert units["velocity"].startswith("100 km/s")


# ---- linear growth -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("om, ol", [(1.0, 0.0), (0.3, 0.7)], ids=["EdS", "LCDM"])
def test_mode_far_above_the_jeans_length_grows_as_the_growth_factor(om, ol):
    """k = 0.63 h/Mpc at m22 = 1: (k/k_J)^4 < 1e-7, so delta(a)/delta(a0) = D(a)/D(a0) (= a/a0 in EdS),
    to 1e-3 over a factor of 10 in a (z = 127 to 11.8)."""
    sim = cosmo()
    p = sim.parameters(omega_m=om, omega_lambda=ol)
    ds, steps = 0.02, 116
    s = ds * np.arange(1, steps + 1)
    amp = evolve_mode(sim, p, 1e-5, ds, steps)
    a0 = 1 / 128
    expected = np.array([heath_growth(a0 * math.exp(x), om, ol) for x in s]) / heath_growth(a0, om, ol)
    if ol == 0:
        np.testing.assert_allclose(expected, np.exp(s), rtol=1e-12)
    assert np.max(np.abs(amp / expected - 1)) < 1e-3
    assert amp[-1] > 9.0  # it did grow by a factor of ~10


@pytest.mark.parametrize("m22, g, kind", [(0.01, 0.0, "grows slowly"), (2.5e-3, 0.0, "oscillates"),
                                          (0.01, 2e-6, "repelled"), (0.01, -2e-6, "attracted")])
def test_mode_near_the_jeans_length_follows_the_linear_equation(m22, g, kind):
    """k = 4 h/Mpc, EdS from z = 127: k/k_J(a0) = 1.0 (m22 = 0.01) or 2.0 (m22 = 2.5e-3); with the
    self-interaction's g rho k^2 / a^5 either way. Against the linear equation integrated here, to 1e-3
    of the mode's largest amplitude."""
    sim = cosmo(box=(1.5707963267948966, 0.2, 0.2))
    p = sim.parameters(omega_m=1.0, omega_lambda=0.0, m22=m22, self_interaction=g)
    ds, steps = 0.01, 230
    s = ds * np.arange(1, steps + 1)
    amp = evolve_mode(sim, p, 1e-6, ds, steps)
    expected = linear_mode(1.0, 0.0, cosmology.nu_code(m22, 0.7), g, 4.0, 1 / 128, s)
    assert np.max(np.abs(amp - expected)) < 1e-3 * np.max(np.abs(expected))
    if kind == "oscillates":
        assert np.min(expected) < -0.2  # above the Jeans scale the mode oscillates through zero
    elif kind == "attracted":
        growing = linear_mode(1.0, 0.0, cosmology.nu_code(m22, 0.7), 0.0, 4.0, 1 / 128, s)
        assert expected[-1] > 1.05 * growing[-1]  # the self-interaction's term is resolved by the test


def test_kdk_in_ln_a_is_second_order():
    """The mode near the Jeans length against the linear equation: the error falls 4x per halving of the step."""
    sim = cosmo(box=(1.5707963267948966, 0.2, 0.2))
    p = sim.parameters(omega_m=1.0, omega_lambda=0.0, m22=0.01)
    errors = []
    for steps in (23, 46, 92):
        ds = 2.3 / steps
        amp = evolve_mode(sim, p, 1e-6, ds, steps)
        expected = linear_mode(1.0, 0.0, cosmology.nu_code(0.01, 0.7), 0.0, 4.0, 1 / 128, ds * np.arange(1, steps + 1))
        errors.append(abs(amp[-1] - expected[-1]))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 2) < 0.15), (errors, orders)


# ---- the cosmic energy equation, mass, decompositions --------------------------------------------------------


def rows_of(sim, p, state, ds, chunks, per_chunk):
    """Time-series rows as the run loop writes them (diagnostics and the host's running columns)."""
    rows, t = [], 0.0
    for i in range(chunks + 1):
        if i:
            state = sim.advance(state, per_chunk, ds, t, p)
            t = i * per_chunk * ds
        row = {"time": t, **{k: float(v) for k, v in sim.diagnostics(state, ds, p, t).items()}}
        row.update(sim.cfg.physics.clock().derived_columns(rows[-1] if rows else None, row))
        rows.append(row)
    return rows


@pytest.mark.parametrize("g", [0.0, -1e-5], ids=["gravity", "attractive self-interaction"])
def test_layzer_irvine_residual_converges_at_second_order(g):
    """E - E_start + int (2K + W + 3U) dln a from z = 127 to 7, over |W|, falls 4x per halving of the step
    (the integral between rows is fourth order, so the residual is the scheme's). With g, U starts at 2 |W|:
    a wrong coefficient of U would leave a residual of order int U dln a ~ 2 |W|."""
    sim = cosmo(shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian")
    p = sim.parameters(self_interaction=g)
    state = sim.initial_state({"name": "gaussian", "seed": 1}, p)
    residuals = []
    for steps in (80, 160, 320):  # asymptotic: from 40 steps the order was 1.8
        rows = rows_of(sim, p, state, math.log(16) / steps, steps // 4, 4)
        residuals.append(rows[-1]["layzer_irvine"])
    assert rows[-1]["z"] == pytest.approx(7.0)
    scale = abs(rows[-1]["potential"])
    assert abs(rows[-1]["total"] - rows[0]["total"]) > 100 * abs(residuals[-1]) * scale  # the energy does change
    if g:  # the self-interaction's term matters: int U dln a is far above the residual
        u_integral = np.trapezoid([r["interaction"] for r in rows], [r["time"] for r in rows])
        assert abs(u_integral) > 1000 * abs(residuals[-1]) * scale
    orders = np.log2(np.abs(np.array(residuals[:-1]) / np.array(residuals[1:])))
    assert np.all(np.abs(orders - 2) < 0.2), (residuals, orders)


@pytest.mark.parametrize("fraction", [1.0, 0.0], ids=["wave", "particles"])
def test_the_cosmic_energy_source_s_rate_is_its_derivative_along_the_run(fraction):
    """li_rate, d(2K + W + 3U)/dln a from the state and the equations of motion (-(4K + W + 9U) - (Q_W - Q_U)/H),
    against central differences of li_source along the run at z = 15 (h = 0.01 in ln a, 4 steps each side). The
    wave with an attractive self-interaction, so that every term counts: to 1e-3 of the rate's largest term
    (measured 8e-5; a coefficient 2 of K, 3 of U or a flipped sign of Q_W or Q_U is off by 0.5, 0.24, 0.13, 0.03).
    The particles alone (16^3, CIC) to 1e-2 (measured 5.3e-3, the same at h = 0.005: their force, the window's
    interpolation of -grad(Phi), is not exactly the gradient of their deconvolved W; Q_W's sign flipped: 1.5). The
    residual test above cannot see the rate: it enters the rows' quadrature at order h^2 only, as the scheme's
    error does."""
    if fraction:
        sim = cosmo(shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian")
        p = sim.parameters(self_interaction=-1e-5)
    else:
        sim = cosmo(shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian", physics__fdm_fraction=0.0,
                    physics__cdm_particles=16**3)
        p = sim.parameters()
    state = sim.advance(sim.initial_state({"name": "gaussian", "seed": 1}, p), 80, math.log(8) / 80, 0.0, p)
    s0, h = math.log(8), 0.01
    rows = []
    for i in range(3):
        if i:
            state = sim.advance(state, 4, h / 4, s0 + (i - 1) * h, p)
        rows.append({k: float(v) for k, v in sim.diagnostics(state, h / 4, p, s0 + i * h).items()})
    middle = rows[1]
    terms = max(abs(4 * middle["kinetic"]), abs(middle["potential"]), abs(9 * middle.get("interaction", 0.0)))
    difference = (rows[2]["li_source"] - rows[0]["li_source"]) / (2 * h)
    assert abs(middle["li_rate"] - difference) < (1e-3 if fraction else 1e-2) * terms, (middle["li_rate"], difference,
                                                                                         terms)


@pytest.mark.parametrize("case", backend_cases(), ids=case_id)
def test_mass_is_conserved_to_round_off(case):
    """40 steps (z = 127 to 17) of the single device's initial field, with a self-interaction."""
    psi = cosmo(shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian").initial_state().psi
    sim = cosmo(case, shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian")
    p = sim.parameters(self_interaction=-1e-6)
    state = sim.advance(sim.state_from_fields(psi=np.asarray(psi)), 40, 0.05, 0.0, p)
    mass = np.sum(np.abs(sim.to_numpy(state.psi)) ** 2)
    assert abs(mass / np.sum(np.abs(np.asarray(psi)) ** 2) - 1) < 1e-13


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case):
    """The initial field and 40 steps (gravity and self-interaction): every decomposition equals one device."""
    results = []
    for c in (("single", 1, None), case):
        sim = cosmo(c, shape=(16, 16, 16), box=(2.0, 2.0, 2.0), initial="gaussian")
        p = sim.parameters(self_interaction=-1e-6)
        state = sim.initial_state(None, p)
        results.append((sim.to_numpy(state.psi), sim.to_numpy(sim.advance(state, 40, 0.05, 0.0, p).psi),
                        np.asarray(sim.spectra(state, 0.5)["power"])))
    for got, want in zip(results[1], results[0], strict=True):
        assert relative_error(got, want) < 1e-12


# ---- the initial spectrum against its input, within cosmic variance ----------------------------------------


def independent_modes(n):
    """Masks over numpy's rfftn layout of an n^3 grid: one of each pair (k, -k), k = 0 and Nyquist excluded."""
    m = np.fft.fftfreq(n, 1 / n)
    mx, my, mz = np.meshgrid(m, m, np.arange(n // 2 + 1), indexing="ij")
    inner = (np.abs(mx) < n / 2) & (np.abs(my) < n / 2) & (mz < n / 2)
    half = (mz > 0) | (my > 0) | ((my == 0) & (mx > 0))
    return inner & half, np.sqrt(mx**2 + my**2 + mz**2)


def consistent(x, shells, level=1e-3):
    """Whether X = V |delta_k|^2 / P(k), exponential with mean 1 per independent mode if P is the field's
    spectrum, is: each shell's sum of m modes is Gamma(m, 1) (2 X_sum chi-square with 2m degrees of
    freedom), two-sided at ``level`` over all shells (Bonferroni), and so is the sum over all modes."""
    ok = []
    labels = np.unique(shells)
    for j in labels:
        m, total = np.sum(shells == j), np.sum(x[shells == j])
        ok.append(stats.gamma.ppf(level / (2 * len(labels)), m) < total < stats.gamma.isf(level / (2 * len(labels)), m))
    m, total = x.size, np.sum(x)
    return all(ok) and stats.gamma.ppf(level / 2, m) < total < stats.gamma.isf(level / 2, m)


def measured_modes(sim, state, n):
    rho = sim.to_numpy(sim.fields(state, "density")["density"])
    delta_hat = np.fft.rfftn(rho / rho.mean() - 1) / n**3
    mask, mnum = independent_modes(n)
    return np.prod(sim.equation.box) * np.abs(delta_hat[mask]) ** 2, mnum[mask]


@pytest.mark.slow
def test_initial_spectrum_matches_the_built_in_input_within_cosmic_variance():
    """64^3 (125,023 independent modes), Eisenstein & Hu x Hu-Barkana-Gruzinov at z = 127: every shell and
    the total within their chi-square bounds; the same field measured against 1.2 P or P / 1.2 fails."""
    n, box = 64, 10.0
    sim = shared(("single", 1, None), physics__name="fdm_cosmo", initial__name="gaussian", grid__shape=n, grid__box=box)
    state = sim.initial_state({"name": "gaussian", "seed": 7})
    power_k, mnum = measured_modes(sim, state, n)
    p = dict(FDMCosmoParams().traced())
    expected = power.linear_power(mnum * 2 * math.pi / box, 1 / 128, p, None, True)
    shells = np.rint(mnum).astype(int)
    assert power_k.size == (n - 1) ** 3 // 2  # 125,023 independent modes
    assert consistent(power_k / expected, shells)
    for wrong in (1.2, 1 / 1.2):
        assert not consistent(power_k / (wrong * expected), shells)


def test_initial_spectrum_matches_a_spectrum_file_within_cosmic_variance(tmp_path):
    """A two-column file P = k^-2 (its shape normalised to sigma8 here by adaptive quadrature, grown to
    z = 63 with D from quad), no FDM cut-off: 32^3 against it within cosmic variance; 1.2 P fails."""
    path = tmp_path / "pk.txt"
    k_file = np.geomspace(1e-4, 1e3, 200)
    np.savetxt(path, np.column_stack([k_file, 3.0 * k_file**-2]), header="k [h/Mpc]  P [(Mpc/h)^3] (CAMB-like)")
    n, box = 32, 20.0
    sim = shared(("single", 1, None), physics__name="fdm_cosmo", initial__name="gaussian", grid__shape=n, grid__box=box,
                 physics__spectrum_file=str(path), physics__fdm_transfer=False, physics__z_start=63.0)
    # (seed 3 would fail, rightly: its white noise has a sample variance 4 sigma above 1, the largest of 300 seeds)
    state = sim.initial_state({"name": "gaussian", "seed": 1})
    power_k, mnum = measured_modes(sim, state, n)
    sigma2 = quad(lambda lnk: math.exp(lnk) * float(power.tophat(8 * math.exp(lnk))) ** 2 / (2 * math.pi**2),
                  math.log(1e-5), math.log(1e3), limit=400, epsrel=1e-10)[0]
    grown = (heath_growth(1 / 64, 0.3, 0.7) / heath_growth(1.0, 0.3, 0.7)) ** 2
    expected = 0.811**2 / sigma2 * (mnum * 2 * math.pi / box) ** -2.0 * grown
    shells = np.rint(mnum).astype(int)
    assert consistent(power_k / expected, shells)
    assert not consistent(power_k / (1.2 * expected), shells)


# ---- output times (generic) and a whole run ----------------------------------------------------------------


def test_chunks_end_exactly_on_output_times_and_realign():
    from simulator.output.base import Schedule
    from simulator.time.control import Stepper

    cfg = C.load(None, ["time.dt=0.01", "time.t_end=1.0", "output.chunk=10"]).time
    stepper = Stepper(cfg, 10, stops=(0.055, 0.5))
    t, step, ends = 0.0, 0, []
    while not stepper.finished(t):
        n, dt = stepper.next_chunk(t, step)
        step += n
        t = stepper.time_after(step, t, n, dt)
        ends.append((step, t))
    assert (6, 0.055) in ends and any(s == 10 for s, _ in ends)  # landed on 0.055, then back on multiples of 10
    assert any(abs(t - 0.5) < 1e-15 for _, t in ends) and ends[-1][1] == 1.0
    assert all(s % 10 == 0 for s, t in ends if t not in (0.055, 0.5, 1.0))
    schedule = Schedule(times=(0.055, 0.5))
    assert [schedule.due(s, t0, t1) for (s, t1), (_, t0) in zip(ends, [(0, 0.0), *ends])].count(True) == 2


@pytest.mark.slow
def test_a_cosmological_run_writes_redshifts_units_and_restarts(tmp_path, capfd):
    """configs/fdm_cosmo.yaml on 16^3 to z = 31, then extended to z = 15 by a restart: snapshots at the
    output redshifts with a, z and the unit system, spectra with linear theory, the Layzer-Irvine column
    continued across the restart, one compilation, and the plots. The runs and the plots are made by the
    commands' own function in this process (a process each started JAX again), the runs on the first 2 of the
    suite's devices by their mesh."""
    def run(z_end, redshifts, *extra):
        args = ["run", str(ROOT / "configs" / "fdm_cosmo.yaml"), "--set", "fft.mesh=[2]",
                "--set", "grid.shape=16", "--set", "output.chunk=5", "--set", f"physics.z_end={z_end}",
                "--set", f"physics.output_redshifts={redshifts}", "--out", str(tmp_path / "run"), *extra]
        return subprocess.CompletedProcess(args, *command(capfd, *args))

    first = run(31, [127, 63, 31])
    assert first.returncode == 0, first.stderr[-3000:]
    assert "one program for every chunk" in first.stderr
    second = run(15, [127, 63, 31, 15], "--restart")  # the final and output redshifts may change on a restart
    assert second.returncode == 0, second.stderr[-3000:]
    out = tmp_path / "run"
    redshifts = []
    for index in sorted((out / "snapshots").glob("s*.h5")):
        with h5py.File(index) as f:
            redshifts.append(round(float(f.attrs["redshift"]), 9))
            assert f.attrs["a"] == pytest.approx(1 / (1 + f.attrs["redshift"]))
            units = json.loads(f.attrs["units"])
            assert units["length"] == "Mpc/h" and "Gyr" in units["code_time"]
    assert redshifts == [127, 63, 31, 15]
    with h5py.File(out / "spectra.h5") as f:
        assert [round(1 / (np.exp(t) / 128) - 1, 9) for t in f["time"][:]] == [127, 63, 31, 15]
        # the clocks users think in, beside time = ln(a/a_start), across the restart
        assert [round(float(z), 9) for z in f["z"][:]] == [127, 63, 31, 15]
        np.testing.assert_allclose(f["a"][:], 1 / (1 + f["z"][:]), rtol=1e-14)
        assert f["k"].attrs["units"] == "h/Mpc" and f["power"].attrs["units"] == "(Mpc/h)^3"
        ratio = f["power"][:, 1] / f["power_linear"][:, 1]
        assert np.ptp(ratio) < 0.05 * ratio[0]  # the box-scale mode grows as linear theory says
    rows = list(csv.DictReader(open(out / "timeseries.csv")))
    assert float(rows[-1]["z"]) == pytest.approx(15.0, rel=1e-12)
    assert float(rows[-1]["a"]) == pytest.approx(1 / 16, rel=1e-12)
    residual = {int(r["step"]): float(r["layzer_irvine"]) for r in rows}
    restart = max(step for step, r in zip(residual, rows) if float(r["z"]) >= 31 - 1e-9)
    after = min(step for step in residual if step > restart)
    assert 0 < residual[restart] < 5e-3 and residual[after] == pytest.approx(residual[restart], rel=0.1)  # continued
    masses = np.array([float(r["mass"]) for r in rows])
    assert np.max(np.abs(masses / masses[0] - 1)) < 1e-12
    plot = subprocess.CompletedProcess(["plot"], *command(capfd, "plot", str(out)))
    assert plot.returncode == 0, plot.stderr
    assert {Path(p).name for p in plot.stdout.split()} == {"timeseries.png", "spectra.png", "slice.png"}


def _mode_sum_contrast(cfg, z, fdm):
    """sqrt(sum P(k, a) / V) over every mode of the grid's cube but k = 0: the rms linear contrast on the grid."""
    n, box = cfg.grid.shape, cfg.grid.box
    k = np.sqrt(sum(c**2 for c in np.meshgrid(*(2 * np.pi * np.fft.fftfreq(m, length / m) for m, length in
                                                 zip(n, box, strict=True)), indexing="ij")))
    return math.sqrt(power.linear_power(k, 1 / (1 + z), cfg.physics.traced(), None, fdm).sum() / math.prod(box))


def test_a_start_that_is_not_perturbative_is_cautioned_with_the_z_start_that_is(capfd):
    """A cosmological run at sigma8 = 1e6, or started late (z_start = 5 at 64^3 in 100 Mpc/h), stepped on from
    displacements of many cells without a word: the first at a time step shrunk 1e8-fold (ETA thousands of hours),
    the second from initial conditions that are not the spectrum asked for. Now the rms linear density contrast of
    the grid's modes at z_start above 0.5 is one warning naming physics.z_start, its rms (the sum over the cube's
    modes to 1%) and the z_start where that sum is 0.25; the shipped starts (rms 0.07 and 0.26 here) get none."""
    config = ROOT / "configs" / "cold_dark_matter.yaml"
    late = ["--set", "physics.z_start=5", "--set", "physics.output_redshifts=[0]"]
    code, _, err = command(capfd, "validate", str(config), *late)
    assert code == 0 and len(err.splitlines()) == 1
    said = err.removeprefix("warning: ")
    assert said.startswith("physics.z_start = 5: the linear density contrast of the grid's modes has rms ")
    cfg = C.load(config, ["physics.z_start=5", "physics.output_redshifts=[0]"])
    rms = float(said.split("has rms ")[1].split(" ")[0])
    assert rms == pytest.approx(_mode_sum_contrast(cfg, 5, False), rel=1e-2) and rms > 0.5
    earlier = float(said.split("start at z_start >= ")[1].split(" ")[0])
    assert _mode_sum_contrast(cfg, earlier, False) == pytest.approx(0.25, rel=1e-2)
    assert math.isclose(power.grid_contrast(1 / (1 + 5), cfg.physics.traced(), None, False, cfg.grid.shape,
                                            cfg.grid.box), _mode_sum_contrast(cfg, 5, False), rel_tol=1e-2)
    code, _, err = command(capfd, "validate", str(config), "--set", "physics.sigma8=1e6")
    assert code == 0 and "physics.z_start = 49: " in err and "check sigma8 = 1e+06" in err
    for shipped in (config, ROOT / "configs" / "fdm_mixed.yaml", ROOT / "configs" / "fdm_cosmo.yaml"):
        assert command(capfd, "validate", str(shipped))[2] == ""
    coarse = C.load(config, ["grid.shape=[32,32,32]", "physics.cdm_particles=32768", "physics.z_start=9",
                             "physics.output_redshifts=[0]"])
    assert 0.25 < _mode_sum_contrast(coarse, 9, False) < 0.5 and coarse.physics.cautions(coarse) == []
