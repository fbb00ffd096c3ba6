"""Per-process HDF5 shard files, the virtual-dataset index, and reading them back; snapshots in ParaView's
axis order with coordinates for xarray, their XDMF files and time series; spectra.h5 for xarray."""

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
import xarray as xr

from simulator.equations import registry
from simulator.fft import BACKENDS
from simulator.output import hdf5 as io, xdmf
from simulator.output.snapshots import write_snapshot
from simulator.output.spectra import SpectraFile
from simulator.runtime import build_mesh

LEGACY = Path(__file__).parent / "data" / "legacy_v1"


def backend(name, n, devices, shape=(8, 16, 32), mesh=None):
    cls = BACKENDS[name]
    return cls(shape, build_mesh(cls, mesh, devices[:n]))


def sharded(fft, host, spectral=False):
    sharding = fft.spectral_sharding(host.ndim - 3) if spectral else fft.real_sharding(host.ndim - 3)
    return jax.make_array_from_callback(host.shape, sharding, lambda i: host[i])


@pytest.mark.parametrize("name, n, mesh", [("single", 1, None), ("slab", 2, None), ("slab", 8, None),
                                           ("jaxdecomp", 8, (2, 4)), ("pencil", 8, None)])
def test_index_read_with_plain_h5py_equals_the_field(tmp_path, devices, name, n, mesh):
    fft = backend(name, n, devices, mesh=mesh)
    u = np.random.default_rng(0).standard_normal((3, *fft.shape))
    rho = np.random.default_rng(1).standard_normal(fft.shape).astype(np.float32)
    k = fft.rfft(sharded(fft, u))
    index = io.write(tmp_path / "s0", {"u": io.Field(sharded(fft, u)), "rho": io.Field(sharded(fft, rho)),
                                       "u_hat": io.Field(k, fft.perm)}, {"step": 3, "time": 0.25, "config": {"a": 1}})
    assert sorted(p.name for p in (tmp_path / "s0").iterdir()) == ["p0000.h5"]  # one process, one file
    with h5py.File(index, "r") as f:  # plain h5py, no simulator code
        np.testing.assert_array_equal(f["u"][:], u)
        np.testing.assert_array_equal(f["rho"][:], rho)
        assert f["rho"].dtype == np.float32
        canonical_k = np.transpose(fft.reference_spectrum(u, True), np.argsort((0, *(1 + p for p in fft.perm))))
        np.testing.assert_allclose(f["u_hat"][:], canonical_k, rtol=0, atol=1e-12 * np.abs(canonical_k).max())
        assert f.attrs["step"] == 3 and json.loads(f.attrs["config"]) == {"a": 1}
        assert f.attrs["schema_version"] == io.SCHEMA_VERSION
    with h5py.File(tmp_path / "s0" / "p0000.h5", "r") as f:
        assert f.attrs["step"] == 3 and f.attrs["time"] == 0.25 and f.attrs["schema_version"] == io.SCHEMA_VERSION
        assert list(f["u"].attrs["global_shape"]) == list(u.shape)
        blocks = [ds for ds in f["u"].values()]
        # one dataset per distinct block (replicated blocks written once), each with its global offset
        assert len(blocks) == len(io.blocks(sharded(fft, u)))
        assert sum(ds.size for ds in blocks) == u.size


def test_a_plane_reads_only_what_it_needs_and_read_into_reshards(tmp_path, devices):
    src = backend("slab", 8, devices)
    u = np.random.default_rng(2).standard_normal((3, *src.shape))
    index = io.write(tmp_path / "s1", {"u": io.Field(sharded(src, u))}, {"step": 0, "time": 0.0})
    with io.Snapshot(index) as snap:
        np.testing.assert_array_equal(snap.read("u", (1, slice(None), slice(None), 5)), u[1, :, :, 5])
        assert snap.attrs["step"] == 0 and snap.fields == ["u"]
        for name, n, mesh in [("slab", 4, None), ("jaxdecomp", 8, (2, 4)), ("single", 1, None)]:
            dst = backend(name, n, devices, mesh=mesh)
            back = io.read_into(snap, "u", u.shape, dst.real_sharding(1))
            assert back.sharding == dst.real_sharding(1)
            np.testing.assert_array_equal(np.asarray(back), u)


