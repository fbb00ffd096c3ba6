"""``simulator export``: a run's snapshots, spectra, time series, statistics, tasks, particle snapshots and
trajectories in one netCDF file that xarray opens, equal to what the run's own readers return, what it
leaves out named in one line; snapshots merged from their per-process shards into
self-contained files; the refusals (size, an existing export, a file that is no export, unknown fields) before
anything is written; a full or read-only disk and a stop signal: one line, no partial file, the earlier export kept."""

import json
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
import xarray as xr
import yaml

import simulator
from simulator import version
from simulator.cli import main
from simulator.errors import ConfigError, DamagedFileError
from simulator.fft import BACKENDS
from simulator.output import hdf5
from simulator.output.hdf5 import Snapshot
from simulator.output.snapshots import write_snapshot
from simulator.output.spectra import read_spectra
from simulator.planning.cost import human_bytes
from simulator.results import export, export_groups
from simulator.run import superseded
from simulator.runtime import build_mesh

from support import small_filesystem

ROOT = Path(__file__).parents[1]
PAGE = (ROOT / "docs" / "how-to" / "read-outputs.md").read_text().split(
    "## One file for analysis: `simulator export`", 1)[1]
LEGACY = Path(__file__).parent / "data" / "legacy_v1" / "ns_run"
#: Taylor-Green on 8^3 in 2 processes (one device each): 3 snapshots of 2 shard files each, 3 spectra rows
RUN = ["configs/taylor_green.yaml", "--set", "grid.shape=8", "--set", "time.t_end=0.08", "--set", "output.chunk=4",
       "--set", "output.snapshots.every=4", "--set", "checkpoint.every=0"]
#: every other output kind: particles (snapshots and trajectories), flow statistics, tasks of each reduction
RICH = {"grid.shape": 8, "time.t_end": 0.08, "output.chunk": 2, "output.snapshots.every": 4, "checkpoint.every": 0,
        "fft.backend": "single", "particles": [{"name": "tracers", "count": 5, "seed": 2},
                                               {"name": "drops", "count": 8, "placement": "lattice", "tau_p": 0.1}],
        "output.trajectories.every": 2, "output.trajectories.count": 3,
        "output.statistics.every": 4, "output.statistics.separations": [1, 2],
        "output.tasks": [{"name": "wz_mid", "field": "vorticity", "component": "z", "reduce": "slice", "every": 4},
                         {"name": "speed_x", "field": "velocity", "component": "magnitude", "reduce": "profile",
                          "axis": "x", "every": 4},
                         {"name": "u_max", "field": "velocity", "component": "x", "reduce": "max", "every": 2}]}


