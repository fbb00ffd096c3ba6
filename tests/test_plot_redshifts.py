"""Which spectra rows a figure draws: a cosmological run's rows by redshift (`simulator plot --redshifts`,
`run.plot.spectra(redshifts=...)`), and a time or redshift outside the run's rows refused in one line naming them
(it drew the nearest row, the last, without a word)."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

import simulator
from simulator.errors import ConfigError

from support import command

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Cold dark matter alone from z = 49 to today (16^3, spectra at z = 49, 9, 3, 1, 0), and Taylor-Green to
    t = 0.3 (16^3), run side by side."""
    d = tmp_path_factory.mktemp("redshifts")
    cold = [str(ROOT / "configs" / "cold_dark_matter.yaml"), "--set", "grid.shape=16", "--set",
            "physics.cdm_particles=4096", "--set", "precision=float64"]
    flow = [str(ROOT / "configs" / "taylor_green.yaml"), "--set", "grid.shape=16", "--set", "time.t_end=0.3",
            "--set", "output.chunk=5"]
    procs = {name: subprocess.Popen([sys.executable, "-m", "simulator", "run", *args, "--out", name], cwd=d,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, args in {"cdm": cold, "tg": flow}.items()}
    for proc in procs.values():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    return d


def titles(fig):
    return fig.get_suptitle(), [text.get_text() for text in fig.axes[0].get_legend().get_texts()]


def test_a_cosmological_runs_spectra_are_asked_for_by_redshift(runs, capfd):
    """`--times 0` drew z = 49, the start (run time is ln(a/a_start)), to a cosmologist asking for today, and no
    option took a redshift. `--redshifts 0` (CLI) and `redshifts=[0]` (API) draw today's row, titled by its
    redshift; the help says what --times is."""
    run = simulator.load_run(runs / "cdm")
    title, labels = titles(run.plot.spectra(redshifts=[0]))
    assert title.endswith("redshift z = 0 – 0") and labels[0] == "redshift z = 0", (title, labels)
    title, labels = titles(run.plot.spectra(redshifts=[3, 0]))
    assert [label for label in labels if label.startswith("redshift")] == ["redshift z = 3", "redshift z = 0"]
    # the run time of z = 1, ln(50/2), is the same row
    assert titles(run.plot.spectra(times=[math.log(50 / 2)]))[1][0] == "redshift z = 1"
    assert titles(run.plot.spectra(times=[0]))[1][0] == "redshift z = 49"
    code, out, err = command(capfd, "plot", str(runs / "cdm"), "--redshifts", "0")
    assert code == 0 and str(runs / "cdm" / "plots" / "spectra.png") in out.split(), err
    code, out, _ = command(capfd, "plot", "--help")
    help_text = " ".join(out.split())
    assert "a cosmological run's time is ln(a/a_start), so 0 is z_start: give --redshifts there" in help_text
    assert "--redshifts Z [Z ...]" in help_text


@pytest.mark.parametrize("args, said", [
    (["--redshifts", "60"], "--redshifts = [60.0] holds 60, outside the rows of {run}/spectra.h5 (redshift z = 49 – "
                            "0); give redshifts within them"),
    (["--times", "7"], "--times = [7.0] holds 7, outside the rows of {run}/spectra.h5 (t = 0 – 3.91202, t being "
                       "ln(a/a_start): redshift z = 49 – 0); give times within them, or --redshifts Z"),
    (["--redshifts", "-0.5"], "--redshifts = [-0.5] holds -0.5, outside the rows"),
    (["--times", "1", "--redshifts", "0"], "--redshifts = [0.0] is given with --times; give --times or --redshifts, "
                                           "not both"),
], ids=["redshift before the start", "time past the end", "redshift in the future", "both"])
def test_a_cosmological_runs_rows_outside_it_are_refused_in_one_line(runs, capfd, args, said):
    """`--times 7` on a run that ended at ln(50) = 3.91 drew the last row; now one line, exit 2, naming the span of
    its rows in run time and redshift, and no figure written. The API raises the same."""
    run_dir = runs / "cdm"
    before = sorted((run_dir / "plots").glob("*")) if (run_dir / "plots").exists() else []
    code, out, err = command(capfd, "plot", str(run_dir), *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("error: " + said.format(run=run_dir)), err
    assert (sorted((run_dir / "plots").glob("*")) if (run_dir / "plots").exists() else []) == before
    options = dict(zip(args[::2], ([float(v)] for v in args[1::2]), strict=True))
    with pytest.raises(ConfigError, match="outside the rows|not both"):
        simulator.load_run(run_dir).plot.spectra(times=options.get("--times"), redshifts=options.get("--redshifts"))


def test_a_run_in_code_units_refuses_redshifts_and_times_past_its_end(runs, capfd):
    """`run.plot.spectra(times=[7.0])` on a run that ended at t = 0.3 drew t = 0.3 without a word; a redshift of a run
    without one has no meaning. Each is one line (exit 2) from the CLI, a ConfigError from the API."""
    run_dir = runs / "tg"
    code, out, err = command(capfd, "plot", str(run_dir), "--redshifts", "0")
    assert code == 2 and err == (f"error: --redshifts = [0.0] applies to a cosmological run; {run_dir} is a "
                                 "navier_stokes run; give --times T, the run's time\n"), err
    code, out, err = command(capfd, "plot", str(run_dir), "--times", "7")
    assert code == 2 and err == (f"error: --times = [7.0] holds 7, outside the rows of {run_dir}/spectra.h5 "
                                 "(t = 0.00 – 0.30); give times within them\n"), err
    assert not (run_dir / "plots").exists()
    run = simulator.load_run(run_dir)
    for call in (lambda: run.plot.spectra(times=[7.0]), lambda: run.plot.flux(times=[7.0]),
                 lambda: run.plot.spectra(redshifts=[0]), lambda: run.plot.spectra(compensate=True, times=[-1.0])):
        with pytest.raises(ConfigError, match=r"^(times|redshifts) = \["):  # the call's own words
            call()
    assert titles(run.plot.spectra(times=[0.3]))[0].endswith("t = 0.30 – 0.30")
