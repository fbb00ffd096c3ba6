"""What a cosmological config foretells of its wave's resolution: `simulator validate`, `plan` and preparing a sweep
caution a grid that cannot resolve the wave's de Broglie wavenumber, naming grid.box (the key that matters) with a
value that resolves it, checked here against a numpy sum over the grid's modes of the initial state's k_rms."""

import csv
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import constants
from scipy.integrate import quad

from simulator import config as C
from simulator.equations.fdm_cosmo import power

from support import command

ROOT = Path(__file__).parents[1]
CDM = str(ROOT / "configs" / "cold_dark_matter.yaml")
COSMO = str(ROOT / "configs" / "fdm_cosmo.yaml")
MIXED = ["--set", "physics.fdm_fraction=0.3"]


def _flow_factor(p, z):
    """a^2 H f / nu in h/Mpc per Mpc/h of displacement: H from Friedmann, f = dln D/dln a by differencing the
    growing mode D = (5/2) omega_m E(a) int_0^a da' / (a' E)^3 (quad), nu = hbar / m in (Mpc/h) 100 km/s."""
    om, ol = p.omega_m, p.omega_lambda

    def e(a):
        return math.sqrt(om / a**3 + (1 - om - ol) / a**2 + ol)

    def ln_d(ln_a):
        a = math.exp(ln_a)
        return math.log(e(a) * quad(lambda x: (x * e(x)) ** -3, 0, a, epsabs=0, epsrel=1e-12)[0])

    a, step = 1 / (1 + z), 1e-4
    f = (ln_d(math.log(a) + step) - ln_d(math.log(a) - step)) / (2 * step)
    mass = p.m22 * 1e-22 * constants.electron_volt / constants.c**2
    nu = constants.hbar / mass / (constants.parsec * 1e6 / p.h * 1e5)
    return a**2 * e(a) * f / nu


def mode_sum_kmax_over_krms(cfg, z):
    """k_max / k_rms of the initial wave at redshift z, summed over the grid's modes but k = 0 and the Nyquist
    planes: k_rms^2 = (a^2 H f / nu)^2 sum P / (V k^2) + sum k^2 P / (4 V) (phase gradient and quantum pressure)."""
    n, box = cfg.grid.shape, cfg.grid.box
    axes = [2 * np.pi * np.fft.fftfreq(m, length / m) for m, length in zip(n, box, strict=True)]
    axes = [k[np.abs(np.fft.fftfreq(m)) < 0.5] for k, m in zip(axes, n, strict=True)]
    k = np.sqrt(sum(c**2 for c in np.meshgrid(*axes, indexing="ij"))).ravel()
    k = k[k > 0]
    p = cfg.physics
    spectrum = power.linear_power(k, 1 / (1 + z), p.traced(), None, p.fdm_transfer) / math.prod(box)
    k_rms = math.sqrt(_flow_factor(p, z) ** 2 * np.sum(spectrum / k**2) + np.sum(k**2 * spectrum) / 4)
    return min(np.pi * m / length for m, length in zip(n, box, strict=True)) / k_rms


def number(text, before):
    return float(re.search(re.escape(before) + r"([-+0-9.e]+)", text).group(1))


#: the warning's figures have three significant digits
DIGITS = 5e-3


def test_a_box_that_cannot_resolve_the_wave_is_cautioned_naming_grid_box(capfd):
    """The cosmologist's first mixed run, cold_dark_matter.yaml with physics.fdm_fraction = 0.3, validated without a
    word; run, psi_tail was 0.7 at step 0 and the time step fell 270-fold (ETA 80 minutes). Its 100 Mpc/h box at
    64^3 cannot hold the wave's flows (m22 = 1): linear theory puts k_rms at 55 times the grid's k_max from z_start
    on. Now one warning names grid.box, k_rms and k_max / k_rms (the run's kmax_de_broglie, below 2), and the box
    that resolves it; the shipped configs say nothing."""
    cfg = C.load(CDM, ["physics.fdm_fraction=0.3"])
    code, _, err = command(capfd, "validate", CDM, *MIXED)
    assert code == 0 and len(err.splitlines()) == 1, err
    assert err.startswith("warning: grid.box = 100: the wave (m22 = 1) is not resolved from its start: "), err
    ratio = number(err, "is ")
    expected = mode_sum_kmax_over_krms(cfg, 49)
    assert ratio == pytest.approx(expected, rel=DIGITS) and expected < 0.02
    k_max = number(err, "the grid's k_max = ")
    assert number(err, "k_rms = ") == pytest.approx(k_max / expected, rel=DIGITS)
    assert "psi is aliased from the first step" in err and "grid.shape >= [" in err
    # the box it advises resolves the wave's linear flows to z_end = 0 (to the three digits it gives) and says nothing
    box = number(err, "grid.box <= ")
    advised = C.load(CDM, ["physics.fdm_fraction=0.3", f"grid.box={box}"])
    assert mode_sum_kmax_over_krms(advised, 0) >= 2 > mode_sum_kmax_over_krms(
        C.load(CDM, ["physics.fdm_fraction=0.3", f"grid.box={box * 1.01}"]), 0)
    assert "the wave" not in command(capfd, "validate", CDM, *MIXED, "--set", f"grid.box={box}")[2]
    # a box of unequal sides is advised as the three; where the contrast alone is near 1 (sigma8 = 30 without the
    # wave's cut-off) no box or grid resolves it, and the line says so rather than advise a grid.box
    err = command(capfd, "validate", CDM, *MIXED, "--set", "grid.box=[100, 50, 100]")[2]
    assert "grid.box = [100, 50, 100]: the wave" in err, err
    sides = [float(v) for v in err.split("grid.box <= [")[1].split("]")[0].split(", ")]
    assert sides[1] == pytest.approx(sides[0] / 2, rel=DIGITS) and sides[0] == sides[2]
    assert mode_sum_kmax_over_krms(C.load(CDM, ["physics.fdm_fraction=0.3", f"grid.box={sides}"]), 0) >= 2
    hopeless = ["physics.sigma8=30", "physics.fdm_transfer=false"]
    err = command(capfd, "validate", COSMO, *(w for h in hopeless for w in ("--set", h)))[2]
    assert "no grid.box or grid.shape resolves linear theory's flows to the end: check physics.sigma8" in err, err
    assert "grid.box <=" not in err
    assert all(mode_sum_kmax_over_krms(C.load(COSMO, [*hopeless, f"grid.box={b}"]), 5) < 2 for b in (1, 1e-2, 1e-4))
    for shipped in ("fdm_mixed", "fdm_cosmo", "cold_dark_matter"):
        assert command(capfd, "validate", str(ROOT / "configs" / f"{shipped}.yaml"))[2] == ""


