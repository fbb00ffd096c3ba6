"""User-defined outputs (output.tasks, simulator.observables.tasks, tasks.h5): every slice, profile and box reduction
equals the same reduction in NumPy of the snapshot written at the same step; rows fall on each task's own
schedule (a time between chunk ends landed on); 4 devices write what 1 writes; a restart drops the rows
after its checkpoint and continues as the uninterrupted run; a changed task keeps its old rows aside;
xarray opens each task with named coordinates; the program is planned and gathers no 3D array; bad
entries are refused in one line naming the key, and nothing is written."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

import simulator
from simulator.output.tasks import FILE, TasksFile, describe, read_tasks
from simulator.planning import plan
from simulator.run.simulation import Simulation

ROOT = Path(__file__).parents[1]
SHAPE, BOX = [8, 12, 16], [2 * math.pi, 4 * math.pi, 2 * math.pi]
TASKS = [
    {"name": "wz_mid", "field": "vorticity", "component": "z", "reduce": "slice", "dt": 0.04},  # z = N/2 by default
    {"name": "wx_y3", "field": "vorticity", "component": "x", "reduce": "slice", "axis": "y", "index": 3, "every": 4},
    {"name": "speed_x", "field": "velocity", "component": "magnitude", "reduce": "profile", "axis": "x", "every": 4},
    {"name": "w_profile", "field": "velocity", "component": "z", "reduce": "profile", "times": [0.03, 0.06]},
    {"name": "speed_mean", "field": "velocity", "component": "magnitude", "reduce": "mean", "every": 2},
    *({"name": f"u_{r}", "field": "velocity", "component": "x", "reduce": r, "every": 2, "at_end": True}
      for r in ("mean_square", "rms", "min", "max")),
]
#: the steps each task writes: dt = 0.01, chunks of 2 steps, t = 0.03 landed on (a chunk cut at step 3)
STEPS = {"wz_mid": [0, 4, 8], "wx_y3": [0, 4, 8], "speed_x": [0, 4, 8], "w_profile": [3, 6],
         "speed_mean": [0, 2, 4, 6, 8], **{f"u_{r}": [0, 2, 4, 6, 8] for r in ("mean_square", "rms", "min", "max")}}
NUMPY = {"mean": np.mean, "mean_square": lambda f: np.mean(f * f), "rms": lambda f: np.sqrt(np.mean(f * f)),
         "min": np.min, "max": np.max}


def _config(**extra):
    return simulator.load_config(None, {
        "precision": "float64", "grid.shape": SHAPE, "grid.box": BOX, "fft.backend": "single", "initial.name": "random",
        "time.dt": 0.01, "time.t_end": 0.08, "output.chunk": 2, "output.snapshots.every": 2,
        "output.snapshots.times": [0.03], "checkpoint.every": 4, "output.tasks": TASKS, **extra})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One run on one device and the same on four (a 2x2 pencil: x and y sharded), float64."""
    d = tmp_path_factory.mktemp("tasks")
    assert simulator.run_config(_config(), d / "one") == 0
    assert simulator.run_config(_config(**{"fft.backend": "pencil", "fft.mesh": [2, 2]}), d / "four") == 0
    return d


