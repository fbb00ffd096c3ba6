"""Execute the documentation's notebooks (``docs/**/*.ipynb``) and write them back with their outputs.

    .venv/bin/python scripts/execute_notebooks.py                                  # every notebook
    .venv/bin/python scripts/execute_notebooks.py docs/tutorials/gradients.ipynb   # one

Each notebook runs top to bottom in a fresh kernel of this Python (the project's environment), from the
project directory, and is written back with what its cells printed and drew: the site shows those
outputs as they are (``mkdocs.yml``: mkdocs-jupyter with ``execute: false``), so a notebook whose code or
whose simulator changed is refreshed with this. A cell that raises stops it, prints the error and leaves
the file unchanged (exit 1). ``tests/test_notebooks.py`` executes every notebook the same way
(:func:`execute`) and checks that the stored outputs are what executing it gives.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def notebooks() -> list[Path]:
    """Every notebook of the documentation, in path order."""
    return sorted(p for p in DOCS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def execute(path: Path, timeout: float = 900, env: dict[str, str] | None = None):
    """The notebook at ``path`` executed in a fresh kernel of this interpreter with the project directory as
    its working directory (an ``nbformat`` notebook; the file is not touched). ``env``: the kernel's
    environment (default: this process's). Raises ``nbclient.exceptions.CellExecutionError`` at the first
    cell that raises, ``CellTimeoutError`` for a cell running past ``timeout`` seconds."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    class ThisPython(KernelSpecManager):
        """The kernel of this interpreter, whatever kernels Jupyter has installed elsewhere."""

        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="Python 3 (ipykernel)", language="python")

    nb = nbformat.read(path, as_version=4)
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=ThisPython())
    client = NotebookClient(nb, km=manager, timeout=timeout, allow_errors=False, record_timing=False,
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute(**({"env": env} if env is not None else {}))
    for cell in nb.cells:  # a cell's printing split into several outputs by when it was flushed: one output
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    return nb


def coalesce_streams(outputs: list) -> list:
    """``outputs`` of a code cell with consecutive stream outputs of one stream (stdout, stderr) joined."""
    joined: list = []
    for output in outputs:
        if (output.output_type == "stream" and joined and joined[-1].output_type == "stream"
                and joined[-1].name == output.name):
            joined[-1].text += output.text
        else:
            joined.append(output)
    return joined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks to execute (default: every one under docs/)")
    args = parser.parse_args(argv)
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    for path in args.paths or [p.relative_to(ROOT) for p in notebooks()]:
        start = time.perf_counter()
        try:
            nb = execute(path.resolve())
        except (CellExecutionError, CellTimeoutError) as error:
            print(f"{path}: not written, a cell failed:\n{error}", file=sys.stderr)
            return 1
        nbformat.write(nb, path)
        print(f"{path}: executed in {time.perf_counter() - start:.0f} s and written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
