"""The files of a run between plates read as they look, with h5py as a user reads them: the ``box`` attribute against
the coordinates, the coordinates and fields named and in units, the plates' axis one name in every file."""

from __future__ import annotations

import logging
from pathlib import Path

import h5py
import numpy as np
import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: the walled runs, each on a small grid for a few steps: (config, overrides)
RUNS = {
    "convection": ("convection_2d_noslip.yaml", ["grid.shape=[16, 9]", "time.t_end=0.02", "time.dt=0.01"]),
    "channel": ("channel_poiseuille.yaml", ["grid.shape=[8, 9]", "time.t_end=0.02", "time.dt=0.01"]),
}

#: each run's unit system: its name as ``units["system"]`` begins, a length's unit, a velocity's
SYSTEMS = {"convection": ("free-fall", "H", "U_ff"), "channel": ("outer", "h", "U")}


def cli(*args: str) -> int:
    """``simulator ARGS`` through the command's own function, the package logger left as it was."""
    from simulator.cli import main
    from simulator.log import LOGGER_NAME

    logger = logging.getLogger(LOGGER_NAME)
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    try:
        return main(list(args))
    finally:
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Each of :data:`RUNS` run once: snapshots, profiles and spectra at t = 0 and at its end."""
    out = {}
    for name, (config, overrides) in RUNS.items():
        run = tmp_path_factory.mktemp(name) / "run"
        sets = [*overrides, "fft.mesh=[1]", "output.chunk=2", "output.snapshots.dt=0.02", "output.profiles.dt=0.02",
                "output.spectra.dt=0.02"]
        code = cli("run", str(CONFIGS / config), "--out", str(run),
                   *[arg for s in sets for arg in ("--set", s)])
        assert code == 0, name
        out[name] = run
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_a_walled_planes_box_attribute_gives_the_lengths_along_its_coordinates(runs, name):
    """``f.attrs["box"]`` of a walled plane's snapshot gives the lengths along the axes ``box_axes`` names, x and z (a
    plane stored as a plane: no one cell's y), as its coordinates run: the bounded axis's last point is its length
    (Gauss-Lobatto points reach the top plate), the periodic one's points are i L / N (it was the box's (z, x, y)
    order: [4, 4, 1] for a 4 x 1 plane)."""
    with h5py.File(sorted((runs[name] / "snapshots").glob("s*.h5"))[-1]) as f:
        box, names = list(f.attrs["box"]), f.attrs["box_axes"]
        assert names == '["x", "z"]'
        lx, lz = (4.0, 1.0) if name == "convection" else (2 * np.pi, 2.0)
        assert box == pytest.approx([lx, lz], rel=1e-15)
        assert f["z"][-1] == pytest.approx(box[1], rel=1e-15) and f["z"][0] == 0.0
        np.testing.assert_allclose(f["x"][...], np.arange(len(f["x"])) * box[0] / len(f["x"]), rtol=1e-15)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_plates_axis_is_z_in_every_file_of_a_walled_plane(runs, name):
    """One name for the plates' axis: z in the snapshot (its coordinate, the fields' dimension scales, the
    component along it), profiles.h5, a channel's wall_spectra.h5, the slice and profile figures' labels and the
    export's run.nc, which holds no y (it held both: the snapshots' y and the profiles' z, one axis; then the one
    cell's y). The stored plane is (Nz, Nx), its vectors' components x and z."""
    run = runs[name]
    nx, nz = (16, 9) if name == "convection" else (8, 9)
    with h5py.File(sorted((run / "snapshots").glob("s*.h5"))[-1]) as f:
        assert f["z"].shape == (nz,) and "y" not in f and f["x"].shape == (nx,)
        assert f["temperature" if name == "convection" else "streamwise"].shape == (nz, nx)
        assert [d[0].name for d in f["vorticity"].dims] == ["/z", "/x"]
        assert list(f["component"].asstr()[...]) == ["x", "z"]
    with h5py.File(run / "profiles.h5") as f:
        np.testing.assert_array_equal(f["z"][...], h5py.File(sorted((run / "snapshots").glob("s*.h5"))[-1])["z"][...])
    import simulator

    results = simulator.load_run(run)
    length = SYSTEMS[name][1]
    ax = results.plot.slice().axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == (f"x ({length})", f"z ({length})")  # they said y
    if name == "convection":  # a channel's profiles are drawn in wall units
        assert results.plot.profiles().axes[0].get_ylabel() == f"z ({length})"
    assert cli("export", str(run)) == 0
    with h5py.File(run / "export" / "run.nc") as f:
        assert f["z"].shape == (nz,) and "y" not in f
        assert f["profiles/z"].shape == (nz,)
        if name == "channel":
            assert f["wall_spectra/z"].shape == (nz,)


def json_attr(obj: h5py.HLObject, key: str) -> dict:
    import json

    return json.loads(obj.attrs[key])


@pytest.mark.parametrize("name", list(RUNS))
def test_every_file_of_a_walled_run_says_its_coordinates_fields_and_units(runs, name):
    """In the snapshot, profiles.h5 and (a channel's) wall_spectra.h5, read with h5py: the unit system in words
    (``units["system"]``), each coordinate's units and long_name, each field's or profile's units in that system and
    what it is (description or long_name). They said "code units" of a run in free-fall units, and profiles.h5 said
    nothing of its datasets."""
    system, length, velocity = SYSTEMS[name]
    run = runs[name]
    with h5py.File(sorted((run / "snapshots").glob("s*.h5"))[-1]) as f:
        assert json_attr(f, "units")["system"].startswith(system) and json_attr(f, "units")["length"] == length
        for axis in ("x", "z"):
            assert f[axis].attrs["units"] == length and f[axis].attrs["long_name"]
        assert f["velocity"].attrs["units"] == velocity
        for field in ("velocity", "vorticity"):
            assert f[field].attrs["description"].startswith(field), dict(f[field].attrs)
            assert "Nx" not in f[field].attrs["description"]  # the canonical layout it is not stored in: left out
        if name == "convection":
            assert f["temperature"].attrs["units"] == "Delta T" and f["vorticity"].attrs["units"] == "U_ff/H"
    with h5py.File(run / "profiles.h5") as f:
        assert json_attr(f, "units")["system"].startswith(system)
        assert f["z"].attrs["units"] == length and f["time"].attrs["units"] == json_attr(f, "units")["time"]
        profiles = [n for n in f if n not in ("z", "time", "step")]
        assert profiles and all(f[n].attrs["long_name"] and f[n].attrs["units"] for n in profiles)
        speed = "velocity_rms" if name == "convection" else "mean_velocity"
        assert f[speed].attrs["units"] == velocity
        if name == "channel":
            assert f["reynolds_uv"].attrs["units"] == f"({velocity})^2"
    if name == "channel":
        with h5py.File(run / "wall_spectra.h5") as f:
            assert f["kx"].attrs["units"] == f"1/({length})" and f["z"].attrs["units"] == length
            assert f["uu_kx"].attrs["units"] == f"({velocity})^2" and "E_uu" in f["uu_kx"].attrs["long_name"]


def test_a_planes_plates_across_y_are_read_as_z_with_a_note(tmp_path):
    """``simulator validate`` of a plane with ``grid.walls.axis: y`` (its name before) takes it, read as z, with one
    line saying so on stderr; Dedalus' and the box's ``z`` (refused on a plane before) takes no note."""
    import subprocess
    import sys

    config = str(CONFIGS / "convection_2d_noslip.yaml")
    for axis, noted in (("z", False), ("y", True)):
        r = subprocess.run([sys.executable, "-m", "simulator", "validate", config, "--set", f"grid.walls.axis={axis}"],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0 and "    axis: z" in r.stdout, r.stderr
        lines = [line for line in r.stderr.splitlines() if "grid.walls.axis" in line]
        assert lines == (["grid.walls.axis = y is read as z: a plane's plates lie across z, its second direction, as "
                          "a box's (write z)"] if noted else []), r.stderr


def test_the_files_pages_walled_reading_lines_as_written(runs, capsys):
    """docs/reference/files.md's walled h5py lines, on this module's convection run (16 x 9) for the tutorial's
    (64 x 32): what they print is what the page's comments say, the grid's sizes apart."""
    from docs_pages import code

    block = code("reference/files.md", "python", 1).replace("outputs/tutorial_convection", str(runs["convection"]))
    exec(compile(block, "files.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '["x", "z"] [4. 1.]'
    assert lines[1] == "(9, 16) /z H"
    assert lines[2] == "(9, 16, 2) ['x' 'z']"
    assert lines[3] == "H Delta T U_ff"


def test_a_run_whose_plane_had_its_plates_across_y_restarts(runs, tmp_path):
    """A checkpoint of a walled plane written when its config named the plates' axis y continues (its stored config
    is read with the axis as z): it was refused, 'was written with other physics or grid (changed: grid.walls)'."""
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(runs["convection"], run)
    marker = sorted((run / "checkpoints").glob("c*.json"))[-1]
    meta = json.loads(marker.read_text())
    meta["config"]["grid"]["walls"]["axis"] = "y"
    marker.write_text(json.dumps(meta))
    assert cli("run", str(run / "config.yaml"), "--out", str(run), "--restart", "--set", "time.t_end=0.04") == 0
    assert json.loads((run / "status.json").read_text())["state"] == "finished"
