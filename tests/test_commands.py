"""What the commands print: ``simulator --version``, and ``simulator launch`` forwarding its processes'
output a whole line at a time, without gloo's connection reports unless asked, each error once."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import simulator
from simulator import version
from simulator.cli import main
from simulator.launch import launch

ROOT = Path(__file__).parents[1]
#: a log line of a run: time, rank, level, message
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d \[rank [01]\] (INFO|WARNING|ERROR) \S")


def test_version_names_the_package_and_jax_without_starting_jax(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"simulator {simulator.__version__} (jax {metadata.version('jax')}, ")
    code = "import sys; from simulator.cli import main\ntry: main(['--version'])\nexcept SystemExit: pass\n" \
           "print('jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.splitlines() == [out.strip(), "False"]


def test_version_is_the_source_s_even_where_the_installed_metadata_says_another(monkeypatch, capsys):
    """``simulator --version`` says :mod:`simulator.version`'s, the one source of the version, which pyproject.toml
    reads (an editable install's metadata keeps the version it was installed at, and said that one instead)."""
    from importlib import metadata as importlib_metadata

    installed = importlib_metadata.version
    monkeypatch.setattr(importlib_metadata, "version",
                        lambda package: "9.8.7" if package == "simulator" else installed(package))
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith(f"simulator {version.__version__} (jax "), version.__version__
    assert simulator.__version__ == version.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "simulator.version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", version.__version__), version.__version__
    # the changelog's latest release is this version
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d\d-\d\d$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == version.__version__, releases[:3]


# each child writes half a line, waits while the other does the same, then ends its line
PIECES = ("import os, sys, time; rank = os.environ['SIMULATOR_PROCESS_ID']\n"
          "for stream in (sys.stdout, sys.stderr):\n"
          "    stream.write(f'rank {rank} first half, '); stream.flush(); time.sleep(0.5)\n"
          "    stream.write(f'rank {rank} second half\\n'); stream.flush()\n"
          "sys.stderr.write('[Gloo] Rank ' + rank + ' is connected to 1 peer ranks. Expected number of connected peer "
          "ranks is : 1\\n')\n"
          "sys.stdout.write(f'rank {rank} last line without a newline')\n")


def test_configs_lists_the_shipped_configs_and_prints_one_without_starting_jax(capfd, monkeypatch, tmp_path):
    """A first-time user had no command naming the shipped configs, and one who installed with pip had none at
    all (they lived in the checkout's configs/ only). ``simulator configs`` lists them (name and what each runs,
    from its opening comment), ``simulator configs NAME`` prints one for a file of the user's own, a name that is
    not shipped is one line with the close one; a missing config named like a shipped one says where it is. The
    installed package's own copy: tests/test_install.py."""
    from simulator import shipped

    from support import command

    code, out, err = command(capfd, "configs")
    names = sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    assert code == 0 and err == "" and [line.split()[0] for line in out.splitlines()] == names
    assert "taylor_green                 Taylor-Green vortex at Re = 1600" in out.splitlines()
    assert shipped.summary(ROOT / "configs" / "cold_dark_matter.yaml") == "Cold dark matter alone"
    code, out, _ = command(capfd, "configs", "fdm_mixed")
    assert code == 0 and out == (ROOT / "configs" / "fdm_mixed.yaml").read_text()
    code, _, err = command(capfd, "configs", "fdm_mix")
    assert code == 2 and err.startswith("error: simulator configs = 'fdm_mix' is not a shipped config; one of: abc, ")
    assert err.endswith("(did you mean 'fdm_mixed'?)\n") and err.count("\n") == 1
    monkeypatch.chdir(tmp_path)  # outside the checkout: the source tree's file, by its full path
    code, _, err = command(capfd, "validate", "fdm_mixd.yaml")
    assert code == 2 and err.endswith(f"(did you mean '{ROOT / 'configs' / 'fdm_mixed.yaml'}'?)\n")
    code = "import sys; from simulator.cli import main\nmain(['configs'])\nprint('jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert r.stdout.splitlines()[-1] == "False"


