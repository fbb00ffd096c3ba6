"""The --signal lead-time advice (simulator.run.joblimits): what a job script asks for, and when the
lead leaves a run too little time to checkpoint, or signals it at once."""

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


def test_a_lead_near_the_time_limit_is_a_warning():
    """--time=2:00 --signal=USR1@90: Slurm may signal as soon as the job starts (seen here at ~30 s)."""
    assert "as soon as the job starts" in joblimits.limit_warning("USR1", 90, 120)
    assert joblimits.limit_warning("USR1", 300, 7200) is None
    assert joblimits.limit_warning("USR1", 300, None) is None


def test_a_lead_shorter_than_a_chunk_and_a_checkpoint_is_a_warning():
    advice = joblimits.lead_warning("USR1", 120, chunk_s=100, checkpoint_s=40)
    assert advice and "--signal=USR1@240" in advice and "one chunk takes 100 s" in advice
    assert joblimits.lead_warning("USR1", 120, chunk_s=10, checkpoint_s=5) is None


def test_outside_a_job_nothing_is_asked():
    assert joblimits.job_signal({}) is None
