"""The CPU training benchmark's arithmetic (bench/train_flops.py): peak FLOP/s from flags and clock, FLOPs per
token and padding shares. No timing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from train_flops import (  # noqa: E402
    CpuKind,
    batch_flops,
    flops_per_token,
    grouped_padding,
    padding_share,
    parse_cpuinfo,
    peak_flops,
)

CPUINFO = """processor\t: 0
model name\t: AMD EPYC
cpu MHz\t\t: 2445.424
flags\t\t: fpu sse sse2 avx fma avx2
processor\t: 1
model name\t: AMD EPYC
cpu MHz\t\t: 1800.000
flags\t\t: fpu
"""


def test_parse_cpuinfo_reads_the_first_core_and_prefers_the_max_clock():
    cpu = parse_cpuinfo(CPUINFO)
    assert cpu.model == "AMD EPYC"
    assert cpu.mhz == pytest.approx(2445.424)
    assert {"avx2", "fma"} <= cpu.flags
    assert parse_cpuinfo(CPUINFO, max_mhz=3500.0).mhz == 3500.0


def test_peak_of_an_avx2_cpu_is_cores_clock_and_32_flop_per_cycle():
    peak = peak_flops(parse_cpuinfo(CPUINFO), cores=2, dtype="fp32")
    assert peak.flop_per_cycle == 32
    assert peak.flops == pytest.approx(2 * 2445.424e6 * 32)
    assert "2 cores x 2445 MHz x 32" in peak.formula
    assert peak_flops(parse_cpuinfo(CPUINFO), cores=2, dtype="bf16") is None  # no bf16 unit


def test_wider_units_give_higher_peaks_and_avx2_needs_fma():
    avx512 = CpuKind("x", frozenset({"avx2", "fma", "avx512f"}), 2000.0)
    amx = CpuKind("x", frozenset({"avx512f", "avx512_bf16", "amx_bf16"}), 2000.0)
    assert peak_flops(avx512, 1, "fp32").flop_per_cycle == 64
    assert peak_flops(amx, 1, "bf16").flop_per_cycle == 1024
    assert peak_flops(CpuKind("x", frozenset({"avx512_bf16"}), 2000.0), 1, "bf16").flop_per_cycle == 128
    assert peak_flops(CpuKind("x", frozenset({"avx", "avx2"}), 2000.0), 1, "fp32").flop_per_cycle == 16
    assert peak_flops(CpuKind("x", frozenset({"avx2", "fma"}), None), 1, "fp32") is None  # no clock


def test_a_minilm_triplet_of_64_wordpieces_is_about_12_6_gflop():
    per_token = flops_per_token(non_embedding_params=10_646_784, layers=6, hidden=384, seq_len=64)
    assert per_token == 6 * 10_646_784 + 12 * 6 * 384 * 64
    assert 3 * 64 * per_token == pytest.approx(12.6e9, rel=0.01)


def test_batch_flops_count_real_tokens_for_the_model_and_every_position_when_executed():
    model, executed = batch_flops([64, 32], width=64, non_embedding_params=100, layers=2, hidden=4)
    assert model == 64 * flops_per_token(100, 2, 4, 64) + 32 * flops_per_token(100, 2, 4, 32)
    assert executed == 2 * 64 * flops_per_token(100, 2, 4, 64)
    assert executed > model


def test_padding_share():
    assert padding_share(75, 100) == pytest.approx(0.25)
    assert padding_share(0, 0) == 0.0
    with pytest.raises(ValueError):
        padding_share(101, 100)


def test_length_grouping_pads_less_than_random_order():
    anchors = [10, 60, 12, 58, 11, 61, 9, 59]
    columns = [anchors, anchors, anchors]
    order = list(range(8))
    real, random_positions = grouped_padding(columns, batch=2, order=order, sort_window=2)
    assert real == 3 * sum(anchors)
    assert random_positions == 3 * 2 * (60 + 58 + 61 + 59)
    grouped_real, grouped_positions = grouped_padding(columns, batch=2, order=order, sort_window=8)
    assert grouped_real == real
    assert grouped_positions == 3 * 2 * (61 + 59 + 12 + 10)


def _record(wall: float, cpu: float, lengths: list[int], width: int) -> dict:
    split = {"tokenize": 0.1, "forward": 0.3, "backward": 0.5, "optimiser": 0.05, "other": 0.05}
    step = {"wall_s": wall, "cpu_s": cpu, "split_s": {k: v * wall for k, v in split.items()}}
    step |= {"tokenized_real": sum(lengths), "tokenized_positions": len(lengths) * width}
    step["executed"] = [(lengths, width)]
    return {"setting": "fp32", "dtype": "fp32", "threads": 2, "batch": 2, "max_length": 64, "steps": [step, step]}


def test_summarise_and_verdict_read_the_figures_from_the_steps():
    from bench_train_cpu import summarise, verdict

    shape = {"layers": 6, "hidden": 384, "non_embedding": 10_646_784}
    row = summarise(_record(wall=2.0, cpu=2.0, lengths=[64, 60, 64, 64, 64, 64], width=64), shape)
    assert row["triplets_per_s"] == pytest.approx(1.0)  # 2 steps of 2 triplets in 4 s
    assert row["cores_got"] == pytest.approx(1.0)
    assert row["padding_share_executed"] == pytest.approx(4 / 384, abs=1e-4)
    assert row["split"]["backward"] == pytest.approx(0.5)
    assert row["profile_minutes"] == pytest.approx(24_000 / 60, abs=0.1)
    kind = {"cores": 2, "peaks": {"fp32": {"gflop_per_s": 100.0}, "bf16": None}}
    row |= {"share_of_peak": 0.2, "share_of_core_peak_per_cpu_s": 0.3}
    text = verdict([row], kind)
    assert "misses the 60% target" in text and "not padding" in text and "fp32 is this CPU's best" in text
    row |= {"share_of_peak": 0.3, "share_of_core_peak_per_cpu_s": 0.7}
    assert "the shared CPU, not the arithmetic, stops it" in verdict([row], kind)
    row |= {"share_of_peak": 0.65}
    assert "meets the 60% target" in verdict([row], kind)


def test_markdown_has_one_section_per_cpu_kind_with_its_peak_and_left_out_settings():
    from bench_train_cpu import markdown, summarise

    shape = {"layers": 6, "hidden": 384, "non_embedding": 10_646_784}
    row = summarise(_record(wall=2.0, cpu=1.0, lengths=[64, 60, 64, 64, 64, 64], width=64), shape)
    row |= {"rounds": 2, "share_of_peak": 0.1, "share_of_core_peak_per_cpu_s": 0.2, "x_fp32": 1.0}
    peak = {"gflop_per_s": 156.5, "formula": "2 cores x 2445 MHz x 32 fp32 FLOP/cycle = 156.5 GFLOP/s", "unit": "AVX2"}
    record = {
        "cpu_kind": {"cores": 2, "clock_source": "/proc/cpuinfo cpu MHz", "peaks": {"fp32": peak, "bf16": None}},
        "benchmark": "hepth",
        "load": [2.0, 3.0],
        "uptime": "up",
        "date": "today",
        "commit": "abc",
        "argv": "python bench/bench_train_cpu.py RUN_DIR",
        "settings": [row],
        "left_out": {"fp32-compile": "no result within 600 s (round 1); left out"},
        "length_grouping": {
            "triplets": 100,
            "batch": 64,
            "random": {"padding_share": 0.01},
            "grouped": {"padding_share": 0.005},
            "positions_saved": 0.005,
        },
        "verdict": "best fp32 at 10.0% of the fp32 peak: misses the 60% target.",
    }
    text = markdown({"2 cores, AMD EPYC, avx2": record, "2 cores, Intel, amx_bf16": record})
    assert text.count("| fp32 | 2 | 2 | 1.00 |") == 2
    assert "bf16: no native unit, not run" in text and "156.5 GFLOP/s" in text
    assert "fp32-compile: no result within 600 s" in text and "| 10.0% | 0.50 | 20.0% |" in text
