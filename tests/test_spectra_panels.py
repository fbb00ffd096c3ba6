"""The spectra of equations with several energies (simulator/plots/spectra_panels.py) and 2D spectra in
spectra.h5: written as (time, k_h, k_z) with dimension scales xarray reads; the side-by-side figure
draws each energy on one y range above its own budget terms; the k_h-k_z map shows the file's values over
the resolved bins. Synthetic files: no simulation is run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from simulator import equations
from simulator.output.spectra import SpectraFile, read_spectra
from simulator.plots import spectra as spectra_plots
from simulator.plots.spectra_panels import map_figure, side_by_side_figure

K = np.arange(12.0)  # shells of a 16^3 grid in a 2 pi box (up to sqrt(3) * 8)
CONFIG = {"name": "t", "precision": "float64", "grid": {"shape": [16, 16, 16], "box": [2 * math.pi] * 3},
          "physics": {"name": "boussinesq"}}


def synthetic(row: int) -> dict[str, np.ndarray]:
    kh, kz = np.meshgrid(K, K, indexing="ij")
    two = np.exp(-(kh + 2 * kz)) * (row + 1)
    two[0, 0] = 0.0
    out = {"energy_kh_kz": two, "potential_energy_kh_kz": 0.5 * two}
    for name, scale in (("energy", 1.0), ("potential_energy", 0.25)):
        out[name] = scale * np.exp(-K) * (row + 1)
        out[f"transfer_{name}"] = scale * np.sin(K) * (row + 1)
        out[f"conversion_{name}"] = (1 if name == "energy" else -1) * 0.1 * np.cos(K)
    out["energy_kh"] = two.sum(axis=1)
    return out


@pytest.fixture
def run(tmp_path):
    f = SpectraFile(tmp_path / "spectra.h5", K, None)
    for row in range(3):
        f.append(10 * row, 0.5 * row, synthetic(row))
    f.close()
    return tmp_path


def test_a_2d_spectrum_is_written_with_its_own_axes_and_read_back(run):
    table = read_spectra(run / "spectra.h5")
    assert table["energy_kh_kz"].shape == (3, K.size, K.size) and table["energy"].shape == (3, K.size)
    np.testing.assert_array_equal(table["energy_kh_kz"][2], synthetic(2)["energy_kh_kz"])
    np.testing.assert_array_equal(table["k_h"], K)
    with xr.open_dataset(run / "spectra.h5", engine="h5netcdf") as ds:
        assert ds["energy_kh_kz"].dims == ("time", "k_h", "k_z")
        assert ds["energy"].dims == ("time", "k")
        np.testing.assert_array_equal(ds["time"].values, [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(ds["energy_kh_kz"].sel(k_h=2.0, k_z=3.0).values,
                                      [math.exp(-8) * r for r in (1, 2, 3)])


def test_a_restart_keeps_the_axes_of_the_2d_spectra(run):
    """Continuing the file at step 10 drops the rows after it, not the k_h and k_z scales."""
    SpectraFile(run / "spectra.h5", K, 10).close()
    table = read_spectra(run / "spectra.h5")
    assert table["energy_kh_kz"].shape == (2, K.size, K.size)
    np.testing.assert_array_equal(table["k_h"], K)
    np.testing.assert_array_equal(table["k_z"], K)


def test_energies_side_by_side_share_a_scale_and_sit_above_their_own_budgets(run):
    info = equations.get("boussinesq")
    table = read_spectra(run / "spectra.h5")
    shells, above_floor = spectra_plots.drawn(K, CONFIG, info)
    fig = side_by_side_figure(K, table, [0.0, 0.5, 1.0], CONFIG, info, shells, above_floor, "code units")
    top, bottom = fig.axes[:2], fig.axes[2:4]
    assert top[0].get_ylim() == top[1].get_ylim()
    for ax, name in zip(top, ("energy", "potential_energy")):
        last = ax.lines[-1]
        np.testing.assert_allclose(last.get_ydata(), table[name][-1, shells])
    for ax, name in zip(bottom, ("energy", "potential_energy")):
        drawn = {line.get_label(): np.asarray(line.get_ydata()) for line in ax.lines
                 if not line.get_label().startswith("_")}
        assert set(drawn) == {"transfer T(k)", "conversion C(k)"}  # no injection in this file
        np.testing.assert_allclose(drawn["transfer T(k)"], table[f"transfer_{name}"][-1, shells])
        np.testing.assert_allclose(drawn["conversion C(k)"], table[f"conversion_{name}"][-1, shells])
    assert side_by_side_figure(K, {"energy": table["energy"]}, [0.0, 0.5, 1.0], CONFIG, info, shells, above_floor,
                               "code units") is None


def test_the_map_shows_the_resolved_bins_with_kz_upwards(run):
    info = equations.get("boussinesq")
    values = read_spectra(run / "spectra.h5")["energy_kh_kz"][-1]
    resolved = spectra_plots.resolved_wavenumber(CONFIG, info)  # 2/3 of 8
    fig = map_figure(K, values, 1.0, "energy_kh_kz", CONFIG, info, (resolved, resolved),
                     spectra_plots.precision_floor(CONFIG), "code units")
    mesh = fig.axes[0].collections[0]
    shown = np.ma.filled(mesh.get_array(), np.nan).reshape(6, 6)  # bins 0..5 <= 16/3
    expected = values[:6, :6].T.copy()
    expected[0, 0] = np.nan  # the mean: blank
    np.testing.assert_array_equal(shown, expected)
    assert shown[1, 3] == values[3, 1]  # row k_z = 1, column k_h = 3


def test_the_map_of_a_shallow_box_cuts_k_h_and_k_z_each_at_its_own_axes_resolved_wavenumber(run, tmp_path):
    """16 x 16 x 8 points in [2 pi, 2 pi, pi]: k_z's Nyquist wavenumber is 8 as k_h's, but over a grid of 4 in z
    (16 x 16 x 4) it is 4, and the map was cut at |k|'s, the smallest of all three axes: k_h up to 8/3 only, half
    its resolved range hidden, and so was the figure of E_K(k_h). Each axis is cut at its own: k_h up to 16/3, |k_z|
    up to 8/3."""
    info = equations.get("boussinesq")
    config = {**CONFIG, "grid": {"shape": [16, 16, 4], "box": [2 * math.pi, 2 * math.pi, math.pi]}}
    (run / "config.yaml").write_text("name: t\nprecision: float64\ngrid: {shape: [16, 16, 4], box: [2*pi, 2*pi, pi]}\n"
                                     "physics: {name: boussinesq}\n")
    builders = spectra_plots.spectra_figures(run, config, info)
    fig = builders["spectra_energy_kh_kz"]()
    values = read_spectra(run / "spectra.h5")["energy_kh_kz"][-1]
    shown = np.ma.filled(fig.axes[0].collections[0].get_array(), np.nan).reshape(3, 6)  # k_z 0..2, k_h 0..5
    expected = values[:6, :3].T.copy()
    expected[0, 0] = np.nan
    np.testing.assert_array_equal(shown, expected)
    assert fig.axes[0].get_xlim() == (0.0, 5.5) and fig.axes[0].get_ylim() == (0.0, 2.5)
    # the figure of E_K(k_h), the equation's own spectrum, likewise: k_h up to 16/3, labelled by k_h
    ax = builders["spectra"]().axes[0]
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), K[1:6])
    assert ax.get_xlabel().startswith("$k_h")
    # the side-by-side energies are by |k|: cut at the smallest axis' cutoff, 8/3
    side = builders["spectra_side_by_side"]()
    np.testing.assert_array_equal(side.axes[0].lines[0].get_xdata(), K[1:3])
    # each with its mean over the window (the second half of the run's rows) in black, as every spectral figure
    rows = read_spectra(run / "spectra.h5")
    late = rows["time"] >= (rows["time"][0] + rows["time"][-1]) / 2
    for ax, name in zip(side.axes[:2], ("energy", "potential_energy"), strict=True):
        [mean] = [line for line in ax.lines if line.get_label().startswith("mean of")]
        np.testing.assert_allclose(mean.get_ydata(), rows[name][late].mean(axis=0)[1:3], rtol=1e-12)


def test_a_boussinesq_run_directory_gets_both_figures(run, tmp_path):
    (run / "config.yaml").write_text("name: t\nprecision: float64\ngrid: {shape: [16, 16, 16]}\n"
                                     "physics: {name: boussinesq}\n")
    written = spectra_plots.plot_spectra(run, {**CONFIG}, equations.get("boussinesq"))
    names = [p.name for p in written]
    assert {"spectra_side_by_side.png", "spectra_energy_kh_kz.png", "spectra_potential_energy_kh_kz.png"} <= set(names)


def test_the_resolved_range_follows_the_runs_dealiasing():
    """2/3 of the Nyquist wavenumber under the 2/3 rule, 0.8 under the Hou-Li filter (physics.dealias)."""
    info = equations.get("navier_stokes")
    grid = {"shape": [16, 16, 16], "box": [2 * math.pi] * 3}
    assert spectra_plots.resolved_wavenumber({"grid": grid}, info) == pytest.approx(16 / 3)
    hou_li = {"grid": grid, "physics": {"dealias": "hou_li"}}
    assert spectra_plots.resolved_wavenumber(hou_li, info) == pytest.approx(6.4)