def test_missing_or_incomplete_shards_are_refused(tmp_path, devices):
    fft = backend("slab", 4, devices)
    u = np.ones((2, *fft.shape))
    index = io.write(tmp_path / "s2", {"u": io.Field(sharded(fft, u))}, {"step": 0, "time": 0.0})
    shard = tmp_path / "s2" / "p0000.h5"
    with h5py.File(shard, "a") as f:
        f.attrs["complete"] = False
    with pytest.raises(io.IncompleteOutputError, match=r"p0000\.h5 is incomplete"):
        io.Snapshot(index)
    shard.unlink()
    with pytest.raises(io.IncompleteOutputError, match=r"p0000\.h5 is missing or unreadable"):
        io.Snapshot(index)
    shard.write_bytes(b"not hdf5")
    with pytest.raises(io.IncompleteOutputError, match=r"missing or unreadable"):
        io.Snapshot(index)
    with pytest.raises(io.IncompleteOutputError, match="does not exist"):
        io.Snapshot(tmp_path / "nope.h5")


def write_fields(tmp_path, fft, step=0, time=0.0, box=(1.0, 2.0, 4.0), **kwargs):
    """A snapshot of a random vector u and scalar rho (float32) on ``fft``'s devices; returns (index, u, rho)."""
    rng = np.random.default_rng(step)
    u, rho = rng.standard_normal((3, *fft.shape)), rng.standard_normal(fft.shape).astype(np.float32)
    index = write_snapshot(tmp_path / f"s{step:08d}", {"u": sharded(fft, u), "rho": sharded(fft, rho)},
                           {"step": step, "config": {"a": 1}}, box, time, **kwargs)
    return index, u, rho


@pytest.mark.parametrize("name, n, mesh", [("single", 1, None), ("slab", 8, None), ("jaxdecomp", 8, (2, 4)),
                                           ("pencil", 8, None)])
def test_snapshots_are_stored_in_paraview_order_and_read_back_canonical(tmp_path, devices, name, n, mesh):
    fft = backend(name, n, devices, mesh=mesh)
    index, u, rho = write_fields(tmp_path, fft)
    with h5py.File(index, "r") as f:  # on disk: (z, y, x) and (z, y, x, component), each value once
        np.testing.assert_array_equal(f["u"][:], u.transpose(3, 2, 1, 0))
        np.testing.assert_array_equal(f["rho"][:], rho.T)
        assert f.attrs["schema_version"] == 3 and list(f["u"].attrs["storage_order"]) == [3, 2, 1, 0]
    stored = sum(ds.size for p in (tmp_path / "s00000000").iterdir() for ds in _datasets(h5py.File(p, "r")))
    assert stored == u.size + rho.size
    with io.Snapshot(index) as snap:
        assert snap.fields == ["rho", "u"] and snap.shape("u") == u.shape and snap.shape("rho") == rho.shape
        np.testing.assert_array_equal(snap.read("u"), u)
        np.testing.assert_array_equal(snap.read("rho"), rho)
        for where in [(1, slice(None), slice(None), 5), (2, 3), (Ellipsis, 7), (slice(None), 1, slice(2, 9, 3)),
                      (0, 1, 2, 3), 2]:
            np.testing.assert_array_equal(snap.read("u", where), u[where])
        np.testing.assert_array_equal(snap.read("rho", (slice(None), 4)), rho[:, 4])
        assert snap.slowest_axis("rho") == 2 and snap.slowest_axis("u") == 3  # z-planes are contiguous
        with pytest.raises(KeyError, match="no field 'x'; it has rho, u"):
            snap.read("x")
        for dst_name, m, dst_mesh in [("slab", 4, None), ("jaxdecomp", 8, (4, 2)), ("single", 1, None)]:
            dst = backend(dst_name, m, devices, mesh=dst_mesh)
            back = io.read_into(snap, "u", u.shape, dst.real_sharding(1))
            assert back.sharding == dst.real_sharding(1)
            np.testing.assert_array_equal(np.asarray(back), u)


