"""A two-process job in which process 1 crashes while process 0 waits for it in a collective.

Process 1 leaves through os._exit, as a crash or an out-of-memory kill would: no Python clean-up,
no jax.distributed shutdown barrier.

Run by tests/test_multiprocess.py through simulator.launch; without the launcher ending it,
process 0 would block until JAX's own timeouts (minutes).
"""

import os

from simulator import runtime

runtime.configure_devices(2, "float32")
os.environ.setdefault(runtime.ENV_COORDINATOR, "")
from simulator.config import load  # noqa: E402

runtime.initialize_processes(load(None))

import jax  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

if jax.process_index() == 1:
    print("process 1: crashing on purpose", flush=True)
    os._exit(3)
print("process 0: entering a collective that process 1 never joins", flush=True)
multihost_utils.sync_global_devices("never")
print("process 0: unreachable", flush=True)
