"""A file to start a run from, found and described without JAX: a checkpoint, a snapshot, or a run
directory (its latest complete checkpoint).

``initial.name: file`` and a restart at another resolution read the state from such a file on any
grid (:mod:`simulator.run.remap` interpolates it); config validation uses :func:`locate` to refuse a
missing or foreign file before anything starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.equations.spec import FromFile, InitialCondition
from simulator.errors import ConfigError
from simulator.fft import plane
from simulator.output import checkpoints, segments
from simulator.output.hdf5 import IncompleteOutputError, IndexedFile


@dataclass(frozen=True)
class Source:
    """A state on disk: its index file, kind ("checkpoint" or "snapshot"), step, time and the resolved config
    (a dict) of the run that wrote it; ``checkpoint`` for a checkpoint."""

    index: Path
    kind: str
    step: int
    time: float
    config: dict[str, Any]
    checkpoint: checkpoints.Checkpoint | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """The box (Nx, Ny, Nz) it was written on (a plane's: :func:`simulator.fft.plane.cells`)."""
        return plane.cells(self.config["grid"]["shape"])

    @property
    def box(self) -> tuple[float, float, float]:
        return plane.lengths(self.config["grid"]["shape"], self.config["grid"]["box"])

    @property
    def equation(self) -> str:
        return str(self.config["physics"]["name"])

    def describe(self) -> str:
        """e.g. ``checkpoint outputs/tg/checkpoints/c00000200 (step 200, t = 2, grid 32x32x32)``."""
        return (f"{self.kind} {self.index.with_suffix('')} (step {self.step}, t = {self.time:.6g}, grid "
                f"{'x'.join(map(str, self.shape))})")


def _damaged(marker: Path) -> str:
    """Why the checkpoint of ``marker`` cannot be used, and the previous intact checkpoint of its run."""
    why = checkpoints.why_damaged(marker)
    step = int(marker.stem[1:]) if marker.stem[1:].isdigit() else None
    previous = checkpoints.find(marker.parent.parent, before=step, warn=False) if step is not None else None
    where = (f"the previous intact checkpoint of that run is {previous.index.with_suffix('.json')}" if previous
             else "that run has no earlier intact checkpoint")
    return f"is a damaged checkpoint ({why}); {where}"


def locate(path: str | Path) -> Source:
    """The state at ``path``: a checkpoint's marker ``cNNNNNNNN.json`` or index ``cNNNNNNNN.h5``, a
    snapshot's index ``sNNNNNNNN.h5``, or a run directory (its latest complete checkpoint not superseded). A
    snapshot or checkpoint a later segment of its run superseded (:func:`simulator.output.segments.superseded`)
    is refused, as its readers and restarts leave it out.

    Raises ValueError saying what is wrong (missing, incomplete, not a state file).
    """
    path = Path(path)
    if not path.exists():
        raise ValueError("does not exist")
    if path.is_dir() or path.suffix == ".json" or path.with_suffix(".json").is_file():
        ckpt = checkpoints.find(path, warn=path.is_dir())  # a single file's damage is the error itself
        if ckpt is None:
            raise ValueError("holds no complete checkpoint" if path.is_dir() else _damaged(path.with_suffix(".json")))
        marker = ckpt.index.with_suffix(".json")  # checkpoints/cNNNNNNNN.json of the run directory
        why = None if path.is_dir() else segments.refusal(marker.parent.parent, marker)
        if why:
            raise ValueError(why)
        return Source(ckpt.index, "checkpoint", ckpt.step, ckpt.time, ckpt.meta["config"], ckpt)
    if path.suffix != ".h5":
        raise ValueError("is neither a run directory, a checkpoint (.json, .h5) nor a snapshot index (.h5)")
    try:
        with IndexedFile(path) as snap:
            attrs = snap.attrs
    except IncompleteOutputError as err:
        raise ValueError(f"cannot be read ({err})") from None
    config = attrs.get("config")
    if isinstance(config, str):
        config = json.loads(config)
    if not isinstance(config, dict) or "step" not in attrs or "time" not in attrs:
        raise ValueError("is not a snapshot written by `simulator run` (no step, time or config)")
    why = segments.refusal(path.parent.parent, path)  # snapshots/sNNNNNNNN.h5 of the run directory
    if why:
        raise ValueError(why)
    return Source(path, "snapshot", int(attrs["step"]), float(attrs["time"]), config)


def check_start(initial: InitialCondition, cfg: Any) -> None:
    """The checks of a run that starts (not resumes) from ``initial``: its own (``initial.check_start``),
    and for a state read from a file (:class:`~simulator.equations.spec.FromFile`) that the file holds a
    state of this equation in this box. The source is read only when a run starts from it: a run resumed
    from its own checkpoints does not need the file any more (it may have been deleted or pruned).
    ConfigError naming ``initial.path``."""
    initial.check_start(cfg)
    if not isinstance(initial, FromFile):
        return
    try:
        source = locate(initial.path) if initial.path else None
    except ValueError as err:
        raise ConfigError("initial.path", initial.path, "give a checkpoint, a snapshot index or a run directory",
                          str(err)) from None
    if source is None:
        raise ConfigError("initial.path", initial.path, "give a checkpoint, a snapshot index or a run directory",
                          "is required with initial.name = file")
    if source.equation != cfg.physics.name:
        raise ConfigError("initial.path", initial.path, f"give a state of {cfg.physics.name}",
                          f"holds a {source.equation} state")
    box = [float(b) for b in cfg.grid.lengths]
    if any(abs(a - b) > 1e-12 * max(abs(b), 1.0) for a, b in zip(source.box, box, strict=True)):
        raise ConfigError("initial.path", initial.path, f"give a state in this run's box {box}",
                          f"was written in the box {list(source.box)}")