@pytest.mark.parametrize("name, n, mesh", [("slab", 2, None), ("slab", 4, None), ("single", 1, None)])
def test_a_plane_is_stored_as_a_plane_and_read_back_canonical(tmp_path, devices, name, n, mesh):
    """A plane's snapshot (the box (1, Nx, Ny)) stores scalars (Ny, Nx), vectors (Ny, Nx, 2) without their zero third
    component, stacks (Ny, Nx, n), in the index and in every shard, only the plane's coordinates and its two lengths;
    read through the API it is canonical again, (1, Nx, Ny) and (3, 1, Nx, Ny) with the zero put back, in whole, in
    slices and re-sharded (read_into)."""
    fft = backend(name, n, devices, shape=(1, 16, 8), mesh=mesh)
    rng = np.random.default_rng(5)
    u = np.concatenate([rng.standard_normal((2, *fft.shape)), np.zeros((1, *fft.shape))]).astype(np.float32)
    rho, stack = rng.standard_normal(fft.shape), rng.standard_normal((3, *fft.shape))
    index = write_snapshot(tmp_path / "s00000000", {"u": sharded(fft, u), "rho": sharded(fft, rho),
                                                     "c": sharded(fft, stack)}, {"step": 0}, (3.0, 2.0, 3.0), 0.0,
                           stacked=["c"])
    with h5py.File(index, "r") as f:
        np.testing.assert_array_equal(f["u"][:], u[:2, 0].transpose(2, 1, 0))
        np.testing.assert_array_equal(f["rho"][:], rho[0].T)
        np.testing.assert_array_equal(f["c"][:], stack[:, 0].transpose(2, 1, 0))
        assert [[s.name for d in f["u"].dims for s in d.values()]] == [["/y", "/x", "/component"]]
        assert list(f["component"].asstr()[:]) == ["x", "y"] and "z" not in f
        assert list(f.attrs["box"]) == [2.0, 3.0] and json.loads(f.attrs["box_axes"]) == ["x", "y"]
        # what ParaView reads: the whole vector, the third component HDF5's fill value
        np.testing.assert_array_equal(f["padded/u"][:], u[:, 0].transpose(2, 1, 0))
    stored = sum(ds.size for p in (tmp_path / "s00000000").iterdir() for ds in _datasets(h5py.File(p, "r")))
    assert stored == u[:2].size + rho.size + stack.size  # no zero and no unit axis stored
    for shard in (tmp_path / "s00000000").iterdir():
        with h5py.File(shard, "r") as f:
            assert all(ds.ndim == (2 if ds.parent.name == "/rho" else 3) for ds in _datasets(f))
    with io.Snapshot(index) as snap:
        assert snap.shape("u") == u.shape and snap.shape("rho") == rho.shape and snap.shape("c") == stack.shape
        np.testing.assert_array_equal(snap.read("u"), u)
        np.testing.assert_array_equal(snap["rho"], rho)
        np.testing.assert_array_equal(snap["c"], stack)
        for where in [(2,), (slice(1, 3), 0), (Ellipsis, 3), (slice(None), 0, slice(2, 9, 3)), (0, 0, 5, 7), (2, 0, 1),
                      (slice(None, None, -1),), (-1, -1, -1, -1)]:
            np.testing.assert_array_equal(snap.read("u", where), u[where])
        np.testing.assert_array_equal(snap.read("rho", (0, slice(None), 4)), rho[0, :, 4])
        for dst_name, m, dst_mesh in [("slab", 4, None), ("single", 1, None)]:
            dst = backend(dst_name, m, devices, shape=(1, 16, 8), mesh=dst_mesh)
            np.testing.assert_array_equal(np.asarray(io.read_into(snap, "u", u.shape, dst.real_sharding(1))), u)


def _datasets(group):
    out = []
    group.visititems(lambda _, obj: out.append(obj) if isinstance(obj, h5py.Dataset) else None)
    return out


def test_schema_1_snapshots_still_read_canonical(devices):
    """A snapshot written before the storage order changed (kept under tests/data), read through the same API."""
    index = LEGACY / "ns_run" / "snapshots" / "s00000010.h5"
    with h5py.File(index, "r") as f:
        velocity = f["velocity"][:]  # schema 1 stored canonical (3, x, y, z)
    with io.Snapshot(index) as snap:
        assert snap.attrs["schema_version"] == 1 and snap.attrs["box"] == [2 * np.pi] * 3  # JSON text then
        assert snap.fields == ["velocity", "vorticity"] and snap.shape("velocity") == (3, 8, 8, 8)
        assert snap.slowest_axis("velocity") == 0
        np.testing.assert_array_equal(snap.read("velocity", (0, slice(None), 2)), velocity[0, :, 2])
        fft = backend("slab", 4, devices, shape=(8, 8, 8))
        np.testing.assert_array_equal(np.asarray(io.read_into(snap, "velocity", velocity.shape, fft.real_sharding(1))),
                                      velocity)