def test_a_missing_sweep_file_of_an_installed_package_says_how_to_write_one(capfd, monkeypatch, tmp_path):
    """The sweep files of configs/sweeps/ are not in an installed package, and a pip user who ran the how-to's
    ``simulator sweep configs/sweeps/tg_viscosity.yaml`` was told only that the file does not exist. Where the
    package runs without its source tree, a missing sweep file's line now says where those files are and how to
    write one; a missing run config still gets the shipped one's name."""
    from simulator import shipped

    from support import command

    packaged = tmp_path / "site" / "_configs"
    packaged.mkdir(parents=True)
    shutil.copyfile(ROOT / "configs" / "taylor_green.yaml", packaged / "taylor_green.yaml")
    monkeypatch.setattr(shipped, "PACKAGED", packaged)
    monkeypatch.setattr(shipped, "SOURCE_TREE", tmp_path / "site")  # no pyproject.toml: an installed package
    monkeypatch.chdir(tmp_path)
    code, _, err = command(capfd, "sweep", "configs/sweeps/tg_viscosity.yaml")
    assert code == 2 and err == ("error: sweep file = 'configs/sweeps/tg_viscosity.yaml' does not exist; give the "
                                 "path of an existing YAML file (the sweep files of configs/sweeps/ come with a "
                                 "checkout of the source, not with the installed package: write your own, whose "
                                 "base: is a config file of yours, e.g. one written by simulator configs taylor_green "
                                 "> taylor_green.yaml; docs/how-to/sweeps.md)\n")
    code, _, err = command(capfd, "run", "configs/taylor_green.yaml")
    assert code == 2 and err.endswith("(did you mean the shipped one, written out by: simulator configs taylor_green "
                                      "> taylor_green.yaml?)\n")


def test_slurm_lists_the_shipped_templates_and_prints_one_without_starting_jax(capfd):
    """One who installed with pip had no Slurm job template to copy (they lived in the checkout's slurm/ only).
    ``simulator slurm`` lists them (name and what each submits, from the comment under the ``#!`` line),
    ``simulator slurm NAME`` prints one, equal to the checkout's file, and a name that is not shipped is one line
    with the close one. The installed package's own copy: tests/test_install.py."""
    from support import command

    code, out, err = command(capfd, "slurm")
    names = sorted(p.stem for p in (ROOT / "slurm").glob("*.sbatch"))
    assert names == ["cpu", "gpu_node", "gpu_nodes", "sweep"]
    assert code == 0 and err == "" and [line.split()[0] for line in out.splitlines()] == names
    assert "sweep      One task of a sweep's array job" in out.splitlines()
    for name in names:
        code, out, _ = command(capfd, "slurm", name)
        assert code == 0 and out == (ROOT / "slurm" / f"{name}.sbatch").read_text()
    code, _, err = command(capfd, "slurm", "gpu-node")
    assert code == 2 and err == ("error: simulator slurm = 'gpu-node' is not a shipped Slurm template; one of: cpu, "
                                 "gpu_node, gpu_nodes, sweep (did you mean 'gpu_node'?)\n")
    # a name's beginning: the template it begins, not the nearest spelling (difflib gave 'cpu' for 'gpu')
    code, _, err = command(capfd, "slurm", "gpu")
    assert code == 2 and err.endswith("one of: cpu, gpu_node, gpu_nodes, sweep (did you mean 'gpu_node'?)\n")
    code = "import sys; from simulator.cli import main\nmain(['slurm', 'cpu'])\nprint('jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert r.stdout.splitlines()[-1] == "False"


