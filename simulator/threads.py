"""The CPU threads of a process: the cores it may use, and the variable that sizes XLA's CPU pool; and the
variables that set a GPU's allocator and its share (what the runtime sets and the planner assumes).

JAX-free, so that the launcher (:mod:`simulator.launch`) and the sweep runner (:mod:`simulator.sweep`)
can share a machine's cores among the processes they start without starting JAX themselves. XLA's CPU
client reads ``PJRT_NPROC`` once, when it starts: ``runtime.threads`` sets it
(:func:`simulator.runtime.configure_devices`), and FFTW's transforms take at most that many threads
(:mod:`simulator.fft.local`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: the size of XLA's CPU thread pool, read once when its CPU client starts (``runtime.threads`` sets it)
XLA_THREADS_VARIABLE = "PJRT_NPROC"

#: the share of a GPU's memory JAX's allocator may take (``XLA_PYTHON_CLIENT_MEM_FRACTION``) where the
#: environment does not say: the rest is the CUDA context, cuFFT's and NCCL's own buffers
GPU_MEMORY_FRACTION = 0.95
MEM_FRACTION_VARIABLE = "XLA_PYTHON_CLIENT_MEM_FRACTION"
#: JAX's GPU allocator (``XLA_PYTHON_CLIENT_ALLOCATOR``) where the environment does not say: CUDA's
#: stream-ordered pool rather than JAX's default best-fit arena, whose pieces a state allocated between
#: two temporaries splits, so that one program's large buffer finds no contiguous room. Measured on one
#: H100 (docs/PERFORMANCE.md): lsrk4 float32 at 1184^3 (the compact layout, planned to fit) failed with the
#: arena (55 GiB asked for, about 70 free in two pieces) and ran with the pool; the 512^3 step took the
#: same time with either (88.1 and 88.3 ms)
GPU_ALLOCATOR = "cuda_async"
ALLOCATOR_VARIABLE = "XLA_PYTHON_CLIENT_ALLOCATOR"


def available_cores() -> int:
    """The cores this process may use: those it may run on, at most ``PJRT_NPROC`` where that is set."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    text = os.environ.get(XLA_THREADS_VARIABLE, "").strip()
    return min(cores, int(text)) if text.isdigit() and int(text) >= 1 else cores


def shared(env: Mapping[str, str], processes: int) -> dict[str, str]:
    """``env`` for one of ``processes`` processes started side by side on this machine: each gets its
    share of the cores (``PJRT_NPROC`` = cores / processes, at least 1) unless ``env`` already sets it,
    rather than each starting a pool of every core."""
    out = dict(env)
    out.setdefault(XLA_THREADS_VARIABLE, str(max(1, available_cores() // max(1, processes))))
    return out
