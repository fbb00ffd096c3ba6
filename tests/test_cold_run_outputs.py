"""What a particle-only cosmological run (configs/cold_dark_matter.yaml, at 16^3) gives a user who reads it: its
particle series by snapshot, the units of what it writes and nothing else, and a slice figure that shows the
density, not markers and holes."""

from pathlib import Path

import matplotlib
import numpy as np
import pytest

import simulator
from simulator.equations.fdm_cosmo import cosmology
from simulator.plots.particle_overlay import MARKERS

from docs_pages import blocks, python

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """The shipped cold run at 16^3 (4096 particles) from z = 49 to 0, snapshots at z = 49, 9 and 0."""
    cfg = simulator.load_config(ROOT / "configs" / "cold_dark_matter.yaml", {
        "grid.shape": 16, "physics.cdm_particles": 4096, "physics.output_redshifts": [49, 9, 0]})
    run = tmp_path_factory.mktemp("cold") / "run"
    assert simulator.run_config(cfg, run) == 0
    return simulator.load_run(run)


def test_a_particle_series_is_read_by_snapshot_as_the_run_s_snapshots(cold):
    """``len(run.particles["cdm"])`` raised TypeError where ``run.snapshots`` has a length and indexing: the series
    has both, each item one snapshot with its step, time, redshift, file and arrays, the rows of the series'
    arrays; the arrays of the series stay as they were."""
    series = cold.particles["cdm"]
    assert len(series) == len(cold.snapshots) == 3
    last = series[-1]
    assert (last.step, last.time) == (cold.snapshots[-1].step, cold.snapshots[-1].time)
    assert last.path == cold.path / "particles" / f"s{last.step:08d}.h5" and last.path.is_file()
    assert last.redshift == pytest.approx(0.0, abs=1e-12) and series[0].redshift == pytest.approx(49.0)
    assert last.position.shape == last.velocity.shape == (4096, 3)
    np.testing.assert_array_equal(last.position, series.position[-1])
    np.testing.assert_array_equal(last.velocity, series.velocity[2])
    np.testing.assert_array_equal(last.ids, np.arange(4096))
    assert [s.step for s in series] == [s.step for s in cold.snapshots] == list(series.step)
    assert series[-3].step == series[0].step
    assert len(series[1:]) == 2 and series[1:][0].step == series[1].step and series[1:][-1].path == last.path
    with pytest.raises(IndexError, match="snapshot 3 of cdm's 3 particle snapshots"):
        series[3]
    with pytest.raises(TypeError, match=r"indexed by snapshot, an integer or a slice, not str 'position'"):
        series["position"]
    assert repr(last) == f"ParticleSnapshot(cdm: 4096 particles, step {last.step}, t = {last.time:.6g}, z = 0)"


def test_the_units_of_a_particle_only_run_are_those_of_what_it_writes(cold):
    """A run without the wave listed the wave's density, |psi|, phase and P_fdm among its units: the quantities
    named are exactly its snapshots' fields, its spectra and the particles' velocity."""
    named = {k for k in cold.units if k not in ("length", "time", "k", "cosmic_time") and not k.startswith("code_")}
    with cold.snapshots[-1].open() as snap:
        fields = set(snap.fields)
    spectra = {k for k in cold.spectra if k not in ("k", "step", "time", "a", "z")}
    assert fields == {"cdm_density", "potential"} and spectra == {"power", "power_linear"}
    assert named == fields | spectra | {"velocity"}
    # a run of the wave alone names none of the particles' quantities, a mixed run every one
    wave = cosmology.describe_units(0.7, 1.0, 127.0, cold=False)
    assert not {"cdm_density", "total_density", "power_cdm", "power_fdm", "velocity"} & set(wave)
    assert {"density", "abs_psi", "phase", "power"} <= set(wave)
    mixed = cosmology.describe_units(0.7, 1.0, 127.0)
    assert {"density", "cdm_density", "total_density", "power_fdm", "power_cdm", "velocity"} <= set(mixed)


def test_the_cold_run_s_slice_shows_its_density_without_holes_or_a_cover_of_markers(cold, tmp_path):
    """The cold run's slice.png drew every particle near the mid-plane as a marker over their own density (about
    10^4 at 64^3) and its empty cells, which have no logarithm, white: the particles are not drawn over their own
    density, an empty cell is the lowest colour (the colour bar's triangle), no pixel is blank."""
    fig = cold.plot.slice()
    assert not fig.axes[0].collections  # no marker over the particles' own density
    image = fig.axes[0].images[0]
    values = np.ma.getdata(image.get_array())
    assert np.isnan(values).any()  # 16^3 at z = 0 has empty cells in its mid-plane
    rgba = image.to_rgba(image.get_array())
    lowest = matplotlib.colormaps["inferno"](0.0)
    np.testing.assert_allclose(rgba[np.isnan(values)], np.tile(lowest, (np.isnan(values).sum(), 1)))
    assert np.all(rgba[..., 3] == 1.0) and not np.any(np.all(rgba[..., :3] > 0.99, axis=-1))
    assert any(getattr(c, "extend", None) == "min" for c in (im.colorbar for im in fig.axes[0].images))
    # over another field the particles are drawn, small, and at most MARKERS of them, every k-th
    ax = cold.plot.slice("potential").axes[0]
    near = len(cold.particles["cdm"][-1].position[np.abs(cold.particles["cdm"][-1].position[:, 2] - 50.0) <= 6.25])
    assert near > MARKERS
    drawn = ax.collections[0].get_offsets()
    every = -(-near // MARKERS)
    assert len(drawn) == -(-near // every) <= MARKERS
    assert ax.get_legend().get_texts()[0].get_text() == f"cdm: {near} within 1 cell of the plane, 1 in {every} drawn"


def test_the_particle_lines_of_read_outputs_as_written(cold):
    """The particle lines of docs/how-to/read-outputs.md, on this run in place of the tutorial's: they run, and
    print the last snapshot's step, time, redshift, file and shape and a line per later snapshot."""
    [block] = [b.code for b in blocks("docs/how-to/read-outputs.md") if 'particles["cdm"]' in b.code]
    done = python(block.replace('"outputs/tutorial_cold"', repr(str(cold.path))))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    last = cold.snapshots[-1]
    assert lines[0] == (f"{last.step} {last.time} 0.0 {cold.path / 'particles' / f's{last.step:08d}.h5'} [0 1 2] "
                        "(4096, 3)")
    assert [line.split(":")[0] for line in lines[1:]] == ["z = 9", "z = 0"]
