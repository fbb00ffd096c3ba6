"""Row files that hold no row yet: what a segment killed after opening them, before its first row, leaves (no JAX).

Such a file holds nothing of a run, so a restart makes it anew (:func:`simulator.output.rows.resume`) where it would
set aside a file with rows, and a directory holding nothing else may be taken over
(:func:`simulator.output.contents.only_start_up`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py


def rowless(path: Path) -> bool:
    """Whether the row file ``path`` reads and holds no row: every ``step`` dataset in it (the file's, or each
    group's in ``tasks.h5``) present and empty. A file that cannot be read is not: it may be a run's rows, damaged."""
    found: list[int] = []

    def count(name: str, item: Any) -> None:
        if name.rsplit("/", 1)[-1] == "step" and isinstance(item, h5py.Dataset):
            found.append(item.shape[0] if item.shape else 1)

    try:
        with h5py.File(path, "r", locking=False) as f:
            f.visititems(count)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):
        return False
    return bool(found) and not any(found)
