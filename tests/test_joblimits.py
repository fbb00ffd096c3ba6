"""The --signal lead-time advice (simulator.run.joblimits): what a job script asks for, and when the
lead leaves a run too little time to checkpoint, or signals it at once."""

import os

import pytest

from simulator.run import joblimits


@pytest.mark.parametrize("line, expected", [
    ("#SBATCH --signal=USR1@300", ("USR1", 300)),
    ("#SBATCH --signal=B:USR1@90   # a comment", ("USR1", 90)),
    ("#SBATCH --signal=TERM", ("TERM", 60)),          # Slurm's default lead
    ("##SBATCH --signal=USR1@300", None),             # commented out
    ("#SBATCH --time=2:00", None),
])
def test_the_signal_a_job_script_asks_for(line, expected):
    assert joblimits.signal_lead(f"#!/bin/bash\n{line}\nsrun simulator run c.yaml\n") == expected


@pytest.mark.parametrize("text, seconds", [("00:02:00", 120), ("1-02:03:04", 93784), ("UNLIMITED", None)])
def test_time_limits(text, seconds):
    assert joblimits._seconds(text) == seconds


def _job(lead, limit=3600.0):
    return joblimits.JobSignal("USR1", lead, limit, "from the job script's #SBATCH line")


def test_a_lead_near_the_time_limit_is_a_warning():
    """--time=2:00 --signal=USR1@90: Slurm may signal as soon as the job starts (seen here at ~30 s)."""
    assert "as soon as the job starts" in joblimits.limit_warning(_job(90, 120))
    assert joblimits.limit_warning(_job(300, 7200)) is None
    assert joblimits.limit_warning(_job(300, None)) is None


def test_a_lead_shorter_than_a_chunk_and_a_checkpoint_is_a_warning():
    advice = joblimits.lead_warning(_job(120), chunk_s=100, checkpoint_s=40)
    assert advice and "--signal=USR1@240" in advice and "one call of steps takes 100 s" in advice
    assert joblimits.lead_warning(_job(120), chunk_s=10, checkpoint_s=5) is None


def test_a_call_of_steps_takes_at_most_a_third_of_the_lead():
    """runtime.chunk_wall bounds a compiled call of steps; in a job given --signal the bound is at most a third of the
    lead, so that the call the signal comes in and a checkpoint fit before the kill, said where it lowers the key."""
    assert joblimits.call_bound(None, 30.0) == (30.0, None)
    assert joblimits.call_bound(_job(300), 30.0) == (30.0, None)
    bound, said = joblimits.call_bound(_job(60), 30.0)   # Slurm's default lead
    assert bound == 20.0 and said.startswith("runtime.chunk_wall = 30 s lowered to 20 s, a third of the lead of "
                                             "--signal=USR1@60"), said
    bound, said = joblimits.call_bound(_job(300), None)  # every chunk in one call asked: still bounded in a job
    assert bound == 100.0 and "runtime.chunk_wall = null lowered to 100 s" in said


def test_outside_a_job_nothing_is_asked():
    assert joblimits.job_signal({}) is None


#: `scontrol show job -o` as Slurm 22.05 prints it (no signal, no submit line), and a newer Slurm's submit line
SHOW_JOB = ("JobId=7 JobName=run.sbatch UserId=u(1) GroupId=u(1) JobState=RUNNING Reason=None RunTime=00:00:09 "
            "TimeLimit=01:00:00 TimeMin=N/A Partition=debug NodeList=n1 Command=/home/u/run.sbatch WorkDir=/home/u")
SUBMIT_LINE = " SubmitLine=sbatch --signal=B:USR1@30 --time=1:00:00 run.sbatch StdOut=/home/u/slurm-7.out"
SCRIPT = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --signal=USR1@120\nsrun simulator run c.yaml\n"


def _fake_scontrol(tmp_path, monkeypatch, show_job):
    """A `scontrol` on PATH that answers `show job -o 7` with ``show_job`` and `write batch_script 7 -` with SCRIPT."""
    (tmp_path / "show.txt").write_text(show_job + "\n")
    (tmp_path / "script.txt").write_text(SCRIPT)
    fake = tmp_path / "scontrol"
    fake.write_text(f'#!/bin/sh\ncase "$1" in show) cat {tmp_path}/show.txt;; '
                    f'write) cat {tmp_path}/script.txt;; esac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")


@pytest.mark.parametrize("show_job, env, lead, source", [
    # `sbatch --signal=B:USR1@30 run.sbatch` overrides the script's line: what the job has is @30
    (SHOW_JOB + SUBMIT_LINE, {}, 30, "sbatch's command line (scontrol show job)"),
    # SBATCH_SIGNAL at submission overrides the script too (the job inherits it)
    (SHOW_JOB, {"SBATCH_SIGNAL": "USR1@45"}, 45, "SBATCH_SIGNAL"),
    # Slurm 22.05 shows neither: the script's line, and the warning says so
    (SHOW_JOB, {}, 120, "the job script's #SBATCH line"),
], ids=["submit-line", "sbatch-signal", "script"])
def test_the_lead_is_the_one_the_job_was_given(tmp_path, monkeypatch, show_job, env, lead, source):
    _fake_scontrol(tmp_path, monkeypatch, show_job)
    job = joblimits.job_signal({"SLURM_JOB_ID": "7", **env})
    assert job is not None and tuple(job[:3]) == ("USR1", lead, 3600) and source in job.source, job
    advice = joblimits.lead_warning(job, chunk_s=100, checkpoint_s=40)
    assert advice and f"--signal=USR1@{lead} ({job.source})" in advice, advice
