"""Sweeps without Slurm: expansion, validation of every point before any write, the manifest, local
runs that skip finished points, collection, and the array job a submission would ask for."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simulator import sweep, sweep_collect, sweep_file, sweep_slurm
from simulator.errors import ConfigError

from support import command

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
TINY = {"grid.shape": [16, 16, 16], "precision": "float64", "time.t_end": 0.1, "output.chunk": 5}


def write_sweep(path, **body):
    path.write_text(yaml.safe_dump({"name": "s", "base": TG, **body}, sort_keys=False))
    return path


def cli(cwd, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "simulator", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def here(capfd, *args):
    """``simulator ARGS`` made by the command's own function in this process (:func:`support.command`), in the
    current directory (the test's): its exit status, stdout and stderr, as a process's; for a command that needs no
    process of its own (no runtime flags read when JAX starts, no lock held by this process, no signal). A local
    sweep's points are still processes of their own."""
    code, out, err = command(capfd, *map(str, args))
    return subprocess.CompletedProcess(["simulator", *map(str, args)], code, out, err)


def test_grid_is_a_cartesian_product_and_zip_goes_together(tmp_path):
    spec = sweep_file.load(write_sweep(tmp_path / "s.yaml",
                                       grid={"physics.viscosity": [0.1, 0.2], "grid.shape": [16, 32]},
                                       zip={"initial.seed": [1, 2, 3], "initial.amplitude": [0.5, 1.0, 2.0]}))
    assert spec.swept == ("physics.viscosity", "grid.shape", "initial.seed", "initial.amplitude")
    assert len(spec.points) == 2 * 2 * 3
    assert spec.points[0].params == {"physics.viscosity": 0.1, "grid.shape": 16, "initial.seed": 1,
                                     "initial.amplitude": 0.5}
    assert spec.points[-1].params == {"physics.viscosity": 0.2, "grid.shape": 32, "initial.seed": 3,
                                      "initial.amplitude": 2.0}
    assert len({tuple(p.params.items()) for p in spec.points}) == 12  # all distinct
    explicit = sweep_file.load(write_sweep(tmp_path / "p.yaml", points=[{"physics.viscosity": 0.1},
                                                                   {"physics.viscosity": 0.3, "grid.shape": 32}]))
    assert explicit.swept == ("physics.viscosity", "grid.shape") and len(explicit.points) == 2


@pytest.mark.parametrize(("body", "expected"), [
    ({}, "sweeps nothing"),
    ({"grid": {"physics.viscosity": 0.1}}, "grid.physics.viscosity = 0.1 is not a list"),
    ({"grid": {"physics.viscosity": [0.1]}, "points": [{"physics.viscosity": 1}]}, "cannot be combined"),
    ({"grid": {"physics.viscosity": [0.1]}, "set": {"physics.viscosity": 1}}, "is also swept"),
    ({"grid": {"physics.viscosity": [0.1]}, "max_parallel": 0}, "max_parallel = 0"),
    ({"grid": {"physics.viscosity": [0.1]}, "base": "missing.yaml"}, "base = 'missing.yaml' does not exist"),
    ({"grid": {"physics.viscosity": [0.1, 0.2, 0.1]}}, "grid.physics.viscosity = 0.1 is repeated"),
    ({"zip": {"initial.seed": [1, 1], "initial.amplitude": [0.5, 0.5]}},
     "point 1 = {'initial.seed': 1, 'initial.amplitude': 0.5} repeats point 0"),
    ({"points": [{"physics.viscosity": 0.1}, {"physics.viscosity": 0.2}, {"physics.viscosity": 0.1}]},
     "point 2 = {'physics.viscosity': 0.1} repeats point 0"),
    # what --submit sets itself: sbatch takes the last one given, so these would override it (the array's points)
    ({"grid": {"physics.viscosity": [0.1, 0.2]}, "sbatch": ["--time=00:10:00", "--array=0-1"]},
     "sbatch[1] = '--array=0-1' is set by --submit; --submit sets --array (the unfinished points, max_parallel at "
     "once)"),
    ({"grid": {"physics.viscosity": [0.1, 0.2]}, "sbatch": ["-a 0"]}, "sbatch[0] = '-a 0' is set by --submit"),
    ({"grid": {"physics.viscosity": [0.1, 0.2]}, "sbatch": ["--output=x.out"]}, "sbatch[0] = '--output=x.out' is set"),
    ({"grid": {"physics.viscosity": [0.1, 0.2]}, "sbatch": ["-Jname"]}, "sbatch[0] = '-Jname' is set by --submit"),
    ({"grid": {"physics.viscosity": [0.1, 0.2]}, "sbatch": ["--job-name", "x"]}, "sbatch[0] = '--job-name' is set"),
])
def test_malformed_sweep_files_are_named(tmp_path, body, expected):
    with pytest.raises(ConfigError) as err:
        sweep_file.load(write_sweep(tmp_path / "s.yaml", **body))
    assert expected in str(err.value)


@pytest.mark.parametrize("option", ["--arr=0-1", "--ar=0", "--outp=x.out", "--job=name", "--pars"])
def test_an_abbreviated_option_that_submit_sets_is_refused_too(tmp_path, capfd, monkeypatch, option):
    """sbatch takes any unambiguous abbreviation of a long option (`--arr=0-1` is `--array=0-1`), so an abbreviated
    `--array`, `--output`, `--job-name` or `--parsable` in a sweep file's `sbatch` list took over --submit's own as
    the full names did: `--arr=0-1` after `--array=0-2%2` would run points 0-1 only. Refused in one line, exit 2,
    nothing written."""
    file = write_sweep(tmp_path / "s.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.05, 0.1]},
                       sbatch=["--time=00:10:00", option])
    monkeypatch.chdir(tmp_path)
    dry = here(capfd, "sweep", file, "--out", "sw", "--submit", "--dry-run")
    assert (dry.returncode, dry.stderr.strip().count("\n")) == (2, 0), dry.stdout + dry.stderr
    assert f"sbatch[1] = '{option}' is set by --submit" in dry.stderr
    assert not (tmp_path / "sw").exists()


def test_sbatch_options_that_submit_does_not_set_are_kept_in_order(tmp_path):
    options = ["--time=00:10:00", "--open-mode=append", "-p", "gpu", "--account=a", "--gpus-per-task=1"]
    spec = sweep_file.load(write_sweep(tmp_path / "s.yaml", grid={"physics.viscosity": [0.1, 0.2]}, sbatch=options))
    assert spec.sbatch == tuple(options)


def test_one_bad_point_fails_the_sweep_before_anything_is_written(tmp_path):
    fixed = {k: v for k, v in TINY.items() if k != "grid.shape"}
    spec = sweep_file.load(write_sweep(tmp_path / "s.yaml", set=fixed,
                                  grid={"physics.viscosity": [0.01, 0.02], "grid.shape": [16, 15]}))
    with pytest.raises(ConfigError) as err:
        sweep.prepare(spec, tmp_path / "out")
    assert "sweep point 1 (physics.viscosity=0.01, grid.shape=15)" in str(err.value) and "odd Nz" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_a_directory_holding_another_sweep_is_refused(tmp_path):
    first = sweep_file.load(write_sweep(tmp_path / "a.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.02]}))
    sweep.prepare(first, tmp_path / "out")
    before = (tmp_path / "out" / "sweep.yaml").read_text()
    sweep.prepare(first, tmp_path / "out")  # the same sweep again: reused
    other = sweep_file.load(write_sweep(tmp_path / "b.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.03]}))
    with pytest.raises(ConfigError, match="already holds a different sweep"):
        sweep.prepare(other, tmp_path / "out")
    assert (tmp_path / "out" / "sweep.yaml").read_text() == before


def test_a_directory_of_no_sweep_or_a_sweep_without_its_manifest_is_refused_and_left_as_it_was(tmp_path):
    """Without a sweep.yaml, a prepare wrote into any directory: a run's (whose `simulator plot` then drew a
    sweep), someone's own (a configs/p000.yaml of theirs replaced), or a sweep's whose manifest was lost (its point
    configs rewritten with this sweep's values, so its finished points would be collected under them). Refused in
    one line, nothing written; a directory a prepare stopped in (its configs/ and logs/ alone) is prepared."""
    spec = sweep_file.load(write_sweep(tmp_path / "a.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.02]}))
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "status.json", "timeseries.csv"):
        (run / name).write_text("a run's own")
    with pytest.raises(ConfigError, match=r"--out = '.*run' holds files of no sweep \(config.yaml, status.json, "
                                          r"timeseries.csv\); give a new or empty directory, or a prepared sweep's$"):
        sweep.prepare(spec, run)
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "status.json", "timeseries.csv"]
    other = sweep_file.load(write_sweep(tmp_path / "b.yaml", set=TINY, grid={"physics.viscosity": [0.03, 0.04]}))
    sweep.prepare(other, tmp_path / "lost")
    (tmp_path / "lost" / "sweep.yaml").unlink()
    def files():
        return {f: f.read_bytes() for f in sorted((tmp_path / "lost").rglob("*")) if f.is_file()}

    before = files()
    with pytest.raises(ConfigError, match=r"already holds a different sweep \(point 0: physics.viscosity = 0.03"):
        sweep.prepare(spec, tmp_path / "lost")
    assert files() == before
    sweep.prepare(spec, tmp_path / "stopped")
    (tmp_path / "stopped" / "sweep.yaml").unlink()
    assert sweep.prepare(spec, tmp_path / "stopped")["points"][1]["params"] == {"physics.viscosity": 0.02}


def test_a_particle_only_sweep_prepared_before_the_wave_s_keys_were_left_out_is_continued(tmp_path):
    """Its point configs hold the wave's keys at their defaults, which a config now refuses: the same sweep file
    given again is still the same sweep (not 'a different sweep'), and its point configs are written anew."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "base": str(ROOT / "configs" / "cold_dark_matter.yaml"),
        "set": {"grid.shape": 16, "physics.cdm_particles": 4096}, "grid": {"initial.seed": [1, 2]}}))
    spec = sweep_file.load(tmp_path / "c.yaml")
    sweep.prepare(spec, tmp_path / "out")
    point = tmp_path / "out" / "configs" / "p000.yaml"
    written = point.read_text()
    stored = yaml.safe_load(written)
    stored["physics"].update(m22=1.0, self_interaction=0.0, f_a=None, fdm_transfer=True)
    point.write_text(yaml.safe_dump(stored, sort_keys=False))
    sweep.prepare(spec, tmp_path / "out")
    assert point.read_text() == written


@pytest.mark.parametrize("mode", ["--point", "--group"])
def test_a_point_or_group_of_a_particle_only_sweep_prepared_before_the_wave_s_keys_were_left_out_runs(
        tmp_path, mode, monkeypatch, capfd):
    """What an array task runs on such a directory reads its stored point configs as `simulator sweep FILE` does
    (it was refused: physics.m22 = 1.0 is a setting of the wave). runtime.max_wall stops each after its first
    chunk; the resume hint of a point, and of every member of a group, is the command that ran it."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "base": str(ROOT / "configs" / "cold_dark_matter.yaml"),
        "set": {"grid.shape": 8, "physics.cdm_particles": 512, "runtime.max_wall": 0.001},
        "grid": {"initial.seed": [1, 2]}}))
    monkeypatch.chdir(tmp_path)
    r = here(capfd, "sweep", "c.yaml", "--out", "out", *(["--ensemble"] if mode == "--group" else []))
    assert r.returncode == 0, r.stderr[-2000:]
    for point in (tmp_path / "out" / "configs").iterdir():
        stored = yaml.safe_load(point.read_text())
        stored["physics"].update(m22=1.0, self_interaction=0.0, f_a=None, fdm_transfer=True)
        point.write_text(yaml.safe_dump(stored, sort_keys=False))
    r = cli(tmp_path, "sweep", "out", mode, "0", "--threads", "1")  # a process of its own: threads set as JAX starts
    assert r.returncode == 75, r.stderr[-2000:]
    assert [sweep.point_state(tmp_path / "out", p) for p in ("p000", "p001")] == (
        ["interrupted", "pending"] if mode == "--point" else ["interrupted", "interrupted"])
    hints = [line for line in r.stderr.splitlines() if "resume with:" in line]
    assert len(hints) == (1 if mode == "--point" else 2), r.stderr[-2000:]
    assert all(line.endswith(f"resume with: simulator sweep out {mode} 0 --threads 1") for line in hints), hints


def test_array_spec_lists_the_unfinished_points_with_the_limit():
    assert sweep_slurm.array_spec([0, 1, 2], 2) == "0-2%2"
    assert sweep_slurm.array_spec([5, 0, 1, 3, 6, 7, 9], 4) == "0-1,3,5-7,9%4"


def test_submit_without_a_slurm_folder_here_uses_the_shipped_sweep_template(tmp_path, monkeypatch, capfd):
    """An install with pip has no slurm/ folder, and `--submit` without --script asked for slurm/sweep.sbatch of the
    current directory alone: refused, with no template to copy. It now falls back on the template shipped with the
    package and says which it used; a slurm/sweep.sbatch of the directory's own still comes first. The installed
    package's own copy: tests/test_install.py."""
    from simulator import shipped

    file = write_sweep(tmp_path / "s.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.05]}, max_parallel=2)
    monkeypatch.chdir(tmp_path)
    dry = here(capfd, "sweep", file, "--out", "sw", "--submit", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    template = shipped.templates()["sweep"]
    assert template.read_text() == (ROOT / "slurm" / "sweep.sbatch").read_text()
    lines = dry.stdout.splitlines()
    assert lines[-2] == (f"job script: {template} (the shipped sweep template: no slurm/sweep.sbatch here; "
                         "`simulator slurm sweep > my_sweep.sbatch`, edited, then --script my_sweep.sbatch)")
    assert lines[-1].startswith("sbatch --parsable --job-name=s --array=0-1%2 ")
    assert lines[-1].endswith(f" {template} sw")
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "sweep.sbatch").write_text("#!/bin/bash\n")
    lines = here(capfd, "sweep", file, "--out", "sw", "--submit", "--dry-run").stdout.splitlines()
    assert lines[-2] == "job script: slurm/sweep.sbatch" and lines[-1].endswith(" slurm/sweep.sbatch sw")


#: each shipped template, its arguments, and the rest of its srun line after the simulator command
def fake_srun(tmp_path):
    """A folder holding an ``srun`` that prints its command line instead of running it: put first on a template's
    PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/bash\necho \"srun $*\"\n")
    (bin_dir / "srun").chmod(0o755)
    return bin_dir


TEMPLATE_TASKS = {"sweep": (["sw"], "sweep sw --point 1"),
                  "cpu": (["c.yaml", "o"], "run c.yaml --out o --resume --cpu-devices 2"),
                  "gpu_node": (["c.yaml", "o"], "run c.yaml --out o --resume --set runtime.cpu_devices=null"),
                  "gpu_nodes": (["c.yaml", "o"], "run c.yaml --out o --resume --set runtime.cpu_devices=null")}


@pytest.mark.parametrize("template", sorted(TEMPLATE_TASKS))
def test_a_template_runs_the_simulator_on_the_path_without_a_project_venv(tmp_path, template):
    """The shipped templates ran .venv/bin/simulator of the submission directory unless SIMULATOR said otherwise,
    which an install with pip does not have: every task would fail (the sweep's was fixed first, then cpu, gpu_node
    and gpu_nodes). Without SIMULATOR each now runs the project's .venv/bin/simulator where there is one, else
    ``simulator`` on the PATH the job was given."""
    args, rest = TEMPLATE_TASKS[template]
    bin_dir = fake_srun(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1",
           "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "n1", "SLURM_CPUS_PER_TASK": "2"}

    def task(**extra):
        done = subprocess.run(["bash", str(ROOT / "slurm" / f"{template}.sbatch"), *args], cwd=tmp_path,
                              env={**env, **extra}, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[-1]

    srun = "srun --kill-on-bad-exit=1 --cpus-per-task=2"
    assert task() == f"{srun} simulator {rest}"
    assert task(SIMULATOR="/opt/sim/bin/simulator") == f"{srun} /opt/sim/bin/simulator {rest}"
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "simulator").write_text("#!/bin/bash\n")
    (tmp_path / ".venv" / "bin" / "simulator").chmod(0o755)
    assert task() == f"{srun} .venv/bin/simulator {rest}"


@pytest.mark.parametrize("template", sorted(TEMPLATE_TASKS))
def test_a_template_s_step_asks_for_the_job_s_cpus_per_task(tmp_path, template):
    """Slurm 22.05 to 23.02 give an srun step one CPU per task unless srun itself is given --cpus-per-task (it no
    longer reads SLURM_CPUS_PER_TASK of the job): every process of a job with --cpus-per-task=8 ran its virtual
    devices, XLA's threads and FFTW on one core. Each template passes the job's value on; without one, nothing."""
    args, rest = TEMPLATE_TASKS[template]
    bin_dir = fake_srun(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1",
           "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "n1"}
    for cpus, expected in (("8", "--cpus-per-task=8 simulator "), (None, "--kill-on-bad-exit=1 simulator ")):
        done = subprocess.run(["bash", str(ROOT / "slurm" / f"{template}.sbatch"), *args], cwd=tmp_path,
                              env={**env, **({"SLURM_CPUS_PER_TASK": cpus} if cpus else {})}, capture_output=True,
                              text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        assert expected in done.stdout.splitlines()[-1], done.stdout


@pytest.mark.slow
def test_local_sweep_runs_each_point_once_collects_and_plots(tmp_path, monkeypatch, capfd):
    file = write_sweep(tmp_path / "s.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.05]}, max_parallel=2)
    out = tmp_path / "sw"
    monkeypatch.chdir(tmp_path)
    # the points are processes of their own (started with --cpu-devices 2) whoever starts the sweep
    r = here(capfd, "sweep", file, "--out", out, "--local", "-j", "2", "--cpu-devices", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("exit 0 (finished)") == 2
    # each point's config is the fully resolved base config with its values, and runs on its own
    cfg = yaml.safe_load((out / "configs" / "p001.yaml").read_text())
    assert cfg["physics"]["viscosity"] == 0.05 and cfg["grid"]["shape"] == [16, 16, 16] and cfg["name"] == "s_p001"
    # --cpu-devices reached every point's run (as `run --cpu-devices`), not the sweep's stored configs
    assert cfg["runtime"]["cpu_devices"] is None
    for p in ("p000", "p001"):
        assert yaml.safe_load((out / p / "config.yaml").read_text())["config"]["runtime"]["cpu_devices"] == 2
        assert "devices: 2 cpu on 1 process(es)" in (out / p / "run.log").read_text()
    finished = {p: (out / p / "timeseries.csv").read_bytes() for p in ("p000", "p001")}
    again = here(capfd, "sweep", file, "--out", out, "--local")
    assert again.returncode == 0 and "2 of 2 points already finished; running 0" in again.stdout
    assert {p: (out / p / "timeseries.csv").read_bytes() for p in ("p000", "p001")} == finished
    # a submission now would ask for nothing; with one point unfinished it asks for that one only
    monkeypatch.chdir(ROOT)
    dry = here(capfd, "sweep", file, "--out", out, "--submit", "--dry-run")
    assert dry.returncode == 0 and "nothing to submit" in dry.stdout
    (out / "p001" / "status.json").unlink()
    dry = here(capfd, "sweep", file, "--out", out, "--submit", "--dry-run")
    assert dry.returncode == 0 and "--array=1%2" in dry.stdout and "slurm/sweep.sbatch" in dry.stdout
    monkeypatch.chdir(tmp_path)
    collected = here(capfd, "sweep", out, "--collect", "--diagnostic", "final_energy")
    assert collected.returncode == 0, collected.stderr
    with (out / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished", "pending"]
    assert [float(r["physics.viscosity"]) for r in rows] == [0.01, 0.05]
    assert float(rows[0]["final_energy"]) < float(rows[0]["peak_energy"])  # it decays from its peak at t = 0
    # 16^3 resolves Taylor-Green at nu = 0.05 (k_max eta >= 1.28) but not at nu = 0.01 (0.57 at t = 0)
    assert float(rows[0]["lowest_kmax_eta"]) < 1 < float(rows[1]["lowest_kmax_eta"])
    assert "red x: 1 point(s) under-resolved" in collected.stderr
    assert (out / "plots" / "sweep_final_energy.png").stat().st_size > 1000
    # a resolution diagnostic's largest value says nothing: its lowest is given instead
    header = (out / "collected.csv").read_text().splitlines()[0].split(",")
    assert "final_kmax_eta" in header and "peak_kmax_eta" not in header and "peak_energy" in header
    # every point's last spectrum in one figure (point 1 dashed: its status is gone, so it is not finished)
    assert collected.stdout.split()[-1] == str(out / "plots" / "sweep_spectra.png")
    assert (out / "plots" / "sweep_spectra.png").stat().st_size > 1000
    # the sweep read back in Python: its points with their values, states and runs
    import simulator

    loaded = simulator.load_sweep(out)
    assert (loaded.name, loaded.swept, loaded.fixed) == ("s", ("physics.viscosity",), TINY)
    assert [(p.name, p.params, p.status) for p in loaded.points] == [
        ("p000", {"physics.viscosity": 0.01}, "finished"), ("p001", {"physics.viscosity": 0.05}, "pending")]
    assert loaded.finished == loaded.points[:1] and loaded.points[1].label == "physics.viscosity = 0.05"
    assert loaded.points[1].run.config["physics"]["viscosity"] == 0.05
    for point, row in zip(loaded.points, rows, strict=True):
        assert point.run.timeseries["energy"][-1] == float(row["final_energy"])
        assert point.run.spectra["energy"].shape[1] == point.run.spectra["k"].size


def test_collected_csv_gives_a_clock_its_final_value_only(tmp_path):
    """A cosmological point's a, z and age are clocks (functions of run time alone): collected.csv gives their
    final value, not their largest (peak_z was the starting redshift); its other diagnostics keep both, and a
    resolution diagnostic its lowest instead of its largest; psi_tail's peak above 1e-3 marks the point as
    under-resolved in the sweep plot, although its final value is below. No run is needed: the manifest, the point's
    resolved config and its timeseries.csv are what collect reads."""
    import simulator
    from simulator import config as config_mod

    out = tmp_path / "sw"
    (out / "configs").mkdir(parents=True)
    (out / "p000").mkdir()
    (out / "sweep.yaml").write_text(yaml.safe_dump({"name": "cosmo", "swept": ["physics.m22"], "points": [
        {"index": 0, "name": "p000", "params": {"physics.m22": 1.0}, "config": "configs/p000.yaml"}]}))
    cfg = simulator.load_config(ROOT / "configs" / "fdm_cosmo.yaml")
    (out / "configs" / "p000.yaml").write_text(config_mod.dump(cfg))
    (out / "p000" / "timeseries.csv").write_text("step,time,dt,a,z,cosmic_time,max_density,kmax_de_broglie,"
                                                 "psi_tail\n"
                                                 "0,0.0,0.1,0.01,99.0,0.01,1.5,4.0,1e-5\n"
                                                 "5,0.5,0.1,0.02,49.0,0.03,2.5,3.0,0.0124\n"
                                                 "10,1.0,0.1,0.0272,35.8,0.05,3.5,3.2,8e-4\n")
    path, [row] = sweep_collect.collect(out)
    with path.open() as f:
        header = next(csv.reader(f))
        [stored] = list(csv.DictReader(path.open()))
    assert header == ["index", "status", "out", "physics.m22", "time", "final_a", "final_z", "final_cosmic_time",
                      "final_max_density", "peak_max_density", "final_kmax_de_broglie", "final_psi_tail",
                      "peak_psi_tail", "lowest_kmax_de_broglie"]
    assert (row["final_z"], row["peak_max_density"], row["lowest_kmax_de_broglie"]) == (35.8, 3.5, 3.0)
    # the wave's tail peaked above its ceiling and fell back: the sweep plot marks the point (a red x) by its peak
    from simulator.plots.sweep import under_resolved

    assert under_resolved(stored) == ["psi_tail = 0.012 > 0.001"]


@pytest.mark.parametrize("text", ["step,ti", "\0" * 24 + "\n0,0.0,0.1,0.125\n5,0.5,0.1,0.12\n",
                                  "step,time,dt,energy\n\0\0\0\0\n\0\0\0\0\n",
                                  "step,time,dt,energy\n0,0.0,0.1,0.125\n\0\0\0\0\n5,0.5,0.1,0.12\n"],
                         ids=["cut mid-header", "header overwritten", "rows overwritten", "damaged in the middle"])
def test_a_point_whose_time_series_is_damaged_is_collected_with_a_note_and_one_warning(tmp_path, capsys, text):
    """A point's timeseries.csv cut mid-header, or its header overwritten (NUL bytes, rows intact): `sweep
    --collect` was a KeyError 'time' traceback and wrote no collected.csv (the rows under a NUL header read as
    none, silently); its rows overwritten under an intact header, or a line in the middle: the point collected with
    no or fewer rows, unsaid. Now every other point is collected, the damaged one's row has no results and a note
    naming the file and what to do, one warning line names it, and no run directory is changed."""
    import hashlib

    import simulator
    from simulator import config as config_mod
    from simulator.cli import main

    out = tmp_path / "sw"
    (out / "configs").mkdir(parents=True)
    points = [{"index": i, "name": f"p00{i}", "params": {"physics.viscosity": v}, "config": f"configs/p00{i}.yaml"}
              for i, v in enumerate([0.01, 0.02, 0.04])]
    (out / "sweep.yaml").write_text(yaml.safe_dump({"name": "tg", "swept": ["physics.viscosity"], "points": points}))
    rows = "0,0.0,0.1,0.125\n5,0.5,0.1,0.12\n"
    for point in points:
        (out / point["name"]).mkdir()
        (out / point["config"]).write_text(config_mod.dump(simulator.load_config(TG)))
        (out / point["name"] / "timeseries.csv").write_text("step,time,dt,energy\n" + rows)
    damaged = out / "p001" / "timeseries.csv"
    damaged.write_text(text)

    def files():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}

    before = files()
    assert main(["sweep", str(out), "--collect"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"{damaged} is damaged or not as the run writes it" in warnings[0], err
    assert warnings[0].endswith("restore it from a copy, or move it out of the run directory to read the rest of "
                                "the run"), warnings[0]
    with (out / "collected.csv").open() as f:
        collected = list(csv.DictReader(f))
    assert [r["final_energy"] for r in collected] == ["0.12", "", "0.12"]
    assert not collected[0]["note"] and not collected[2]["note"]
    assert collected[1]["note"].startswith(f"{damaged} is damaged or not as the run writes it")
    assert {p: h for p, h in files().items() if p in before} == before  # the runs and the manifest untouched


def three_points(out):
    """A sweep directory of three points of Taylor-Green with two rows each (no run needed: the manifest, each
    point's resolved config and its timeseries.csv are what collect reads)."""
    import simulator
    from simulator import config as config_mod

    (out / "configs").mkdir(parents=True)
    points = [{"index": i, "name": f"p00{i}", "params": {"physics.viscosity": v}, "config": f"configs/p00{i}.yaml"}
              for i, v in enumerate([0.01, 0.02, 0.04])]
    (out / "sweep.yaml").write_text(yaml.safe_dump({"name": "tg", "swept": ["physics.viscosity"], "points": points}))
    for point in points:
        (out / point["name"]).mkdir()
        (out / point["config"]).write_text(config_mod.dump(simulator.load_config(TG)))
        (out / point["name"] / "timeseries.csv").write_text("step,time,dt,energy\n0,0.0,0.1,0.125\n5,0.5,0.1,0.12\n")
    return out


def collected_with_one_note(capsys, out, *expected, results=("0.12", "", "0.12")):
    """``sweep --collect`` of ``out``: exit 0, the points' final energies ``results`` (p001's none by default), and
    p001's note and the one warning line holding each of ``expected``; the rows collected and that warning."""
    from simulator.cli import main

    assert main(["sweep", str(out), "--collect"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "Traceback" not in err, err
    with (out / "collected.csv").open() as f:
        collected = list(csv.DictReader(f))
    assert [r["final_energy"] for r in collected] == list(results)
    assert not collected[0]["note"] and not collected[2]["note"]
    for text in expected:
        assert text in collected[1]["note"] and text in warnings[0], (collected[1]["note"], warnings[0])
    return collected, warnings[0]


@pytest.mark.parametrize("damage", ["not YAML", "binary", "empty", "no physics", "unknown equation", "missing"])
def test_a_point_whose_config_is_damaged_is_collected_with_a_note_and_one_warning(tmp_path, capsys, damage):
    """A damaged configs/p001.yaml (its equation is what says which diagnostics are clocks): `sweep --collect`
    stopped the whole collection, in one line (exit 2) or a KeyError traceback (no physics, an unknown equation),
    and wrote no collected.csv; now the other points are collected, and p001's row has no results and a note
    naming the file, why, and what to do, said in one warning line."""
    out = three_points(tmp_path / "sw")
    config = out / "configs" / "p001.yaml"
    texts = {"not YAML": "physics: [\n", "empty": "", "no physics": "grid: {shape: 8}\n",
             "unknown equation": "physics: {name: nope}\n"}
    if damage == "binary":
        config.write_bytes(b"\0\x9f\x01" * 100)
    elif damage == "missing":
        config.unlink()
    else:
        config.write_text(texts[damage])
    collected_with_one_note(capsys, out, f"{config} is damaged or not as `simulator sweep` writes it (",
                            "; restore it from a copy")


@pytest.mark.parametrize("damage", ["cut short", "empty", "not a dict", "a directory"])
def test_a_point_whose_status_is_damaged_is_collected_as_unknown_with_a_note_and_one_warning(tmp_path, capsys, damage):
    """A damaged p001/status.json: `sweep --collect` (and every listing of the points) called the point `pending`,
    never started, unsaid, though it may have run or finished; now its state is `unknown`, its results (its
    intact time series) are collected, and its note and one warning line name the file and what to do."""
    out = three_points(tmp_path / "sw")
    status = out / "p001" / "status.json"
    if damage == "a directory":
        status.mkdir()
    else:
        status.write_text({"cut short": '{"state": "finished", "st', "empty": "", "not a dict": "[1, 2]"}[damage])
    collected, warning = collected_with_one_note(capsys, out, f"{status} is damaged or not as the run writes it",
                                                 f"simulator sweep {out} --point 1", results=("0.12",) * 3)
    assert [r["status"] for r in collected] == ["pending", "unknown", "pending"]
    assert warning.startswith(f"warning: point 1 in {out / 'collected.csv'}: "), warning


@pytest.mark.parametrize("damage", ["a directory", "permission denied"])
def test_a_point_whose_time_series_cannot_be_read_is_collected_with_a_note_and_one_warning(tmp_path, capsys,
                                                                                           monkeypatch, damage):
    """A point's timeseries.csv that cannot be opened: a PermissionError traceback from `sweep --collect` (no
    collected.csv), or, a directory of that name, the point collected as if it had no rows, unsaid; now its row has
    no results and a note naming the file, why and what to do, said in one warning line."""
    import builtins

    out = three_points(tmp_path / "sw")
    series = out / "p001" / "timeseries.csv"
    if damage == "a directory":
        series.unlink()
        series.mkdir()
        expected = f"{series} is not a file"
    else:  # the suite may run as root, whom permissions do not stop
        real = builtins.open

        def denied(path, *args, **kwargs):
            if Path(path) == series:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", denied)
        expected = f"{series} cannot be read (Permission denied); make it readable"
    collected_with_one_note(capsys, out, expected)


@pytest.mark.parametrize("text", ["name: tg_viscosity\nsource: /work/configs/sweeps/t", "points: [\n",
                                  "- p000\n- p001\n"])
def test_a_damaged_sweep_yaml_is_one_line_naming_it(tmp_path, capsys, text):
    """A sweep.yaml cut short (no points), not YAML, or not a mapping: load_sweep and `simulator sweep --collect`
    raised KeyError 'points' / TypeError / a YAML traceback naming no file; now one line naming it (exit 2)."""
    import simulator
    from simulator.cli import main

    (tmp_path / "sweep.yaml").write_text(text)
    line = (f"sweep directory = '{tmp_path}' has a sweep.yaml that is damaged or not as `simulator sweep` writes it")
    with pytest.raises(ConfigError, match=f"^{line}.*; restore {tmp_path / 'sweep.yaml'} from a copy$"):
        simulator.load_sweep(tmp_path)
    assert main(["sweep", "--collect", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {line}") and err.count("\n") == 1, err
    assert not (tmp_path / "collected.csv").exists()


def test_a_second_start_of_a_running_sweep_is_refused_in_one_line(tmp_path):
    """The sweep directory has a lock of its own: while one `sweep --local` holds it (here: this
    process), another start of the same sweep is refused before it writes anything (exit 2)."""
    from simulator.run.lock import RunLock

    file = write_sweep(tmp_path / "s.yaml", set=TINY, grid={"physics.viscosity": [0.01, 0.05]})
    lock = RunLock(tmp_path / "sw")
    lock.acquire()
    try:
        r = cli(tmp_path, "sweep", file, "--out", tmp_path / "sw", "--local")
    finally:
        lock.release()
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "is in use by a running process" in lines[0], r.stderr
    assert not (tmp_path / "sw").exists()  # nothing was written (the lock's directory went with it)


@pytest.mark.slow
def test_ctrl_c_during_a_local_ensemble_sweep_stops_it_resumably(tmp_path, monkeypatch, capfd):
    """SIGINT to the sweep's process group (what Ctrl-C sends): exit 75, no traceback, every member
    interrupted after a checkpoint, one line saying how to resume, and that command finishes it."""
    file = write_sweep(tmp_path / "s.yaml", set={**TINY, "time.t_end": 3.0},
                       grid={"physics.viscosity": [0.01, 0.05]})
    out = tmp_path / "sw"
    proc = subprocess.Popen([sys.executable, "-m", "simulator", "sweep", str(file), "--out", str(out), "--local",
                             "--ensemble"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    series = out / "p000" / "timeseries.csv"
    deadline = time.monotonic() + 200
    while not series.exists() or len(series.read_text().splitlines()) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 75 and "Traceback" not in stdout + stderr, stdout + stderr
    assert f"resume with: simulator sweep {file} --out {out} --local --ensemble" in stdout, stdout
    for p in ("p000", "p001"):
        assert sweep.point_state(out, p) == "interrupted"
    monkeypatch.chdir(tmp_path)
    again = here(capfd, "sweep", file, "--out", out, "--local", "--ensemble")  # its group a process of its own
    assert again.returncode == 0, again.stdout + again.stderr
    assert [sweep.point_state(out, p) for p in ("p000", "p001")] == ["finished", "finished"]


@pytest.mark.parametrize("template", ["gpu_node", "gpu_nodes"])
def test_a_gpu_template_runs_on_the_gpus_whatever_runtime_cpu_devices_the_config_holds(tmp_path, template):
    """A config written on a laptop with ``runtime.cpu_devices: 2`` (as docs/how-to/devices.md offers) and submitted
    with a GPU template ran on two virtual CPU devices of the GPU node, the GPUs idle: the key restricts JAX to the
    CPU. The GPU templates' runs set it to null, so that the job's GPUs are used; the config's own value stays."""
    from simulator import config

    bin_dir = fake_srun(tmp_path)
    done = subprocess.run(["bash", str(ROOT / "slurm" / f"{template}.sbatch"), "c.yaml", "o"], cwd=tmp_path,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "n1"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[-1].split()
    overrides = [line[i + 1] for i, word in enumerate(line) if word == "--set"]
    assert overrides == ["runtime.cpu_devices=null"], line
    (tmp_path / "c.yaml").write_text("runtime: {cpu_devices: 2}\n")
    assert config.load(tmp_path / "c.yaml").runtime.cpu_devices == 2
    assert config.load(tmp_path / "c.yaml", overrides).runtime.cpu_devices is None  # as the command line reads them


def test_a_sweep_task_given_gpus_runs_its_point_on_them_whatever_runtime_cpu_devices_the_config_holds(tmp_path):
    """The documented GPU sweep (the template's ``--gpus-per-task=1`` uncommented) of a laptop's base config with
    ``runtime.cpu_devices: 2`` ran every point on two virtual CPU devices, the GPUs idle: array tasks took no
    ``--set``. A task that Slurm gave GPUs runs its point with ``--set runtime.cpu_devices=null``; a CPU task as
    its config says."""
    bin_dir = fake_srun(tmp_path)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1",
           "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "n1"}
    for gpus, expected in (({"SLURM_GPUS_PER_TASK": "1"}, ["runtime.cpu_devices=null"]),
                           ({"SLURM_JOB_GPUS": "2"}, ["runtime.cpu_devices=null"]),
                           ({"SLURM_GPUS_ON_NODE": "1"}, ["runtime.cpu_devices=null"]),
                           ({"SLURM_GPUS_ON_NODE": "0"}, []), ({}, [])):
        done = subprocess.run(["bash", str(ROOT / "slurm" / "sweep.sbatch"), "sw", "--group"], cwd=tmp_path,
                              env={**env, **gpus}, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        line = done.stdout.splitlines()[-1].split()
        assert "simulator sweep sw --group 1" in done.stdout, done.stdout
        assert [line[i + 1] for i, word in enumerate(line) if word == "--set"] == expected, (gpus, line)


def test_a_point_takes_set_of_a_runtime_key_and_its_hint_in_a_slurm_job_says_to_submit_the_sweep_again(tmp_path):
    """``simulator sweep DIR --point I --set runtime.cpu_devices=null`` (what a GPU array task runs) runs a point
    of a base config holding ``runtime.cpu_devices: 2`` on the default devices (``--set`` was refused:
    "unrecognized arguments"). Stopped by runtime.max_wall inside a Slurm job, its hint names that command and, for
    the login node, the sweep submitted again (it named the command alone, which runs only in an allocation)."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "name": "c", "base": TG, "grid": {"physics.viscosity": [0.01, 0.02]},
        "set": {**TINY, "runtime.cpu_devices": 2, "runtime.max_wall": 0.001}}))
    assert cli(tmp_path, "sweep", "c.yaml", "--out", "out").returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", "out", "--point", "0", "--set",
                        "runtime.cpu_devices=null"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**env, "SLURM_JOB_ID": "7"})
    assert r.returncode == 75, r.stderr[-2000:]
    meta = yaml.safe_load((tmp_path / "out" / "p000" / "config.yaml").read_text())
    assert meta["config"]["runtime"]["cpu_devices"] is None and meta["devices"] == 1, meta
    hints = [line.split("resume with: ", 1)[1] for line in r.stderr.splitlines() if "resume with:" in line]
    assert hints == ["simulator sweep out --point 0 --set runtime.cpu_devices=null (within a Slurm allocation), or "
                     f"from the login node submit the sweep again: simulator sweep {tmp_path / 'c.yaml'} --out out "
                     "--submit"], r.stderr[-2000:]


@pytest.mark.parametrize("template", ["cpu", "gpu_node", "gpu_nodes", "sweep"])
def test_a_job_stopped_past_its_requeues_says_how_to_continue_it(tmp_path, template):
    """A job whose run checkpointed and exited 75 after MAX_REQUEUES requeues ended without a word of its own (the
    run's hint names the srun command, which runs only within an allocation): the template says that it did not
    requeue, and what to submit from the login node. Below the limit it requeues, as before."""
    args, _ = TEMPLATE_TASKS[template]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/bash\nexit 75\n")
    (bin_dir / "scontrol").write_text("#!/bin/bash\necho \"scontrol $*\"\n")
    for tool in ("srun", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1",
           "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "n1", "MAX_REQUEUES": "3"}
    for count, requeued in (("2", True), ("3", False)):
        done = subprocess.run(["bash", str(ROOT / "slurm" / f"{template}.sbatch"), *args], cwd=tmp_path,
                              env={**env, "SLURM_RESTART_COUNT": count}, capture_output=True, text=True, timeout=30,
                              check=False)
        assert done.returncode == 75, done.stderr
        last = done.stdout.splitlines()[-1]
        if requeued:
            assert last == "scontrol requeue 8", done.stdout
        elif template == "sweep":
            assert last == ("checkpointed, not requeued: MAX_REQUEUES=3 reached; to continue, submit the sweep again "
                            f"(its unfinished points): simulator sweep SWEEP.yaml --out {args[0]} --submit"), last
        else:
            assert last == ("checkpointed, not requeued: MAX_REQUEUES=3 reached; to continue, submit this job script "
                            f"again with the same output directory: sbatch JOB_SCRIPT {args[0]} {args[1]}"), last


def test_a_local_sweep_names_each_point_by_its_values_as_the_listing_does(tmp_path):
    """`simulator sweep FILE --local` reported each point as a Python dict, `point 0 {'physics.viscosity': 0.01}:
    exit 0`; it names it as a legend does, `point 0 (physics.viscosity = 0.01): exit ...`. (Here the point's config
    is missing, so its run exits 2 at once.)"""
    manifest = {"name": "s", "points": [{"index": 0, "name": "p000", "params": {"physics.viscosity": 0.01},
                                         "config": "configs/p000.yaml"}]}
    (tmp_path / "logs").mkdir()
    lines = []
    assert sweep.run_local(tmp_path, manifest, 1, report=lines.append) == 1
    assert lines[1] == f"point 0 (physics.viscosity = 0.01): exit 2 (pending); log {tmp_path / 'logs' / 'p000.log'}"


def test_a_different_sweep_s_values_are_shown_as_yaml_spells_them(tmp_path):
    """A sweep directory holding the points of another `set` is refused naming the first key that differs: a
    boolean or null value read as Python (`output.spectra.at_end = True there, False now`); it reads as YAML does."""
    first = sweep_file.load(write_sweep(tmp_path / "a.yaml", set={**TINY, "output.spectra": True},
                                        grid={"physics.viscosity": [0.01]}))
    sweep.prepare(first, tmp_path / "out")
    (tmp_path / "out" / "sweep.yaml").unlink()  # the manifest gone: the stored point configs still tell them apart
    second = sweep_file.load(write_sweep(tmp_path / "b.yaml", set={**TINY, "output.spectra": False},
                                         grid={"physics.viscosity": [0.01]}))
    with pytest.raises(ConfigError, match=r"already holds a different sweep \(point 0: output.spectra.at_end = true "
                                          r"there, false now\)"):
        sweep.prepare(second, tmp_path / "out")


def test_a_point_whose_physics_is_cautioned_is_named_when_the_sweep_is_prepared(tmp_path, capfd, monkeypatch):
    """A sweep over sigma8 whose point 1 starts far from perturbative (sigma8 = 1e6) was prepared with "all valid"
    and not a word: the caution `simulator validate` gives that config was said only in that point's run.log,
    once it ran. Preparing the sweep now prints each point's cautions, one `warning:` line each, naming the point
    and its values; a point with none says nothing."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s8.yaml"
    path.write_text(yaml.safe_dump({"name": "s8", "base": str(ROOT / "configs" / "cold_dark_matter.yaml"),
                                    "set": {"grid.shape": [16, 16, 16], "physics.cdm_particles": 4096},
                                    "grid": {"physics.sigma8": [0.8, 1.0e6]}}))
    done = here(capfd, "sweep", path, "--out", tmp_path / "out")
    assert done.returncode == 0 and "all valid" in done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: point 1 (physics.sigma8 = 1000000.0): physics.z_start = "
                                                   "49: the linear density contrast"), done.stderr
