"""What a compiled step costs: memory traffic, transforms and all-to-alls read from its HLO, and a
bandwidth model that turns them into a predicted time on a device profile.

The model (docs/PERFORMANCE.md): a pseudo-spectral step is memory-bound. Every kernel of the compiled
program (an XLA fusion, a copy, an FFT, an all-to-all) reads its operands from memory and writes its
results back, at least once. Summed over the optimized HLO of one step, with loops multiplied by
their trip counts, that is the traffic the step must move: divided by a device's memory bandwidth it
bounds the step time from below (an FFT of an array larger than the caches streams it more than
once, so the FFT share of the bound is its floor). All-to-alls add the bytes each device sends,
divided by its link bandwidth. Importable without JAX: it reads HLO text and numbers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from simulator.errors import ConfigError

_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_ARRAY = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128)\[([0-9,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%(\S+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%(\S+)\s*=\s*")
#: ops that move no data (views, bookkeeping) or whose cost is that of the computations they call
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id",
         "replica-id", "opt-barrier", "iota", "while", "conditional", "call", "add-dependency"}
_COLLECTIVES = ("all-to-all", "all-gather", "all-reduce", "collective-permute", "reduce-scatter")


def shape_bytes(text: str) -> int:
    """Bytes of every array in an HLO shape (a tuple counts all of its elements)."""
    return sum(_DTYPE_BYTES.get(t, 4) * math.prod(int(d) for d in dims.split(",") if d)
               for t, dims in _ARRAY.findall(text))


@dataclass
class Traffic:
    """Per-device cost of one program: bytes through memory by kind, bytes sent to other devices
    (``exchanged_bytes``: the all-to-alls' operands, of which a device in a group of P sends (P-1)/P),
    and how many FFT kernels and collectives run (loops multiplied by their trip counts)."""

    fft_bytes: float = 0.0
    other_bytes: float = 0.0
    sent_bytes: float = 0.0
    exchanged_bytes: float = 0.0
    fft_calls: float = 0.0
    collectives: Counter = field(default_factory=Counter)
    #: asynchronous all-to-alls (a GPU's), and of those the ones with an FFT scheduled between their start and
    #: their done: the exchange runs while another field is transformed (a CPU's are synchronous: 0 and 0)
    async_exchanges: float = 0.0
    hidden_exchanges: float = 0.0

    @property
    def memory_bytes(self) -> float:
        return self.fft_bytes + self.other_bytes

    def add(self, other: Traffic, times: float = 1.0) -> None:
        self.fft_bytes += times * other.fft_bytes
        self.other_bytes += times * other.other_bytes
        self.sent_bytes += times * other.sent_bytes
        self.exchanged_bytes += times * other.exchanged_bytes
        self.fft_calls += times * other.fft_calls
        self.async_exchanges += times * other.async_exchanges
        self.hidden_exchanges += times * other.hidden_exchanges
        for k, v in other.collectives.items():
            self.collectives[k] += times * v


@dataclass
class _Op:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attrs: str


def _split_op(rest: str) -> tuple[str, str, str, str] | None:
    """``SHAPE opcode(operands), attrs`` -> its parts (the shape may be a parenthesised tuple)."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):  # noqa: B007 (i: where the loop stops, the closing bracket)
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        shape, rest = rest[: i + 1], rest[i + 1:].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    m = re.match(r"([a-z][a-z0-9\-]*)\(", rest)
    if m is None:
        return None
    depth, start = 0, m.end() - 1
    for i in range(start, len(rest)):
        depth += rest[i] == "("
        depth -= rest[i] == ")"
        if depth == 0:
            return shape, m.group(1), rest[start + 1: i], rest[i + 1:]
    return None


def _parse(hlo_text: str) -> tuple[dict[str, list[_Op]], str]:
    """Computations of an HLO module by name (each a list of instructions) and the entry's name."""
    comps: dict[str, list[_Op]] = {}
    entry, current = "", None
    for line in hlo_text.splitlines():
        head = _HEADER.match(line)
        if head and not line.startswith(" "):
            current = comps.setdefault(head.group(2), [])
            entry = head.group(2) if head.group(1) else entry
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _INSTRUCTION.match(line)
        if current is None or m is None:
            continue
        parts = _split_op(line[m.end():])
        if parts is not None:
            shape, opcode, operands, attrs = parts
            names = re.findall(r"%([\w.\-]+)", operands)
            current.append(_Op(m.group(1), shape, opcode, names, attrs))
    return comps, entry


def _group_size(attrs: str) -> int:
    """Devices in each replica group of a collective (``{{0,1},{2,3}}``, ``[2,2]<=[4]``, or a mesh
    ``mesh['axis_0'=2,'axis_1'=4] {'axis_1'}``: the product of the named axes' sizes)."""
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", attrs)
    if m:
        sizes = {k: int(v) for k, v in re.findall(r"'([^']+)'=(\d+)", m.group(1))}
        return math.prod(sizes.get(a, 1) for a in re.findall(r"'([^']+)'", m.group(2)))
    m = re.search(r"replica_groups=\[\d+,(\d+)\]<=", attrs)
    if m:
        return int(m.group(1))
    m = re.search(r"replica_groups=\{\{([0-9,]+)\}", attrs)
    return len(m.group(1).split(",")) if m else 1


def fft_workspace_bytes(hlo_text: str) -> int:
    """The device memory a GPU program's FFTs take beyond XLA's buffer assignment (what ``memory_analysis`` does
    not count): the largest over its ``fft`` instructions. Measured on one H200 (JAX 0.11.2, cuFFT of CUDA 13;
    docs/PERFORMANCE.md): the allocator's peak over a jitted transform exceeded args + outputs + temporaries by the
    transform's complex side for a power-of-two inverse transform (512^3, 1 and 3 components), by twice it at 900^3
    (3 components), and by nothing for a power-of-two forward real transform. Other forward transforms were not
    measured and are counted as the inverse ones are."""
    comps, _ = _parse(hlo_text)
    largest = 0
    for ops in comps.values():
        shapes = {op.name: op.shape for op in ops}
        for op in ops:
            if op.opcode != "fft":
                continue
            length = re.search(r"fft_length=\{([^}]*)\}", op.attrs)
            lengths = [int(n) for n in re.findall(r"\d+", length.group(1) if length else "")]
            forward_real = re.search(r"fft_type=RFFT\b", op.attrs) is not None
            power_of_two = all(n & (n - 1) == 0 for n in lengths)
            if forward_real and power_of_two:
                continue
            complex_side = (shape_bytes(op.shape) if forward_real
                            else sum(shape_bytes(shapes.get(o, "")) for o in op.operands))
            largest = max(largest, complex_side * (1 if power_of_two else 2))
    return largest


def hlo_traffic(hlo_text: str) -> Traffic:
    """The per-device :class:`Traffic` of the entry computation of an optimized (per-device) HLO module.

    An all-to-all among P devices sends (P-1)/P of each device's operand to the others. A GPU's asynchronous
    collectives count once: ``all-to-all-start`` (or an ``async-start`` of a computation holding the
    collective) does the work, its ``-done`` only waits.
    """
    comps, entry = _parse(hlo_text)
    memo: dict[str, Traffic] = {}

    def visit(name: str) -> Traffic:
        if name in memo:
            return memo[name]
        out = Traffic()
        ops = comps.get(name, [])
        shapes = {op.name: op.shape for op in ops}
        started: dict[str, bool] = {}  # asynchronous all-to-alls begun and not done: has an FFT run since?
        for op in ops:
            if op.opcode.endswith("-done") and op.operands and op.operands[0] in started:
                out.async_exchanges += 1
                out.hidden_exchanges += started.pop(op.operands[0])
            called = re.findall(r"(?:body|to_apply|true_computation|false_computation)=%([\w.\-]+)", op.attrs)
            branches = re.search(r"branch_computations=\{([^}]*)\}", op.attrs)
            if op.opcode == "while":
                trip = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', op.attrs)
                body = re.search(r"body=%([\w.\-]+)", op.attrs)
                if body:
                    out.add(visit(body.group(1)), float(trip.group(1)) if trip else 1.0)
                continue
            if op.opcode == "conditional" and branches:
                costs = [visit(b.strip().lstrip("%")) for b in branches.group(1).split(",")]
                out.add(max(costs, key=lambda t: t.memory_bytes))
                continue
            if op.opcode == "call" and called:
                out.add(visit(called[0]))
                continue
            if op.opcode == "async-start":  # a GPU's asynchronous collective: the op it wraps does the work
                wrapped = re.search(r"calls=%([\w.\-]+)", op.attrs)
                if wrapped:
                    inner = visit(wrapped.group(1))
                    out.add(inner)
                    if inner.collectives.get("all-to-all"):
                        started[op.name] = False
                continue
            if op.opcode in _FREE or op.opcode.endswith("-done") or op.opcode == "async-update":
                continue
            operands = sum(shape_bytes(shapes.get(o, "")) for o in op.operands)
            # a -start's shape is the tuple (operands, result): the result is as large as its operands
            moved = 2 * operands if op.opcode.endswith("-start") and operands else shape_bytes(op.shape) + operands
            is_fft = op.opcode == "fft" or (op.opcode == "custom-call" and "fftw" in op.attrs)
            if is_fft:
                out.fft_bytes += moved
                out.fft_calls += 1
                started = dict.fromkeys(started, True)
                continue
            out.other_bytes += moved
            kind = op.opcode.removesuffix("-start")
            if kind in _COLLECTIVES:
                out.collectives[kind] += 1
                if kind == "all-to-all":
                    if op.opcode.endswith("-start"):
                        started[op.name] = False
                    p, size = _group_size(op.attrs), operands or shape_bytes(op.shape)
                    out.exchanged_bytes += size
                    out.sent_bytes += size * (p - 1) / p
        memo[name] = out
        return out

    return visit(entry)


@dataclass(frozen=True)
class DeviceProfile:
    """A device's memory bandwidth and its link bandwidth to peers within a node (bytes/s), where the
    memory figure comes from (``source``) and what the link is (``link``)."""

    name: str
    memory_bandwidth: float
    link_bandwidth: float
    source: str
    link: str


#: published figures (bytes/s). NVLink 4: 900 GB/s per GPU both directions together, 450 GB/s each way.
PROFILES: dict[str, DeviceProfile] = {
    "h100": DeviceProfile("h100", 3.35e12, 450e9, "NVIDIA H100 SXM5 datasheet: HBM3 3.35 TB/s",
                          "NVLink 4 900 GB/s bidirectional (450 GB/s per direction)"),
    "h200": DeviceProfile("h200", 4.8e12, 450e9, "NVIDIA H200 SXM datasheet: HBM3e 4.8 TB/s",
                          "NVLink 4 900 GB/s bidirectional (450 GB/s per direction)"),
}
#: between nodes, one 400 Gb/s InfiniBand NDR adapter per GPU (NVIDIA DGX H100 datasheet)
INTER_NODE_BANDWIDTH = 50e9
INTER_NODE_LINK = "InfiniBand NDR 400 Gb/s (50 GB/s) per GPU between nodes"
GPUS_PER_NODE = 8


def exchange_share(devices: int, layout: str) -> float:
    """Share of an exchanged field a device sends to others: a slab all-to-all is among all P devices,
    a pencil one among about sqrt(P) (each of its two exchanges runs within one mesh axis)."""
    group = devices if layout != "pencil" else math.isqrt(devices)
    return (group - 1) / group if group > 1 else 0.0


def scaled_traffic(per_cell: Traffic, cells: float, devices: int, layout: str) -> Traffic:
    """The per-device traffic of a step on ``cells`` cells over ``devices`` devices, from per-cell figures
    (a compiled step's per-device traffic divided by its cells per device): memory traffic and
    exchanged bytes scale with the cells a device holds (bytes per cell do not depend on N; tested),
    and a device sends :func:`exchange_share` of what it exchanges."""
    local = cells / devices
    out = Traffic(fft_bytes=per_cell.fft_bytes * local, other_bytes=per_cell.other_bytes * local,
                  exchanged_bytes=per_cell.exchanged_bytes * local, fft_calls=per_cell.fft_calls)
    out.sent_bytes = out.exchanged_bytes * exchange_share(devices, layout)
    out.collectives.update(per_cell.collectives)
    return out


def per_cell(traffic: Traffic, cells: float, devices: int) -> Traffic:
    """``traffic`` (one device's, of a step over ``devices`` devices and ``cells`` cells) per cell it holds."""
    out = Traffic()
    out.add(traffic, devices / cells)
    out.fft_calls, out.collectives = traffic.fft_calls, Counter(traffic.collectives)
    return out


def predicted_seconds(traffic: Traffic, profile: DeviceProfile, devices: int = 1, layout: str = "slab") -> float:
    """Bandwidth-bound time of a program: memory traffic / memory bandwidth + bytes sent / link
    bandwidth, no overlap assumed. Links: NVLink within a node of 8; a slab exchange over more GPUs
    crosses InfiniBand; a pencil's two exchanges beyond a node, one within it and one across, are
    taken as half and half. The one model ``simulator plan`` and ``scripts/project_gpu.py`` both use."""
    seconds = traffic.memory_bytes / profile.memory_bandwidth
    if devices <= GPUS_PER_NODE:
        return seconds + traffic.sent_bytes / profile.link_bandwidth
    if layout == "pencil":
        return seconds + traffic.sent_bytes * (0.5 / profile.link_bandwidth + 0.5 / INTER_NODE_BANDWIDTH)
    return seconds + traffic.sent_bytes / INTER_NODE_BANDWIDTH


def links(profile: DeviceProfile, devices: int, layout: str = "slab") -> str:
    """The links :func:`predicted_seconds` sends a step's exchanges over, in words: the profile's link
    within a node, InfiniBand for a slab beyond it, half of each for a pencil beyond it."""
    if devices == 1:
        return "none (one device)"
    if devices <= GPUS_PER_NODE:
        return profile.link
    if layout == "pencil":
        return (f"half on {profile.link} within a node of {GPUS_PER_NODE}, half on {INTER_NODE_LINK} "
                f"({devices} devices)")
    return f"{INTER_NODE_LINK} (a slab exchange among {devices} devices crosses nodes of {GPUS_PER_NODE})"


def human_bytes(n: float) -> str:
    """``n`` bytes for people, in binary units to 3 significant digits: 1536 -> '1.5 KiB', 1e6 -> '977 KiB',
    8 * 2**30 -> '8 GiB' (the one byte formatter: plans, exports and their errors)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024:  # 1000 to 1023 in full: 3 significant digits would write them 1e+03
            return f"{n:.3g} {unit}" if abs(n) < 1000 else f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def parse_bytes(text: str) -> int:
    """'80GB' / '80 GiB' / '8e10' / '500kB' -> bytes (GB and GiB both read as 2^30: device memory is quoted so; the
    help of every option taking one says so)."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKMGTP]?)(i?B)?\s*", text)
    if m is None:
        raise ValueError(f"{text!r} is not a size like 80GB")
    return int(float(m.group(1)) * 1024 ** "_KMGTP".index(m.group(2).upper() or "_"))


def memory_option(text: str | None, required: bool) -> int | None:
    """``simulator plan --memory SIZE`` in bytes (None: not given); ConfigError if it is not a size, or
    if it is ``required`` (planning for GPUs where none is visible) and missing."""
    if text is None:
        if required:
            raise ConfigError("--platform", "gpu", "give the memory per GPU, e.g. --memory 80GB",
                              "needs --memory where no GPU is visible")
        return None
    try:
        size = parse_bytes(text)
    except (ValueError, OverflowError):
        # OverflowError: a finite-looking size beyond a float ('1e400GB' reads as inf)
        raise ConfigError("--memory", text, "give a size such as 80GB or 141GiB", "is not a size") from None
    if size < 1024 ** 2:
        raise ConfigError("--memory", text, "give a size of at least 1MB per device, e.g. 80GB", "is too small")
    return size
