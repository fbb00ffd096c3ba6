"""What a channel run reports beside its wall stresses (simulator.equations.channel_outputs), float64, through
run_config and load_run: the one-dimensional spectra at each height (wall_spectra.h5) against the profiles' Reynolds
stresses (Parseval), and the kinetic-energy budget's time series against the energies' rates of change, at the
exact laminar values and converging as dt^2 (RK222)."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

import simulator
from simulator.fft.bases import Chebyshev
from simulator.output.spectra import read_spectra

from support import command


def test_one_dimensional_spectra_at_each_height_sum_to_the_reynolds_stresses(tmp_path, capfd):
    """A box channel (8 x 6 x 12, Lx = 2 pi, Ly = pi) from white noise on the laminar profile, 4 steps: every row of
    wall_spectra.h5, written with each spectra row, sums over k_x and over the spanwise k_y to the profiles'
    <u'u'>, <v'v'> and <w'w'> at each height of the same step, to round-off; its coordinates are the one-sided
    wavenumbers and the Gauss-Lobatto heights; simulator export writes it as a group. The shell spectrum
    ``energy``, summed over its shells, is the time series' fluctuation energy (white noise fills the Nyquist
    modes, which the state holds unlike the real field on the grid)."""
    config = {"physics.name": "channel", "physics.reynolds": 200.0, "grid.shape": [8, 6, 12],
              "grid.box": [2 * math.pi, math.pi, 2.0], "precision": "float64", "initial.name": "laminar",
              "initial.amplitude": 0.3, "time.dt": 0.01, "time.t_end": 0.04, "output.chunk": 2,
              "output.spectra.every": 2, "output.profiles.every": 2, "runtime.cpu_devices": 8, "fft.mesh": [2]}
    run_dir = tmp_path / "run"
    assert simulator.run_config(simulator.load_config(None, config), run_dir) == 0
    run = simulator.load_run(run_dir)
    spectra, profiles = run.output("wall_spectra"), run.output("profiles")
    assert list(spectra["step"]) == list(profiles["step"]) == list(run.spectra["step"]) == [0, 2, 4]
    np.testing.assert_allclose(spectra["kx"], np.arange(5), atol=1e-15)
    np.testing.assert_allclose(spectra["ky"], 2 * np.arange(4), atol=1e-15)
    np.testing.assert_allclose(spectra["z"], Chebyshev(12, 2.0).points(), atol=1e-15)
    for component in ("uu", "vv", "ww"):
        stress = profiles[f"reynolds_{component}"]
        assert stress.min() >= 0.0 and stress.max() > 1e-3
        for wavenumber, bins in (("kx", 5), ("ky", 4)):
            spectrum = spectra[f"{component}_{wavenumber}"]
            assert spectrum.shape == (3, bins, 12) and spectrum.min() >= 0.0
            np.testing.assert_allclose(spectrum.sum(axis=1), stress, rtol=0, atol=1e-14 * stress.max())
    # the shell spectrum integrated across the plates, every shell of the file, is the fluctuations' energy
    shells, series = read_spectra(run_dir / "spectra.h5"), run.timeseries
    rows = np.searchsorted(series["step"], shells["step"][1:])
    np.testing.assert_allclose(shells["energy"][1:].sum(axis=1), series["fluctuation_energy"][rows], rtol=1e-13)
    code, _, err = command(capfd, "export", str(run_dir))
    assert code == 0, err
    with h5py.File(run_dir / "export" / "run.nc") as nc:
        assert nc["wall_spectra/uu_ky"].shape == (3, 4, 12)
        np.testing.assert_array_equal(nc["wall_spectra/uu_ky"][:], spectra["uu_ky"])


def _budget(dt: float, tmp_path) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, np.ndarray]]:
    """A Tollmien-Schlichting wave of amplitude 0.1 at Re = 100 in a plane (8 x 24, Lx = 2 pi) to t = 1: its time
    series, the budget's residuals (the energies' rates of change over each step less the trapezoidal mean of their
    sources and sinks) and the last rows of the wall spectra and the profiles."""
    config = {"physics.name": "channel2d", "physics.reynolds": 100.0, "grid.shape": [8, 24], "precision": "float64",
              "initial.name": "tollmien_schlichting", "initial.amplitude": 0.1, "time.dt": dt, "time.t_end": 1.0,
              "output.chunk": 1, "output.spectra.every": 0, "output.profiles.at_end": True,
              "runtime.cpu_devices": 8, "fft.backend": "single"}
    run_dir = tmp_path / f"dt{dt}"
    assert simulator.run_config(simulator.load_config(None, config), run_dir) == 0
    run = simulator.load_run(run_dir)
    s = run.timeseries
    sources = {"kinetic_energy": s["pressure_work"] + s["wall_work"] - s["mean_dissipation"] - s["dissipation"],
               "mean_energy": s["pressure_work"] + s["wall_work"] - s["mean_dissipation"] - s["production"],
               "fluctuation_energy": s["production"] - s["dissipation"]}
    residuals = {q: float(np.abs(np.diff(s[q]) / np.diff(s["time"]) - (f[1:] + f[:-1]) / 2).max())
                 for q, f in sources.items()}
    return s, residuals, {**run.output("wall_spectra"), **run.output("profiles")}


def test_the_energy_budget_closes_to_the_time_steppings_order(tmp_path):
    """At t = 0 (laminar Poiseuille flow, U = 1 - y^2, plus the wave) the mean flow's terms are exact: E_mean = 4/15,
    its dissipation nu <(dU/dy)^2> = 4 nu / 3 = G U_b, the pressure gradient's work; the energies add up to
    kinetic_energy. Over the run the energies' rates of change equal the sums of the budget's terms (production,
    dissipations, the pressure gradient's work) to the scheme's error, which falls as dt^2 from dt = 0.1 to 0.05
    (the terms 1e-4 to 5e-4, their residual under 1e-7). The plane's wall spectra at the end sum to its profiles'
    Reynolds stresses."""
    series, coarse = _budget(0.1, tmp_path)[:2]
    nu = 1 / 100
    for name, value in (("mean_energy", 4 / 15), ("mean_dissipation", 4 * nu / 3), ("pressure_work", 4 * nu / 3)):
        assert series[name][0] == pytest.approx(value, rel=1e-13), name
    assert np.abs(series["wall_work"]).max() == 0.0 and np.abs(series["production"]).min() > 1e-4
    np.testing.assert_allclose(series["mean_energy"] + series["fluctuation_energy"], series["kinetic_energy"],
                               rtol=1e-14)
    _, fine, last = _budget(0.05, tmp_path)
    for quantity in ("kinetic_energy", "fluctuation_energy"):
        assert fine[quantity] < 1e-7 and 3.6 < coarse[quantity] / fine[quantity] < 4.4, (quantity, coarse, fine)
    assert fine["mean_energy"] < 4e-8
    for component in ("uu", "vv"):
        stress = last[f"reynolds_{component}"][-1]
        np.testing.assert_allclose(last[f"{component}_kx"][-1].sum(axis=0), stress, rtol=0, atol=1e-14 * stress.max())
