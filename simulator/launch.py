"""Start several local processes of one simulator command, like an srun step on a laptop.

Each child runs the same program (``simulator launch`` runs ``python -m simulator <command ...>``)
with ``SIMULATOR_COORDINATOR`` (a free
localhost port), ``SIMULATOR_NUM_PROCESSES`` and ``SIMULATOR_PROCESS_ID`` in its environment, which
:func:`simulator.runtime.initialize_processes` reads. If any child fails, the others are ended
(SIGTERM, then SIGKILL after a grace period) so nothing waits forever on a dead peer in a collective,
and the launcher exits with the failed child's status.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence

from simulator.runtime import ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID

GRACE_SECONDS = 5.0


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


def launch(n_processes: int, argv: Sequence[str], timeout: float | None = None) -> int:
    """Run the program ``argv`` (e.g. ``[python, -m, simulator, run, ...]``) in ``n_processes`` processes.

    Returns 0 if all succeed, else the first failing child's exit status (124 on timeout).
    """
    if n_processes < 1:
        raise ValueError(f"-n = {n_processes}: need at least one process")
    coordinator = f"127.0.0.1:{free_port()}"
    procs = []
    for pid in range(n_processes):
        env = dict(os.environ)
        env.update({ENV_COORDINATOR: coordinator, ENV_NUM_PROCESSES: str(n_processes), ENV_PROCESS_ID: str(pid)})
        procs.append(subprocess.Popen(list(argv), env=env))
    start = time.monotonic()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def forward(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    for sig in previous:
        signal.signal(sig, forward)
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
                return 124
            time.sleep(0.1)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
