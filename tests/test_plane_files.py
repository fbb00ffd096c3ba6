"""A plane's files read as they look: `simulator run` stores a periodic plane's and a walled x-z plane's snapshots as
planes (no one-cell axis, vectors of the plane's two components), for h5py and xarray alike; a run stored one cell
deep before (tests/data/plane_one_cell_deep: convection_2d_noslip on 16 x 9 in float32, written by the code of
schema 2) still loads, plots, exports and starts a run."""

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

import simulator

from support import command

ROOT = Path(__file__).parents[1]
OLD = Path(__file__).parent / "data" / "plane_one_cell_deep" / "convection_run"

#: (config, its --set arguments, the plane's axes as stored (slowest first), the box's two lengths)
PLANES = {
    "periodic": ("forced_2d.yaml", ["grid.shape=[16,16]", "physics.forcing_wavenumber=4", "initial.k_peak=4",
                                    "time.t_end=0.02", "output.spectra.every=0",
                                    "output.tasks=[{name: mean, field: vorticity, reduce: profile, axis: z, "
                                    "at_end: true}]"],
                 ("y", "x"), [2 * np.pi, 2 * np.pi]),
    "walled": ("convection_2d_noslip.yaml", ["precision=float32", "grid.shape=[16,9]", "time.t_end=0.25",
                                             "fft.backend=single", "output.snapshots.at_end=true",
                                             "output.tasks=[{name: b, field: temperature, reduce: profile, axis: z, "
                                             "at_end: true}, {name: w, field: velocity, component: z, reduce: slice, "
                                             "axis: z, index: 3, at_end: true}, {name: plane, field: temperature, "
                                             "reduce: slice, axis: y, at_end: true}]"],
               ("z", "x"), [4.0, 1.0]),
}


