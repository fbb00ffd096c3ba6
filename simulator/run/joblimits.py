"""Is the Slurm job's ``--signal`` lead time long enough for this run to checkpoint?

Slurm sends the signal when ``now + lead`` passes the job's end time, checked on its own timer (about
every 30 s, up to a minute): the signal comes between ``lead`` and roughly ``lead + 60`` seconds before
the limit. After it, the run finishes the chunk it is in, writes a checkpoint and exits 75, so the lead
must exceed one chunk's wall time plus one checkpoint's; and a lead close to the whole time limit
signals the job as soon as it starts. Neither is visible in the job's environment: the lead is read
from the job's own batch script (``scontrol write batch_script``), the limit from ``scontrol show
job``. Everything here is advice: a failed query gives no warning, never an error.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping

#: Slurm's signal timer: the signal may come this much before ``lead`` (its polling, measured ~30 s)
POLL_SLACK_S = 60.0

_SIGNAL = re.compile(r"^#SBATCH\s+--signal[=\s]+(?:[BR]+:)?(\w+)(?:@(\d+))?", re.MULTILINE)


def signal_lead(script: str) -> tuple[str, int] | None:
    """(signal, lead seconds) from a batch script's ``#SBATCH --signal=[B:]SIG[@LEAD]`` line (Slurm's
    default lead is 60 s), or None if it asks for no signal."""
    found = _SIGNAL.search(script)
    if not found:
        return None
    return found[1], int(found[2]) if found[2] else 60


def _seconds(limit: str) -> float | None:
    """``scontrol show job``'s ``TimeLimit=[days-]hours:minutes:seconds`` in seconds (None: UNLIMITED)."""
    found = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", limit)
    if not found:
        return None
    return int(found[1] or 0) * 86400 + int(found[2]) * 3600 + int(found[3]) * 60 + int(found[4])


def job_signal(env: Mapping[str, str] | None = None) -> tuple[str, int, float | None] | None:
    """(signal, lead, time limit in seconds or None) of the Slurm batch job this process runs in, or None
    (not in a job, no ``--signal`` in its script, or Slurm could not be asked)."""
    env = os.environ if env is None else env
    job = env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID") and \
        f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}" or env.get("SLURM_JOB_ID")
    if not job:
        return None
    try:
        script = subprocess.run(["scontrol", "write", "batch_script", job, "-"], capture_output=True, text=True,
                                timeout=10).stdout
        shown = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True,
                               timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    spec = signal_lead(script)
    if spec is None:
        return None
    limit = re.search(r"TimeLimit=(\S+)", shown)
    return spec[0], spec[1], _seconds(limit[1]) if limit else None


def limit_warning(sig: str, lead: int, limit: float | None) -> str | None:
    """One line if ``--signal=SIG@LEAD`` is so close to the time limit that the signal may come at once."""
    if limit is not None and lead + POLL_SLACK_S >= limit:
        return (f"--signal={sig}@{lead} with a time limit of {limit:.0f} s: Slurm may send the signal as soon as "
                f"the job starts (it signals up to about {POLL_SLACK_S:.0f} s early); use a lead well below the limit")
    return None


def lead_warning(sig: str, lead: int, chunk_s: float, checkpoint_s: float) -> str | None:
    """One line if ``--signal=SIG@LEAD`` leaves this run too little time to stop: after the signal it
    needs up to one chunk (``chunk_s``) and one checkpoint (``checkpoint_s``)."""
    need = chunk_s + checkpoint_s
    if lead < need:
        return (f"--signal={sig}@{lead} leaves {lead} s to stop, but one chunk takes {chunk_s:.0f} s and a "
                f"checkpoint {checkpoint_s:.0f} s: the job may be killed before it checkpoints; use "
                f"--signal={sig}@{int(need * 1.5) + 30} or a smaller output.chunk")
    return None
