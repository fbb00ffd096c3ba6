"""Benchmark snapshot I/O: per-process HDF5 shards + virtual-dataset index against plain numpy.save.

For each N and device count, a 3-component real field (the size of a velocity snapshot) is written
with ``simulator.output.hdf5.write`` in canonical order, the checkpoint layout ("ours": every device's
block to this process's shard file, then the index), the same with checksums as checkpoints are written
("checkpoint": Fletcher-32 per chunk of at most 1 MiB), and as a snapshot ("snapshot": ``write_snapshot``,
each block transposed to ParaView's (z, y, x, component) order on the host, plus the XDMF files), and
read back whole through the index (``Snapshot.read``, canonical order); the same bytes are written with
``numpy.save`` and read with ``numpy.load`` in the same run as the baseline. Reported: MB/s and the
ratio to numpy (time ours / time numpy; 1.0 = as fast). Files go to a scratch directory under --out and are deleted;
reads come from the page cache when the files fit in memory, as they do here.

    python scripts/bench_io.py                      # N = 128 256, 1 and 8 devices, float32
    python scripts/bench_io.py --sizes 512 --devices 1 --platform gpu

Results: a table on stdout, outputs/bench/io.csv and io.json.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 256])
    p.add_argument("--devices", type=int, nargs="+", default=[1, 8])
    p.add_argument("--precision", default="float32", choices=["float32", "float64"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--out", default="outputs/bench")
    return p.parse_args()


def interleaved(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each function, called in turn (after one warm-up round) so that page-cache
    and write-back state affect all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(repeats + 1):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn(i)
            if i:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(max(args.devices) if args.platform == "cpu" else None, args.precision)
    import jax
    import numpy as np

    from simulator.benchmark import machine, write_results
    from simulator.fft import BACKENDS
    from simulator.output import hdf5 as io
    from simulator.output.snapshots import write_snapshot
    from simulator.runtime import build_mesh

    scratch = Path(args.out) / "io_scratch"
    rows = []
    print(f"{'N':>4s} {'dev':>3s} {'MB':>7s} {'write MB/s':>10s} {'snapshot':>8s} {'numpy':>8s} {'ratio':>6s} "
          f"{'snap':>5s} {'ckpt':>5s} {'read MB/s':>9s} {'snapshot':>8s} {'numpy':>8s} {'ratio':>6s} {'snap':>5s} "
          f"{'ckpt':>5s}", flush=True)
    for n in args.sizes:
        host = np.random.default_rng(0).standard_normal((3, n, n, n)).astype(args.precision)
        mb = host.nbytes / 1e6
        for nd in args.devices:
            fft = BACKENDS["slab"]((n, n, n), build_mesh(BACKENDS["slab"], None, jax.devices()[:nd]))
            field = jax.make_array_from_callback(host.shape, fft.real_sharding(1), lambda i: host[i])
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            def read(name: str) -> Callable[[int], None]:
                def run(i: int) -> None:
                    with io.Snapshot(scratch / name / f"s{i:08d}.h5") as snap:
                        snap.read("u")
                return run

            writes = interleaved({"ours": lambda i: io.write(scratch / "ours" / f"s{i:08d}", {"u": io.Field(field)},
                                                             {"step": i}),
                                  "checkpoint": lambda i: io.write(scratch / "checkpoint" / f"s{i:08d}",
                                                                   {"u": io.Field(field)}, {"step": i}, checksum=True),
                                  "snapshot": lambda i: write_snapshot(scratch / "snapshot" / f"s{i:08d}", {"u": field},
                                                                       {"step": i}, (1.0, 1.0, 1.0), float(i)),
                                  "numpy": lambda i: np.save(scratch / f"n{i}.npy", host)}, args.repeats)
            reads = interleaved({"ours": read("ours"), "checkpoint": read("checkpoint"), "snapshot": read("snapshot"),
                                 "numpy": lambda i: np.load(scratch / f"n{i}.npy")}, args.repeats)
            for name in ("ours", "checkpoint", "snapshot"):
                with io.Snapshot(scratch / name / "s00000000.h5") as snap:
                    assert np.array_equal(snap.read("u"), host)
            shutil.rmtree(scratch, ignore_errors=True)
            row = {"N": n, "devices": nd, "precision": args.precision, "MB": mb,
                   "write_MB_s": mb / writes["ours"], "snapshot_write_MB_s": mb / writes["snapshot"],
                   "numpy_save_MB_s": mb / writes["numpy"], "write_ratio": writes["ours"] / writes["numpy"],
                   "snapshot_write_ratio": writes["snapshot"] / writes["numpy"],
                   "read_MB_s": mb / reads["ours"], "snapshot_read_MB_s": mb / reads["snapshot"],
                   "numpy_load_MB_s": mb / reads["numpy"], "read_ratio": reads["ours"] / reads["numpy"],
                   "snapshot_read_ratio": reads["snapshot"] / reads["numpy"],
                   "checkpoint_write_ratio": writes["checkpoint"] / writes["numpy"],
                   "checkpoint_read_ratio": reads["checkpoint"] / reads["numpy"]}
            rows.append(row)
            print(f"{n:4d} {nd:3d} {mb:7.1f} {row['write_MB_s']:10.0f} {row['snapshot_write_MB_s']:8.0f} "
                  f"{row['numpy_save_MB_s']:8.0f} {row['write_ratio']:6.2f} {row['snapshot_write_ratio']:5.2f} "
                  f"{row['checkpoint_write_ratio']:5.2f} {row['read_MB_s']:9.0f} {row['snapshot_read_MB_s']:8.0f} "
                  f"{row['numpy_load_MB_s']:8.0f} {row['read_ratio']:6.2f} {row['snapshot_read_ratio']:5.2f} "
                  f"{row['checkpoint_read_ratio']:5.2f}", flush=True)
    print(write_results(args.out, "io", rows, machine()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