def test_xarray_opens_a_snapshot_with_named_dims_coordinates_and_units(tmp_path, devices):
    fft = backend("slab", 2, devices)
    index, u, rho = write_fields(tmp_path, fft, step=7, time=0.5, units={"length": "kpc", "time": "Gyr", "u": "km/s"})
    moved = tmp_path / "elsewhere"  # relative paths: the directory can be moved
    moved.mkdir()
    for path in (index, index.with_suffix("")):
        shutil.move(path, moved / path.name)
    with xr.open_dataset(moved / index.name, engine="h5netcdf") as ds:
        assert ds.u.dims == ("z", "y", "x", "component") and ds.rho.dims == ("z", "y", "x")
        np.testing.assert_array_equal(ds.u.transpose("component", "x", "y", "z").values, u)
        np.testing.assert_array_equal(ds.rho.transpose("x", "y", "z").values, rho)
        for axis, n, length in zip("xyz", fft.shape, (1.0, 2.0, 4.0)):
            np.testing.assert_allclose(ds[axis].values, np.arange(n) * length / n, rtol=1e-15)
            assert ds[axis].attrs["units"] == "kpc"
        assert list(ds.component.values) == ["x", "y", "z"]
        assert ds.u.attrs["units"] == "km/s" and ds.rho.attrs["units"] == "code units"
        assert ds.attrs["step"] == 7 and ds.attrs["time"] == 0.5 and list(ds.attrs["box"]) == [1.0, 2.0, 4.0]
        assert json.loads(ds.attrs["units"]) == {"length": "kpc", "time": "Gyr", "u": "km/s"}
        # a component and a point picked by name are this code's u[0] at grid point (2, 3, 5)
        assert ds.u.sel(component="x").isel(x=2, y=3, z=5).item() == u[0, 2, 3, 5]


def test_xdmf_describes_paraview_order_and_the_series_covers_the_run(tmp_path, devices):
    fft = backend("slab", 2, devices)  # grid (8, 16, 32)
    box = (1.0, 4.0, 2.0)  # spacing 1/8, 1/4, 1/16: each axis its own
    for step, time in [(0, 0.0), (10, 0.25), (20, 0.5)]:
        index, _, _ = write_fields(tmp_path, fft, step=step, time=time, box=box)
    grid = ET.parse(index.with_suffix(".xdmf")).getroot().find("Domain/Grid")
    assert grid.find("Topology").get("Dimensions") == "32 16 8"  # slowest first: z y x
    spacing = grid.findall("Geometry/DataItem")[1].text.split()
    assert [float(d) for d in spacing] == [2.0 / 32, 4.0 / 16, 1.0 / 8]  # dz dy dx
    items = {a.get("Name"): (a.get("AttributeType"), a.find("DataItem").get("Dimensions"), a.find("DataItem").text)
             for a in grid.findall("Attribute")}
    assert items == {"u": ("Vector", "32 16 8 3", "s00000020.h5:/u"), "rho": ("Scalar", "32 16 8", "s00000020.h5:/rho")}
    assert grid.find("Attribute/DataItem").get("Precision") == "8"
    assert not [d for d in grid.iter("DataItem") if d.get("ItemType")]  # no functions or hyperslabs

    def series():
        root = ET.parse(tmp_path / "series.xdmf").getroot()
        collection = root.find("Domain/Grid")
        assert (collection.get("GridType"), collection.get("CollectionType")) == ("Collection", "Temporal")
        return [(g.get("Name"), float(g.find("Time").get("Value"))) for g in collection.findall("Grid")]

    assert series() == [("s00000000", 0.0), ("s00000010", 0.25), ("s00000020", 0.5)]
    # a restart from step 10: the old run's later snapshots leave the series, the new run's join it
    xdmf.truncate_series(tmp_path, 10)
    assert series() == [("s00000000", 0.0), ("s00000010", 0.25)]
    write_fields(tmp_path, fft, step=15, time=0.4, box=box)
    assert series() == [("s00000000", 0.0), ("s00000010", 0.25), ("s00000015", 0.4)]
    # without the truncation, a snapshot at an earlier step than the series' last drops the later ones
    write_fields(tmp_path, fft, step=12, time=0.3, box=box)
    assert series() == [("s00000000", 0.0), ("s00000010", 0.25), ("s00000012", 0.3)]
    # a lost series is rebuilt from the per-snapshot files (s00000015 and s00000020 are still on disk)
    (tmp_path / "series.xdmf").unlink()
    write_fields(tmp_path, fft, step=30, time=0.75, box=box)
    assert [name for name, _ in series()] == ["s00000000", "s00000010", "s00000012", "s00000015", "s00000020",
                                              "s00000030"]