def _expected(task, field):
    """The task's reduction in NumPy of a snapshot ``field`` (this code's order: (3, Nx, Ny, Nz) or (Nx, Ny, Nz))."""
    c = task.get("component")
    f = np.sqrt(np.sum(field**2, axis=0)) if c == "magnitude" else field["xyz".index(c)] if c else field
    axis = "xyz".index(task.get("axis", "z"))
    if task["reduce"] == "slice":
        return np.take(f, task.get("index", SHAPE[axis] // 2), axis=axis)
    if task["reduce"] == "profile":
        return np.mean(f, axis=tuple(a for a in range(3) if a != axis))
    return NUMPY[task["reduce"]](f)


def test_every_row_equals_the_reduction_of_the_snapshot_at_its_step(runs):
    run = simulator.load_run(runs / "one")  # through the results reader (no JAX)
    snapshots = {ref.step: ref for ref in run.snapshots}
    assert set(run.tasks) == {t["name"] for t in TASKS}
    for task in TASKS:
        rows = run.tasks[task["name"]]
        for step, values in zip(rows.step, rows.values, strict=True):
            with snapshots[int(step)].open() as snap:
                field = snap.read(task["field"])
            expected = _expected(task, field)
            assert values.shape == np.shape(expected), task["name"]
            error = np.max(np.abs(values - expected)) / np.max(np.abs(field))
            assert error < 1e-12, (task["name"], step, error)
        assert np.ptp(rows.values) > 0, task["name"]  # the rows change: a stale or zero value would fail


def test_rows_fall_on_each_tasks_schedule_with_coordinates_and_units(runs):
    tasks = read_tasks(runs / "one" / FILE)
    for name, steps in STEPS.items():
        assert list(tasks[name].step) == steps, name
        np.testing.assert_allclose(tasks[name].time, 0.01 * np.asarray(steps), rtol=0, atol=1e-14, err_msg=name)
    wz, profile = tasks["wz_mid"], tasks["speed_x"]
    assert wz.dims == ("x", "y") and wz.values.shape == (3, SHAPE[0], SHAPE[1])
    np.testing.assert_allclose(wz.coords["y"], np.arange(SHAPE[1]) * BOX[1] / SHAPE[1], rtol=1e-15)
    assert wz.attrs["index"] == SHAPE[2] // 2 and wz.attrs["position"] == pytest.approx(BOX[2] / 2)
    assert wz.attrs["units"] == "code units" and "vorticity" in wz.attrs["long_name"]
    assert profile.dims == ("x",) and tasks["wx_y3"].dims == ("x", "z") and tasks["u_rms"].dims == ()


def test_four_devices_write_what_one_device_writes(runs):
    one, four = read_tasks(runs / "one" / FILE), read_tasks(runs / "four" / FILE)
    assert set(one) == set(four)
    scale = {}  # per field: its largest value in any task (a mean near 0 is measured against it)
    for rows in one.values():
        scale[rows.attrs["field"]] = max(scale.get(rows.attrs["field"], 0.0), np.max(np.abs(rows.values)))
    for name, rows in one.items():
        assert list(four[name].step) == list(rows.step), name
        error = np.max(np.abs(four[name].values - rows.values)) / scale[rows.attrs["field"]]
        assert error < 1e-12, (name, error)


def test_a_restart_drops_the_rows_after_its_checkpoint_and_continues_as_the_uninterrupted_run(runs, tmp_path):
    """The finished run continued again from its step-4 checkpoint: the rows its first segment wrote after
    step 4 are dropped (none repeats) and the new ones equal the uninterrupted run's, bit for bit."""
    again = tmp_path / "again"
    shutil.copytree(runs / "one", again)
    assert simulator.run_config(_config(), again, restart=str(again / "checkpoints" / "c00000004.json")) == 0
    reference, resumed = read_tasks(runs / "one" / FILE), read_tasks(again / FILE)
    for name, rows in reference.items():
        assert list(resumed[name].step) == list(rows.step), name
        np.testing.assert_array_equal(resumed[name].values, rows.values, err_msg=name)


def test_a_changed_task_keeps_its_old_rows_aside(tmp_path):
    """A restart whose task of the same name computes something else: the old rows stay whole in
    <name>.until-<step>, a new table starts; an unchanged task is cut back to the checkpoint."""
    cfg = _config()
    tasks = {t.name: t for t in cfg.output.tasks}

    def layouts(*entries):
        return [describe(e, SHAPE, BOX, {}, "") for e in entries]

    f = TasksFile(layouts(tasks["wz_mid"], tasks["u_max"]), {}, {})
    f.open(tmp_path, None)
    for step in (0, 4, 8):
        f.append("wz_mid", step, 0.01 * step, np.full(SHAPE[:2], float(step)))
        f.append("u_max", step, 0.01 * step, np.float64(step))
    moved = dataclasses.replace(tasks["wz_mid"], index=2)
    f = TasksFile(layouts(moved, tasks["u_max"]), {}, {})
    f.open(tmp_path, 4)
    f.append("wz_mid", 8, 0.08, np.zeros(SHAPE[:2]))
    data = read_tasks(tmp_path / FILE)
    assert list(data["wz_mid.until-00000004"].step) == [0, 4, 8] and data["wz_mid.until-00000004"].values[-1, 0, 0] == 8
    assert list(data["wz_mid"].step) == [8] and data["wz_mid"].attrs["index"] == 2
    assert list(data["u_max"].step) == [0, 4]


def test_xarray_opens_each_task_with_named_coordinates(runs):
    xr = pytest.importorskip("xarray")
    with xr.open_dataset(runs / "one" / FILE, engine="h5netcdf", group="wz_mid") as ds:
        assert ds.wz_mid.dims == ("time", "x", "y")
        np.testing.assert_allclose(ds.time, [0.0, 0.04, 0.08], atol=1e-14)
        np.testing.assert_allclose(ds.x, np.arange(SHAPE[0]) * BOX[0] / SHAPE[0], rtol=1e-15)
        assert list(ds.step.values) == [0, 4, 8] and ds.wz_mid.attrs["units"] == "code units"
    with xr.open_dataset(runs / "one" / FILE, engine="h5netcdf", group="w_profile") as ds:
        assert ds.w_profile.dims == ("time", "z") and ds.z.size == SHAPE[2]


def _gathered(hlo: str) -> list[list[int]]:
    """The largest shape each all-gather of a compiled program produces (an async start's type is a tuple
    of its operand and result: the larger is the result)."""
    types = re.findall(r"= (\(?[a-z][^=\n]*?) all-gather(?:-start)?\(", hlo)
    shapes = [[[int(n) for n in dims.split(",") if n] for dims in re.findall(r"\[([\d,]*)\]", t)] for t in types]
    return [max(group, key=math.prod) for group in shapes if group]


def test_the_program_is_planned_and_gathers_no_3d_array(runs):
    """simulator plan and the fit check compile the tasks program with the run's others; on a 2x2 pencil its
    planes and profiles reach every device as planes and lines: no all-gather of three non-trivial axes (the
    check itself sees one: replicating a whole field)."""
    cfg = _config(**{"fft.backend": "pencil", "fft.mesh": [2, 2]})
    assert "tasks" in plan.run_programs(cfg) and "tasks" not in plan.run_programs(_config(**{"output.tasks": []}))
    sim = Simulation(cfg, jax.devices()[:4])
    compiled = plan.compiled_programs(sim, plan.abstract_state(sim), ["tasks"])["tasks"]
    assert plan.program_bytes(compiled) > 0
    shapes = _gathered(compiled.as_text())
    assert shapes and all(sum(n > 1 for n in s) <= 2 for s in shapes), shapes
    whole = jax.jit(lambda eq, s, p: jax.lax.with_sharding_constraint(eq.fields(s, p)["velocity"][0],
                                                                      eq.fft.replicated_sharding()))
    text = whole.lower(sim.equation, plan.abstract_state(sim), sim.params).compile().as_text()
    assert any(sum(n > 1 for n in s) == 3 for s in _gathered(text))


BAD = [  # (overrides, the key named)
    ({"output.tasks": [{"name": "a", "field": "pressure", "every": 10}]}, "output.tasks[0].field"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "every": 10}]}, "output.tasks[0].component"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "w", "every": 10}]},
     "output.tasks[0].component"),
    ({"CONFIG": "jeans.yaml",  # Schrodinger-Poisson: scalar fields only
      "output.tasks": [{"name": "a", "field": "density", "component": "x", "every": 10}]}, "output.tasks[0].component"),
    ({"physics.scalars": [{"diffusivity": 0.01}],
      "output.tasks": [{"name": "a", "field": "scalar", "component": 1, "every": 10}]}, "output.tasks[0].component"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "index": 16, "every": 10}]},
     "output.tasks[0].index"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "reduce": "mean", "axis": "x",
                        "every": 10}]}, "output.tasks[0].axis"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "reduce": "median", "every": 10}]},
     "output.tasks[0].reduce"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "every": 10},
                       {"name": "a", "field": "vorticity", "component": "x", "every": 10}]}, "output.tasks[1].name"),
    ({"output.tasks": [{"name": "w-z", "field": "velocity", "component": "x", "every": 10}]}, "output.tasks[0].name"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "every": 7}]}, "output.tasks[0].every"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x"}]}, "output.tasks[0]"),
    ({"output.tasks": [{"name": "a", "field": "velocity", "component": "x", "times": [99.0]}]},
     "output.tasks[0].times"),
]


