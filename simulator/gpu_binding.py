"""Which GPU a process of a Slurm step binds to: the node's visible devices and the task's local rank, read from
Slurm's variables (no JAX; :func:`simulator.runtime.setup` applies it before the backends start)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from simulator.errors import ConfigError, RuntimeSetupError
from simulator.launch import ENV_NUM_PROCESSES, ENV_PROCESS_ID


@dataclass(frozen=True)
class GpuBinding:
    """Which GPUs this process drives (``device_ids``: ordinals as this process sees them; None: let JAX
    take every device it sees, the case of CPU runs) and why; ``where``: the variable that asks for them and this
    process's place on its node ("" where none asks)."""

    device_ids: list[int] | None
    reason: str
    where: str = ""


#: what CUDA_VISIBLE_DEVICES holds in a Slurm step without GPUs
NO_DEVICE_FILES = "NoDevFiles"


def visible_devices(env: Mapping[str, str]) -> tuple[list[str] | None, str]:
    """The devices a GPU runtime will show this process, and the variable that says so. CUDA (and ROCm)
    stop at the first entry that names no device: ``-1`` hides every GPU, and so does Slurm's
    ``NoDevFiles``."""
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        if name in env:
            shown: list[str] = []
            for entry in (v.strip() for v in env[name].split(",")):
                if entry == NO_DEVICE_FILES or entry.startswith("-"):
                    break
                if entry:
                    shown.append(entry)
            return shown, name
    return None, ""


_TASKS = re.compile(r"([1-9][0-9]*)(?:\(x([1-9][0-9]*)\))?")


def _tasks_per_node(name: str, text: str) -> list[int]:
    """Slurm's tasks per node (``2(x3),1``: two tasks on each of three nodes, then one) as one count per node."""
    per_node: list[int] = []
    for part in text.split(","):
        found = _TASKS.fullmatch(part.strip())
        if not found:
            raise ConfigError(name, text, "Slurm gives counts of 1 or more per node, such as '2(x3),1'",
                              "is not in Slurm's form")
        per_node += [int(found[1])] * int(found[2] or 1)
    return per_node


def _tasks_on_node(env: Mapping[str, str]) -> tuple[int, int]:
    """(this process's rank on its node, processes on its node) from Slurm's or the launcher's variables.
    A value that cannot be Slurm's is a ConfigError naming its variable: binding on it would drive
    another task's GPUs (or all of them)."""
    if env.get("SLURM_LOCALID", ""):
        name = next((n for n in ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE")
                     if env.get(n)), "")
        per_node = _tasks_per_node(name, env[name]) if name else [1]
        node = env.get("SLURM_NODEID", "") or "0"
        if not node.isdigit():
            raise ConfigError("SLURM_NODEID", node, "Slurm numbers a job's nodes 0, 1, ... (tasks per node as "
                              "in '2(x3),1')", "is not a node number")
        tasks = per_node[min(int(node), len(per_node) - 1)]
        rank = env["SLURM_LOCALID"]
        if not rank.isdigit() or int(rank) >= tasks:
            where = f"{name}={env[name]}" if name else "SLURM_TASKS_PER_NODE unset: taken as 1"
            raise ConfigError("SLURM_LOCALID", rank, f"Slurm numbers the {tasks} tasks of this node 0 to {tasks - 1} "
                              f"({where}, SLURM_NODEID={node})", "is out of range")
        return int(rank), tasks
    if env.get(ENV_PROCESS_ID, "").isdigit():  # simulator launch: every process on this machine
        return int(env[ENV_PROCESS_ID]), int(env.get(ENV_NUM_PROCESSES, "1") or 1)
    return 0, 1


def gpu_binding(env: Mapping[str, str] | None = None) -> GpuBinding:
    """The GPUs this process should drive, from what it can actually see.

    With ``--gpus-per-task=1`` or ``--gpu-bind=single:1``, Slurm shows each task only its own GPU,
    numbered 0 (CUDA_VISIBLE_DEVICES holds one entry): the task drives device 0. A bare
    ``jax.distributed.initialize()`` would instead ask for ordinal SLURM_LOCALID, which tasks 1-3 of a
    node cannot see ("invalid device ordinal"). With the GPUs of a node visible to all its tasks
    (``--gpus-per-node=4``, ``--gpu-bind=none``), task r of n drives the r-th share of them; with one
    task per node, all of them. Without CUDA_VISIBLE_DEVICES, Slurm's SLURM_STEP_GPUS/SLURM_JOB_GPUS
    (physical ordinals, all visible) or the count SLURM_GPUS_ON_NODE stand in. No GPU variable: None.
    Raises ConfigError for a Slurm variable that cannot be right (a local id past the node's tasks).
    """
    env = os.environ if env is None else env
    rank, tasks = _tasks_on_node(env)
    visible, source = visible_devices(env)
    if visible is not None:
        ordinals, shown = list(range(len(visible))), f"{source}={env[source]}"
    elif env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS"):
        name = "SLURM_STEP_GPUS" if env.get("SLURM_STEP_GPUS") else "SLURM_JOB_GPUS"
        ordinals, shown = [int(v) for v in env[name].split(",") if v.strip().isdigit()], f"{name}={env[name]}"
    elif env.get("SLURM_GPUS_ON_NODE", "").isdigit():
        ordinals, shown = list(range(int(env["SLURM_GPUS_ON_NODE"]))), f"SLURM_GPUS_ON_NODE={env['SLURM_GPUS_ON_NODE']}"
    else:
        return GpuBinding(None, "no GPU variable set: JAX uses the devices it finds")
    where = f"{shown}; process {rank} of {tasks} on this node"
    if not ordinals:
        return GpuBinding(None, f"{where}: no GPU visible")
    if len(ordinals) == 1:
        return GpuBinding(ordinals, f"{where}: it sees one GPU and drives it (ordinal {ordinals[0]})", where)
    if len(ordinals) % tasks:
        raise RuntimeSetupError(f"{where}: {len(ordinals)} visible GPUs do not divide among {tasks} processes; "
                                "give each task one GPU (--gpus-per-task=1) or each node one task")
    share = len(ordinals) // tasks
    mine = ordinals[rank * share:(rank + 1) * share]
    return GpuBinding(mine, f"{where}: {len(ordinals)} visible GPUs shared by {tasks} process(es), this one "
                            f"drives ordinal(s) {', '.join(map(str, mine))}", where)