@pytest.mark.parametrize("values, n", [
    ({"physics.name": "navier_stokes", "physics.scalars": [{}], "fft.backend": "pencil"}, 4),  # vectors, a stack
    ({"physics.name": "boussinesq"}, 2),  # a field of one component among vectors
    ({"physics.name": "schrodinger_poisson"}, 2),  # several fields, declared out of alphabetical order
], ids=["navier_stokes", "boussinesq", "schrodinger_poisson"])
def test_a_run_writes_the_file_of_its_whole_fields_a_component_at_a_time(tmp_path, devices, values, n):
    """A run's snapshots compute and write one component at a time (Simulation.snapshot_parts, so that no device
    holds more than one field: tests/test_plan.py), and write, byte for byte, the shard and XDMF files the fields
    computed whole (Simulation.fields, the run's snapshot program before) make, and the same index (its bytes
    hold the second it was written)."""
    from simulator.api import load_config
    from simulator.run.simulation import Simulation

    sim = Simulation(load_config(None, {"grid.shape": [8, 12, 16], "precision": "float32", **values}), devices[:n])
    state = sim.advance(sim.initial_state(), 2, 0.01)
    names, info = sim.snapshot_fields, sim.equation.field_info
    stacked = [name for name in names if info[name].stacked]
    for how, fields in (("parts", sim.snapshot_parts(state, 0.02)), ("whole", sim.fields(state, *names, t=0.02))):
        write_snapshot(tmp_path / how / "s00000002", {name: fields[name] for name in names}, {"step": 2},
                       sim.cfg.grid.box, 0.02, stacked=stacked)  # in the run's order, as SnapshotWriter writes
    written = sorted(p.relative_to(tmp_path / "whole") for p in (tmp_path / "whole").rglob("*") if p.is_file())
    assert len(written) == 4 and written == sorted(p.relative_to(tmp_path / "parts")
                                                        for p in (tmp_path / "parts").rglob("*") if p.is_file())
    for path in written:
        if path.name != "s00000002.h5":
            assert (tmp_path / "parts" / path).read_bytes() == (tmp_path / "whole" / path).read_bytes(), path
            continue
        with h5py.File(tmp_path / "parts" / path, "r") as got, h5py.File(tmp_path / "whole" / path, "r") as want:
            assert list(got) == list(want) and _attrs(got) == _attrs(want)
            for key in want:  # the fields read through their virtual datasets from the shards, and coordinates
                assert _attrs(got[key]) == _attrs(want[key]) and got[key][()].tobytes() == want[key][()].tobytes(), key


def _attrs(obj):
    return {k: np.asarray(v).tobytes() for k, v in obj.attrs.items() if k not in ("DIMENSION_LIST", "REFERENCE_LIST")}


def test_snapshot_fields_must_be_scalars_or_vectors(tmp_path, devices):
    fft = backend("slab", 2, devices)
    with pytest.raises(ValueError, match=r"'t' has shape \[2, 8, 16, 32\]; allowed: \[8, 16, 32\] or \[3, 8, 16, 32\]"):
        write_snapshot(tmp_path / "s0", {"t": sharded(fft, np.zeros((2, *fft.shape)))}, {"step": 0}, (1, 1, 1), 0.0)


def test_xarray_opens_spectra_with_time_and_k(tmp_path):
    path = tmp_path / "spectra.h5"
    k = np.arange(6) * 0.5
    described = registry()["navier_stokes"].spectra  # what the equation declares its spectra to be
    spectra = SpectraFile(path, k, None, descriptions=described)
    for row in range(4):
        spectra.append(10 * row, 0.1 * row, {"energy": np.full(6, float(row))})
    spectra.close()
    spectra = SpectraFile(path, k, 20, units={"length": "m", "time": "s"}, descriptions=described)  # a restart
    spectra.append(25, 0.25, {"energy": np.full(6, 9.0)})
    spectra.close()
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert ds.energy.dims == ("time", "k") and ds.step.dims == ("time",)
        np.testing.assert_array_equal(ds.k.values, k)
        np.testing.assert_array_equal(ds.time.values, [0.0, 0.1, 0.2, 0.25])
        np.testing.assert_array_equal(ds.step.values, [0, 10, 20, 25])
        np.testing.assert_array_equal(ds.energy.sel(time=0.25).values, np.full(6, 9.0))
        assert "sum over shells is the kinetic energy" in ds.energy.attrs["description"]
        assert ds.k.attrs["units"] == "1/(m)" and ds.time.attrs["units"] == "s"
        assert "2 pi / max(box)" in ds.k.attrs["doc"]


