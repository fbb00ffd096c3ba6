"""The extrema output's figure in ``simulator plot``: min and max of each component against time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toy_output import read


def figures(run_dir: Path, config: dict[str, Any], pdf: bool) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = read(run_dir)
    fig, ax = plt.subplots(figsize=(6, 4))
    for c in data["component"]:
        ax.plot(data["time"], data["max"][:, c], label=f"max, component {c}")
        ax.plot(data["time"], data["min"][:, c], "--", label=f"min, component {c}")
    ax.set_xlabel("t")
    ax.set_ylabel(data["attrs"]["field"])
    ax.legend()
    path = run_dir / "plots" / "extrema.png"
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return [path]
