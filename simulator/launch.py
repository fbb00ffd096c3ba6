"""Start several local processes of one simulator command, like an srun step on a laptop.

Each child runs the same program (``simulator launch`` runs ``python -m simulator <command ...>``)
with ``SIMULATOR_COORDINATOR`` (a free
localhost port), ``SIMULATOR_NUM_PROCESSES`` and ``SIMULATOR_PROCESS_ID`` in its environment, which
:func:`simulator.runtime.initialize_processes` reads. If any child fails, the others are ended
(SIGTERM, then SIGKILL after a grace period) so nothing waits forever on a dead peer in a collective,
and the launcher exits with the failed child's status. The children share the launcher's cores: each
gets ``PJRT_NPROC`` = cores / processes CPU threads (XLA's pool; FFTW's count the same, as
``runtime.threads`` would set them) unless the environment already sets it, as an srun step binds
each task to its own cores.

Output: the children's stdout and stderr come through pipes and are forwarded a whole line at a time
(one lock for every line written), so lines of different processes never cut into one another, as
they did when every child wrote straight to the terminal. Lines that report nothing to a user are
dropped unless ``verbose``: gloo's ``[Gloo] Rank N is connected to M peer ranks`` (once per process
and communicator: 28 lines for one run on 2 processes of 2 devices). The command line's one-line errors
(``error: ...`` on stderr, the last thing a failing command prints) are held until the processes have
ended and then written once each: as printed where every process printed it (a bad config key fails
every process alike), else naming the processes that did (``error: process 1 of 2: ...``).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from simulator.errors import ConfigError
from simulator.threads import shared

#: environment through which the launcher tells each process its place (JAX-free here, so that a command can
#: see that it was launched without starting JAX; :func:`simulator.runtime.initialize_processes` reads them)
ENV_COORDINATOR = "SIMULATOR_COORDINATOR"
ENV_NUM_PROCESSES = "SIMULATOR_NUM_PROCESSES"
ENV_PROCESS_ID = "SIMULATOR_PROCESS_ID"

#: how the command line's one-line errors begin (:func:`simulator.cli.main`)
ERROR_PREFIX = "error: "
GRACE_SECONDS = 5.0
#: seconds to wait for the last lines of the children's pipes once they have exited
DRAIN_SECONDS = 5.0
#: removed from lines unless verbose: gloo's connection report and its pieces. Two threads of one child
#: can print reports into each other, cut wherever one thread's write ends ("[Gloo] Rank [Gloo] Rank 2 is
#: connected to ...", then "3 is connected to ..." on the next line; or "2 is connected to", then "3 peer
#: ranks. Expected ..."), so the pieces are removed wherever they are, and a line left blank is dropped
NOISE = re.compile(r"\[Gloo\] Rank|\d* ?is connected to(?: \d+)?|(?:\d+ )?peer ranks(?:\. Expected number of "
                   r"connected peer ranks is : \d+)?")


def quiet(line: str) -> str | None:
    """``line`` without gloo's connection reports; None when nothing else was on it."""
    if "[Gloo]" not in line and "peer ranks" not in line and "is connected to" not in line:
        return line
    rest = NOISE.sub("", line).strip()
    return rest + "\n" if rest else None


def quiet_lines(lines: Iterable[str]) -> Iterator[str]:
    """``lines`` of one pipe through :func:`quiet`. A blank line right after one that held a report is dropped
    too: it is that report's own newline when another thread's report was written between its text and its
    newline ("...: 3[Gloo] Rank 3 ...: 3", then an empty line); any other blank line is kept."""
    after_report = False
    for line in lines:
        if after_report and not line.strip():
            after_report = False
            continue
        kept = quiet(line)
        after_report = kept != line
        if kept is not None:
            yield kept


def free_port() -> int:
    """A TCP port on localhost that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _end(procs: Sequence[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class _Forwarder:
    """Copies children's pipes to this process's streams, one whole line at a time; the error lines of
    their stderr are held (:meth:`write_errors`)."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        #: each error line (without its newline) and the processes that printed it, in the order first seen
        self.errors: dict[str, set[int]] = {}

    def start(self, pipe: IO[bytes], target: IO[str], errors_of: int | None = None) -> None:
        """Forward ``pipe`` to ``target``; ``errors_of``: the process whose stderr it is (its errors are held)."""
        thread = threading.Thread(target=self._copy, args=(pipe, target, errors_of), daemon=True)
        thread.start()
        self.threads.append(thread)

    def _copy(self, pipe: IO[bytes], target: IO[str], errors_of: int | None) -> None:
        with pipe:
            lines = (raw.decode("utf-8", "replace") for raw in iter(pipe.readline, b""))
            for line in lines if self.verbose else quiet_lines(lines):
                if errors_of is not None and line.startswith(ERROR_PREFIX):
                    with self.lock:
                        self.errors.setdefault(line.rstrip("\n"), set()).add(errors_of)
                    continue
                with self.lock:  # a line is written and flushed whole before any other
                    target.write(line if line.endswith("\n") else line + "\n")
                    target.flush()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def write_errors(self, processes: int, target: IO[str]) -> None:
        """Each held error line once: as printed where all ``processes`` printed it, else naming those that did."""
        with self.lock:
            for line, which in self.errors.items():
                if len(which) < processes:
                    named = ", ".join(map(str, sorted(which)))
                    line = (f"{ERROR_PREFIX}process{'es' if len(which) > 1 else ''} {named} of {processes}: "
                            f"{line.removeprefix(ERROR_PREFIX)}")
                target.write(line + "\n")
            target.flush()


