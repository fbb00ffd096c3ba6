"""The sections of the run config that say what a run runs on: ``fft`` (the distributed FFT and its device mesh)
and ``runtime`` (processes, devices, threads, the wall-clock limits and the compilation cache). No JAX."""

from __future__ import annotations

from dataclasses import dataclass

from simulator.schema import setting


def _fft_backends() -> tuple[str, ...]:
    from simulator.fft.layouts import LAYOUTS

    return tuple(sorted(LAYOUTS))


@dataclass(frozen=True)
class FFTConfig:
    """The distributed FFT and its device decomposition."""

    backend: str = setting(
        "slab", "distributed FFT backend: slab (custom_partitioning, 1D mesh), pencil (shard_map, 2D mesh), "
        "jaxdecomp, or single (jnp.fft on one device, the reference)", choices=_fft_backends)
    mesh: tuple[int, ...] | None = setting(
        None, "device mesh: [P] for a slab, [P0, P1] for a pencil (jaxdecomp takes either); "
        "null = all devices, slab-shaped for slab/jaxdecomp and near-square for pencil, the larger factor first "
        "([4, 2] on 8 devices)", min=1)
    layout: str = setting(
        "auto", "spectral layout of the real-to-complex spectra: compact (only the modes the 2/3 rule keeps, "
        "about 30% of the half spectrum: smaller registers, passes and all-to-alls), full (the half spectrum), "
        "or auto (compact where the physics and the backend allow it)", choices=("auto", "compact", "full"))
    in_turn: bool | str = setting(
        "auto", "GPUs: transform the fields of each evaluation of a step one at a time (true: fewer held at once; "
        "one H100, lsrk4 float32, 35.4 -> 30.7 bytes per cell, largest grid 1260^3 -> 1296^3) for more memory "
        "traffic (a 512^3 rk4 step 655 -> 834 bytes per cell); false: all at once, so that XLA can run one field's "
        "all-to-all while it transforms the next; auto: all at once where the run fits so, else one at a time "
        "(simulator run's memory check decides, before anything is written; an ensemble's batch goes all at once). "
        "Snapshot fields go one at a time on GPUs either way", choices=("auto", True, False))


@dataclass(frozen=True)
class RuntimeConfig:
    """Processes and devices. Under Slurm these are discovered from the environment. Every key is honoured or said:
    one the run cannot honour (a process count it was not started with, a device count or thread count asked after
    JAX started) is refused in one line before the run starts, a cache directory that cannot be written is said."""

    cpu_devices: int | None = setting(
        None, "run on this many virtual CPU devices (a laptop stand-in for GPUs); null = JAX's default "
        "devices. Must be set before JAX starts: use this key or --cpu-devices", min=1, max=4096)
    threads: int | None = setting(
        None, "CPU threads of this process: the size of XLA's CPU thread pool and the most FFTW threads one "
        "transform takes; null = every core the process may use. Small grids run faster on one (on 2 cores, "
        "32^3 and 48^3 took 0.87-0.96 of the wall time and 0.73-0.90 of the CPU time); runs sharing a node "
        "should divide its cores. Must be set before JAX starts: use this key or --threads", min=1, max=4096)
    coordinator: str | None = setting(
        None, "host:port of process 0 for an explicit multi-process run (simulator launch sets it); "
        "null = discover from Slurm, or run as one process")
    num_processes: int | None = setting(
        None, "process count of an explicit multi-process run; elsewhere it must say the processes this one was "
        "started among (1 alone, the srun step's tasks, simulator launch's -n), else the run is refused before it "
        "starts", min=1)
    process_id: int | None = setting(
        None, "this process's index in an explicit multi-process run; elsewhere it must say the index this process "
        "was started with (0 alone, SLURM_PROCID in an srun step), else the run is refused before it starts", min=0)
    max_wall: float | None = setting(
        None, "wall-clock seconds this process may run, counted from the start of the simulator command (its "
        "start-up of imports, JAX's start, compiling and a checkpoint's read included; the run log says what it "
        "took): it checkpoints and exits 75 before that, after its first call of steps at the earliest (for clusters "
        "that send no signal before the time limit); null = no limit", gt=0.0)
    chunk_wall: float | None = setting(
        30.0, "wall-clock seconds one compiled call of steps may take: a chunk (output.chunk steps) that would take "
        "longer runs as several calls, sized from the step the segment measures on a first call of one step (the "
        "chunk after each checkpoint of the schedule starts with one too, as a restart from it does), and a "
        "stop signal, runtime.max_wall and a progress line (at least one a minute) are acted on between them, so a "
        "signalled run checkpoints within this many seconds and a checkpoint's time; the outputs keep their cadence "
        "(with a fixed dt the calls give the chunk's own bits; an adaptive or kdk chunk split agrees to round-off). "
        "Under a Slurm job given --signal it is at most a third of the signal's lead. A single run's: an ensemble's "
        "batch runs each chunk in one call. null = every chunk in one call (a signal waits for the chunk's end)",
        gt=0.0)
    compilation_cache: str | bool = setting(
        "auto", "where compiled programs are kept for later launches to load instead of compiling: a directory, "
        "off (false), or auto (true) = $SIMULATOR_COMPILATION_CACHE, else ~/.cache/simulator/xla (under "
        "$XDG_CACHE_HOME where set); shared safely by concurrent processes and job-array tasks, bounded by "
        "$SIMULATOR_COMPILATION_CACHE_SIZE (default 2G)")