def test_spectra_of_an_older_run_get_dimensions_when_it_is_restarted(tmp_path):
    path = tmp_path / "spectra.h5"
    shutil.copy(LEGACY / "ns_run" / "spectra.h5", path)
    with h5py.File(path, "r") as f:
        k, steps = f["k"][:], f["step"][:]
    SpectraFile(path, k, int(steps[-1])).close()
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert ds.energy.dims == ("time", "k") and list(ds.step.values) == list(steps)


def test_a_restart_whose_rows_hold_other_spectra_keeps_every_row_readable(tmp_path):
    """Rows holding other spectra after a restart (the forcing turned off: no injection_energy) cannot
    join the old table, whose readers take the rows every dataset has (every later row was hidden):
    the old file is set aside whole in aside/, the new rows start a new spectra.h5 (through the CLI:
    test_restart.py)."""
    from simulator.output.spectra import read_spectra

    path, k = tmp_path / "spectra.h5", np.arange(4.0)
    spectra = SpectraFile(path, k, None)
    for step in (10, 20):
        spectra.append(step, step / 100, {"energy": np.ones(4), "injection_energy": np.ones(4)})
    spectra.close()
    spectra = SpectraFile(path, k, 20)
    for step in (30, 40, 50):
        spectra.append(step, step / 100, {"energy": np.ones(4)})
    spectra.close()
    assert list(read_spectra(path)["step"]) == [30, 40, 50] and "injection_energy" not in read_spectra(path)
    old = read_spectra(tmp_path / "aside" / "spectra.until-00000020.h5")
    assert list(old["step"]) == [10, 20] and old["injection_energy"].shape == (2, 4)


def test_plot_projection_reads_contiguous_planes_in_either_layout(tmp_path, devices):
    """simulator.plots.project averages along any axis reading planes of the axis stored slowest: z now,
    x in schema 1 (a field written without a storage order is laid out as schema 1 was)."""
    from simulator import plots

    fft = backend("slab", 2, devices)
    rho = np.random.default_rng(5).standard_normal(fft.shape)
    new = write_snapshot(tmp_path / "s00000000", {"rho": sharded(fft, rho)}, {"step": 0}, (1, 1, 1), 0.0)
    old = io.write(tmp_path / "old", {"rho": io.Field(sharded(fft, rho))}, {"step": 0, "time": 0.0})
    for index, outer in [(new, 2), (old, 0)]:
        with io.Snapshot(index) as snap:
            reads = []
            read = snap.read
            snap.read = lambda name, where=(): reads.append(where) or read(name, where)
            for axis in range(3):
                np.testing.assert_allclose(plots.project(snap, "rho", axis), rho.mean(axis=axis), rtol=1e-12)
            assert all(isinstance(where[outer], int) for where in reads) and len(reads) == 3 * fft.shape[outer]


def test_spectra_open_in_readers_while_a_run_appends(tmp_path):
    """h5py and xarray in another process open spectra.h5 between rows and hold it open while rows are
    appended; load_run's reader works beside an h5py and an xarray handle of this process."""
    import subprocess
    import sys

    from simulator.output.spectra import read_spectra

    path, k = tmp_path / "spectra.h5", np.arange(5.0)
    spectra = SpectraFile(path, k, None)
    spectra.append(0, 0.0, {"energy": np.ones(5)})
    reader = ("import sys, time, h5py, xarray as xr\n"
              "f = h5py.File(sys.argv[1], 'r'); print(f['energy'].shape[0], flush=True)\n"
              "ds = xr.open_dataset(sys.argv[1], engine='h5netcdf'); print(ds.energy.shape[0], flush=True)\n"
              "time.sleep(3); f.close(); ds.close()\n")
    proc = subprocess.Popen([sys.executable, "-c", reader, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "1" and proc.stdout.readline().strip() == "1", proc.stderr.read()
    spectra.append(1, 0.5, {"energy": 2 * np.ones(5)})  # while the other process holds the file open
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    with h5py.File(path, "r") as f, xr.open_dataset(path, engine="h5netcdf") as ds:
        table = read_spectra(path)
        assert f["energy"].shape[0] == ds.energy.shape[0] == 2
    assert table["time"].tolist() == [0.0, 0.5] and table["energy"][1, 0] == 2.0
    spectra.close()
