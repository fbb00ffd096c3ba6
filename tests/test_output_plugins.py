"""An output kind added from outside the package: the extrema of a field (tests/plugins/toy_output),
registered only by the environment variable SIMULATOR_OUTPUTS. Its config section validates and is
documented, the planner compiles its program, a run on two devices writes its rows (equal to the extrema
of the run's own snapshot), a restart that changes its definition sets the old rows aside, and
load_run, export and plot read it, with no edit to simulator/."""

import ast
import dataclasses
import functools
import os
import subprocess
import sys
from pathlib import Path

import h5netcdf
import numpy as np
import pytest

import simulator
from simulator.config import OutputConfig
from simulator.output import kinds
from simulator.output.hdf5 import Snapshot

from docs_pages import blocks
from support import command

ROOT = Path(__file__).parents[1]
PLUGINS = Path(__file__).parent / "plugins"
ENV = {**os.environ, "SIMULATOR_OUTPUTS": "toy_output",
       "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
#: the config of docs/how-to/add-an-output.md (the page's YAML block), run here as the page runs it
CONFIG = next(b.code for b in blocks("docs/how-to/add-an-output.md") if b.lang == "yaml")


def simulator_cli(cwd, *args, env=ENV):
    return subprocess.run([sys.executable, "-m", "simulator", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_nothing_in_the_package_names_the_plugin_output():
    for path in (ROOT / "simulator").rglob("*.py"):
        assert "toy_output" not in path.read_text() and "extrema.h5" not in path.read_text(), path


#: the shipped output kinds that OutputConfig (their sections) and RunResults (what they wrote) also name as attributes
ALIASES = ("timeseries", "spectra", "snapshots", "statistics", "tasks", "particles", "trajectories")


def test_the_package_reaches_output_sections_and_readings_only_through_the_registry():
    """``cfg.output.section(name)`` and ``run.output(name)`` are the package's one way to a shipped output kind's
    section and to what it wrote; ``cfg.output.spectra`` and ``run.spectra`` are aliases kept for users."""
    found = []
    for path in sorted((ROOT / "simulator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or node.attr not in ALIASES:
                continue
            owner = ast.unparse(node.value)
            results = owner == "self" and path.relative_to(ROOT).as_posix() == "simulator/results/load.py"
            if results or owner.split(".")[-1] in ("output", "run") and owner != "simulator.output":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_the_output_configs_named_sections_are_aliases_of_the_registrys():
    task = {"name": "w", "field": "vorticity", "component": "z", "every": 10}
    cfg = simulator.load_config({"output": {"tasks": [task]}})
    named = {f.name for f in dataclasses.fields(OutputConfig)} - {"dir", "chunk", "registered"}
    assert named <= set(kinds.registry()) and set(kinds.sections()) <= named
    for name in named:
        assert getattr(cfg.output, name) is cfg.output.section(name), name
    assert cfg.output.section("tasks")[0].name == "w" and cfg.output.section("timeseries") is None
    with pytest.raises(KeyError, match="'spectrum' is not an output kind \\(registered: timeseries, spectra, "):
        cfg.output.section("spectrum")


def test_a_broken_output_plugin_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "x.yaml").write_text(CONFIG)
    r = simulator_cli(tmp_path, "validate", "x.yaml", env={**ENV, "SIMULATOR_OUTPUTS": "no_such_output_module"})
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "SIMULATOR_OUTPUTS = 'no_such_output_module' cannot be imported" in r.stderr
    r = simulator_cli(tmp_path, "validate", "x.yaml", env={k: v for k, v in ENV.items() if k != "SIMULATOR_OUTPUTS"})
    assert r.returncode == 2 and "output.extrema = " in r.stderr and "is an unknown key" in r.stderr


@pytest.mark.slow
def test_a_plugin_output_kind_plans_runs_restarts_exports_and_plots(tmp_path, monkeypatch, capfd):
    """The plug-in's kind through every command. The commands but the plan are made by their own function in this
    process (:func:`support.command`), whose registry of output kinds reads SIMULATOR_OUTPUTS as a process of their
    own does; the runs on the first 2 of the suite's devices by their mesh. The plan is a process of its own, on its
    own 2 devices."""
    monkeypatch.setenv("SIMULATOR_OUTPUTS", "toy_output")
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text(CONFIG)
    code, out, _ = command(capfd, "config-docs")
    assert code == 0 and "**`output.extrema`**" in out and "| `output.extrema.field` |" in out
    code, _, err = command(capfd, "validate", "x.yaml", "--set", "output.extrema.field=temperature")
    assert code == 2 and "output.extrema.field = 'temperature' is not a field" in err
    code, _, err = command(capfd, "validate", "x.yaml", "--set", "output.extrema.every=3")
    assert code == 2 and "output.extrema.every = 3 does not fall on a chunk boundary" in err
    plan = simulator_cli(tmp_path, "plan", "x.yaml", "--cpu-devices", "2")
    assert plan.returncode == 0 and "extrema " in plan.stdout, plan.stdout + plan.stderr

    code, _, err = command(capfd, "run", "x.yaml", "--set", "fft.mesh=[2]", "--out", "run")
    assert code == 0, err[-3000:]
    rows = simulator.load_run(tmp_path / "run").output("extrema")
    assert list(rows["step"]) == [0, 5, 10, 15, 20] and rows["attrs"]["field"] == "velocity"
    with Snapshot(tmp_path / "run" / "snapshots" / "s00000020.h5") as snap:
        u = snap.read("velocity")
    for name, reduce in (("min", np.min), ("max", np.max), ("mean", np.mean)):
        np.testing.assert_allclose(rows[name][-1], reduce(u, axis=(1, 2, 3)), rtol=1e-13, atol=1e-15)
    assert rows["max"][0, 0] == pytest.approx(1.0) and rows["max"][0, 2] == pytest.approx(0.0, abs=1e-14)

    # a restart that records another field: the velocity rows are kept whole, aside; the new file is vorticity's
    code, _, err = command(capfd, "run", "x.yaml", "--set", "fft.mesh=[2]", "--out", "run", "--restart",
                           "--set", "time.t_end=0.3", "--set", "output.extrema.field=vorticity")
    assert code == 0 and "output.extrema changed (field)" in err, err[-3000:]
    run = simulator.load_run(tmp_path / "run")
    assert list(run.output("extrema")["step"]) == [25, 30] and run.output("extrema")["attrs"]["field"] == "vorticity"
    assert [p.name for p in run.aside] == ["extrema.until-00000020.h5"]

    code, _, err = command(capfd, "export", "run")
    assert code == 0, err
    with h5netcdf.File(tmp_path / "run" / "export" / "run.nc") as f:
        np.testing.assert_array_equal(f["extrema"]["max"][:], run.output("extrema")["max"])
    code, _, err = command(capfd, "plot", "run")
    assert code == 0 and (tmp_path / "run" / "plots" / "extrema.png").is_file(), err


#: a new in-tree row diagnostic, whole: the largest |vorticity| of each component, a row per output. What a
#: module under simulator/output/ would hold; registered below by one line in simulator.output.kinds.MODULES
ROW_DIAGNOSTIC = '''
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.output.base import OutputKind, Program, Schedule, Scheduled, Writer, host_arrays
from simulator.output.rows import RowFile, read_rows

FILE = "vorticity_peak.h5"


@dataclass(frozen=True)
class VorticityPeakOutput(Scheduled):
    """The largest |vorticity| of each component, appended to vorticity_peak.h5."""


def peak(sim, eq, state, params, t, dt):
    return {"peak": abs(eq.at(t).fields(state, params)["vorticity"]).max(axis=(1, 2, 3))}


class PeakWriter(Writer):
    name = "vorticity_peak"

    def __init__(self, schedule, rank0):
        super().__init__()
        self.schedule, self.rank0, self.file = schedule, rank0, None

    def open(self, run_dir, resumed_step):
        if self.rank0:
            self.file = RowFile(run_dir / FILE, {"component": np.arange(3)}, resumed_step, {},
                                what="output.vorticity_peak", description="max |vorticity| per component")

    def write(self, moment):
        values = moment.get("vorticity_peak")
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)


KIND = OutputKind(
    name="vorticity_peak", doc="vorticity_peak.h5: max |vorticity| of each component, a row per output",
    programs=(Program("vorticity_peak", peak, host=host_arrays),), section=VorticityPeakOutput,
    schedules=("vorticity_peak",), files=(FILE,),
    writers=lambda cfg, sim, ctx: [PeakWriter(Schedule.of(cfg.output.section("vorticity_peak")), ctx.rank0)],
    read=lambda run_dir: read_rows(run_dir / FILE) if (run_dir / FILE).is_file() else {})
'''


@pytest.fixture
def row_diagnostic(tmp_path, monkeypatch):
    """The module above, importable, and its one registration line (the registry made again around it)."""
    from simulator.output import kinds

    (tmp_path / "vorticity_peak.py").write_text(ROW_DIAGNOSTIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(kinds, "MODULES", (*kinds.MODULES, "vorticity_peak"))
    monkeypatch.setattr(kinds, "_load", functools.cache(kinds._load.__wrapped__))
    return tmp_path


@pytest.mark.slow
def test_a_new_in_tree_row_diagnostic_is_its_module_and_one_registry_line(row_diagnostic):
    """A row diagnostic added as the how-to says, its module and one line in kinds.MODULES, is configured
    (its section's schedule keys, checked against the chunk), compiled by the planner beside the chunk, computed
    once per moment and written by a run on the session's devices (rows equal to the snapshot's max |vorticity|),
    and read back by load_run: nothing else in simulator/ names it."""
    import jax

    from simulator.errors import ConfigError
    from simulator.planning import plan

    base = {"grid.shape": [16, 16, 16], "precision": "float64", "time.t_end": 0.1, "output.chunk": 5,
            "output.snapshots.every": 10, "runtime.cpu_devices": len(jax.devices())}
    with pytest.raises(ConfigError, match="output.vorticity_peak.every = 3 does not fall on a chunk boundary"):
        simulator.load_config(None, {**base, "output.vorticity_peak.every": 3})
    cfg = simulator.load_config(None, {**base, "output.vorticity_peak.every": 5})
    assert plan.run_programs(cfg) == ("chunk", "diagnostics", "spectra", "fields", "vorticity_peak")
    assert "vorticity_peak" not in plan.run_programs(simulator.load_config(None, base))
    assert simulator.run_config(cfg, row_diagnostic / "run") == 0
    run = simulator.load_run(row_diagnostic / "run")
    rows = run.output("vorticity_peak")
    assert list(rows["step"]) == [0, 5, 10]
    for ref in run.snapshots:
        with ref.open() as snap:
            w = snap.read("vorticity")
        np.testing.assert_allclose(rows["peak"][list(rows["step"]).index(ref.step)], np.abs(w).max(axis=(1, 2, 3)),
                                   rtol=1e-13)
