"""What a run segment records: its writers (those of every output kind it writes, then checkpoints),
the metadata saved with the run and in every snapshot and checkpoint (resolved config, versions, git
revision, devices and layout, the segment's identity), and the header of its log. Used by
:class:`simulator.run.segment.Segment`.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
from pathlib import Path
from typing import Any

import jax

from simulator import cache, runtime
from simulator.config import Config, to_dict
from simulator.equations import registry
from simulator.output import checkpoints, kinds
from simulator.output.base import Moment, Schedule, Writer, WriterContext
from simulator.run.signals import agree
from simulator.run.simulation import Simulation
from simulator.time.control import Stepper


def git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def metadata(cfg: Config, sim: Simulation, mode: str, ckpt: checkpoints.Checkpoint | None) -> dict[str, Any]:
    """What a segment records (``segments/``, ``config.yaml``, snapshot and checkpoint attributes)."""
    return {
        "config": to_dict(cfg), "versions": runtime.versions(), "git_revision": git_revision(),
        "process_mode": mode, "processes": jax.process_count(), "devices": jax.device_count(),
        "platform": jax.default_backend(), "layout": sim.fft.describe(),
        "slurm": runtime.slurm_environment(), "restart": None if ckpt is None else source_of(ckpt),
        "segment_id": _segment_identity(),
    }


def source_of(ckpt: checkpoints.Checkpoint) -> str:
    """The checkpoint a segment restarted from as its record keeps it (``restart``): the index's resolved absolute
    path, as a relative one means nothing from another directory (a branch tried again from there was refused as a
    run, and the refusal of its ``--resume`` named a path that pointed nowhere)."""
    return str(Path(ckpt.index).resolve())


def _segment_identity() -> str:
    """A random identity of this run segment, the same on every process (the element-wise maximum of
    each process's draw): every file of a checkpoint or snapshot it writes records it (``writer``), so a shard
    or index copied from another run, or from another segment of this one, is damage even when its step,
    time and own checksums agree."""
    return "".join(f"{v:08x}" for v in agree([secrets.randbits(31) for _ in range(4)]))


def log_header(cfg: Config, sim: Simulation, meta: dict[str, Any], log: logging.Logger) -> None:
    name, physics = cfg.physics.name, registry()[cfg.physics.name].physics
    if physics is not None and physics != name:  # one of a physics' equations: the name that takes every grid
        name = f"{name} (physics.name {physics} on this {'plane' if cfg.grid.plane else 'box'} and plates)"
    log.info("run %s: %s on grid %s, box %s, %s, %s, dt %s, t_end %s", cfg.name, name,
             list(cfg.grid.shape), [round(b, 6) for b in cfg.grid.box], cfg.precision, cfg.time.integrator,
             cfg.time.dt, cfg.time.t_end)
    units = cfg.physics.clock().units()
    if units:  # a run in physical units: the line above, the progress lines and the outputs are in these
        log.info("units: %s", "; ".join(f"{key} {value}" for key, value in units.items()
                                        if key in ("length", "time") or key.startswith("code_")))
    log.info("physics: %s; initial: %s", to_dict(cfg.physics), to_dict(cfg.initial))
    threads = f"; CPU threads {runtime.cpu_threads()}" if jax.default_backend() == "cpu" else ""
    log.info("devices: %d %s on %d process(es) (%s)%s; %s", jax.device_count(), jax.default_backend(),
             jax.process_count(), meta["process_mode"], threads, sim.fft.describe())
    missing = runtime.missing_gpu(cfg)
    if missing:
        log.warning("%s", missing)
    log.info("versions: %s; git %s; slurm: %s", " ".join(f"{k}={v}" for k, v in meta["versions"].items()),
             meta["git_revision"], {k: v for k, v in meta["slurm"].items() if v} or "none")
    status = cache.status()
    if status is not None:
        log.info("%s", status.describe())
    for caution in cfg.physics.cautions(cfg):
        log.warning("%s", caution)


def writers(cfg: Config, sim: Simulation, meta: dict[str, Any], stepper: Stepper, out: Path, rank0: bool,
            log: logging.Logger) -> tuple[list[Writer], list[Writer], checkpoints.CheckpointWriter]:
    """The writers of a run: those of every output kind it writes, each built by its kind
    (:mod:`simulator.output.kinds`), records (time series, spectra) before the finiteness check, dumps
    (snapshots, particles, trajectories, statistics, tasks, the registered kinds) after it, the checkpoints last."""

    def snapshot_attrs(m: Moment) -> dict[str, Any]:
        # the writer, in the index and in every shard: a snapshot whose shards come from two writes (a restart
        # stopped while rewriting it) is refused by its readers (:class:`simulator.output.hdf5.IndexedFile`)
        return {"step": m.step, "time": m.time, "config": meta["config"], "versions": meta["versions"],
                "layout": meta["layout"], "box": list(cfg.grid.box), "writer": meta["segment_id"],
                **cfg.physics.clock().output_attrs(m.time)}

    ctx = WriterContext(rank0, meta, snapshot_attrs, log.info)
    records: list[Writer] = []
    dumps: list[Writer] = []
    for kind in kinds.active(cfg):
        (records if kind.stage == "records" else dumps).extend(kind.call("writers", cfg, sim, ctx))

    def save(m: Moment) -> Path:
        eq = sim.equation
        return checkpoints.write(out, m.state, step=m.step, time=m.time, dt=stepper.dt,
                                 epoch=stepper.epoch_at(m.step, m.time),
                                 spaces=eq.leaf_spaces(m.state), perm=sim.fft.perm,
                                 full_spectrum=not sim.fft.has_real_transform,
                                 meta={"config": meta["config"], "backend": cfg.fft.backend,
                                       "real_blocks": checkpoints.real_blocks(sim.fft),
                                       "spectrum": sim.fft.describe_layout().removeprefix(", ")},
                                 writer=meta["segment_id"], keep=cfg.checkpoint.keep)

    ck = cfg.checkpoint
    saver = checkpoints.CheckpointWriter(Schedule.of(ck, at_end=True), save, log.info)
    dumps.append(saver)
    return records, dumps, saver
