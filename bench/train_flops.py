"""The arithmetic behind the CPU training benchmark: a CPU's peak FLOP/s from its flags and clock, a transformer's
model FLOPs per token, and the padding share of tokenized batches. Pure functions, no timing.

Model FLOPs (PaLM, appendix B): a token of a sequence of ``S`` positions costs ``6 N + 12 L H S`` to train
(forward and backward), ``N`` the non-embedding parameters, ``L`` layers, ``H`` hidden width. Here a text's
*model* FLOPs count its real tokens with ``S`` its own length (padding does no useful work); its *executed*
FLOPs count every position of the padded batch with ``S`` the batch's width (what the CPU actually multiplies).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Dense FLOP per cycle per core. FMA counts 2; every x86 core with these units issues two FMAs a cycle (a Xeon
# Silver / Bronze has one AVX-512 FMA unit and reaches half the avx512f figure).
FP32_FLOP_PER_CYCLE = (
    ("avx512f", 64, "AVX-512 FMA: 2 units x 16 fp32 lanes x 2"),
    ("avx2", 32, "AVX2 FMA: 2 units x 8 fp32 lanes x 2"),
    ("avx", 16, "AVX without FMA: 1 add + 1 mul unit x 8 fp32 lanes"),
)
BF16_FLOP_PER_CYCLE = (
    ("amx_bf16", 1024, "AMX-BF16: one 16x32 by 32x16 tile product (16,384 FLOP) per 16 cycles"),
    ("avx512_bf16", 128, "AVX512-BF16 VDPBF16PS: 2 units x 16 lanes x 2 pairs x 2"),
)


@dataclass(frozen=True)
class CpuKind:
    """What /proc/cpuinfo says about a CPU: its model name, flags and clock (MHz)."""

    model: str
    flags: frozenset[str]
    mhz: float | None


@dataclass(frozen=True)
class Peak:
    """A CPU's peak FLOP/s in one precision, and how it was reached."""

    flops: float
    flop_per_cycle: int
    why: str
    formula: str


def parse_cpuinfo(text: str, max_mhz: float | None = None) -> CpuKind:
    """The first core's ``model name``, ``flags`` and ``cpu MHz`` of /proc/cpuinfo's ``text``; ``max_mhz``
    (lscpu's "CPU max MHz", where the kernel reports one) wins over the current clock."""
    model, flags, mhz = "", frozenset(), None
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name" and not model:
            model = value
        elif key == "cpu MHz" and mhz is None and value:
            mhz = float(value)
        elif key == "flags" and not flags:
            flags = frozenset(value.split())
    return CpuKind(model, flags, max_mhz or mhz)


def peak_flops(cpu: CpuKind, cores: int, dtype: str) -> Peak | None:
    """``cores x clock x FLOP/cycle/core`` for ``dtype`` ("fp32" or "bf16"); None when the CPU has no unit for
    it (bf16 without avx512_bf16 or amx_bf16) or no clock is known."""
    table = FP32_FLOP_PER_CYCLE if dtype == "fp32" else BF16_FLOP_PER_CYCLE
    for flag, per_cycle, why in table:
        needs_fma = dtype == "fp32" and per_cycle >= 32
        if flag in cpu.flags and (not needs_fma or "fma" in cpu.flags or flag == "avx512f") and cpu.mhz:
            flops = cores * cpu.mhz * 1e6 * per_cycle
            formula = f"{cores} cores x {cpu.mhz:.0f} MHz x {per_cycle} {dtype} FLOP/cycle = {flops / 1e9:.1f} GFLOP/s"
            return Peak(flops, per_cycle, why, formula)
    return None


def flops_per_token(non_embedding_params: int, layers: int, hidden: int, seq_len: int) -> float:
    """Training FLOPs of one token in a sequence of ``seq_len`` positions: ``6 N + 12 L H S``."""
    return 6 * non_embedding_params + 12 * layers * hidden * seq_len


def batch_flops(lengths: Sequence[int], width: int, non_embedding_params: int, layers: int, hidden: int):
    """(model, executed) training FLOPs of one padded batch of texts of ``lengths`` real tokens, padded to ``width``.

    Model: each text's real tokens at its own length. Executed: every one of ``width`` positions of every text."""
    model = sum(n * flops_per_token(non_embedding_params, layers, hidden, n) for n in lengths)
    executed = len(lengths) * width * flops_per_token(non_embedding_params, layers, hidden, width)
    return model, executed


def padding_share(real_tokens: int, positions: int) -> float:
    """Share of padded positions among all positions of the tokenized batches (0 when there are none)."""
    if positions <= 0:
        return 0.0
    if not 0 <= real_tokens <= positions:
        raise ValueError(f"real tokens {real_tokens} must lie in [0, {positions}] positions")
    return 1 - real_tokens / positions


def grouped_padding(
    columns: Sequence[Sequence[int]], batch: int, order: Iterable[int], sort_window: int
) -> tuple[int, int]:
    """(real tokens, padded positions) of batches of ``batch`` rows cut from ``order``, each column padded to its
    own longest text in the batch (as the collator tokenizes); with ``sort_window > batch`` each window of that
    many rows is first sorted by the row's longest text, longest first (length grouping).

    ``columns`` holds each column's token count per row (anchor, positive, negative)."""
    order = list(order)
    if sort_window > batch:
        longest = [max(column[r] for column in columns) for r in range(len(columns[0]))]
        windows = [order[i : i + sort_window] for i in range(0, len(order), sort_window)]
        order = [row for window in windows for row in sorted(window, key=lambda r: -longest[r])]
    real = positions = 0
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        for column in columns:
            real += sum(column[r] for r in rows)
            positions += len(rows) * max(column[r] for r in rows)
    return real, positions