@pytest.mark.parametrize("kind", sorted(PLANES))
def test_a_plane_run_stores_its_snapshots_as_a_plane(kind, tmp_path, capfd):
    """Through `simulator run`: every snapshot's fields are 2D in the index and in the shards (scalars (Ny, Nx) or
    (Nz, Nx), vectors (.., .., 2) with the components x y or x z), the dimension scales only the plane's two axes,
    ``box`` its two lengths named by ``box_axes``; xarray gives velocity(z, x, component). Before, the fields were
    (1, Ny, Nx) and (1, Ny, Nx, 3) with a zero third component, the box three lengths. A walled plane's tasks name
    its axes as its snapshots (before, a profile along z was the plane's mean and the plates' axis y)."""
    config, sets, axes, box = PLANES[kind]
    args = ["run", str(ROOT / "configs" / config), "--out", str(tmp_path / "run")]
    code, _, err = command(capfd, *args, *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    indexes = sorted((tmp_path / "run" / "snapshots").glob("s*.h5"))
    assert indexes
    for index in indexes:
        with h5py.File(index, "r") as f:
            fields = [n for n, ds in f.items() if isinstance(ds, h5py.Dataset) and not ds.is_scale]
            shape = tuple(len(f[a]) for a in axes)
            assert "velocity" in fields and sorted(n for n in f if n not in fields) == sorted(["component", *axes,
                                                                                               "padded"])
            for name in fields:
                ds = f[name]
                vector = name == "velocity"
                assert ds.shape == ((*shape, 2) if vector else shape), (name, ds.shape)
                scales = [s.name.lstrip("/") for d in ds.dims for s in d.values()]
                assert scales == [*axes, "component"] if vector else list(axes)
            assert list(f["component"].asstr()[:]) == ["x", axes[0]]
            assert list(f.attrs["box"]) == pytest.approx(box) and json.loads(f.attrs["box_axes"]) == ["x", axes[0]]
            assert f.attrs["schema_version"] == 3
        for shard in index.with_suffix("").glob("p*.h5"):
            with h5py.File(shard, "r") as f:
                assert f["velocity/b0"].ndim == 3 and f["velocity"].attrs["global_shape"].tolist() == [*shape, 2]
        with xr.open_dataset(index, engine="h5netcdf") as ds:
            assert ds["velocity"].dims == (*axes, "component") and ds.sizes["component"] == 2
            assert all(ds[n].dims == axes for n in ds.data_vars if n != "velocity")
    if kind == "periodic":  # a task's profile across the plane (its one cell) is the plane's mean, one number a row
        with h5py.File(tmp_path / "run" / "tasks.h5", "r") as f:
            assert f["mean/mean"].shape == (1,) and "z" not in f["mean"]
    if kind == "walled":  # its tasks name the axes as its snapshots: z across the plates, at their heights
        with h5py.File(tmp_path / "run" / "tasks.h5", "r") as t, h5py.File(indexes[-1], "r") as f:
            assert t["b/step"][-1] == f.attrs["step"]
            np.testing.assert_array_equal(t["b/z"][:], f["z"][:])
            np.testing.assert_allclose(t["b/b"][-1], f["temperature"][...].mean(axis=1), atol=1e-6)
            w = f["velocity"][3, :, 1]  # w at the height of index 3, along x
            assert np.any(w) and t["w/w"].shape[1:] == w.shape and t["w/w"].attrs["position"] == f["z"][3]
            np.testing.assert_allclose(t["w/w"][-1], w, rtol=1e-6, atol=1e-12)
            np.testing.assert_allclose(t["plane/plane"][-1], f["temperature"][...].T, atol=1e-7)
    # merged, the index's padded/velocity (what the XDMF gives ParaView) is a view of the merged file's own velocity
    code, _, err = command(capfd, "export", str(tmp_path / "run"), "--merge")
    assert code == 0, err
    with h5py.File(tmp_path / "run" / "snapshots" / "merged" / indexes[-1].name, "r") as f:
        velocity, padded = f["velocity"][...], f["padded/velocity"][...]
    assert padded.shape == (*shape, 3) and (np.any(velocity) or kind == "walled")  # convection starts at rest
    np.testing.assert_array_equal(padded, np.concatenate([velocity, np.zeros((*shape, 1), velocity.dtype)], axis=-1))


def test_a_run_stored_one_cell_deep_still_loads_plots_exports_and_starts_a_run(tmp_path, capfd):
    """The schema-2 run (its snapshot (1, 9, 16) and (1, 9, 16, 3), box [4, 1, 4] named x, z, y): read through
    load_run as before, canonical (3, 1, 16, 9); `simulator plot` draws its slice; `simulator export` writes it as a
    plane, velocity(time, component, x, z) of its two components; a run on a finer grid starts from it."""
    run = tmp_path / "old"
    shutil.copytree(OLD, run)
    index = run / "snapshots" / "s00000002.h5"
    with h5py.File(index, "r") as f:
        stored = f["velocity"][...]
        assert stored.shape == (1, 9, 16, 3) and f["temperature"].shape == (1, 9, 16) and f.attrs["schema_version"] == 2
    with simulator.load_run(run).snapshots[-1].open() as snap:
        velocity, temperature = snap.read("velocity"), snap["temperature"]
    assert velocity.shape == (3, 1, 16, 9) and temperature.shape == (1, 16, 9)
    np.testing.assert_array_equal(velocity, stored[0].transpose(2, 1, 0)[:, None])
    code, out, err = command(capfd, "plot", str(run))
    assert code == 0 and (run / "plots" / "slice.png").is_file(), err
    code, out, err = command(capfd, "export", str(run))
    assert code == 0, err
    with xr.open_dataset(run / "export" / "run.nc", engine="h5netcdf") as ds:
        assert ds["velocity"].dims == ("time", "component", "x", "z") and list(ds["component"].values) == ["x", "z"]
        assert ds["temperature"].dims == ("time", "x", "z")
        np.testing.assert_array_equal(ds["velocity"].values[0], stored[0, :, :, :2].transpose(2, 1, 0))
    code, out, err = command(capfd, "run", str(ROOT / "configs" / "convection_2d_noslip.yaml"),
                             "--set", "precision=float32", "--set", "grid.shape=[24,13]", "--set", "time.t_end=0.5",
                             "--set", "fft.backend=single",
                             "--set", "initial.name=file", "--set", f"initial.path={index}",
                             "--out", str(tmp_path / "finer"))
    assert code == 0, err
    with h5py.File(tmp_path / "finer" / "snapshots" / "s00000000.h5", "r") as f:
        assert f["velocity"].shape == (13, 24, 2)
        # its first snapshot is the old one's theta interpolated: the same extremes to the interpolation's accuracy
        theta = f["theta"][...]
    with h5py.File(index, "r") as f:
        old_theta = f["theta"][0]
    assert np.abs(theta).max() == pytest.approx(np.abs(old_theta).max(), rel=0.2) and np.abs(theta).max() > 0