def test_a_damaged_file_that_reaches_the_command_line_is_one_line_and_exit_2(capfd, monkeypatch, tmp_path):
    """Every reader of a run's files raises DamagedFileError naming the file; a command that does not catch one
    itself still ends in that one line and exit 2 (bad input), not a traceback and exit 1."""
    from simulator.cli import run as run_cli
    from simulator.errors import DamagedFileError

    from support import command

    def damaged(args):
        raise DamagedFileError(tmp_path / "spectra.h5", OSError("Unable to synchronously open file (truncated file)"))

    monkeypatch.setattr(run_cli, "cmd_configs", damaged)
    code, out, err = command(capfd, "configs")
    assert code == 2 and out == "" and err == (f"error: {tmp_path / 'spectra.h5'} is damaged or not as the run writes "
                                               "it (OSError: Unable to synchronously open file (truncated file)); "
                                               "restore it from a copy, or move it out of the run directory to read "
                                               "the rest of the run\n")


def test_launch_forwards_whole_lines_and_drops_gloo_noise(capfd):
    assert launch(2, [sys.executable, "-c", PIECES], timeout=60) == 0
    out, err = capfd.readouterr()
    for text in (out, err):
        whole = [f"rank {r} first half, rank {r} second half" for r in "01"]
        lines = text.splitlines()
        assert sorted(line for line in lines if "half" in line) == whole, text
    assert sorted(line for line in out.splitlines() if "last" in line) == [
        f"rank {r} last line without a newline" for r in "01"]
    assert "Gloo" not in err

    assert launch(2, [sys.executable, "-c", PIECES], timeout=60, verbose=True) == 0
    assert capfd.readouterr().err.count("[Gloo] Rank") == 2


def test_gloo_reports_printed_into_each_other_by_two_threads_are_dropped_too():
    """As CI saw from one child: two reports interleaved over two lines, cut wherever a write ended; a log line
    that one cut into keeps its text."""
    from simulator.launch import quiet

    report = "is connected to 3 peer ranks. Expected number of connected peer ranks is : 3\n"
    assert quiet("[Gloo] Rank [Gloo] Rank 2 " + report) is None
    assert quiet("3 " + report) is None
    assert quiet("[Gloo] Rank 0 " + report) is None
    # cut after "connected to" (CI saw "2 is connected to", then "3 peer ranks. Expected ...")
    assert quiet("2 is connected to\n") is None
    assert quiet("3 peer ranks. Expected number of connected peer ranks is : 3\n") is None
    assert quiet("[Gloo] Rank 01:11:17 [rank 0] INFO run\n") == "01:11:17 [rank 0] INFO run\n"
    assert quiet("01:11:17 [rank 0] INFO step 5\n") == "01:11:17 [rank 0] INFO step 5\n"


def test_the_newline_of_a_gloo_report_that_another_was_written_into_is_dropped_and_other_blank_lines_kept():
    """As CI saw once: one thread's report between another's text and its newline left a blank line on stdout."""
    from simulator.launch import quiet_lines

    report = "[Gloo] Rank {} is connected to 3 peer ranks. Expected number of connected peer ranks is : 3"
    pipe = [report.format(2) + report.format(3) + "\n", "\n", "table\n", "\n", "end\n", report.format(1) + "\n"]
    assert list(quiet_lines(pipe)) == ["table\n", "\n", "end\n"]