@pytest.fixture(scope="module")
def tg(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "tg"
    launch = [sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "1", "--timeout", "240"]
    r = subprocess.run([*launch, "run", *RUN, "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    for index in sorted((out / "snapshots").glob("s*.h5")):  # each snapshot spread over both processes' files
        assert sorted(p.name for p in index.with_suffix("").iterdir()) == ["p0000.h5", "p0001.h5"]
    return out


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    """Taylor-Green on 8^3 with two particle species, trajectories, statistics and three tasks (~15 s)."""
    out = tmp_path_factory.mktemp("export") / "rich"
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml",
                                {**RICH, "runtime.cpu_devices": len(jax.devices())})
    assert simulator.run_config(cfg, out) == 0
    return out


def copy_of(run: Path, tmp_path: Path) -> Path:
    shutil.copytree(run, tmp_path / run.name)
    return tmp_path / run.name


def refused(capsys, *args: str) -> str:
    """The one line ``simulator export ARGS`` prints when it refuses (exit 2)."""
    assert main(["export", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


@pytest.mark.multiprocess  # the run of the fixture tg
def test_the_netcdf_file_holds_every_snapshot_spectrum_and_row_exactly(tg, tmp_path):
    run = copy_of(tg, tmp_path)
    code = "import sys; from simulator.cli import main; c = main(sys.argv[1:]); print('jax' in sys.modules); exit(c)"
    r = subprocess.run([sys.executable, "-c", code, "export", str(run)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(run / "export" / "run.nc"), "False"]  # written without JAX
    loaded = simulator.load_run(run)
    ds = xr.open_dataset(run / "export" / "run.nc")
    assert len(loaded.snapshots) == 3 and set(ds.data_vars) >= {"velocity", "vorticity"}
    for i, ref in enumerate(loaded.snapshots):
        with ref.open() as snap:
            assert ds.time.values[i] == snap.attrs["time"] and ds.step.values[i] == snap.attrs["step"] == ref.step
            for name in snap.fields:
                assert ds[name].dims == ("time", "component", "x", "y", "z")
                assert ds[name].dtype == np.float32 and ds[name].attrs["units"] == "code units"
                np.testing.assert_array_equal(ds[name].isel(time=i).values, snap.read(name))
            for axis in "xyz":  # the cell positions of the index (and of the XDMF): i L / N
                np.testing.assert_array_equal(ds[axis].values, snap.file[axis][:])
    assert list(ds.component.values) == ["x", "y", "z"] and "step" in ds.velocity.coords
    spectra = loaded.spectra  # the resolved shells 0 < k <= 2/3 of the Nyquist wavenumber, of every row
    assert spectra["k"][0] > 0 and len(spectra["k"]) < len(read_spectra(run / "spectra.h5")["k"])
    np.testing.assert_array_equal(ds.time_spectra.values, spectra["time"])
    np.testing.assert_array_equal(ds.step_spectra.values, spectra["step"])
    np.testing.assert_array_equal(ds.k.values, spectra["k"])
    for name in ("energy", "transfer_energy"):
        assert ds[f"{name}_spectra"].dims == ("time_spectra", "k")
        np.testing.assert_array_equal(ds[f"{name}_spectra"].values, spectra[name])
    with h5py.File(run / "spectra.h5") as f:
        assert ds.energy_spectra.attrs["description"] == f["energy"].attrs["description"]
    np.testing.assert_array_equal(ds.time_series.values, loaded.timeseries["time"])
    for column, values in loaded.timeseries.items():
        if column != "time":
            np.testing.assert_array_equal(ds[f"{column}_series"].values, values)
    assert ds.energy_series.attrs["long_name"] == "kinetic energy <|u|^2>/2"
    assert yaml.safe_load(ds.attrs["config"]) == loaded.config and ds.attrs["title"] == "taylor_green"
    assert json.loads(ds.attrs["units"]) == {"length": "code units", "time": "code units"}
    ds.close()
    # --fields: those fields only, the rest as before
    assert main(["export", str(run), "--netcdf", str(tmp_path / "w.nc"), "--fields", "vorticity"]) == 0
    with xr.open_dataset(tmp_path / "w.nc") as only:
        assert "vorticity" in only and "velocity" not in only and "energy_spectra" in only


@pytest.mark.multiprocess  # the run of the fixture tg
def test_merged_snapshots_equal_the_virtual_ones_and_need_no_shards(tg, tmp_path, monkeypatch):
    run = copy_of(tg, tmp_path)
    monkeypatch.setattr(export, "SLAB_BYTES", 1000)  # each field copied a z-plane at a time, as a large one would be
    indexes = sorted((run / "snapshots").glob("s*.h5"))
    before = {p: p.read_bytes() for p in (run / "snapshots").rglob("*") if p.is_file()}
    assert main(["export", str(run), "--merge"]) == 0
    assert not (run / "export").exists()  # --merge alone writes no netCDF file
    assert {p: p.read_bytes() for p in before} == before  # the shards, the index and the XDMF stay as they were
    assert [s.path for s in simulator.load_run(run).snapshots] == indexes  # the virtual index stays the default
    expected = {}
    for index in indexes:
        with Snapshot(index) as snap:
            assert len(json.loads(snap.file.attrs["sources"])) == 2  # written by 2 processes
            expected[index.name] = ({n: snap.read(n) for n in snap.fields}, snap.attrs)
    # only the merged directory is left: no shard, no index
    alone = tmp_path / "alone"
    shutil.move(run / "snapshots" / "merged", alone)
    shutil.rmtree(run)
    for name, (fields, attrs) in expected.items():
        with Snapshot(alone / name) as merged:
            assert merged.attrs == {**attrs, "sources": []}
            for field, values in fields.items():
                assert not merged.file[field].is_virtual
                np.testing.assert_array_equal(merged.read(field), values)
        with xr.open_dataset(alone / name, engine="h5netcdf") as ds:
            assert ds.velocity.dims == ("z", "y", "x", "component")
            np.testing.assert_array_equal(ds.velocity.values, fields["velocity"].transpose(3, 2, 1, 0))
    # the XDMF files name the merged files: each data item is a dataset of that shape
    series = ET.parse(alone / "series.xdmf").getroot().findall("Domain/Grid/Grid")
    assert [g.get("Name") for g in series] == [Path(n).stem for n in expected]
    items = [i for path in alone.glob("*.xdmf") for i in ET.parse(path).getroot().iter("DataItem")
             if i.get("Format") == "HDF"]
    assert len(items) == 2 * 2 * len(expected)  # velocity and vorticity of each snapshot: in its file and the series
    for item in items:
        file, dataset = item.text.split(":")
        with h5py.File(alone / file) as f:
            assert list(f[dataset].shape) == [int(n) for n in item.get("Dimensions").split()]


def test_a_cosmological_run_exports_its_scale_factor_redshift_and_units(tmp_path):
    """configs/fdm_cosmo.yaml on 8^3 to z = 63, exported: a and z beside every row, the units of each variable;
    and the ratio of two runs' P(k) (bosons of m22 = 1 and 0.5, the same noise) as load_run gives it, finite and
    positive on every shell it holds, the resolved ones 0 < k <= pi N / L, where the file's every shell gives
    round-off over round-off at k = 0 (1.5 measured) and 0/0 past the grid's sphere (shells 6 and 7, whose
    modes all lie on Nyquist planes)."""
    overrides = {"grid.shape": 8, "physics.z_end": 63, "physics.output_redshifts": [127, 63], "checkpoint.every": 0,
                 "fft.backend": "single", "runtime.cpu_devices": len(jax.devices())}
    for name, m22 in (("cosmo", 1.0), ("light", 0.5)):
        cfg = simulator.load_config(ROOT / "configs" / "fdm_cosmo.yaml", {**overrides, "physics.m22": m22})
        assert simulator.run_config(cfg, tmp_path / name) == 0
    light = simulator.load_run(tmp_path / "light").spectra
    assert list(light["k"] / (2 * np.pi)) == [1, 2, 3, 4]  # dk = 2 pi / L; the Nyquist wavenumber pi N / L = 4 dk
    ratio = light["power"] / simulator.load_run(tmp_path / "cosmo").spectra["power"]
    assert np.all(np.isfinite(ratio)) and np.all(ratio > 0), ratio
    assert np.all(ratio[0] < 1), ratio  # the lighter boson's cut-off
    raw = [read_spectra(tmp_path / name / "spectra.h5")["power"] for name in ("light", "cosmo")]
    with np.errstate(invalid="ignore", divide="ignore"):
        assert not np.all(np.isfinite(raw[0] / raw[1]) & (raw[0] / raw[1] > 0))  # what a naive ratio met before
    path = export.export_netcdf(tmp_path / "cosmo", fields=["density", "phase"])
    loaded = simulator.load_run(tmp_path / "cosmo")
    with xr.open_dataset(path) as ds:
        assert set(ds.data_vars) & {"density", "phase", "abs_psi", "potential"} == {"density", "phase"}
        for i, ref in enumerate(loaded.snapshots):
            with ref.open() as snap:
                assert (ds.a.values[i], ds.redshift.values[i]) == (snap.attrs["a"], snap.attrs["redshift"])
                np.testing.assert_array_equal(ds.density.isel(time=i).values, snap.read("density"))
        np.testing.assert_allclose(ds.redshift.values, [127, 63], rtol=1e-12)
        assert {"a", "redshift", "step"} <= set(ds.density.coords) and ds.density.dims == ("time", "x", "y", "z")
        np.testing.assert_array_equal(ds.a_spectra.values, loaded.spectra["a"])
        np.testing.assert_array_equal(ds.z_spectra.values, loaded.spectra["z"])
        np.testing.assert_array_equal(ds.power_spectra.values, loaded.spectra["power"])
        assert {"a_spectra", "z_spectra"} <= set(ds.power_spectra.coords)
        assert (ds.x.attrs["units"], ds.k.attrs["units"], ds.power_spectra.attrs["units"]) == (
            "Mpc/h", "h/Mpc", "(Mpc/h)^3")
        assert ds.time.attrs["units"] == json.loads(ds.attrs["units"])["time"] == "ln(a/a_start), a_start = 1/(1 + 127)"
        assert loaded.units == json.loads(ds.attrs["units"])  # load_run names what every output names
        np.testing.assert_array_equal(ds.z_series.values, loaded.timeseries["z"])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """configs/fdm_mixed.yaml on 8^3 (512 cold particles) from z = 127 to 63, snapshots at both, a slice and a box
    maximum every 4 steps (~5 s)."""
    out = tmp_path_factory.mktemp("export") / "mixed"
    tasks = [{"name": "rho_mid", "field": "density", "reduce": "slice", "axis": "z", "every": 4},
             {"name": "rho_max", "field": "total_density", "reduce": "max", "every": 4}]
    cfg = simulator.load_config(ROOT / "configs" / "fdm_mixed.yaml", {
        "grid.shape": 8, "physics.cdm_particles": 512, "physics.z_end": 63, "physics.output_redshifts": [127, 63],
        "checkpoint.every": 0, "fft.backend": "single", "runtime.cpu_devices": len(jax.devices()),
        "output.chunk": 2, "output.tasks": tasks})
    assert simulator.run_config(cfg, out) == 0
    return out


def test_a_mixed_cosmological_run_s_particle_snapshots_have_its_scale_factor_and_redshift(mixed, tmp_path):
    """The export's particles/cdm had time and step but not the a and redshift its field snapshots have, so the
    particles could not be told by redshift. Now load_run's particles carry them (``clocks``), and the export's
    particles/cdm has them as coordinates along time, equal to the root group's and to each particle snapshot's
    attributes."""
    cdm = simulator.load_run(mixed).particles["cdm"]
    assert set(cdm.clocks) == {"a", "redshift"}
    np.testing.assert_allclose(cdm.clocks["redshift"], [127, 63], rtol=1e-12)
    np.testing.assert_allclose(cdm.clocks["a"], 1 / (1 + cdm.clocks["redshift"]), rtol=1e-12)
    for i, index in enumerate(sorted((mixed / "particles").glob("s*.h5"))):
        with h5py.File(index) as f:
            assert (cdm.clocks["a"][i], cdm.clocks["redshift"][i]) == (f.attrs["a"], f.attrs["redshift"])
    path = export.export_netcdf(mixed, tmp_path / "mixed.nc")
    with xr.open_dataset(path) as root, xr.open_dataset(path, group="particles/cdm") as ds:
        assert {"a", "redshift", "step"} <= set(ds.position.coords)
        assert ds.position.dims == ("time", "particle", "component")
        np.testing.assert_array_equal(ds.a.values, root.a.values)
        np.testing.assert_array_equal(ds.redshift.values, root.redshift.values)
        assert ds.sel(time=ds.time[ds.redshift.values == 63]).position.shape == (1, 512, 3)  # picked by redshift


def test_a_cosmological_run_s_age_is_in_gyr_wherever_it_is_called_cosmic_time(mixed, tmp_path):
    """``cosmic_time`` was the age in Gyr in the time series (its description says so) and in 1/H0 in every field and
    particle snapshot (0.0939 Gyr written as 0.00672 at z = 31): one name, two units, no unit written. Now it is
    Gyr wherever it is written, the run's units say so (``cosmic_time: Gyr``, in every file's units and in the
    export's ``cosmic_time_series``), and its values are the matter + Lambda age 2 / (3 sqrt(OL) H0)
    asinh(sqrt(OL / Om) a^1.5), H0 = 100 h km/s/Mpc, h = 0.7: 0.0117404 Gyr at z = 127."""
    run = simulator.load_run(mixed)
    om, ol, h = 0.3, 0.7, 0.7
    gyr_h0 = 977.792221 / (100 * h)  # 1/H0 in Gyr: 977.79 Gyr km/s/Mpc over H0 in km/s/Mpc
    def age(a): return 2 / (3 * np.sqrt(ol)) * np.arcsinh(np.sqrt(ol / om) * a**1.5) * gyr_h0
    ts = run.timeseries
    np.testing.assert_allclose(ts["cosmic_time"], age(ts["a"]), rtol=1e-6)
    assert ts["cosmic_time"][0] == pytest.approx(0.0117404, rel=1e-5)
    assert run.units["cosmic_time"] == "Gyr"
    files = [*sorted((mixed / "snapshots").glob("s*.h5")), *sorted((mixed / "particles").glob("s*.h5"))]
    assert len(files) == 4
    for index in files:
        with h5py.File(index) as f:
            row = int(np.flatnonzero(ts["step"] == f.attrs["step"])[0])  # the snapshots' steps have rows
            assert f.attrs["cosmic_time"] == pytest.approx(ts["cosmic_time"][row], rel=1e-12), index
            assert f.attrs["cosmic_time_gyr"] == f.attrs["cosmic_time"]
    for index in [*sorted((mixed / "snapshots").glob("s*.h5")), mixed / "spectra.h5"]:  # the files with units
        with h5py.File(index) as f:
            assert json.loads(f.attrs["units"])["cosmic_time"] == "Gyr", index
    with xr.open_dataset(export.export_netcdf(mixed, tmp_path / "mixed.nc")) as ds:
        assert ds.cosmic_time_series.attrs["units"] == "Gyr" and "Gyr" in ds.cosmic_time_series.attrs["long_name"]
        assert json.loads(ds.attrs["units"])["cosmic_time"] == "Gyr"
        assert ds.time_series.attrs["units"] == ds.time.attrs["units"] == "ln(a/a_start), a_start = 1/(1 + 127)"
        assert "units" not in ds.z_series.attrs and "units" not in ds.a_series.attrs  # numbers without a unit


def test_a_cosmological_run_s_time_series_has_its_step_and_clocks_as_coordinates(mixed, tmp_path):
    """The export's snapshot fields have step, a and redshift as coordinates, its spectra step_spectra, a_spectra
    and z_spectra; the time series' columns had none, so `ds.kinetic_series.plot(x="z_series")` failed. Now
    step_series and the clock columns a_series, z_series, cosmic_time_series are coordinates of every other column,
    equal to load_run's columns; a run without clocks has step_series alone."""
    run = simulator.load_run(mixed)
    with xr.open_dataset(export.export_netcdf(mixed, tmp_path / "mixed.nc")) as ds:
        clocks = {"step_series", "a_series", "z_series", "cosmic_time_series"}
        assert clocks <= set(ds.kinetic_series.coords) and clocks <= set(ds.coords)
        assert not clocks & set(ds.data_vars) and "kinetic_series" in ds.data_vars
        for name in clocks:
            np.testing.assert_array_equal(ds[name].values, run.timeseries[name.removesuffix("_series")])
        np.testing.assert_array_equal(ds.kinetic_series.swap_dims(time_series="z_series").z_series.values,
                                      run.timeseries["z"])  # plotted against redshift


def test_a_cosmological_run_s_tasks_are_exported_with_their_scale_factor_and_redshift(mixed, tmp_path):
    """The export's tasks/<name> of a cosmological run had time (ln a/a_start) and step but no a or redshift, where
    its snapshots, particles and spectra have them: a slice could not be told by redshift. Now every group along
    time has a and redshift as coordinates, a = a_start exp(time) and redshift 1/a - 1, as the snapshots'."""
    run = simulator.load_run(mixed)
    assert set(run.tasks) == {"rho_mid", "rho_max"}
    path = export.export_netcdf(mixed, tmp_path / "mixed.nc")
    for name, task in run.tasks.items():
        with xr.open_dataset(path, group=f"tasks/{name}") as ds:
            assert {"a", "redshift", "step"} <= set(ds[name].coords) and ds[name].dims == ("time", *task.dims)
            np.testing.assert_allclose(ds.a.values, np.exp(task.time) / 128, rtol=1e-14)
            np.testing.assert_allclose(ds.redshift.values, 128 * np.exp(-task.time) - 1, rtol=1e-12)
            assert ds.redshift.values[0] == 127 and len(task.time) > 2
    with xr.open_dataset(path) as root, xr.open_dataset(path, group="tasks/rho_max") as ds:
        assert (ds.a.values[0], ds.redshift.values[0]) == (root.a.values[0], root.redshift.values[0])  # both at step 0
    with h5py.File(path) as f:  # the particles' a and redshift, from their files, are not added again
        assert f["particles/cdm/position"].attrs["coordinates"] == "step a redshift"
        assert f["tasks/rho_mid/rho_mid"].attrs["coordinates"].split() == ["step", "a", "redshift"]


def test_a_task_s_figure_labels_its_time_axis_in_the_run_s_unit_or_redshift(rich, mixed):
    """run.plot.task (plots/task_<name>.png) labelled the time axis of a box reduction and of a profile "t", with
    no unit, and drew a cosmological run's rows against ln(a/a_start) where its time series and spectra figures
    read in redshift. Now the axis is the other figures': "t (code units)", or redshift z (1 + z on an inverted log
    axis, ticks at the run's redshifts)."""
    import matplotlib
    matplotlib.use("Agg")
    run = simulator.load_run(rich)
    for name in ("u_max", "speed_x"):  # a box reduction (a curve) and a profile (an image against time)
        ax = run.plot.task(name).axes[0]
        assert ax.get_xlabel() == "t (code units)", name
    ax = run.plot.task("u_max").axes[0]
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), run.tasks["u_max"].time)
    cosmo = simulator.load_run(mixed)
    ax = cosmo.plot.task("rho_max").axes[0]
    assert ax.get_xlabel() == "redshift z" and ax.get_xscale() == "log" and ax.xaxis_inverted()
    task = cosmo.tasks["rho_max"]
    np.testing.assert_allclose(ax.lines[0].get_xdata(), 128 * np.exp(-task.time), rtol=1e-12)  # 1 + z
    assert ax.lines[0].get_xdata()[0] == 128


def test_the_de_broglie_resolution_of_a_cosmological_run_is_labelled_a_pure_number(mixed, tmp_path):
    """kmax_de_broglie is k_max / k_rms, a ratio (32804 at z = 127 on 16^3, 1 Mpc/h), but its description, the
    export's long_name, ended "(comoving h/Mpc)": a unit it does not have. Now it says it has none; its values are
    the grid's largest wavenumber pi N / L over the rms de Broglie wavenumber, above 2 where resolved."""
    with xr.open_dataset(export.export_netcdf(mixed, tmp_path / "mixed.nc")) as ds:
        label = ds.kmax_de_broglie_series.attrs["long_name"]
        assert label.startswith("k_max / k_rms") and "h/Mpc)" not in label and label.endswith("no unit)")
        assert "units" not in ds.kmax_de_broglie_series.attrs and np.all(ds.kmax_de_broglie_series.values > 2)


def test_a_boussinesq_run_exports_its_horizontal_vertical_spectra_and_kh_kz_maps(tmp_path):
    """configs/stratified_turbulence.yaml on 8^3 in float64, read and exported: the spectra binned by k_h and |k_z|
    along their own axes from bin 0 (the vertically uniform modes, and the shear: no mean, real energy that the
    reading dropped with |k|'s k = 0 before, 0.0248 of E_K = 0.0395 left in one run), so E_K(|k_z|) sums to E_K;
    the (k_h, |k_z|) maps over (time_spectra, k_h, k_z) (the export took k_h and k_z for clocks of the rows
    before: ValueError, shape incompatible)."""
    overrides = {"grid.shape": 8, "time.t_end": 0.2, "output.chunk": 2, "output.snapshots.dt": None,
                 "checkpoint.every": 0, "fft.backend": "single", "runtime.cpu_devices": len(jax.devices()),
                 "precision": "float64"}
    cfg = simulator.load_config(ROOT / "configs" / "stratified_turbulence.yaml", overrides)
    assert simulator.run_config(cfg, tmp_path / "strat") == 0
    run = simulator.load_run(tmp_path / "strat")
    spectra, rows = run.spectra, run.timeseries
    assert spectra["k_h"][0] == spectra["k_z"][0] == 0 and spectra["k"][0] > 0
    assert spectra["energy_kz"].shape == (spectra["time"].size, spectra["k_z"].size)
    assert np.all(spectra["energy_kz"][:, 0] > 1e-3 * spectra["energy_kz"].sum(axis=1))  # bin 0 holds energy
    at = [int(np.flatnonzero(np.isclose(rows["time"], t))[0]) for t in spectra["time"]]
    np.testing.assert_allclose(spectra["energy_kz"].sum(axis=1), rows["kinetic_energy"][at], rtol=1e-12)
    np.testing.assert_allclose(spectra["potential_energy_kz"].sum(axis=1), rows["potential_energy"][at], rtol=1e-12)
    with xr.open_dataset(export.export_netcdf(tmp_path / "strat")) as ds:
        for name in ("energy", "energy_kh", "potential_energy_kz", "energy_kh_kz", "potential_energy_kh_kz"):
            np.testing.assert_array_equal(ds[f"{name}_spectra"].values, spectra[name])
        assert ds.energy_spectra.dims == ("time_spectra", "k")
        assert ds.energy_kh_spectra.dims == ("time_spectra", "k_h")
        assert ds.potential_energy_kz_spectra.dims == ("time_spectra", "k_z")
        assert ds.energy_kh_kz_spectra.dims == ("time_spectra", "k_h", "k_z")
        np.testing.assert_array_equal(ds.k_h.values, spectra["k_h"])
        np.testing.assert_array_equal(ds.k_z.values, spectra["k_z"])
        assert ds.k_h.attrs["units"] == ds.k.attrs["units"]


def test_a_stack_of_scalar_fields_gets_its_own_index_dimension(tmp_path, devices):
    run = tmp_path / "stack"
    run.mkdir()
    shutil.copy(LEGACY / "config.yaml", run)  # a run's config; the snapshots are written here
    fft = BACKENDS["slab"]((8, 8, 8), build_mesh(BACKENDS["slab"], None, devices[:2]))
    rng = np.random.default_rng(0)
    stacks = [rng.standard_normal((2, 8, 8, 8)) for _ in range(2)]
    for step, stack in enumerate(stacks):
        array = jax.make_array_from_callback(stack.shape, fft.real_sharding(1), lambda i, s=stack: s[i])
        write_snapshot(run / "snapshots" / f"s{step:08d}", {"scalar": array}, {"step": step}, [1.0, 2.0, 4.0],
                       0.5 * step, stacked=["scalar"])
    with xr.open_dataset(export.export_netcdf(run)) as ds:
        assert ds.scalar.dims == ("time", "scalar_index", "x", "y", "z") and list(ds.scalar_index.values) == [0, 1]
        np.testing.assert_array_equal(ds.scalar.values, np.stack(stacks))
        np.testing.assert_array_equal(ds.z.values, np.arange(8) * 0.5)


def test_a_run_of_the_first_format_exports_and_merges(tmp_path):
    run = copy_of(LEGACY, tmp_path)  # schema 1: stored (3, Nx, Ny, Nz), no dimension scales, no units
    assert main(["export", str(run), "--merge", "--netcdf", str(run / "run.nc")]) == 0
    with xr.open_dataset(run / "run.nc") as ds, Snapshot(run / "snapshots" / "s00000010.h5") as snap:
        assert ds.velocity.dims == ("time", "component", "x", "y", "z") and list(ds.step.values) == [0, 10]
        np.testing.assert_array_equal(ds.velocity.isel(time=1).values, snap.read("velocity"))
        np.testing.assert_array_equal(ds.x.values, np.arange(8) * (2 * np.pi / 8))
        with Snapshot(run / "snapshots" / "merged" / "s00000010.h5") as merged:
            np.testing.assert_array_equal(merged.read("vorticity"), snap.read("vorticity"))


@pytest.mark.multiprocess  # the run of the fixture tg
def test_refusals_exit_2_in_one_line_and_write_nothing(tg, tmp_path, capsys):
    run = copy_of(tg, tmp_path)
    target = tmp_path / "out" / "run.nc"
    err = refused(capsys, str(run), "--netcdf", str(target), "--max-size", "20KiB")
    assert "--max-size = '20KiB' (20 KiB) is below the export's" in err and "give --max-size 1MiB or more" in err
    # the size check comes before the merge too: nothing at all is written
    refused(capsys, str(run), "--merge", "--netcdf", str(target), "--max-size", "20KiB")
    assert not (tmp_path / "out").exists() and not (run / "snapshots" / "merged").exists()
    assert "--fields = 'pressure' is not a field of every snapshot; allowed: velocity, vorticity" in refused(
        capsys, str(run), "--fields", "pressure")
    assert "--max-size = 'lots' is not a size" in refused(capsys, str(run), "--max-size", "lots")
    assert "applies to the netCDF file only" in refused(capsys, str(run), "--merge", "--fields", "velocity")
    assert "RUN_DIR = " in refused(capsys, str(tmp_path / "nowhere"))
    # a file under a file, or in more than one missing folder (its tree was made silently): one line, nothing made
    (tmp_path / "afile").write_text("mine")
    # the value is shown elided where it is long (a deep temporary directory); the folder it lies under is whole
    said = refused(capsys, str(run), "--netcdf", str(tmp_path / "afile" / "x.nc"))
    assert said.startswith("error: --netcdf = '") and f"x.nc' lies under {tmp_path}/afile, which is a file" in said
    assert "would need 2 new folders" in refused(capsys, str(run), "--netcdf", str(tmp_path / "no" / "where" / "x.nc"))
    assert not (tmp_path / "no").exists() and (tmp_path / "afile").read_text() == "mine"
    # an existing file is never replaced without --overwrite
    target.parent.mkdir()
    target.write_text("mine")
    assert "already exists; give --overwrite to replace it" in refused(capsys, str(run), "--netcdf", str(target))
    assert "is not an earlier export" in refused(capsys, str(run), "--netcdf", str(target), "--overwrite")
    assert target.read_text() == "mine"
    target.unlink()
    assert main(["export", str(run), "--netcdf", str(target), "--fields", "vorticity"]) == 0
    assert main(["export", str(run), "--netcdf", str(target), "--overwrite"]) == 0
    with xr.open_dataset(target) as ds:  # an earlier export (marked as one) is replaced
        assert ds.velocity.shape == (3, 3, 8, 8, 8) and ds.attrs["simulator_export"] == version.__version__
    assert main(["export", str(run), "--merge"]) == 0
    capsys.readouterr()
    merged = run / "snapshots" / "merged" / "s00000000.h5"
    stamp = merged.stat().st_mtime_ns
    assert "merged/s00000000.h5' already exists; give --overwrite" in refused(capsys, str(run), "--merge")
    assert merged.stat().st_mtime_ns == stamp
    # a shard gone: the snapshot is named, nothing written
    shutil.rmtree(run / "snapshots" / "s00000004")
    assert "s00000004.h5: shard file" in refused(capsys, str(run), "--netcdf", str(tmp_path / "other.nc"))
    assert not (tmp_path / "other.nc").exists()
    # no snapshots at all: nothing to merge; the netCDF file holds the spectra and the time series
    shutil.rmtree(run / "snapshots")
    assert "has no snapshots" in refused(capsys, str(run), "--merge")
    with xr.open_dataset(export.export_netcdf(run, tmp_path / "other.nc")) as ds:
        assert "time" not in ds.dims and ds.energy_spectra.shape == (3, 2) and ds.energy_series.shape == (3,)


@pytest.mark.multiprocess  # the run of the fixture tg
def test_the_documented_commands_and_snippet_as_written_on_a_run(tg, tmp_path):
    """The export commands and xarray lines of docs/how-to/read-outputs.md, on the tiny run in place of the
    quickstart."""
    run = copy_of(tg, tmp_path)
    commands = PAGE.split("```bash\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert len(commands) == 2
    for line in commands:
        words = line.split("#")[0].split()
        assert words[:3] == [".venv/bin/simulator", "export", "outputs/quickstart"], line
        assert main(["export", str(run), *words[3:]]) == 0
    assert (run / "export" / "run.nc").is_file() and (run / "snapshots" / "merged" / "series.xdmf").is_file()
    scope: dict = {}
    exec(PAGE.split("```python\n", 1)[1].split("\n```", 1)[0].replace("outputs/quickstart", str(run)), scope)
    with scope["ds"], Snapshot(run / "snapshots" / "s00000008.h5") as snap:
        assert scope["wz"].dims == ("x", "y")
        np.testing.assert_array_equal(scope["wz"].values, snap.read("vorticity", (2, slice(None), slice(None), 0)))
        np.testing.assert_array_equal(scope["ek"].values, simulator.load_run(run).spectra["energy"][-1])
        np.testing.assert_array_equal(scope["e"].values, simulator.load_run(run).timeseries["energy"])


def export_cli(*args: object) -> subprocess.CompletedProcess:
    """``python -m simulator export ARGS``, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "simulator", "export", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.stdout == "" and r.stderr.count("\n") == 1 and r.stderr.startswith("error: "), r.stderr[-3000:]
    return r.stderr


@pytest.mark.multiprocess  # the run of the fixture tg
def test_overwrite_replaces_an_earlier_export_only_never_a_file_of_a_run(tg, tmp_path, capsys):
    run = copy_of(tg, tmp_path)
    series = run / "timeseries.csv"
    before = series.read_bytes()
    err = one_error_line(r := export_cli(run, "--netcdf", series, "--overwrite"))  # as a user meets it
    assert r.returncode == 2 and "is not an earlier export; --overwrite replaces only a file" in err, err
    assert "timeseries.csv" in err and series.read_bytes() == before and not (run / "timeseries.csv.tmp").exists()
    for target in (run / "config.yaml", run / "run.log", max((run / "snapshots").glob("s*.h5"))):
        before = target.read_bytes()
        assert "is not an earlier export" in refused(capsys, str(run), "--netcdf", str(target), "--overwrite")
        assert target.read_bytes() == before and not target.with_name(target.name + ".tmp").exists()




@pytest.mark.multiprocess  # the run of the fixture tg
def test_a_full_or_read_only_disk_is_one_line_exit_1_and_the_earlier_export_stays(tg, tmp_path):
    with small_filesystem(tmp_path / "small", "320k") as fs:  # room for an export of tg (66 kB), not for another
        earlier = fs / "run.nc"
        assert export_cli(tg, "--netcdf", earlier).returncode == 0
        before = earlier.read_bytes()
        for reason in ("No space left on device", "Read-only file system"):
            if reason == "Read-only file system":
                assert subprocess.run(["mount", "-o", "remount,ro", str(fs)]).returncode == 0
            for target in (earlier, fs / "new" / "run.nc"):
                r = export_cli(tg, "--netcdf", target, *(["--overwrite"] if target == earlier else []))
                err = one_error_line(r)
                assert r.returncode == 1 and f"writing {target} failed: {reason}" in err, err
                assert sorted(p.name for p in fs.rglob("*")) == ["run.nc"] and earlier.read_bytes() == before


SLOW_EXPORT = """\
import sys, time
from simulator.results import export, export_groups
from simulator.entry import main
series = export.timeseries_group
def slowly(*args):  # the file half written when the signal comes
    series(*args)
    print("writing", flush=True)
    time.sleep(60)
export.timeseries_group = slowly
main()
"""


@pytest.mark.multiprocess  # the run of the fixture tg
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_during_export_leaves_no_temporary_file_and_the_earlier_export(tg, tmp_path, signum):
    earlier = tmp_path / "run.nc"
    assert export_cli(tg, "--netcdf", earlier).returncode == 0
    before = earlier.read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", SLOW_EXPORT, "export", str(tg), "--netcdf", str(earlier),
                             "--overwrite"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    assert earlier.with_name("run.nc.tmp").exists()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err[-3000:]
    assert err.count("\n") == 1 and err.startswith("error: ") and signum.name in err and str(earlier) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"] and earlier.read_bytes() == before


#: `simulator export` whose writing runs a weakref callback that the stop signal lands in (as a callback of h5py's
#: or numpy's objects, freed at any instant, may): the signal is raised from inside the callback, so its handler
#: runs there, where Python cannot propagate an exception
SIGNAL_IN_A_CALLBACK = """\
import signal, weakref
from simulator.results import export
from simulator.entry import main
series = export.timeseries_group
class Freed:
    pass
def signalled(*args):  # the file half written when the signal comes
    series(*args)
    freed = Freed()
    keep = weakref.ref(freed, lambda _ref: signal.raise_signal(signal.SIG{name}))
    del freed
export.timeseries_group = signalled
main()
"""


@pytest.mark.multiprocess  # the run of the fixture tg
@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_that_lands_in_a_weakref_callback_still_stops_the_export(tg, tmp_path, signum):
    """A SIGUSR1 that landed while a weakref callback ran raised the stop inside the callback, where Python ignores
    an exception ("Exception ignored in ..."): the export ran to its end, exit 0, and every later signal was
    ignored too. The stop reaches the export whatever Python was running: exit 75, one line, no partial file,
    the earlier export kept."""
    earlier = tmp_path / "run.nc"
    assert export_cli(tg, "--netcdf", earlier).returncode == 0
    before = earlier.read_bytes()
    code = SIGNAL_IN_A_CALLBACK.format(name=signum.name.removeprefix("SIG"))
    r = subprocess.run([sys.executable, "-c", code, "export", str(tg), "--netcdf", str(earlier), "--overwrite"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 75, r.stderr[-3000:]
    err = r.stderr
    assert err.count("\n") == 1 and err.startswith("error: ") and signum.name in err and str(earlier) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.nc"] and earlier.read_bytes() == before


def test_statistics_tasks_particles_and_trajectories_are_groups_equal_to_the_runs_readers(rich, tmp_path):
    path = export.export_netcdf(rich, tmp_path / "rich.nc")
    run = simulator.load_run(rich)
    with xr.open_dataset(path, group="statistics") as ds:
        names = [n for n in run.statistics if n not in ("attrs", "time", "step")]
        assert set(names) <= set(ds.variables) and "structure_longitudinal_x" in names
        for name in names:
            np.testing.assert_array_equal(ds[name].values, run.statistics[name], err_msg=name)
        np.testing.assert_array_equal(ds.time.values, run.statistics["time"])
        np.testing.assert_array_equal(ds.step.values, run.statistics["step"])
        assert ds.structure_longitudinal_x.dims == ("time", "orders", "r_x")
        assert ds.pdf_increment.dims == ("time", "pdf_separations", "pdf_centres") and ds.skewness.dims == ("time",)
        np.testing.assert_array_equal(ds.attrs["spacing"], run.statistics["attrs"]["spacing"])
        assert ds.attrs["equation"] == "navier_stokes"
    for name, task in run.tasks.items():
        with xr.open_dataset(path, group=f"tasks/{name}") as ds:
            assert ds[name].dims == ("time", *task.dims), name
            np.testing.assert_array_equal(ds[name].values, task.values, err_msg=name)
            np.testing.assert_array_equal(ds.time.values, task.time)
            np.testing.assert_array_equal(ds.step.values, task.step)
            for d in task.dims:
                np.testing.assert_array_equal(ds[d].values, task.coords[d])
                assert ds[d].attrs["units"] == "code units"
            assert {k: ds[name].attrs[k] for k in ("units", "long_name", "reduce")} == {
                k: task.attrs[k] for k in ("units", "long_name", "reduce")}
            assert ds.time.attrs["units"] == "code units"
    assert [run.tasks[n].dims for n in ("wz_mid", "speed_x", "u_max")] == [("x", "y"), ("x",), ()]
    assert set(run.particles) == set(run.trajectories) == {"tracers", "drops"}
    for name, series in run.particles.items():
        with xr.open_dataset(path, group=f"particles/{name}") as ds:
            for key in ("position", "unwrapped", "velocity"):
                assert ds[key].dims == ("time", "particle", "component")
                assert ds[key].attrs["units"] == "code units" and name in ds[key].attrs["long_name"]
                np.testing.assert_array_equal(ds[key].values, getattr(series, key), err_msg=f"{name} {key}")
            np.testing.assert_array_equal(ds.time.values, series.time)
            np.testing.assert_array_equal(ds.step.values, series.step)
            assert list(ds.component.values) == ["x", "y", "z"] and ds.time.attrs["axis"] == "T"
    for name, tracks in run.trajectories.items():
        with xr.open_dataset(path, group=f"trajectories/{name}") as ds:
            np.testing.assert_array_equal(ds.unwrapped.values, tracks.x)
            np.testing.assert_array_equal(ds.position.values, tracks.position)
            np.testing.assert_array_equal(ds.step.values, tracks.step)
            np.testing.assert_array_equal(ds.velocity.values, tracks.v)
            np.testing.assert_array_equal(ds.time.values, tracks.time)
            np.testing.assert_array_equal(ds.particle.values, tracks.ids)
    with xr.open_dataset(path) as ds:  # the root group as before
        assert ds.velocity.shape == (3, 3, 8, 8, 8) and "energy_series" in ds


def test_the_exported_statistics_say_their_separations_are_cells_and_give_them_in_length_units(rich, tmp_path):
    """The statistics group's r_x, r_y, r_z held 1, 2 with no units nor long name, where every other group's axes
    are in length units: S_2(r) plotted against r_x took cells for lengths (a 2 pi box of 8 cells: r = 0.785, not
    1). Now r_<a> says `cells` and r_<a>_length (a coordinate of the structure functions) gives r in length units."""
    path = export.export_netcdf(rich, tmp_path / "rich.nc")
    spacing = 2 * np.pi / 8
    with xr.open_dataset(path, group="statistics") as ds:
        for a in "xyz":
            assert ds[f"r_{a}"].attrs["units"] == "cells" and f"r_{a}_length" in ds[f"r_{a}"].attrs["long_name"]
            np.testing.assert_allclose(ds[f"r_{a}_length"].values, [spacing, 2 * spacing], rtol=1e-12)
            assert ds[f"r_{a}_length"].attrs["units"] == "code units"
            assert f"r_{a}_length" in ds[f"structure_longitudinal_{a}"].coords
            assert f"r_{a}_length" in ds[f"structure_signed3_{a}"].coords
        assert ds.pdf_separations.attrs["units"] == "cells" and ds.pdf_centres.attrs["units"] == "rms"
        assert "order" in ds.orders.attrs["long_name"] and ds.skewness.dims == ("time",)


def test_load_run_particles_equal_the_particle_snapshot_files(rich):
    run = simulator.load_run(rich)
    indexes = sorted((rich / "particles").glob("s*.h5"))
    assert len(indexes) == 3
    for name, series in run.particles.items():
        assert series.position.shape == (3, {"tracers": 5, "drops": 8}[name], 3)
    for i, index in enumerate(indexes):
        with h5py.File(index) as f:
            species = f["species"][()]
            assert float(f.attrs["time"]) == run.particles["drops"].time[i]
            assert int(f.attrs["step"]) == run.particles["drops"].step[i] == int(index.stem[1:])
            for s, name in enumerate(json.loads(f.attrs["species_names"])):
                for key in ("position", "unwrapped", "velocity"):
                    np.testing.assert_array_equal(getattr(run.particles[name], key)[i], f[key][()][species == s])
    with h5py.File(rich / "particles" / "trajectories.h5") as f:
        assert list(run.trajectories) == json.loads(f.attrs["species_names"])
        np.testing.assert_array_equal(run.trajectories["tracers"].x, f["unwrapped"][()][:, :3])
        np.testing.assert_array_equal(run.trajectories["drops"].v, f["velocity"][()][:, 3:])


def test_particle_series_and_trajectories_print_in_one_line_each():
    """`run.particles` in a notebook printed the three (T, N, 3) arrays of every species (60 lines for 4096 cold
    particles); like `run` and its snapshots, each species now prints one line, its arrays still attributes."""
    from simulator.output.lagrangian import Trajectories
    from simulator.output.particles import ParticleSeries

    xyz = np.zeros((2, 4096, 3))
    series = ParticleSeries("cdm", np.array([0, 18]), np.array([0.0, 0.693147]), xyz, xyz, xyz, {})
    tracks = Trajectories("tracers", np.array([0.0, 1.0, 2.0]), xyz[:, :8], xyz[:, :8], np.arange(8), np.arange(3),
                          xyz[:, :8])
    assert repr({"cdm": series}) == "{'cdm': ParticleSeries(cdm: 4096 particles, 2 snapshots, t 0 .. 0.693147)}"
    assert repr(tracks) == "Trajectories(tracers: 8 particles, 3 rows, t 0 .. 2)"
    assert series.position is xyz and tracks.ids.shape == (8,)


def test_trajectory_ids_index_the_species_particle_snapshots_in_load_run_and_the_export(rich, tmp_path):
    """``.ids`` and the export's ``particle`` are the rows of the species' particle snapshots: drops' three
    recorded particles are its rows 0, 1, 2, not the file's ids 5, 6, 7 (rows of other drops: a silent mix-up)."""
    run = simulator.load_run(rich)
    path = export.export_netcdf(rich, tmp_path / "rich.nc")
    for name, tracks in run.trajectories.items():
        series = run.particles[name]
        np.testing.assert_array_equal(tracks.ids, [0, 1, 2], err_msg=name)
        rows = [int(np.flatnonzero(tracks.time == t)[0]) for t in series.time]  # the snapshots' steps have rows
        np.testing.assert_array_equal(tracks.x[rows], series.unwrapped[:, tracks.ids], err_msg=name)
        with xr.open_dataset(path, group=f"particles/{name}") as p, \
                xr.open_dataset(path, group=f"trajectories/{name}") as t:
            picked = p.unwrapped.sel(particle=t.particle).values
            np.testing.assert_array_equal(t.unwrapped.values[rows], picked, err_msg=name)


def test_every_reading_route_gives_steps_as_integers_and_the_trajectories_their_steps(rich, tmp_path):
    """load_run's time series gave ``step`` as float64 (10.0) where its spectra, statistics, particles and the
    export gave int64; the export's trajectories had no ``step`` at all, and load_run's none either. Now every
    route's steps are int64 and equal, the trajectories' those of particles/trajectories.h5."""
    run = simulator.load_run(rich)
    path = export.export_netcdf(rich, tmp_path / "rich.nc")
    steps = {"timeseries": run.timeseries["step"], "spectra": run.spectra["step"], "statistics": run.statistics["step"],
             **{f"particles {n}": p.step for n, p in run.particles.items()},
             **{f"trajectories {n}": t.step for n, t in run.trajectories.items()},
             **{f"task {n}": t.step for n, t in run.tasks.items()}}
    assert {name: s.dtype for name, s in steps.items()} == {name: np.dtype(np.int64) for name in steps}
    assert run.timeseries["step"].tolist() == [0, 2, 4, 6, 8]  # the start, then a row per chunk of 2 steps
    with h5py.File(rich / "particles" / "trajectories.h5") as f:
        for tracks in run.trajectories.values():
            np.testing.assert_array_equal(tracks.step, f["step"][()])
    with xr.open_dataset(path) as ds:
        assert ds.step_series.dtype == ds.step.dtype == ds.step_spectra.dtype == np.int64
        assert set(ds.energy_series.coords) == {"time_series", "step_series"}  # a run without other clocks
        np.testing.assert_array_equal(ds.step_series.values, run.timeseries["step"])
    for name, tracks in run.trajectories.items():
        with xr.open_dataset(path, group=f"trajectories/{name}") as ds:
            assert ds.step.dtype == np.int64 and "step" in ds.position.coords and "step" in ds.velocity.coords
            np.testing.assert_array_equal(ds.step.values, tracks.step)


def test_the_trajectories_name_wrapped_and_unwrapped_positions_as_the_particle_snapshots_do(rich, tmp_path):
    """The export's trajectories/<species> called the unwrapped path ``position``, the name particles/<species>
    gives the position wrapped into the box: the same name, two quantities. Now both groups hold ``position``
    (wrapped into [0, L)) and ``unwrapped``, and at the snapshots' steps they agree particle for particle."""
    run = simulator.load_run(rich)
    path = export.export_netcdf(rich, tmp_path / "rich.nc")
    box = 2 * np.pi
    for name, tracks in run.trajectories.items():
        assert np.all((tracks.position >= 0) & (tracks.position < box))
        np.testing.assert_allclose(tracks.position, np.mod(tracks.x, box), rtol=0, atol=1e-5)
        with xr.open_dataset(path, group=f"particles/{name}") as p, \
                xr.open_dataset(path, group=f"trajectories/{name}") as t:
            assert set(t.data_vars) == set(p.data_vars) == {"position", "unwrapped", "velocity"}
            at = t.sel(time=p.time)  # the snapshots' times are rows of the trajectories
            for key in ("position", "unwrapped"):
                assert "wrapped" in t[key].attrs["long_name"] and t[key].attrs["units"] == "code units"
                np.testing.assert_array_equal(at[key].values, p[key].sel(particle=t.particle).values, err_msg=key)
            assert "unwrapped" not in t.position.attrs["long_name"]


def test_load_run_gives_the_statistics_attributes_as_values_not_json_text(rich, tmp_path):
    """run.statistics["attrs"] held '[8, 8, 8]' (the JSON text statistics.h5 stores lists as) where a user expects
    the list; the export wrote that text as the group's attribute. Now the lists are lists in load_run, and number
    arrays in the export's statistics group."""
    attrs = simulator.load_run(rich).statistics["attrs"]
    assert attrs["shape"] == [8, 8, 8] and attrs["equation"] == "navier_stokes"
    assert attrs["box"] == pytest.approx([2 * np.pi] * 3, rel=1e-15)
    assert attrs["spacing"] == pytest.approx([2 * np.pi / 8] * 3, rel=1e-15)
    assert isinstance(attrs["description"], str) and attrs["description"].startswith("Eulerian")
    with xr.open_dataset(export.export_netcdf(rich, tmp_path / "rich.nc"), group="statistics") as ds:
        assert ds.attrs["shape"].tolist() == [8, 8, 8]
        np.testing.assert_allclose(ds.attrs["spacing"], [2 * np.pi / 8] * 3, rtol=1e-15)


@pytest.mark.parametrize("name", ["spectra.h5", "statistics.h5", "tasks.h5"])
@pytest.mark.parametrize("keep", [0, 1000])
def test_a_zero_length_or_cut_short_file_is_refused_in_one_line_naming_it(rich, tmp_path, capsys, name, keep):
    """A damaged spectra.h5 was a traceback (OSError), a damaged group file a line naming no file (what h5py
    says); now exit 2, one line naming the file, nothing written."""
    run = copy_of(rich, tmp_path)
    damaged = run / name
    damaged.write_bytes(damaged.read_bytes()[:keep])
    err = refused(capsys, str(run))
    assert f"cannot be exported: {damaged}: " in err and "restore or remove the damaged file" in err, err
    assert not (run / "export").exists()


@pytest.mark.parametrize("name, attribute", [("spectra.h5", "spectra"), ("statistics.h5", "statistics"),
                                             ("tasks.h5", "tasks"), ("particles/trajectories.h5", "trajectories")])
@pytest.mark.parametrize("keep", [0, 1000])
def test_load_run_names_a_zero_length_or_cut_short_row_file_in_one_line(rich, tmp_path, name, attribute, keep):
    """``load_run(RUN).spectra`` (statistics, tasks, trajectories) of a damaged file raised h5py's bare OSError,
    "Unable to synchronously open file (truncated file: ...)", naming no file; now a DamagedFileError (still an
    OSError) naming it and what to do, in one line."""
    run = copy_of(rich, tmp_path)
    damaged = run / name
    damaged.write_bytes(damaged.read_bytes()[:keep])
    with pytest.raises(OSError) as info:
        getattr(simulator.load_run(run), attribute)
    message = str(info.value)
    assert isinstance(info.value, DamagedFileError) and info.value.path == damaged, message
    assert message.startswith(f"{damaged} is damaged or not as the run writes it (OSError: ") and "\n" not in message
    assert message.endswith("restore it from a copy, or move it out of the run directory to read the rest of the run")


@pytest.mark.parametrize("damage", ["shard cut short", "index cut short"])
def test_a_damaged_particle_snapshot_is_named_with_what_to_do_in_load_run_plot_and_export(rich, tmp_path, capsys,
                                                                                         damage):
    """The newest particle snapshot damaged: ``load_run(RUN).particles`` raised IncompleteOutputError, which
    said what is damaged but not what to do, and `simulator plot` skipped slice.png (which draws that
    snapshot's particles) naming the field snapshots, "RUN/snapshots is damaged". Now a DamagedFileError naming
    the snapshot's index and what to do, the plot's line names that index (exit 1), and the export refuses it in
    one line naming it (exit 2)."""
    run = copy_of(rich, tmp_path)
    index = sorted((run / "particles").glob("s*.h5"))[-1]
    damaged = index.with_suffix("") / "p0000.h5" if damage == "shard cut short" else index
    damaged.write_bytes(damaged.read_bytes()[:1000])
    with pytest.raises(DamagedFileError) as info:
        _ = simulator.load_run(run).particles
    message = str(info.value)
    assert info.value.path == index and "\n" not in message and str(damaged) in message, message
    assert message.startswith(f"{index} is damaged or not as the run writes it (IncompleteOutputError: ")
    assert message.endswith("restore it from a copy, or move it out of the run directory to read the rest of the run")
    if damage == "shard cut short":  # one plot is enough to see the line name the index (a plot takes ~10 s)
        assert main(["plot", str(run)]) == 1
        err = capsys.readouterr().err
        assert f"skipped slice.png: {index} is damaged or not as the run writes it" in err, err
    assert f"cannot be exported: {index}: IncompleteOutputError: " in refused(capsys, str(run))
    assert not (run / "export").exists()


@pytest.mark.parametrize("damage", ["shard cut short", "shard missing", "index incomplete"])
def test_a_damaged_snapshot_s_open_names_it_and_says_what_to_do(rich, tmp_path, capsys, damage):
    """``load_run(RUN).snapshots[-1].open()`` of a damaged snapshot raised IncompleteOutputError saying what is
    damaged but not what to do; now its one line names the snapshot and ends with the advice a damaged file's
    (DamagedFileError's) has, and the export's refusal says its own advice once."""
    run = copy_of(rich, tmp_path)
    index = sorted((run / "snapshots").glob("s*.h5"))[-1]
    shard = index.with_suffix("") / "p0000.h5"
    if damage == "shard cut short":
        shard.write_bytes(shard.read_bytes()[:1000])
    elif damage == "shard missing":
        shard.unlink()
    else:
        with h5py.File(index, "a") as f:
            f.attrs["complete"] = False
    with pytest.raises(hdf5.IncompleteOutputError) as info:
        simulator.load_run(run).snapshots[-1].open()
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{index}"), message
    assert message.endswith(f"; restore the snapshot from a copy, or move {index.name} and {index.stem}/ out of "
                            f"{index.parent} to read the rest of the run"), message
    err = refused(capsys, str(run))
    assert f"cannot be exported: {index}" in err and err.count("restore") == 1, err


def test_a_time_series_whose_header_is_overwritten_is_damaged_not_read_as_holding_no_row(rich, tmp_path, capsys):
    """A timeseries.csv whose header was overwritten (NUL bytes, as a crash of the machine can leave) over
    intact rows read as a table of no row: load_run gave one column named by the NULs, and the export left it
    out as "holds no row: zero length, or a header only", silently losing its rows. Now it is damaged: a
    DamagedFileError naming it, and the export refuses it in one line."""
    run = copy_of(rich, tmp_path)
    series = run / "timeseries.csv"
    header, rows = series.read_text().split("\n", 1)
    series.write_text("\0" * len(header) + "\n" + rows)
    with pytest.raises(DamagedFileError, match=f"^{series} is damaged or not as the run writes it \\(ValueError: "
                                               "its header does not begin with step, time, dt\\)"):
        _ = simulator.load_run(run).timeseries
    assert f"cannot be exported: {series}: ValueError: " in refused(capsys, str(run))


@pytest.mark.parametrize("dataset", ["k", "time"])
def test_a_spectra_file_without_its_shells_or_times_is_damaged(rich, tmp_path, capsys, dataset):
    """A spectra.h5 without ``k`` (or ``time``), which a run creates it with: the export was a KeyError 'k'
    traceback (or left the file out as "holds no row", its rows lost unsaid), and `simulator plot` skipped the
    statistics figures calling the intact statistics.h5 damaged. Now load_run names spectra.h5 as damaged, the
    export refuses it in one line, and the plot's lines name it."""
    run = copy_of(rich, tmp_path)
    spectra = run / "spectra.h5"
    with h5py.File(spectra, "a") as f:
        del f[dataset]
    with pytest.raises(DamagedFileError, match=f"^{spectra} is damaged or not as the run writes it \\(ValueError: "
                                               f"it has no dataset {dataset}\\)"):
        _ = simulator.load_run(run).spectra
    assert f"cannot be exported: {spectra}: ValueError: " in refused(capsys, str(run))
    if dataset == "k":  # one plot is enough to see its lines name spectra.h5 (a plot takes ~10 s)
        assert main(["plot", str(run)]) == 1
        skipped = [line for line in capsys.readouterr().err.splitlines() if line.startswith("skipped")]
        assert skipped and all(f"{spectra} is damaged" in line for line in skipped), skipped


@pytest.mark.parametrize("dataset", ["orders", "time"])
def test_a_statistics_file_without_its_orders_or_times_is_damaged(rich, tmp_path, capsys, dataset):
    """A statistics.h5 without ``orders`` (the structure functions' axis; or ``time``), which a run creates it
    with: load_run read it without (a script's KeyError 'orders'), the export left the structure functions out as
    "axes of unknown meaning" (or, without time, exported the statistics as having no row to say), and `simulator
    plot` named the file with a bare KeyError. Now load_run names statistics.h5 as damaged and the missing
    dataset, the export refuses it in one line, and the plot's line says the same."""
    run = copy_of(rich, tmp_path)
    statistics = run / "statistics.h5"
    with h5py.File(statistics, "a") as f:
        del f[dataset]
    why = f"{statistics} is damaged or not as the run writes it (ValueError: it has no dataset {dataset})"
    with pytest.raises(DamagedFileError) as info:
        _ = simulator.load_run(run).statistics
    assert str(info.value).startswith(f"{why}; restore it from a copy"), info.value
    assert f"cannot be exported: {statistics}: ValueError: it has no dataset {dataset}" in refused(capsys, str(run))
    assert not (run / "export").exists()
    if dataset == "orders":  # one plot is enough to see its line name the dataset (a plot takes ~5 s)
        assert main(["plot", str(run)]) == 1
        assert f"skipped the statistics figures: {why}" in capsys.readouterr().err


def test_a_snapshot_index_without_its_time_is_named_by_export_and_plot(rich, tmp_path, capsys):
    """A snapshot index without the attribute ``time`` (not as the run writes it): `simulator export` was a
    KeyError 'time' traceback (exit 1) part way through the file, and `simulator plot` skipped slice.png naming
    RUN/snapshots; now the export refuses in one line naming the index (exit 2), and the plot's line names it."""
    run = copy_of(rich, tmp_path)
    index = sorted((run / "snapshots").glob("s*.h5"))[-1]
    with h5py.File(index, "a") as f:
        del f.attrs["time"]
    assert f"cannot be exported: {index} has no attribute time; restore or remove" in refused(capsys, str(run))
    assert not (run / "export").exists()
    assert main(["plot", str(run)]) == 1
    assert f"skipped slice.png: {index} is damaged or not as the run writes it (KeyError: " in capsys.readouterr().err


def test_groups_without_a_row_are_left_out_of_the_export_and_named(rich, tmp_path, capsys):
    """statistics.h5, tasks.h5 and particles/trajectories.h5 of a run stopped before their first row (their
    coordinates alone: a schedule whose first time, or output.trajectories.start, was not reached) were
    exported as groups of no time; now they are left out, each named in the "leaves out" line. Their
    Lagrangian statistics were an IndexError (load_run(RUN).lagrangian(), and `simulator plot` called the
    intact file damaged); now the statistics' one line says the rows are too few."""
    run = copy_of(rich, tmp_path)
    for name in ("statistics.h5", "tasks.h5", "particles/trajectories.h5"):
        with h5py.File(run / name, "a") as f:  # every row dropped, as trim does at a restart from step -1
            f.visititems(lambda _, ds: ds.resize(0, axis=0) if isinstance(ds, h5py.Dataset) and ds.maxshape[:1] ==
                         (None,) else None)
    assert main(["export", str(run)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "leaves out" in line]
    assert lines == [f"{run / 'export' / 'run.nc'} leaves out: statistics (statistics.h5 holds no row); tasks "
                     "(tasks.h5 holds no row); trajectories (particles/trajectories.h5 holds no row)"], lines
    with h5py.File(run / "export" / "run.nc") as f:
        assert not {"statistics", "tasks", "trajectories"} & set(f) and sorted(f["particles"]) == ["drops", "tracers"]
    with pytest.raises(ConfigError, match="0 row.* too few for Lagrangian statistics"):
        simulator.load_run(run).lagrangian()


def test_a_task_without_a_row_beside_tasks_with_rows_is_left_out_of_the_export_and_named(rich, tmp_path, capsys):
    """A task of tasks.h5 with no row among tasks with rows (its schedule's first time not reached: a later
    ``every``, a run stopped early) was exported as a group of no time; now it is left out and named in the
    "leaves out" line, as a file of no row is, and the other tasks are exported whole."""
    run = copy_of(rich, tmp_path)
    with h5py.File(run / "tasks.h5", "a") as f:  # every row of wz_mid dropped, as trim does at a restart
        f["wz_mid"].visititems(lambda _, ds: ds.resize(0, axis=0) if isinstance(ds, h5py.Dataset) and
                               ds.maxshape[:1] == (None,) else None)
    assert main(["export", str(run)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "leaves out" in line]
    assert lines == [f"{run / 'export' / 'run.nc'} leaves out: tasks/wz_mid (tasks.h5 holds no row of it)"], lines
    tasks = simulator.load_run(run).tasks
    with h5py.File(run / "export" / "run.nc") as f:
        assert sorted(f["tasks"]) == ["speed_x", "u_max"]
        for name in ("speed_x", "u_max"):
            np.testing.assert_array_equal(f["tasks"][name][name][:], tasks[name].values)


@pytest.mark.parametrize("attribute", ["spectra", "timeseries", "trajectories"])
def test_a_reader_out_of_memory_says_so_and_never_calls_an_intact_file_damaged(rich, monkeypatch, attribute):
    """A file too large for this machine's memory is intact: its reader's MemoryError passes as it is, where it
    was a DamagedFileError telling the user to restore the file from a copy or move it out of the run."""
    import csv

    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 96.0 GiB for an array")

    if attribute == "timeseries":
        monkeypatch.setattr(csv, "reader", out_of_memory)
    else:
        monkeypatch.setattr(h5py.Dataset, "__getitem__", out_of_memory)
    with pytest.raises(MemoryError):
        getattr(simulator.load_run(rich), attribute)


def test_a_snapshot_ref_has_its_time_read_from_the_index_alone(rich, tmp_path):
    """``[s.time for s in run.snapshots]`` (a SnapshotRef had only .step and .path: AttributeError) is each
    snapshot's time, read from its index's attributes without the shard files (removed here); a damaged index
    is a DamagedFileError naming it."""
    run = copy_of(rich, tmp_path)
    refs = simulator.load_run(run).snapshots
    expected = []
    for ref in refs:
        with ref.open() as snap:
            expected.append(snap.attrs["time"])
        shutil.rmtree(ref.path.with_suffix(""))  # the shards: .time must not need them
    assert [s.step for s in refs] == [0, 4, 8] and [s.time for s in refs] == pytest.approx([0.0, 0.04, 0.08])
    assert [s.time for s in refs] == expected
    last = simulator.load_run(run).snapshots[-1]
    last.path.write_bytes(last.path.read_bytes()[:500])
    with pytest.raises(DamagedFileError, match=f"^{last.path} is damaged or not as the run writes it"):
        _ = last.time


def test_trajectories_of_a_run_killed_mid_row_are_the_rows_every_dataset_has(rich, tmp_path):
    """A run killed (or read) between a trajectory row's positions and its time (``step`` is written last) left
    ``.x`` and ``.v`` one row longer than ``.time``: a silent misalignment (the tracks' last time paired with
    the next row's positions). Now the rows every dataset has, as the other row files are read."""
    run = copy_of(rich, tmp_path)
    before = simulator.load_run(run).trajectories
    with h5py.File(run / "particles" / "trajectories.h5", "a") as f:
        for name in ("position", "unwrapped", "velocity"):
            f[name].resize(f[name].shape[0] + 1, axis=0)
            f[name][-1] = 1e30
    after = simulator.load_run(run).trajectories
    for name, tracks in after.items():
        assert tracks.x.shape[0] == tracks.v.shape[0] == tracks.time.size == before[name].time.size, name
        np.testing.assert_array_equal(tracks.x, before[name].x, err_msg=name)


def test_what_the_export_leaves_out_is_named_in_one_line(rich, tmp_path, capsys):
    run = copy_of(rich, tmp_path)
    assert main(["export", str(run)]) == 0
    err = capsys.readouterr().err
    assert "leaves out" not in err and err.count("\n") == 1  # everything fits: the summary line alone
    assert "statistics, tasks, particles, trajectories" in err
    # a limit with room for everything but the statistics, and a file a restart set aside
    (run / "aside").mkdir()
    shutil.copy(run / "statistics.h5", run / "aside" / "statistics.until-4.h5")
    sizes = export_groups.sizes(simulator.load_run(run))
    limit = export.plan_netcdf(run, tmp_path / "all.nc").size - sizes["statistics"]
    assert main(["export", str(run), "--netcdf", str(tmp_path / "cut.nc"), "--max-size", str(limit)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "leaves out" in line]
    assert lines == [(f"{tmp_path / 'cut.nc'} leaves out: statistics ({human_bytes(sizes['statistics'])}: over "
                      "--max-size); aside/ (1 file(s) restarts set aside: load_run(...).aside lists them)")]
    with h5py.File(tmp_path / "cut.nc") as f:
        assert "statistics" not in f and sorted(f["particles"]) == ["drops", "tracers"] and "tasks" in f


@pytest.mark.parametrize("content", ["", "step,time,dt,energy\n"])
def test_a_time_series_without_rows_is_named_in_the_leaves_out_line(rich, tmp_path, capsys, content):
    """A zero-length timeseries.csv was dropped from the export silently, and one of a header only written as
    variables of no row: both are left out, named with the reason in the "leaves out" line."""
    run = copy_of(rich, tmp_path)
    (run / "timeseries.csv").write_text(content)
    assert main(["export", str(run)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "leaves out" in line]
    assert lines == [f"{run / 'export' / 'run.nc'} leaves out: timeseries.csv (holds no row: zero length, or a header "
                     "only)"], lines
    with h5py.File(run / "export" / "run.nc") as f:
        assert "time_series" not in f and "energy_spectra" in f


def test_a_float32_run_continued_in_float64_exports_its_float64_snapshots_unrounded(tmp_path):
    """A float32 Taylor-Green with particles restarted with precision float64 (allowed: the log says so): the
    export held every snapshot field in the first snapshot's float32, rounding the float64 ones by 4e-8; each
    variable now takes the widest type of its snapshots, and holds every snapshot exactly."""
    base = {**RICH, "precision": "float32", "checkpoint.every": 4, "runtime.cpu_devices": len(jax.devices())}
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", {**base, "time.t_end": 0.04})
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", {**base, "precision": "float64"})
    assert simulator.run_config(cfg, tmp_path / "run", restart="latest") == 0
    log = (tmp_path / "run" / "run.log").read_text()
    assert "; precision now float64 (the checkpoint's state is float32)" in log
    loaded = simulator.load_run(tmp_path / "run")
    with xr.open_dataset(export.export_netcdf(tmp_path / "run")) as ds:
        assert ds.velocity.dtype == np.float64 and len(loaded.snapshots) == 3
        for i, ref in enumerate(loaded.snapshots):
            with ref.open() as snap:
                np.testing.assert_array_equal(ds.velocity.isel(time=i).values, snap.read("velocity"))
        last = loaded.snapshots[-1].open()
        with last as snap:
            assert snap.file["velocity"].dtype == np.float64
        drops = xr.open_dataset(tmp_path / "run" / "export" / "run.nc", group="particles/drops")
        np.testing.assert_array_equal(drops.position.values, loaded.particles["drops"].position)
        drops.close()


def test_a_restart_sets_aside_the_export_and_merged_snapshots_of_the_output_it_writes_again(tmp_path):
    """Exported (netCDF and merged) at step 6, then restarted from step 4 with another viscosity: export/ and
    snapshots/merged/ hold the snapshot at step 6 of the run before, which the restart writes again. They used
    to stay in place (and `simulator export` refused to replace them); now the restart moves each, whole, into
    aside/ with a warning naming it, and the next export is of the run as it is. A restart from the last step
    (an extension) writes nothing again and leaves that export in place."""
    values = {"grid.shape": 8, "fft.backend": "single", "precision": "float64", "time.t_end": 0.06,
              "output.chunk": 2, "output.snapshots.every": 2, "checkpoint.every": 2,
              "runtime.cpu_devices": len(jax.devices())}
    run = tmp_path / "run"
    assert simulator.run_config(simulator.load_config(ROOT / "configs" / "taylor_green.yaml", values), run) == 0
    assert main(["export", str(run), "--merge", "--netcdf", str(run / "export" / "run.nc")]) == 0
    before = {p: p.read_bytes() for d in ("export", "snapshots/merged") for p in (run / d).iterdir()}
    viscous = {**values, "physics.viscosity": 0.5}
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", viscous)
    assert simulator.run_config(cfg, run, restart=str(run / "checkpoints" / "c00000004.json"),
                                allow_physics_change=True) == 0
    aside = run / "aside"
    assert not (run / "export").exists() and not (run / "snapshots" / "merged").exists()
    assert simulator.load_run(run).aside == (aside / "export.until-00000004", aside / "merged.until-00000004")
    for path, data in before.items():  # each kept whole, under a name that says which restart set it aside
        assert (aside / f"{path.parent.name}.until-00000004" / path.name).read_bytes() == data
    log = (run / "run.log").read_text()
    for name in ("export", "snapshots/merged"):
        assert (f"WARNING {run / name} was made from output this restart drops or writes again (past step 4): kept "
                f"whole in {aside / Path(name).name}.until-00000004") in log, log[-3000:]
    assert main(["export", str(run)]) == 0  # the run as it is now: the new snapshot at step 6
    with xr.open_dataset(run / "export" / "run.nc") as now, \
            xr.open_dataset(aside / "export.until-00000004" / "run.nc") as then, \
            simulator.load_run(run).snapshots[-1].open() as last:
        assert last.attrs["step"] == 6 and not np.array_equal(then.velocity[-1].values, last.read("velocity"))
        np.testing.assert_array_equal(now.velocity[-1].values, last.read("velocity"))
    superseded.set_derived_aside(run, 6, rank0=True)  # what a restart from step 6, where the run stands, does first
    assert (run / "export" / "run.nc").is_file() and len(simulator.load_run(run).aside) == 2


def test_a_restart_that_stops_before_the_steps_it_went_past_leaves_their_snapshots_out_of_every_reader(tmp_path,
                                                                                                        capsys):
    """Run to step 8 with tracers, then restarted from step 2 with another viscosity and t_end cut to step 4: the
    snapshots of steps 6 and 8 of the run before stay in place. load_run, simulator export, the figures and the
    particles used to read them as part of the run (viscosity 0.5 at step 4, then 1/1600 again); now they are
    superseded: left out, listed by load_run(...).superseded, named in the export's "leaves out" line, refused
    as initial.path, counted in the restart's warning (a later segment that writes those steps again makes them
    current: the next test)."""
    from matplotlib.figure import Figure

    from simulator.output import sources
    from simulator.plots import snapshot_files
    from simulator.plots.particle_overlay import overlay

    values = {"grid.shape": 8, "fft.backend": "single", "precision": "float64", "time.t_end": 0.08,
              "output.chunk": 2, "output.snapshots.every": 2, "checkpoint.every": 2, "checkpoint.keep": 4,
              "particles": [{"name": "tracers", "count": 4}], "runtime.cpu_devices": len(jax.devices())}
    run = tmp_path / "run"
    assert simulator.run_config(simulator.load_config(ROOT / "configs" / "taylor_green.yaml", values), run) == 0
    viscous = {**values, "physics.viscosity": 0.5, "time.t_end": 0.04}
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", viscous)
    assert simulator.run_config(cfg, run, restart=str(run / "checkpoints" / "c00000002.json"),
                                allow_physics_change=True) == 0
    loaded = simulator.load_run(run)
    gone = [run / folder / f"s0000000{step}.h5" for folder in ("snapshots", "particles") for step in (6, 8)]
    assert [ref.step for ref in loaded.snapshots] == [0, 2, 4]
    assert loaded.superseded == tuple(gone) and all(p.is_file() for p in gone)  # left out, not moved
    assert [p.name for p in snapshot_files(run)] == ["s00000000.h5", "s00000002.h5", "s00000004.h5"]  # the figures'
    assert loaded.particles["tracers"].step.tolist() == [0, 2, 4]
    for ref, viscosity in zip(loaded.snapshots, (1 / 1600, 1 / 1600, 0.5), strict=True):
        with ref.open() as snap:
            assert snap.attrs["config"]["physics"]["viscosity"] == pytest.approx(viscosity)
    fig = Figure()
    fig.add_subplot()
    assert overlay(fig, run, 8, 2, [2 * np.pi] * 3, (8, 8, 8)) == 0  # a superseded particle snapshot draws nothing
    assert (f"WARNING 6 snapshot file(s) past step 2, of steps 4 .. 8 (3 in {run}/snapshots, 3 in {run}/particles), "
            "are of the run before this restart: superseded, readers leave them out until this run writes those steps "
            "again (load_run(...).superseded lists them)") in (run / "run.log").read_text()
    old = run / "snapshots" / "s00000008.h5"
    start = simulator.load_config(ROOT / "configs" / "taylor_green.yaml", {**values, "initial": {"name": "file",
                                                                                              "path": str(old)}})
    with pytest.raises(ConfigError) as refusal:
        sources.check_start(start.initial, start)
    line = str(refusal.value)  # one line, the long path shortened in it
    assert line.startswith("initial.path = '") and "\n" not in line and line.endswith(
        "s00000008.h5' is superseded: segment 1 of its run restarted from step 2, before it, so this file of segment 0 "
        "is not on the run's current trajectory; give a checkpoint, a snapshot index or a run directory"), line
    capsys.readouterr()
    assert main(["export", str(run)]) == 0
    err = capsys.readouterr().err
    assert (f"{run / 'export' / 'run.nc'} leaves out: superseded snapshots (4 file(s) of the trajectory before a "
            "restart from an earlier step: load_run(...).superseded lists them)") in err, err
    with xr.open_dataset(run / "export" / "run.nc") as ds:
        assert ds.step.values.tolist() == [0, 2, 4]


def test_superseded_is_one_rule_over_segment_records_and_writers_and_old_runs_read_as_before(tmp_path):
    """The rule on files alone (segments.superseded): a file of step s written by segment i is superseded when a
    segment j > i started before s. A resume after a kill supersedes the steps past its checkpoint until it writes
    them again; a file without a writer (written before writers were recorded) or of a writer no record names, and
    segment records without start_step (earlier versions), read as before."""
    from simulator.output import segments

    run = tmp_path / "run"
    (run / "snapshots").mkdir(parents=True)
    (run / "segments").mkdir()

    def record(number, start, identity="", **extra):
        text = {"segment_id": identity or f"{number:032x}", **extra, "segment": number}
        if start is not None:
            text["start_step"] = start
        segments.record_path(run, number).write_text(yaml.safe_dump(text))

    def snapshot(step, writer):
        path = run / "snapshots" / f"s{step:08d}.h5"
        with h5py.File(path, "w") as f:
            if writer is not None:
                f.attrs["writer"] = f"{writer:032x}"
        return path

    files = [snapshot(0, 0), snapshot(4, 0), snapshot(6, 0), snapshot(8, 0), snapshot(10, None), snapshot(12, 7)]
    record(0, 0)
    assert segments.superseded(run, files) == {}  # one segment
    record(1, 4)  # killed after step 8, resumed from its checkpoint at step 4
    gone = segments.superseded(run, files)
    assert list(gone) == files[2:4] and gone[files[2]][0].number == 0 and gone[files[2]][1].number == 1
    assert segments.current(run, files) == [*files[:2], *files[4:]]
    snapshot(6, 1)  # the resumed segment wrote step 6 again: current
    assert list(segments.superseded(run, files)) == [files[3]]
    record(2, 8)  # a restart from step 8 supersedes nothing before it and nothing of the latest writer
    assert list(segments.superseded(run, files)) == [files[3]]
    record(3, 2)  # an earlier step: every file past it written before, step 6 by segment 1 too
    assert list(segments.superseded(run, files)) == files[1:4]
    for number in range(4):  # records of earlier versions: no start_step
        record(number, None)
    assert segments.superseded(run, files) == {}


@pytest.mark.multiprocess  # the run of the fixture tg
def test_a_snapshot_whose_shards_come_from_two_writes_is_refused_in_one_line_naming_the_shard(tg, tmp_path, capsys,
                                                                                           monkeypatch):
    """A restart on one process stopped while rewriting a snapshot of two processes: its p0000.h5 rewritten, the
    index not yet, so the old index stitches the new p0000.h5 to the old p0001.h5 (it was read as one field).
    Every file of a snapshot records its writer (the run segment's identity): load_run, export and merge
    refuse the mixed snapshot naming the shard, and the rewrite once complete reads back whole."""
    run = copy_of(tg, tmp_path)
    index = run / "snapshots" / "s00000008.h5"
    writer = yaml.safe_load((run / "config.yaml").read_text())["segment_id"]
    for path in (index, *index.with_suffix("").iterdir()):
        with h5py.File(path) as f:
            assert f.attrs["writer"] == writer, path

    class Stopped(BaseException):
        """The restart's process ended after writing its shard, before the index."""

    write = hdf5.write_atomically

    def stopped_before_the_index(path, fill):
        if path == index:
            raise Stopped
        write(path, fill)

    monkeypatch.setattr(hdf5, "write_atomically", stopped_before_the_index)
    fields = {name: jax.numpy.full((3, 8, 8, 8), 7.0, np.float32) for name in ("velocity", "vorticity")}
    with pytest.raises(Stopped):
        write_snapshot(index.with_suffix(""), fields, {"step": 8, "writer": "f" * 32}, [2 * np.pi] * 3, 0.08)
    monkeypatch.undo()
    shard = index.with_suffix("") / "p0000.h5"
    why = f"{index}: shard file {shard} is of another write (writer {'f' * 32}, the index's {writer})"
    with pytest.raises(hdf5.IncompleteOutputError) as err:
        simulator.load_run(run).snapshots[-1].open()
    assert str(err.value).startswith(why)
    assert why in refused(capsys, str(run)) and why in refused(capsys, str(run), "--merge")
    assert not (run / "export").exists() and not (run / "snapshots" / "merged").exists()
    write_snapshot(index.with_suffix(""), fields, {"step": 8, "writer": "f" * 32}, [2 * np.pi] * 3, 0.08)
    assert [p.name for p in index.with_suffix("").iterdir()] == ["p0000.h5"]  # p0001.h5 of the old write removed
    with simulator.load_run(run).snapshots[-1].open() as snap:
        np.testing.assert_array_equal(snap.read("velocity"), np.full((3, 8, 8, 8), 7.0, np.float32))


def test_a_size_reads_as_given_and_counts_say_one_snapshot(tmp_path, capsys):
    """`--max-size 10KB` was refused as "--max-size = '10 KiB'", not the value given, and `10kB` (the SI spelling) as
    not a size; a run of one snapshot exported as "1 snapshots". The refusal names the size as given and what it
    counts (KB, MB and GB count in 1024s, as --help says), and one snapshot is one."""
    from simulator.api import load_run
    from simulator.output.lagrangian import Trajectories
    from simulator.output.particles import ParticleSeries

    run = tmp_path / "one"
    done = subprocess.run([sys.executable, "-m", "simulator", "run", "configs/taylor_green.yaml", "--set",
                           "grid.shape=8", "--set", "time.t_end=0.1", "--set", "output.chunk=5", "--out", str(run)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 snapshot, 3 rows" in repr(load_run(run))
    for size in ("10KB", "10kB"):
        assert refused(capsys, str(run), "--max-size", size) == (
            f"error: --max-size = '{size}' (10 KiB) is below the export's 12.4 KiB (1 snapshot of velocity, "
            "vorticity); give --max-size 1MiB or more, fewer --fields, or --merge (any size)\n")
    assert main(["export", str(run), "--max-size", "500kB"]) == 0
    assert f"{run / 'export' / 'run.nc'}: 1 snapshot of velocity, vorticity;" in capsys.readouterr().err
    assert human_bytes(1000) == "1000 B" and human_bytes(1023 * 2**20) == "1023 MiB"
    one = np.zeros((1, 1, 3))
    assert repr(ParticleSeries("t", np.array([0]), np.array([0.0]), one, one, one)) == (
        "ParticleSeries(t: 1 particle, 1 snapshot, t 0 .. 0)")
    assert repr(Trajectories("t", np.array([0.0]), one, one, np.arange(1), np.array([0]), one)) == (
        "Trajectories(t: 1 particle, 1 row, t 0 .. 0)")


def test_one_byte_formatter_for_plans_and_exports():
    """1e6 bytes read "977 KiB" in an export's messages and "976.6 KiB" in a plan's: one formatter now serves
    both (3 significant digits, binary units), and the export's own is gone."""
    assert human_bytes(1e6) == "977 KiB" and human_bytes(1536) == "1.5 KiB" and human_bytes(8 * 2**30) == "8 GiB"
    assert human_bytes(0) == "0 B" and human_bytes(2**50) == "1 PiB"
    assert not hasattr(export_groups, "size_text")
