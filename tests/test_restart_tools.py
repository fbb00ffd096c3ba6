"""Restart tools as a user runs them: extending a run (--add-to-t-end), a wall-clock limit in the config
(runtime.max_wall: checkpoint and exit 75, then --resume), and restarts at another resolution.

Every run is a real ``simulator run`` on a tiny float64 case, made by the command's own function in the test's
process (:func:`support.command`), which starts no new Python and JAX for each; a resume hint run in a shell as
printed and a run of two processes are processes of their own.
"""

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from simulator.fft.compact import to_full
from simulator.output import checkpoints, timeseries

from support import command

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
SMALL = ["--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5",
         "--set", "output.snapshots.every=0"]
EXIT_INTERRUPTED = 75


def simulator(capfd, config, *args):
    """``simulator run CONFIG ARGS`` made by the command's own function in this process (:func:`support.command`),
    in the current directory (the test's), on one device as a process of its own has it (this one holds the
    suite's 8): its exit status, stdout and stderr, as a process's."""
    code, out, err = command(capfd, "run", config, "--set", "fft.mesh=[1]", *args)
    return subprocess.CompletedProcess(["simulator", "run", config, *args], code, out, err)


def final_state(run_dir):
    ckpt = checkpoints.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return ckpt.step, ckpt.time, {name: f[name][:] for name in f}


def status(run_dir):
    return json.loads((run_dir / "status.json").read_text())


@pytest.mark.slow
def test_add_to_t_end_extends_a_finished_run_exactly(tmp_path, monkeypatch, capfd):
    """A run to t = 0.2 extended by 0.2 is the run to t = 0.4, bit for bit (here stopped on the way and
    resumed with the new t_end its hint names); --add-to-t-end without --restart, or with --resume, or
    negative, is refused and changes nothing."""
    monkeypatch.chdir(tmp_path)
    ref = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.4", "--out", "ref")
    assert ref.returncode == 0, ref.stderr
    first = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.2", "--out", "run")
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "run" / "status.json").read_text()
    for extra, expected in ((["--resume"], "needs --restart (with --resume every requeued job"),
                            ([], "needs --restart"), (["--restart"], "--add-to-t-end = -1.0 is not allowed")):
        value = "-1" if extra == ["--restart"] else "0.2"
        r = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.2", "--out", "run", "--add-to-t-end", value, *extra)
        assert r.returncode == 2 and expected in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (tmp_path / "run" / "status.json").read_text() == before

    # extended, and stopped after its first chunk by runtime.max_wall: the resume hint carries the new t_end
    extended = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.2", "--set", "runtime.max_wall=5", "--out",
                         "run", "--restart", "--add-to-t-end", "0.2")
    assert extended.returncode == EXIT_INTERRUPTED, extended.stderr
    assert "t_end 0.4" in extended.stderr
    assert "--set time.t_end=0.4 --resume --out run" in extended.stderr
    resumed = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.4", "--out", "run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    # the closing line tells the segment from the run (it said "finished 40 steps" for a 15-step segment)
    assert "finished: this segment 15 steps" in resumed.stderr and "run total 40 steps, t = 0.4" in resumed.stderr
    step_ref, t_ref, state_ref = final_state(tmp_path / "ref")
    step, t, state = final_state(tmp_path / "run")
    assert (step, t) == (step_ref, t_ref) == (40, 0.4)
    for name in state_ref:
        np.testing.assert_array_equal(state[name], state_ref[name])
    assert status(tmp_path / "run")["state"] == "finished"
    assert (tmp_path / "run" / "timeseries.csv").read_text() == (tmp_path / "ref" / "timeseries.csv").read_text()