@pytest.mark.parametrize("overrides, key", BAD, ids=[key + ":" + str(i) for i, (_, key) in enumerate(BAD)])
def test_a_bad_entry_exits_2_in_one_line_naming_its_key_and_writes_nothing(overrides, key, tmp_path, capsys):
    from simulator.cli import main

    overrides = dict(overrides)
    config = ROOT / "configs" / overrides.pop("CONFIG", "taylor_green.yaml")
    sets = [a for k, v in {"grid.shape": 16, "output.chunk": 10, **overrides}.items()
            for a in ("--set", f"{k}={json.dumps(v)}")]
    out = tmp_path / "run"
    assert main(["run", str(config), *sets, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {key} = "), err
    assert not out.exists()
    if key.endswith(".field"):  # what is allowed: the equation's fields
        assert "velocity, vorticity" in err[0]


def test_plot_draws_each_task_from_the_file(runs):
    """``simulator plot``: one figure per task; a slice's last row as an image with each pixel centred on its
    grid point, a profile's rows as an image against time, a reduction as a curve against time."""
    from test_plots import png_size

    from simulator.cli import main
    from simulator.equations import get
    from simulator.plots.figures import PIXELS
    from simulator.plots.tasks import task_figure

    assert main(["plot", str(runs / "one")]) == 0
    for task in TASKS:
        assert png_size(runs / "one" / "plots" / f"task_{task['name']}.png") == PIXELS, task["name"]
    run = simulator.load_run(runs / "one")
    info = get("navier_stokes")
    image = task_figure(run.tasks["wz_mid"], run.config, info, "code units").axes[0].images[0]
    np.testing.assert_array_equal(image.get_array(), run.tasks["wz_mid"].values[-1].T)
    dx, dy = BOX[0] / SHAPE[0], BOX[1] / SHAPE[1]
    np.testing.assert_allclose(image.get_extent(), [-dx / 2, BOX[0] - dx / 2, -dy / 2, BOX[1] - dy / 2], rtol=1e-12)
    mesh = task_figure(run.tasks["speed_x"], run.config, info, "code units").axes[0].collections[0]
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(SHAPE[0], 3), run.tasks["speed_x"].values.T)
    line = task_figure(run.tasks["u_max"], run.config, info, "code units").axes[0].lines[0]
    np.testing.assert_array_equal(line.get_xdata(), run.tasks["u_max"].time)
    # returned for a notebook (load_run(...).plot.task): the same figure
    np.testing.assert_array_equal(run.plot.task("wz_mid").axes[0].images[0].get_array(),
                                  run.tasks["wz_mid"].values[-1].T)
    np.testing.assert_array_equal(run.plot.task("u_max").axes[0].lines[0].get_ydata(), line.get_ydata())
    with pytest.raises(ValueError, match="has no rows of the task 'nope' \\(tasks with rows: "):
        run.plot.task("nope")
