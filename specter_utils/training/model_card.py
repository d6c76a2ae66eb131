"""The SPECTER section of a trained model's card (README.md), and adding evaluation results later.

sentence-transformers writes its own card (usage, training logs, every training argument); this
module adds a section between two markers stating what a reader of a SPECTER reproduction needs:
base model, data and triplet counts, hyper-parameters, training results and, once the model has
been scored, evaluation results. The same facts are kept machine-readable in ``specter_training.json``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specter_utils.io import atomic_write, read_json, write_json

SUMMARY_FILE = "specter_training.json"
CARD_FILE = "README.md"
START, END = "<!-- specter-utils:start -->", "<!-- specter-utils:end -->"
# Config fields shown as hyper-parameters (paths and bookkeeping are shown elsewhere or not at all).
HYPERPARAMETERS = tuple(
    """base_model pooling max_length triplet_margin learning_rate weight_decay max_grad_norm warmup_ratio
    effective_batch_size batch_size gradient_accumulation_steps world_size global_batch_size in_batch_negatives
    epochs max_steps total_steps seed dtype torch_compile group_by_length max_triplets max_val_triplets profile
    recipe""".split()
)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None or value == "" else str(value)


def _data_rows(data: dict[str, Any]) -> list[str]:
    rows = [
        "| split | triplet file | read | used | dropped: paper without metadata | left out by cap | kinds used |",
        "|---|---|---|---|---|---|---|",
    ]
    for split in ("train", "val"):
        counts = data.get(split)
        if not counts:
            rows.append(f"| {split} | (none) | - | - | - | - | - |")
            continue
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.get("kinds", {}).items())) or "-"
        dropped = str(counts["without_metadata"])
        if counts["without_metadata"]:
            dropped += f" ({counts['missing_paper_ids']} ids, e.g. {', '.join(counts['missing_examples'][:3])})"
        rows.append(
            f"| {split} | `{counts['file']}` | {counts['read']} | {counts['used']} | {dropped} | {counts['capped']} | {kinds} |"
        )
    return rows


def _loss_line(config: dict[str, Any], derived: dict[str, Any]) -> str:
    """The loss as trained: the paper's triplet loss, or an in-batch loss and where its negatives came from."""
    if config.get("loss", "triplet") == "triplet":
        return f"TripletLoss, Euclidean distance, margin {config['triplet_margin']}"
    line = f"{derived.get('loss', config['loss'])} (`{config['loss']}`), in-batch negatives"
    if derived.get("in_batch_negatives"):
        line += f" from {derived['in_batch_negatives']}"
    return line


def render_section(summary: dict[str, Any]) -> str:
    """Markdown for the SPECTER section of the card."""
    config, data, results = summary["config"], summary["data"], summary.get("results", {})
    lines = [
        START,
        "## SPECTER training (specter-utils)",
        "",
        "Trained with `specter-utils train`, a reproduction of SPECTER (Cohan et al., 2020): citation-informed",
        "triplets (query paper, cited paper, uncited paper), with the loss named below.",
        "",
        *([f"**Kept: {summary['kept']['model']}.** {summary['kept']['verdict']}", ""] if summary.get("kept") else []),
        "| | |",
        "|---|---|",
        f"| Base model | `{config['base_model']}` ({summary['base_model_id']}) |",
        f"| Paper embedding | {config['pooling']} pooling of the final layer |",
        f"| Input text | title + `{summary['sep_token']}` + abstract, truncated to {config['max_length']} tokens |",
        f"| Loss | {_loss_line(config, summary.get('derived', {}))} |",
        f"| Metadata | `{data['metadata']}` ({data['metadata_papers']} papers with a title) |",
        f"| Trained | {summary['finished_at']} on {summary['device']}, {_fmt(summary.get('runtime_s'))} s |",
        "",
        "### Data",
        "",
        *_data_rows(data),
        "",
        "### Hyper-parameters",
        "",
        "| name | value |",
        "|---|---|",
    ]
    hyper = {**config, **summary.get("derived", {})}
    lines += [f"| {name} | {_fmt(hyper.get(name))} |" for name in HYPERPARAMETERS if name in hyper]
    lines += ["", "### Training results", "", "| metric | value |", "|---|---|"]
    lines += [f"| {name} | {_fmt(value)} |" for name, value in results.items()] or ["| - | - |"]
    lines += ["", "### Evaluation", ""]
    evaluation = summary.get("evaluation") or {}
    if not evaluation:
        lines.append("Not evaluated yet (`specter_utils.training.model_card.update_model_card` adds results).")
    for benchmark, metrics in evaluation.items():
        lines += [f"**{benchmark}**", "", "| metric | value |", "|---|---|"]
        lines += [f"| {name} | {_fmt(value)} |" for name, value in metrics.items()]
        lines.append("")
    lines.append(END)
    return "\n".join(lines).rstrip() + "\n"


def _split_front_matter(text: str) -> tuple[str, str]:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[: end + 5], text[end + 5 :]
    return "", text


def write_model_card(model_dir: str | Path, summary: dict[str, Any]) -> Path:
    """Write ``specter_training.json`` and put (or replace) the SPECTER section in README.md."""
    model_dir = Path(model_dir)
    write_json(model_dir / SUMMARY_FILE, summary)
    card_path = model_dir / CARD_FILE
    text = card_path.read_text(encoding="utf-8") if card_path.exists() else ""
    section = render_section(summary)
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        text = before + section + "\n" + after
    else:
        front, body = _split_front_matter(text)
        if not front:
            front = f"---\nlibrary_name: sentence-transformers\nbase_model: {summary['base_model_id']}\n---\n"
        # After the library's title and one-paragraph description, before its first "## " section.
        match = re.search(r"^## ", body, flags=re.MULTILINE)
        cut = match.start() if match else len(body)
        text = front + body[:cut].rstrip("\n") + "\n\n" + section + "\n" + body[cut:]
    with atomic_write(card_path) as handle:
        handle.write(text)
    return card_path


def update_model_card(model_dir: str | Path, results: dict[str, Any], benchmark: str = "SCIDOCS") -> Path:
    """Record evaluation ``results`` (metric -> value) under ``benchmark`` in the card and the summary."""
    model_dir = Path(model_dir)
    summary = read_json(model_dir / SUMMARY_FILE)
    summary.setdefault("evaluation", {})[benchmark] = dict(results)
    return write_model_card(model_dir, summary)