@pytest.mark.slow
def test_add_to_t_end_extends_a_cosmological_run_through_its_final_redshift(tmp_path, monkeypatch, capfd):
    """Cold dark matter alone (fdm_cosmo, fdm_fraction 0, 8^3 particles on 8^3) to z = 9, extended by 0.5 in ln a:
    physics.z_end, which sets a cosmological run's t_end, becomes the redshift there, so the run's config.yaml
    holds the end it runs to, and the resume hint of the extended run stopped on the way names physics.z_end;
    resumed so, it is the run to that redshift bit for bit. Extending past today (z < 0, which physics.z_end
    refuses) is refused in one line, the run untouched. Before, t_end was set beside an unchanged z_end: the hint's
    --set time.t_end was refused (time.t_end contradicts z_end) and a plain --resume declared the run finished
    where it had stopped."""
    import math
    import shlex

    monkeypatch.chdir(tmp_path)
    cold = str(ROOT / "configs" / "cold_dark_matter.yaml")
    base = ["--set", "grid.shape=8", "--set", "physics.cdm_particles=512", "--set", "precision=float64",
            "--set", "physics.output_redshifts=[49,9]", "--set", "time.dt=0.2", "--set", "output.chunk=2"]
    first = simulator(capfd, cold, *base, "--set", "physics.z_end=9", "--out", "run")
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "run" / "status.json").read_text()
    past = simulator(capfd, cold, *base, "--set", "physics.z_end=9", "--out", "run", "--restart", "--add-to-t-end",
                     "5")
    assert past.returncode == 2 and past.stderr.count("\n") == 1, past.stderr
    assert past.stderr.startswith("error: --add-to-t-end = 5.0 would set physics.z_end = -0.932621, which is out of "
                                  "range; give a T that ends the run where its config can (physics.z_end: it must be "
                                  ">= 0.0; the run ends at redshift z = 9)"), past.stderr
    assert (tmp_path / "run" / "status.json").read_text() == before

    z_end = 50 * math.exp(-(math.log(5) + 0.5)) - 1  # the redshift 0.5 in ln a after z = 9
    extended = simulator(capfd, cold, *base, "--set", "physics.z_end=9", "--set", "runtime.max_wall=5", "--out",
                         "run", "--restart", "--add-to-t-end", "0.5")
    assert extended.returncode == EXIT_INTERRUPTED, extended.stderr
    hint = shlex.split(extended.stderr.split("resume with: ")[1].split("\n")[0])  # as a shell reads it
    sets = [v for k, v in zip(hint, hint[1:], strict=False) if k == "--set"]
    assert not any(v.startswith("time.t_end=") for v in sets), hint
    z_set = [v for v in sets if v.startswith("physics.z_end=")][-1]  # the last --set wins: the extension's
    assert float(z_set.split("=")[1]) == pytest.approx(z_end, rel=1e-12)
    code, _, err = command(capfd, *hint[hint.index("run"):])
    assert code == 0 and "finished: this segment" in err, err
    ref = simulator(capfd, cold, *base, "--set", z_set, "--out", "ref")
    assert ref.returncode == 0, ref.stderr
    step_ref, t_ref, state_ref = final_state(tmp_path / "ref")
    step, t, state = final_state(tmp_path / "run")
    assert (step, t) == (step_ref, t_ref) and t == pytest.approx(math.log(5) + 0.5, rel=1e-12)
    for name in state_ref:
        np.testing.assert_array_equal(state[name], state_ref[name])
    import yaml

    physics = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["config"]["physics"]
    assert physics["z_end"] == pytest.approx(z_end, rel=1e-12)


def test_add_to_t_end_of_a_cosmological_run_that_ends_today_says_so(tmp_path, monkeypatch, capfd):
    """Cold dark matter run to z = 0, extended by 1: no T extends it, and the refusal says so in one line (exit 2),
    nothing written. It printed a broken sentence with the raw redshift the extension would have set
    (`would set physics.z_end=-0.6321205588285578; a T that ends the run where its config can (...)`)."""
    monkeypatch.chdir(tmp_path)
    cold = str(ROOT / "configs" / "cold_dark_matter.yaml")
    base = ["--set", "grid.shape=8", "--set", "physics.cdm_particles=512", "--set", "precision=float64",
            "--set", "physics.output_redshifts=[49]", "--set", "time.dt=0.5", "--set", "output.chunk=4"]
    assert simulator(capfd, cold, *base, "--out", "run").returncode == 0
    files = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    r = simulator(capfd, cold, *base, "--out", "run", "--restart", "--add-to-t-end", "1")
    assert (r.returncode, r.stderr.count("\n")) == (2, 1), r.stderr
    assert r.stderr == ("error: --add-to-t-end = 1.0 cannot extend the run, which already ends at redshift z = 0; that "
                        "is the latest end its config allows (physics.z_end: it must be >= 0.0)\n")
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == files