def test_a_box_resolved_at_the_start_but_not_the_end_is_cautioned_with_the_z_end_that_is(capfd):
    """fdm_cosmo.yaml in a 2 Mpc/h box (its own comment: resolved "only to z ~ 15"): the start is resolved, but by
    z_end = 5 linear theory alone has k_max / k_rms = 0.40. The warning says so, with the latest z_end (and the box)
    at which the linear flows stay resolved."""
    cfg = C.load(COSMO, ["grid.box=2"])
    code, _, err = command(capfd, "validate", COSMO, "--set", "grid.box=2")
    assert code == 0 and len(err.splitlines()) == 1, err
    assert err.startswith("warning: grid.box = 2: the wave (m22 = 1) is not resolved by z_end = 5: "), err
    assert number(err, "is ") == pytest.approx(mode_sum_kmax_over_krms(cfg, 5), rel=DIGITS)
    assert mode_sum_kmax_over_krms(cfg, 127) > 2
    z_end = number(err, "physics.z_end >= ")
    assert 14 < z_end < 18 and mode_sum_kmax_over_krms(cfg, z_end) >= 2 > mode_sum_kmax_over_krms(cfg, z_end * 0.98)
    assert command(capfd, "validate", COSMO, "--set", "grid.box=2", "--set", f"physics.z_end={z_end}", "--set",
                   f"physics.output_redshifts=[127, {z_end}]")[2] == ""
    box = number(err, "grid.box <= ")
    assert mode_sum_kmax_over_krms(C.load(COSMO, [f"grid.box={box}"]), 5) >= 2


def test_the_wave_caution_is_said_by_plan_and_by_the_sweep_per_point(tmp_path, capfd, monkeypatch):
    """`simulator plan` says it beside the plan; preparing a sweep over fdm_fraction on cold_dark_matter.yaml
    (prepared as "all valid") names the point whose wave the grid cannot resolve, and not the one without a wave."""
    small = ["--set", "grid.shape=16", "--set", "physics.cdm_particles=4096"]
    code, out, err = command(capfd, "plan", CDM, *MIXED, *small)
    assert code == 0 and "warning: grid.box = 100: the wave (m22 = 1) is not resolved from its start" in err, err
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "mixed.yaml"
    sweep.write_text(yaml.safe_dump({"name": "mixed", "base": CDM,
                                     "set": {"grid.shape": [16, 16, 16], "physics.cdm_particles": 4096},
                                     "grid": {"physics.fdm_fraction": [0.0, 0.3]}}))
    code, out, err = command(capfd, "sweep", str(sweep), "--out", str(tmp_path / "out"))
    assert code == 0 and "all valid" in out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: point 1 (physics.fdm_fraction = 0.3): grid.box = 100: "
                                                   "the wave (m22 = 1) is not resolved from its start"), err
    code, out, err = command(capfd, "sweep", str(ROOT / "configs" / "sweeps" / "fdm_m22.yaml"), "--out",
                             str(tmp_path / "m22"))
    assert code == 0 and err == "", err


def test_the_run_the_caution_foretells_is_aliased_at_its_first_step(tmp_path):
    """What the warning says of the run is what the run sees: at 16^3 in 100 Mpc/h psi_tail is above 0.5 at step 0
    (the aliased spectrum fills k-space), where the run's own warning comes only once it is under way."""
    r = subprocess.run([sys.executable, "-m", "simulator", "run", CDM, *MIXED, "--set", "grid.shape=16", "--set",
                        "physics.cdm_particles=4096", "--set", "physics.z_end=48.9", "--set",
                        "physics.output_redshifts=[48.9]", "--set", "precision=float64", "--out", str(tmp_path / "r")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "WARNING grid.box = 100: the wave (m22 = 1) is not resolved from its start" in r.stderr
    first = next(csv.DictReader(open(tmp_path / "r" / "timeseries.csv")))
    assert float(first["psi_tail"]) > 0.5