def launch(n_processes: int, argv: Sequence[str], timeout: float | None = None, verbose: bool = False) -> int:
    """Run the program ``argv`` (e.g. ``[python, -m, simulator, run, ...]``) in ``n_processes`` processes.

    Their output goes to this process's stdout and stderr line by line (noise dropped unless
    ``verbose``), their one-line errors once each at the end. Returns 0 if all succeed, else the first failing
    child's exit status (124 on timeout, said in an error line).
    """
    if n_processes < 1:
        raise ValueError(f"-n = {n_processes}: need at least one process")
    coordinator = f"127.0.0.1:{free_port()}"
    forward = _Forwarder(verbose)
    procs = []
    for pid in range(n_processes):
        env = shared(os.environ, n_processes)
        env.update({ENV_COORDINATOR: coordinator, ENV_NUM_PROCESSES: str(n_processes), ENV_PROCESS_ID: str(pid),
                    "PYTHONUNBUFFERED": "1"})  # through a pipe Python would hold lines back in a buffer
        p = subprocess.Popen(list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        forward.start(p.stdout, sys.stdout)
        forward.start(p.stderr, sys.stderr, errors_of=pid)
        procs.append(p)
    start = time.monotonic()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def pass_on(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    for sig in previous:
        signal.signal(sig, pass_on)
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                _end(procs)
                return failed[0]
            if all(c == 0 for c in codes):
                return 0
            if timeout is not None and time.monotonic() - start > timeout:
                _end(procs)
                with forward.lock:  # said among the errors: a job's log that ends in exit 124 alone does not say why
                    forward.errors.setdefault(f"{ERROR_PREFIX}the {n_processes} processes ran past the launcher's "
                                              f"timeout of {timeout:g} s and were stopped", set(range(n_processes)))
                return 124
            time.sleep(0.1)
    finally:
        forward.join(DRAIN_SECONDS)
        forward.write_errors(n_processes, sys.stderr)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def srun_tasks(env: Mapping[str, str] | None = None) -> int:
    """The tasks of the ``srun`` step this process is one of (``SLURM_NTASKS`` where ``SLURM_STEP_NODELIST`` is
    set), else 1: in the batch shell itself, or outside Slurm."""
    env = os.environ if env is None else env
    return int(env.get("SLURM_NTASKS", "1") or 1) if env.get("SLURM_STEP_NODELIST") else 1


@dataclass(frozen=True)
class Position:
    """Where this process stands among its run's processes, known before JAX starts: ``mode`` ('explicit': a
    coordinator set by ``runtime.coordinator`` or by ``simulator launch``; 'slurm': a task of a multi-task ``srun``
    step, whose peers jax.distributed finds from Slurm; 'single'), its ``index`` and the ``count`` of processes."""

    mode: str
    index: int
    count: int


def position(runtime: Any, env: Mapping[str, str] | None = None) -> Position:
    """This process's :class:`Position` from ``runtime`` (a config's ``runtime`` section: ``coordinator``,
    ``process_id``, ``num_processes``, which win over the launcher's :data:`ENV_PROCESS_ID` and
    :data:`ENV_NUM_PROCESSES`) and the environment: what :func:`simulator.runtime.initialize_processes` starts JAX
    with, and what a run's directory is prepared by (process 0 alone) before it does.

    A ``num_processes`` or ``process_id`` the run cannot honour is a ConfigError naming the key, before JAX starts:
    one given where no coordinator is (no ``runtime.coordinator``, not started by ``simulator launch``) that says
    other than the one process or the ``srun`` step this process is, or other than the processes ``simulator
    launch`` started. Otherwise a run of 8 processes asked for went ahead as one process, saying nothing."""
    env = os.environ if env is None else env
    given_count, given_index = runtime.num_processes, runtime.process_id
    if runtime.coordinator is not None or env.get(ENV_COORDINATOR):
        index = given_index if given_index is not None else int(env.get(ENV_PROCESS_ID, "0") or 0)
        count = given_count if given_count is not None else int(env.get(ENV_NUM_PROCESSES, "1") or 1)
        started = env.get(ENV_NUM_PROCESSES, "") if runtime.coordinator is None else ""  # the launcher's processes
        if given_count is not None and started and given_count != int(started):
            raise ConfigError("runtime.num_processes", given_count, f"give {started} or leave it unset",
                              f"cannot be honoured: simulator launch started {started} process(es)")
        if index >= count:  # the config checks its own pair; here an index against the launcher's count
            raise ConfigError("runtime.process_id", index, f"give 0 to {count - 1}: simulator launch started {count} "
                              "process(es)", "is out of range")
        return Position("explicit", index, count)
    tasks = srun_tasks(env)
    found = (Position("slurm", int(env.get("SLURM_PROCID", "0") or 0), tasks) if tasks > 1
             else Position("single", 0, 1))
    where = (f"this process is task {found.index} of an srun step of {tasks} tasks" if found.mode == "slurm" else
             "this process starts alone (no runtime.coordinator, not under simulator launch or a multi-task srun "
             "step)")
    more = ("; to run several processes give runtime.coordinator=HOST:PORT and each its runtime.process_id, or start "
            "them with simulator launch -n N or srun -n N")
    if given_count is not None and given_count != found.count:
        raise ConfigError("runtime.num_processes", given_count, f"give {found.count} or leave it unset{more}",
                          f"cannot be honoured: {where}")
    if given_index is not None and given_index != found.index:
        raise ConfigError("runtime.process_id", given_index, f"give {found.index} or leave it unset{more}",
                          f"cannot be honoured: {where}")
    return found
