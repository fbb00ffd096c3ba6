"""Is the Slurm job's ``--signal`` lead time long enough for this run to checkpoint?

Slurm sends the signal when ``now + lead`` passes the job's end time, checked on its own timer (about
every 30 s, up to a minute): the signal comes between ``lead`` and roughly ``lead + 60`` seconds before
the limit. After it, the run finishes the chunk it is in, writes a checkpoint and exits 75, so the lead
must exceed one chunk's wall time plus one checkpoint's; and a lead close to the whole time limit
signals the job as soon as it starts. Neither is in the job's environment. The limit is ``scontrol show
job``'s ``TimeLimit``. The signal is the one the job was given, in sbatch's order of precedence: the
command line (``scontrol show job``'s ``SubmitLine``, where Slurm shows it: 22.05 does not, and shows
the signal nowhere), then ``SBATCH_SIGNAL`` at submission (the job inherits it), then the batch script's
``#SBATCH --signal`` line (``scontrol write batch_script``); the warnings name which. Everything here is
advice: a failed query gives no warning, never an error.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from typing import NamedTuple

#: Slurm's signal timer: the signal may come this much before ``lead`` (its polling, measured ~30 s)
POLL_SLACK_S = 60.0
#: seconds one scontrol query may take (a controller that does not answer gives no advice, not a hang)
SCONTROL_TIMEOUT_S = 10

#: ``[{R|B}:]SIG[@LEAD]``, sbatch's --signal value
_SPEC = r"(?:[BR]+:)?(\w+)(?:@(\d+))?"
_SIGNAL = re.compile(r"^#SBATCH\s+--signal[=\s]+" + _SPEC, re.MULTILINE)
_COMMAND_LINE = re.compile(r"\s--signal[=\s]+" + _SPEC)
_SUBMIT_LINE = re.compile(r"SubmitLine=(.*?)(?=\s[A-Z][\w/:]*=|$)")


class JobSignal(NamedTuple):
    """The signal a Slurm job was given, its lead (seconds before the limit), the job's time limit in
    seconds (None: unlimited or unknown) and where the signal was read."""

    signal: str
    lead: int
    limit: float | None
    source: str


def _spec(found: re.Match[str] | None) -> tuple[str, int] | None:
    return (found[1], int(found[2]) if found[2] else 60) if found else None  # Slurm's default lead: 60 s


def signal_lead(script: str) -> tuple[str, int] | None:
    """(signal, lead seconds) from a batch script's ``#SBATCH --signal=[B:]SIG[@LEAD]`` line (Slurm's
    default lead is 60 s), or None if it asks for no signal."""
    return _spec(_SIGNAL.search(script))


def _seconds(limit: str) -> float | None:
    """``scontrol show job``'s ``TimeLimit=[days-]hours:minutes:seconds`` in seconds (None: UNLIMITED)."""
    found = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", limit)
    if not found:
        return None
    return int(found[1] or 0) * 86400 + int(found[2]) * 3600 + int(found[3]) * 60 + int(found[4])


def _scontrol(*args: str) -> str | None:
    try:
        return subprocess.run(["scontrol", *args], check=False, capture_output=True, text=True,
                              timeout=SCONTROL_TIMEOUT_S).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def job_signal(env: Mapping[str, str] | None = None) -> JobSignal | None:
    """The :class:`JobSignal` of the Slurm batch job this process runs in, or None (not in a job, no
    ``--signal`` given, or Slurm could not be asked)."""
    env = os.environ if env is None else env
    job = env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID") and \
        f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}" or env.get("SLURM_JOB_ID")
    if not job:
        return None
    shown = _scontrol("show", "job", "-o", job)
    if shown is None:
        return None
    submitted = _SUBMIT_LINE.search(shown)
    spec, source = _spec(_COMMAND_LINE.search(f" {submitted[1]}")) if submitted else None, \
        "from sbatch's command line (scontrol show job)"
    if spec is None and env.get("SBATCH_SIGNAL"):
        spec, source = _spec(re.fullmatch(_SPEC, env["SBATCH_SIGNAL"].strip())), "from SBATCH_SIGNAL at submission"
    if spec is None:
        spec = signal_lead(_scontrol("write", "batch_script", job, "-") or "")
        source = ("from the job script's #SBATCH line" if submitted else "from the job script's #SBATCH line; this "
                  "Slurm does not show a --signal given to sbatch on its command line, which overrides it")
    if spec is None:
        return None
    limit = re.search(r"TimeLimit=(\S+)", shown)
    return JobSignal(spec[0], spec[1], _seconds(limit[1]) if limit else None, source)


def limit_warning(job: JobSignal) -> str | None:
    """One line if the job's ``--signal=SIG@LEAD`` is so close to its time limit that the signal may come at once."""
    if job.limit is not None and job.lead + POLL_SLACK_S >= job.limit:
        return (f"--signal={job.signal}@{job.lead} ({job.source}) with a time limit of {job.limit:.0f} s: Slurm may "
                f"send the signal as soon as the job starts (it signals up to about {POLL_SLACK_S:.0f} s early); use a "
                "lead well below the limit")
    return None


#: the share of a job's --signal lead one compiled call of steps may take (runtime.chunk_wall at most): the rest is
#: for the checkpoint and the exit
CALL_SHARE = 1 / 3


def call_bound(job: JobSignal | None, chunk_wall: float | None) -> tuple[float | None, str | None]:
    """The wall-clock seconds one compiled call of steps may take in this job (:mod:`simulator.run.calls`):
    ``runtime.chunk_wall``, at most :data:`CALL_SHARE` of the job's --signal lead; and a line saying so where the lead
    lowered it."""
    if job is None:
        return chunk_wall, None
    share = max(job.lead * CALL_SHARE, 1.0)
    if chunk_wall is not None and chunk_wall <= share:
        return chunk_wall, None
    said = f"runtime.chunk_wall = {chunk_wall:g} s" if chunk_wall is not None else "runtime.chunk_wall = null"
    return share, (f"{said} lowered to {share:.0f} s, a third of the lead of --signal={job.signal}@{job.lead} "
                   f"({job.source}): a signalled run stops within one call and writes its checkpoint before the kill")


def lead_warning(job: JobSignal, chunk_s: float, checkpoint_s: float) -> str | None:
    """One line if the job's ``--signal=SIG@LEAD`` leaves this run too little time to stop: after the signal
    it needs up to one compiled call of steps (``chunk_s``: the longest so far, bounded by
    :func:`call_bound` unless one step takes longer) and one checkpoint (``checkpoint_s``)."""
    need = chunk_s + checkpoint_s
    if job.lead < need:
        return (f"--signal={job.signal}@{job.lead} ({job.source}) leaves {job.lead} s to stop, but one call of steps "
                f"takes {chunk_s:.0f} s and a checkpoint {checkpoint_s:.0f} s: the job may be killed before it "
                f"checkpoints; use --signal={job.signal}@{int(need * 1.5) + 30}")
    return None
