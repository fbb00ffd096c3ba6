"""Submitting a sweep to Slurm as ONE array job (``simulator sweep --submit``): the array's index list,
the points (or ensemble groups) still to run, less those that earlier submissions still have pending
or running in Slurm (submitting them again would run two jobs into one run directory)."""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.sweep import unfinished, unfinished_groups


def array_spec(indices: Sequence[int], max_parallel: int) -> str:
    """Slurm's ``--array`` value for these indices: ranges joined by commas, then ``%max_parallel``."""
    parts = []
    for _, group in itertools.groupby(enumerate(sorted(indices)), key=lambda iv: iv[1] - iv[0]):
        run = [v for _, v in group]
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return f"{','.join(parts)}%{max_parallel}"


def in_flight(directory: Path, what: str) -> dict[int, str]:
    """The ``what`` (points or groups) of this sweep's earlier submissions (``logs/submissions.log``) that
    Slurm still holds as array tasks: index -> Slurm's state (pending, running, ...)."""
    log = directory / "logs" / "submissions.log"
    jobs = [line.split()[2] for line in (log.read_text().splitlines() if log.is_file() else [])
            if len(line.split()) > 3 and line.split()[1] == "job" and line.split()[3] == what]
    found: dict[int, str] = {}
    for job in jobs:
        try:
            shown = subprocess.run(["squeue", "-h", "-r", "-j", job, "-o", "%i %T"], capture_output=True, text=True,
                                   timeout=30).stdout
        except (OSError, subprocess.SubprocessError):  # no Slurm here, or it does not answer: nothing known
            continue
        for row in shown.splitlines():
            task, _, state = row.partition(" ")
            if task.rpartition("_")[2].isdigit():
                found[int(task.rpartition("_")[2])] = state.strip().lower()
    return found


#: the array job script ``--submit`` runs unless given one: the project's, relative to the current directory
PROJECT_SCRIPT = Path("slurm") / "sweep.sbatch"


def default_script() -> tuple[Path, str]:
    """The array job script ``--submit`` runs without ``--script``, and the line that says which: the current
    directory's ``slurm/sweep.sbatch`` (a checkout's, or a copy of the user's own), else the template shipped with
    the package (an install with pip has no ``slurm/`` folder)."""
    from simulator import shipped

    shipped_script = shipped.templates().get("sweep")
    if PROJECT_SCRIPT.is_file() or shipped_script is None:
        return PROJECT_SCRIPT, f"job script: {PROJECT_SCRIPT}"
    return shipped_script, (f"job script: {shipped_script} (the shipped sweep template: no {PROJECT_SCRIPT} here; "
                            "`simulator slurm sweep > my_sweep.sbatch`, edited, then --script my_sweep.sbatch)")


def submit(directory: Path, manifest: Mapping[str, Any], script: Path | None = None, dry_run: bool = False,
           groups: Sequence[Sequence[int]] | None = None, report: Callable[[str], None] = lambda _: None) -> str | None:
    """Submit ONE array job whose task i runs point i, for the points not finished yet; with ``groups``
    (an ensemble sweep), task G runs group G as one batched program, for the groups with a member not
    finished yet.

    Returns the job id (None when every point has finished, or for ``dry_run``, which only reports the
    sbatch command). ``script``: the array job script, None for :func:`default_script`'s (its line reported).
    ``report``: where the lines for the user go (the CLI prints them).
    """
    ensemble = groups is not None
    todo = unfinished_groups(directory, manifest, groups) if ensemble else unfinished(directory, manifest)
    what = "groups" if ensemble else "points"
    total = len(groups) if ensemble else len(manifest["points"])
    busy = in_flight(directory, what)
    if any(i in busy for i in todo):  # submitting them again would run two jobs into one run directory
        report(f"{what} {', '.join(f'{i} ({busy[i]})' for i in todo if i in busy)} of {manifest['name']} are still "
               "pending or running in Slurm: not submitted again")
        todo = [i for i in todo if i not in busy]
    if not todo:
        report(f"all {total} {what} of {manifest['name']} have finished or are under way; nothing to submit")
        return None
    if script is None:
        script, which = default_script()
        report(which)
    if not script.is_file():
        raise ConfigError("--script", str(script), "give the sweep job script (slurm/sweep.sbatch or your copy)",
                          "does not exist")
    cmd = ["sbatch", "--parsable", f"--job-name={manifest['name']}",
           f"--array={array_spec(todo, manifest['max_parallel'])}", f"--output={directory / 'logs'}/%A_%a.out",
           *manifest["sbatch"], str(script), str(directory), *(["--group"] if ensemble else [])]
    report(" ".join(cmd))
    if dry_run:
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ConfigError("--submit", "sbatch", "run it where Slurm is installed, or use --local",
                          "was not found") from None
    if done.returncode != 0:
        raise ConfigError("--submit", " ".join(cmd), "see sbatch's message: " + done.stderr.strip().replace("\n", " "),
                          "was refused by sbatch")
    job = done.stdout.strip().split(";")[0]
    with (directory / "logs" / "submissions.log").open("a") as log:
        log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} job {job} {what} {','.join(map(str, todo))}\n")
    report(f"submitted array job {job}: {len(todo)} of {total} {what}, at most "
           f"{manifest['max_parallel']} at once; logs in {directory / 'logs'}")
    return job