def test_launch_prints_an_error_of_every_process_once_and_one_process_s_with_its_number(tmp_path, capfd):
    """A bad config key fails both processes alike: one line, as one process prints it (it was printed
    twice). An error that one process alone prints is still shown, naming it."""
    r = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "run",
                        str(ROOT / "configs" / "taylor_green.yaml"), "--set", "grid.shap=16"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == "error: grid.shap = 16 is an unknown key; did you mean 'grid.shape'? known keys here: " \
                       "shape, modes, box, walls\n"
    # process 0 ends first; process 1 then says the same and an error of its own
    both = ("import os, sys, time; rank = os.environ['SIMULATOR_PROCESS_ID']; time.sleep(0.5 * int(rank))\n"
            "print('error: every process', file=sys.stderr)\n"
            "if rank == '1': print('error: this one', file=sys.stderr); sys.exit(2)\n")
    assert launch(2, [sys.executable, "-c", both], timeout=60) == 2
    assert capfd.readouterr().err == "error: every process\nerror: process 1 of 2: this one\n"
    # processes stopped at the launcher's timeout: the exit status 124 and a line that says why (it said nothing)
    assert launch(2, [sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5) == 124
    assert capfd.readouterr().err == ("error: the 2 processes ran past the launcher's timeout of 0.5 s and were "
                                      "stopped\n")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_launched_run_prints_whole_log_lines_and_no_gloo_lines(tmp_path):
    """2 processes x 2 devices: a run's collectives made gloo print its connection reports (8 lines here,
    28 for a longer run), some of them cut into by other processes' lines."""
    r = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "2", "--timeout",
                        "240", "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "grid.shape=16",
                        "--set", "time.t_end=0.1", "--set", "output.chunk=5", "--out", "run"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Gloo" not in r.stdout + r.stderr  # gloo prints its reports on stdout
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert [line for line in lines if not LOG_LINE.match(line)] == []
    assert any(line.endswith("output in run") for line in lines)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_launched_run_that_stops_gives_a_resume_hint_that_launches_it_again(tmp_path):
    """runtime.max_wall stops a run on 2 processes of 1 device after its first call of steps (one step, which
    measures the step; the processes agree on the stop between two calls of a chunk): its resume hint is the
    launch (it said `simulator run ...`, which resumed on 1 process), and followed as printed it resumes there
    on both processes, its first call sized from the step the log measured: the rest of the chunk, to step 5."""
    tg = str(ROOT / "configs" / "taylor_green.yaml")
    r = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "1", "--timeout",
                        "240", "run", tg, "--set", "grid.shape=16", "--set", "time.t_end=0.5", "--set",
                        "output.chunk=5", "--set", "runtime.max_wall=0.001", "--out", "run"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 75, r.stderr[-3000:]
    hint = (f"simulator launch -n 2 run {tg} --set grid.shape=16 --set time.t_end=0.5 --set output.chunk=5 --set "
            "runtime.max_wall=0.001 --set runtime.cpu_devices=1 --resume --out run")
    stops = [line for line in r.stderr.splitlines() if "resume with:" in line]
    # said once, by the first process (a requeue reads as one line per job)
    assert len(stops) == 1 and "[rank 0]" in stops[0] and stops[0].endswith(
        f"at step 1, t = 0.01 after writing a checkpoint; resume with: {hint}"), r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-m", *hint.split()], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 75, r.stderr[-3000:]
    assert "devices: 2 cpu on 2 process(es)" in r.stderr and "resumed from run/checkpoints/c00000001" in r.stderr
    assert sorted(line.split()[1:3] for line in r.stderr.splitlines() if "stopped by" in line and "at step 5" in line
                  ) == [["[rank", "0]"]], r.stderr[-3000:]


def test_a_resume_hint_begins_with_the_launcher_the_run_ran_under(monkeypatch):
    """A resume hint followed as printed runs on as many processes again: in a task of an ``srun`` step of 4
    tasks it begins ``srun -n 4 simulator`` (it said ``simulator``: one task, in the allocation of four), under
    ``simulator launch -n 2`` with that launch, and ``simulator`` in one task of a step or outside Slurm."""
    from simulator.launch import ENV_COORDINATOR, ENV_NUM_PROCESSES
    from simulator.run.command import command_prefix

    for name in ("SLURM_STEP_NODELIST", "SLURM_NTASKS", ENV_COORDINATOR, ENV_NUM_PROCESSES):
        monkeypatch.delenv(name, raising=False)
    assert command_prefix() == "simulator"
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert command_prefix() == "simulator"  # the batch shell itself: no step, one process
    monkeypatch.setenv("SLURM_STEP_NODELIST", "node[1-2]")
    assert command_prefix() == "srun -n 4 simulator"
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert command_prefix() == "simulator"
    monkeypatch.setenv(ENV_COORDINATOR, "127.0.0.1:1234")
    monkeypatch.setenv(ENV_NUM_PROCESSES, "2")
    assert command_prefix() == "simulator launch -n 2"


def test_the_sweep_target_s_help_names_every_option_that_takes_the_sweep_directory():
    """``--point``, ``--group`` and ``--collect`` take the directory, the other forms the sweep file: the
    positional's help says so for each (it named ``--point`` and ``--collect`` only)."""
    import argparse

    from simulator.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["sweep"]
    target = next(a for a in sub._actions if a.dest == "target")
    assert [o for o in ("--point", "--group", "--collect") if o not in target.help] == []


def test_a_run_with_its_output_streams_closed_exits_0_when_it_finishes(tmp_path):
    """A run started with stdout or stderr closed (`>&-`, as some launchers and daemons start a job) finished, its
    status.json `finished`, exit_code 0, and then exited 1 with a traceback: the last flush of the closed stream
    (None in Python) failed. It exits 0."""
    import os

    for closed in (1, 2):
        out = tmp_path / f"run{closed}"
        args = [sys.executable, "-m", "simulator", "run", str(ROOT / "configs" / "abc.yaml"), "--set", "grid.shape=8",
                "--set", "time.t_end=0.04", "--out", str(out)]
        done = subprocess.run(["bash", "-c", f'exec "$@" {closed}>&- {3 - closed}>/dev/null', "bash", *args],
                              timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, closed
        assert '"state": "finished"' in (out / "status.json").read_text()


def test_a_reader_that_leaves_early_is_no_traceback():
    """``simulator sweep DIR --collect | head -2`` printed a BrokenPipeError traceback and exit 1 once head had
    its lines: a reader closing the pipe is what pipes do. Here the reader has gone before the command writes."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "simulator", "configs"], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 141, (done.returncode, done.stderr)


@pytest.mark.parametrize("args", [["validate", "configs/taylor_green.yaml"], ["configs", "taylor_green"], ["configs"],
                                  ["config-docs"], ["slurm", "cpu"],
                                  ["plan", "configs/abc.yaml", "--set", "grid.shape=8"], ["--version"], ["--help"],
                                  ["run", "--help"]],
                         ids=lambda a: "_".join(a[:1 + (a[1:2] == ["--help"])]).lstrip("-")
                         + ("_name" if a[1:] and a[0] == "configs" else ""))
def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_1(args):
    """``simulator validate CONFIG > /dev/full`` (and ``configs NAME``, ``config-docs``) printed a Python traceback
    of the failed write. Every command's stdout is flushed in one place: one line on stderr saying why, exit 1."""
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here: it is the full stdout this test writes to")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "simulator", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr == "error: cannot write to standard output (No space left on device); write it to a file or a " \
                          "disk with room\n", done.stderr


def test_a_run_stopped_inside_a_slurm_job_says_how_to_resume_it_from_the_login_node_too(tmp_path):
    """A run stopped in a Slurm job (runtime.max_wall here; the time limit's signal there) printed only the command
    that resumes it, ``srun ... simulator run ... --resume``, which runs only within an allocation; from the login
    node the job script is submitted again with the same output directory, which the hint now says too. Outside
    Slurm the hint is the command alone."""
    tg = str(ROOT / "configs" / "taylor_green.yaml")
    args = ["run", tg, "--set", "grid.shape=16", "--set", "time.t_end=0.5", "--set", "output.chunk=5", "--set",
            "runtime.max_wall=0.001"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    hints = []
    for out, slurm in (("job", {"SLURM_JOB_ID": "7"}), ("laptop", {})):
        r = subprocess.run([sys.executable, "-m", "simulator", *args, "--out", out], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300, env={**env, **slurm})
        assert r.returncode == 75, r.stderr[-3000:]
        hints += [line.split("resume with: ", 1)[1] for line in r.stderr.splitlines() if "resume with:" in line]
    command = f"simulator {' '.join(args)} --resume --out"
    assert hints == [f"{command} job (within a Slurm allocation), or from the login node submit the job script again "
                     f"with the same output directory (the shipped templates: sbatch JOB_SCRIPT {tg} job)",
                     f"{command} laptop"], hints
