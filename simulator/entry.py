"""The ``simulator`` console command's entry point.

It notes the moment the command started (the clock ``runtime.max_wall`` counts from, so that the start-up
counts) and starts catching stop signals (:func:`simulator.run.signals.catch_early`) before anything heavy is
imported, so that a Slurm ``--signal`` or a preemption that arrives while Python and JAX start cannot
kill a run that would otherwise checkpoint and be requeued (exit 75), then hands over to
:func:`simulator.cli.main` with that moment; it gives the signals back their default actions for commands that run
no simulation. At the end it runs the exit handlers (JAX's shutdown, logging's flush) while the
catching handler is still in place and leaves without the interpreter's finalization, which would put
the default actions back: a signal in the last instants of a finished run cannot turn its exit 0 into
a death by signal.
"""

from __future__ import annotations

import atexit
import os
import sys
import time


def main() -> int:
    started = time.monotonic()  # the origin of runtime.max_wall: the start-up (imports, JAX, compiling) counts
    from simulator.run import signals

    signals.catch_early()
    from simulator.cli import main as cli_main

    code = cli_main(started=started)
    atexit._run_exitfuncs()  # no public API runs them early; they would otherwise run after the handler is gone
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None where the caller closed it (`>&-`): a finished run still exits 0
            stream.flush()
    os._exit(code)