@pytest.mark.slow
def test_a_resume_hint_runs_as_printed_in_a_shell(tmp_path, monkeypatch, capfd):
    """A run started with a value holding a space and brackets (``--set 'physics.output_redshifts=[49, 9]'``, as the
    cosmology tutorial writes it) and a key removed (``--unset time.cfl``), stopped by runtime.max_wall, prints a
    resume hint that a shell runs as printed: each argument quoted where it needs it, the key removed again. Before, the
    hint was the arguments joined by spaces, ``--set physics.output_redshifts=[49, 9]``, which a shell splits
    (simulator: unrecognized arguments: 9])."""
    import shlex

    monkeypatch.chdir(tmp_path)
    cold = str(ROOT / "configs" / "cold_dark_matter.yaml")
    args = ["--set", "grid.shape=8", "--set", "physics.cdm_particles=512", "--set", "precision=float64",
            "--set", "physics.z_end=9", "--set", "physics.output_redshifts=[49, 9]", "--set", "time.dt=0.2",
            "--set", "output.chunk=2", "--unset", "time.cfl", "--set", "runtime.max_wall=5", "--out", "run"]
    stopped = simulator(capfd, cold, *args)
    assert stopped.returncode == EXIT_INTERRUPTED, stopped.stderr
    hint = stopped.stderr.split("resume with: ")[1].split("\n")[0]
    assert hint.startswith("simulator run ") and "'physics.output_redshifts=[49, 9]'" in hint, hint
    assert " --unset time.cfl " in hint, hint  # a key removed is removed again (as --unset, not --set)
    resumed = subprocess.run(f"{shlex.quote(sys.executable)} -m {hint} --set runtime.max_wall=null", shell=True,
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0 and "finished: this segment" in resumed.stderr, resumed.stderr

@pytest.mark.slow
def test_the_resume_hint_of_a_run_into_its_output_dir_resumes_it_there(tmp_path, monkeypatch, capfd):
    """A run written where its config's ``output.dir`` says (no ``--out``), stopped by runtime.max_wall, printed a hint
    resuming ``--out outputs/<name>``, where no run is: followed, it started a new run there from t = 0. The hint names
    the directory the run writes, and followed, it continues the run there."""
    import shlex

    monkeypatch.chdir(tmp_path)
    args = [*SMALL, "--set", "time.t_end=0.2", "--set", "output.dir=elsewhere"]
    stopped = simulator(capfd, TG, *args, "--set", "runtime.max_wall=0.001")
    assert stopped.returncode == EXIT_INTERRUPTED, stopped.stderr
    hint = stopped.stderr.split("resume with: ")[1].split("\n")[0]
    assert hint.endswith(" --resume --out elsewhere"), hint
    ckpt = checkpoints.find(Path("elsewhere"))
    resumed = simulator(capfd, *shlex.split(hint)[2:], "--set", "runtime.max_wall=null")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {ckpt.index.with_suffix('')}: step {ckpt.step}, " in resumed.stderr, resumed.stderr
    assert status(tmp_path / "elsewhere")["state"] == "finished" and not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_max_wall_checkpoints_and_exits_75_then_resume_finishes_it(tmp_path, monkeypatch, capfd):
    """runtime.max_wall: the run stops when the elapsed time plus two calls of steps, a checkpoint and 5 s of margin
    would pass the limit (with max_wall = 5 that is after the first call, one step that measures the step, inside
    the first chunk), writes a checkpoint, exits 75 saying how to resume; --resume (here without the limit) realigns
    its chunks and finishes it, equal to an uninterrupted run bit for bit."""
    monkeypatch.chdir(tmp_path)
    ref = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.3", "--out", "ref")
    assert ref.returncode == 0, ref.stderr
    stopped = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.3", "--set", "runtime.max_wall=5", "--out", "run")
    assert stopped.returncode == EXIT_INTERRUPTED, stopped.stderr
    assert "stopped by runtime.max_wall = 5 s at step 1" in stopped.stderr
    assert "--resume --out run" in stopped.stderr
    ckpt = checkpoints.find(tmp_path / "run")
    assert ckpt is not None and ckpt.step == 1
    assert status(tmp_path / "run")["state"] == "interrupted"
    resumed = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.3", "--out", "run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stderr
    step_ref, t_ref, state_ref = final_state(tmp_path / "ref")
    step, t, state = final_state(tmp_path / "run")
    assert (step, t) == (step_ref, t_ref) == (30, 0.3)
    for name in state_ref:
        np.testing.assert_array_equal(state[name], state_ref[name])
    assert status(tmp_path / "run")["state"] == "finished"


ABC = str(ROOT / "configs" / "abc.yaml")
#: the ABC flow decays exactly, exp(-nu k^2 t) at any resolution that holds mode 1
EXACT = ["--set", "precision=float64", "--set", "output.chunk=5", "--set", "checkpoint.every=5",
         "--set", "output.snapshots.every=0"]


def velocity_spectrum(run_dir):
    """The final state as the half spectrum (3, N, N, N/2), whichever layout wrote it (a compact spectrum's
    sizes depend on the mesh: zeros at the modes it does not hold)."""
    step, t, state = final_state(run_dir)
    shape = checkpoints.find(run_dir).meta["config"]["grid"]["shape"]
    return step, t, np.asarray(to_full(state["state"], shape))


@pytest.mark.slow
def test_abc_restarted_at_twice_and_half_the_resolution_equals_the_runs_made_there(tmp_path, monkeypatch, capfd):
    """The ABC flow run on 16^3 to t = 0.1, then branched with --restart CKPT --out NEW at 32^3 (and at
    8^3) to t = 0.2, equals the run made at that resolution from t = 0 to 1e-12; so does a new run with
    initial.name: file from that checkpoint (time_from_file). Restarting at another grid into the same
    directory is refused (its files hold one grid). The one-process runs are made by the command's own
    function in this process (:func:`support.command`), on one device as a process of their own has it; the
    two-process run reads the checkpoint one of them wrote."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str]:
        done = simulator(capfd, *args)
        return done.returncode, done.stderr

    code, err = run(ABC, *EXACT, "--set", "grid.shape=16", "--set", "time.t_end=0.1", "--out", "c16")
    assert code == 0, err
    marker = "c16/checkpoints/c00000005.json"
    code, err = run(ABC, *EXACT, "--set", "grid.shape=32", "--set", "time.t_end=0.2", "--out", "c16", "--restart")
    assert code == 2 and "is a new run: branch it with --restart" in err, err
    for n in (32, 8):
        code, err = run(ABC, *EXACT, "--set", f"grid.shape={n}", "--set", "time.t_end=0.2", "--out", f"ref{n}")
        assert code == 0, err
        (tmp_path / f"branch{n}").mkdir()
        code, err = run(ABC, *EXACT, "--set", f"grid.shape={n}", "--set", "time.t_end=0.2", "--restart", marker,
                        "--out", f"branch{n}")
        assert code == 0, err
        assert f"from 16x16x16 to {n}x{n}x{n}" in err
        code, err = run(ABC, *EXACT, "--set", f"grid.shape={n}", "--set", "time.t_end=0.2",
                        "--set", f"initial={{name: file, path: {marker}, time_from_file: true}}", "--out", f"file{n}")
        assert code == 0, err
        step_ref, t_ref, u_ref = velocity_spectrum(tmp_path / f"ref{n}")
        for name in (f"branch{n}", f"file{n}"):
            step, t, u = velocity_spectrum(tmp_path / name)
            assert t == t_ref == 0.2 and u.shape == u_ref.shape, name
            assert np.max(np.abs(u - u_ref)) / np.max(np.abs(u_ref)) < 1e-12, name
        assert velocity_spectrum(tmp_path / f"branch{n}")[0] == step_ref == 10
        # the branch records the state it starts from, interpolated onto its grid, as the new run from the file does
        rows = [timeseries.read(tmp_path / name) for name in (f"branch{n}", f"file{n}")]
        assert (rows[0]["step"][0], rows[1]["step"][0]) == (5, 0) and rows[0]["time"][0] == rows[1]["time"][0] == 0.1
        np.testing.assert_allclose(rows[0]["energy"], rows[1]["energy"], rtol=1e-12, atol=0)
        assert velocity_spectrum(tmp_path / f"file{n}")[0] == 5  # a new run: its steps count from 0
    # two processes (2 devices each, pencil) read the 16^3 checkpoint into 32^3: each its own blocks
    (tmp_path / "two").mkdir()
    two = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "2", "--timeout",
                          "240", "run", ABC, *EXACT, "--set", "grid.shape=32", "--set", "time.t_end=0.2", "--set",
                          "fft.backend=pencil", "--restart", marker, "--out", "two"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    _, _, u = velocity_spectrum(tmp_path / "two")
    _, _, u_ref = velocity_spectrum(tmp_path / "ref32")
    assert np.max(np.abs(u - u_ref)) / np.max(np.abs(u_ref)) < 1e-12
    assert not list((tmp_path / "two").glob(".remap*"))
