"""Data-parallel training on torch.distributed, proven on CPU with gloo: 2 processes against 1.

Everything that needs two processes runs in one 2-process ``torchrun`` job whose worker is this file
(``python -m torch.distributed.run --standalone --nproc_per_node 2 tests/test_distributed.py OUT MODEL
TRAIN_FLAGS...``): each rank computes its half and rank 0 writes, next to it, what one process computes on
the whole batch; the tests then compare the two. Then the same processes, on the same process group, run
``specter-utils train`` (the command line's ``main``) with the recommended recipe, and the end-to-end tests
compare its model with a one-process run on the same global batch.

Tolerance: 2 processes and 1 process add the same numbers in another order (DDP averages the
per-process gradients, the loss is a mean of means, padding differs), so they agree to rounding.
The loss and gradient checks run in float64, where that rounding is about 1e-15, and allow 1e-10
(in float32 the triplet gradients differ by up to 3e-6 for gradients up to 0.03). The end-to-end
run is float32, as training is; see its test for the weights' tolerance.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from specter_utils.io import write_json
from specter_utils.triplets.io import Triplet, write_triplets

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
WORLD, BATCH = 2, 4  # processes, triplets per process
TOLERANCE = 1e-10  # float64 loss and gradients
SEQ_LEN = 32


# --- the worker (runs under torchrun, one process per rank) ---


def _words(key: str, n: int = 12) -> str:
    """``n`` pseudo-words seeded by ``key``: texts that differ, so their embeddings differ too."""
    rng = random.Random(key)
    return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(n))


# Eight triplets of paper ids; two processes get rows 0-3 and 4-7. Links across the two halves:
# q0 is cited by p5 (row 5's positive), q6 cites n1 (row 1's negative), and n3 is the same paper as p4.
ROWS = [(f"q{i}", f"p{i}", f"n{i}") for i in range(8)]
ROWS[3] = ("q3", "p3", "p4")
GRAPH = {"p5": {"q0": 5}, "q6": {"n1": 5}}


def _features(model, rows):
    return [model.tokenize([_words(row[column]) for row in rows]) for column in range(3)]


def _grads(model) -> dict[str, torch.Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[name] - b[name]).abs().max()) for name in a)


def _compare(make_loss, model_path: str, rank: int, labels: bool) -> dict:
    """The loss and gradient of 2 processes x BATCH rows (DDP) against one process on all 2 x BATCH rows."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from specter_utils.training.train import specter_model

    model = specter_model(model_path, "cls", SEQ_LEN).double()
    local = list(range(rank * BATCH, (rank + 1) * BATCH))
    loss_fn = make_loss(model, gather=True)
    loss_fn.model = DistributedDataParallel(model, find_unused_parameters=True)  # as the trainer hands it over
    value = loss_fn(_features(model, [ROWS[i] for i in local]), torch.tensor(local) if labels else None)
    value.backward()
    distributed_loss = value.detach().clone()
    dist.all_reduce(distributed_loss)
    distributed_loss /= WORLD
    masks = [None] * WORLD
    dist.all_gather_object(masks, getattr(loss_fn, "seen_mask", None))

    single = specter_model(model_path, "cls", SEQ_LEN).double()
    single_fn = make_loss(single, gather=False)
    every = list(range(WORLD * BATCH))
    single_value = single_fn(_features(single, ROWS), torch.tensor(every) if labels else None)
    single_value.backward()

    # Without gathering, each process sees only its own half as negatives: another loss.
    alone = specter_model(model_path, "cls", SEQ_LEN).double()
    alone_value = make_loss(alone, gather=False)(
        _features(alone, [ROWS[i] for i in local]), torch.tensor(local) if labels else None
    )
    alone_loss = alone_value.detach().clone()
    dist.all_reduce(alone_loss)
    alone_loss /= WORLD
    result = {
        "loss_2_processes": float(distributed_loss),
        "loss_1_process": float(single_value),
        "loss_2_processes_without_gathering": float(alone_loss),
        "max_grad_diff": _max_diff(_grads(model), _grads(single)),
        "max_grad": max(float(g.abs().max()) for g in _grads(single).values()),
    }
    if masks[0] is not None:
        result["mask_2_processes"] = torch.cat(masks).tolist()
        result["mask_1_process"] = single_fn.seen_mask.tolist()
    return result


def _triplet_loss(model, gather: bool):
    from sentence_transformers.sentence_transformer.losses import TripletDistanceMetric, TripletLoss

    return TripletLoss(model, distance_metric=TripletDistanceMetric.EUCLIDEAN, triplet_margin=1.0)


def _citation_loss(model, gather: bool):
    from specter_utils.training.losses import CitationMaskedMNRL, citation_links

    class RecordingLoss(CitationMaskedMNRL):
        def masked_similarity(self, queries, candidates):
            self.seen_mask = self._mask.clone()
            return super().masked_similarity(queries, candidates)

    return RecordingLoss(model, ROWS, citation_links(GRAPH), gather_across_devices=gather)


def _sampler_batches(model_path: str, rank: int, in_batch: bool) -> dict:
    """Row indices each rank's training dataloader yields for two epochs, as the trainer builds it."""
    import torch.distributed as dist
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.losses import TripletLoss

    from specter_utils.spec import train_config
    from specter_utils.training.train import specter_model, trainer_class, training_arguments

    n = 42  # 5 global batches of 2 x 4 and 2 rows left over
    texts = [f"row {i} " + _words(str(i)) for i in range(n)]
    if in_batch:  # rows 0 and 1 share a positive: they may not meet in a global batch (two processes' halves)
        positives = ["shared positive" if i < 2 else f"positive {i}" for i in range(n)]
    else:
        positives = [f"positive {i}" for i in range(n)]
    dataset = Dataset.from_dict(
        {
            "anchor": texts,
            "positive": positives,
            "negative": [f"negative {i}" for i in range(n)],
            "label": list(range(n)),
        }
    )
    config = train_config(
        triplets="-",
        metadata="-",
        out=os.environ["SAMPLER_OUT"],
        loss="mnrl" if in_batch else "triplet",
        batch_size=BATCH,
        effective_batch_size=WORLD * BATCH,
        progress_bar=False,
        seed=3,
    )
    model = specter_model(model_path, "cls", SEQ_LEN)
    args = training_arguments(config, Path(config.out), "fp32", has_val=False)
    trainer = trainer_class(config)(model=model, args=args, train_dataset=dataset, loss=TripletLoss(model))
    loader = trainer.get_train_dataloader()
    epochs = []
    for epoch in range(2):
        loader.set_epoch(epoch)  # as the trainer's epoch loop does, down to the wrapped batch sampler
        loader.batch_sampler.batch_sampler.set_epoch(epoch)
        epochs.append([batch["label"].tolist() for batch in loader])
    every = [None] * WORLD
    dist.all_gather_object(every, epochs)
    return {"rank_batches": every, "positives": positives, "rows": n}


def worker(out: Path, model_path: str, train_flags: list[str]) -> int:
    """The equivalence checks, then ``specter-utils train`` with ``train_flags`` in the same processes (one torchrun
    start, and one import of torch and sentence-transformers per process, for both); the train command's exit code."""
    import torch.distributed as dist

    from specter_utils.cli import main

    os.environ["SAMPLER_OUT"] = str(out / "sampler_run")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    results = {
        "triplet": _compare(_triplet_loss, model_path, rank, labels=False),
        "mnrl_citation": _compare(_citation_loss, model_path, rank, labels=True),
        "sampler_triplet": _sampler_batches(model_path, rank, in_batch=False),
        "sampler_in_batch": _sampler_batches(model_path, rank, in_batch=True),
    }
    if rank == 0:
        write_json(out / "results.json", results)
    dist.barrier()
    # the trainer finds the process group set up and uses it (taken down and set up again in the same torchrun
    # job, the second set-up waited past the timeout); setting it up is transformers' part, not the project's
    return main(["train", *train_flags])


# --- the tests (one process, which launches torchrun) ---


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _torchrun(*args: str, **kw) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(WORLD), *args]
    return subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def no_dropout_model(random_tiny_model, tmp_path_factory) -> Path:
    """The tiny random model without dropout, so 1 and 2 processes run the same arithmetic, and initialised
    wider (0.5, not 0.02), so that its [CLS] embeddings of different texts differ (cosine about 0.6, not 1.0000,
    where float32 could not tell one in-batch candidate from another)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    config = BertConfig.from_pretrained(random_tiny_model)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    config.initializer_range = 0.5
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("no_dropout")
    BertModel(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(random_tiny_model).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def torchrun_job(no_dropout_model, citation_data, tmp_path_factory) -> dict:
    """The one 2-process torchrun job of this file: its worker's equivalence checks, then ``specter-utils train``
    with :func:`_train_flags` in the same processes (the end-to-end run below)."""
    out = tmp_path_factory.mktemp("distributed")
    run = out / "run"
    done = _torchrun(
        __file__, str(out), str(no_dropout_model), *_train_flags(citation_data, no_dropout_model, run, BATCH)
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads((out / "results.json").read_text())
    return {"results": results, "out": run, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def results(torchrun_job) -> dict:
    return torchrun_job["results"]


def test_triplet_loss_two_processes_equal_one_with_the_double_batch(results):
    triplet = results["triplet"]
    assert triplet["loss_2_processes"] == pytest.approx(triplet["loss_1_process"], abs=TOLERANCE)
    assert triplet["max_grad"] > 1e-3  # the gradients compared are not all zero
    assert triplet["max_grad_diff"] < TOLERANCE
    # The triplet loss has no in-batch negatives, so a process's half alone gives the same mean.
    assert triplet["loss_2_processes_without_gathering"] == pytest.approx(triplet["loss_1_process"], abs=TOLERANCE)


def test_gathered_citation_loss_equals_one_process_with_the_same_masked_entries(results):
    citation = results["mnrl_citation"]
    assert citation["loss_2_processes"] == pytest.approx(citation["loss_1_process"], abs=TOLERANCE)
    assert citation["max_grad"] > 1e-4 and citation["max_grad_diff"] < TOLERANCE
    assert citation["mask_2_processes"] == citation["mask_1_process"]  # (8 queries x 16 candidates), global columns
    mask = torch.tensor(citation["mask_1_process"])
    # Global indices: q0 is cited by p5 (column 5), q6 cites n1 (column 8 + 1), n3 is p4 (row 4, column 8 + 3);
    # each of them crosses the two processes' halves. Nothing else is masked.
    assert mask.nonzero().tolist() == [[0, 5], [4, 11], [6, 9]]
    # Without gathering each process draws its negatives from its own half only: another loss.
    assert abs(citation["loss_2_processes_without_gathering"] - citation["loss_1_process"]) > 1e-3


@pytest.mark.parametrize("kind", ["sampler_triplet", "sampler_in_batch"])
def test_sampler_gives_each_rank_disjoint_rows_that_cover_the_epoch(results, kind):
    from datasets import Dataset
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    from specter_utils.training.sampler import EpochSeededBatchSampler

    run = results[kind]
    n, global_batch = run["rows"], WORLD * BATCH
    dataset = Dataset.from_dict({"anchor": [f"a{i}" for i in range(n)], "positive": run["positives"]})
    for epoch in range(2):
        ranks = [batches[epoch] for batches in run["rank_batches"]]
        assert len({len(batches) for batches in ranks}) == 1  # the same number of steps on every process
        assert all(len(batch) == BATCH for batches in ranks for batch in batches)
        seen = [row for batches in ranks for batch in batches for row in batch]
        assert len(seen) == len(set(seen))  # disjoint: no row twice in the epoch, within or across processes
        assert len(seen) == n // global_batch * global_batch  # the epoch, less its incomplete last global batch
        # Step k of the two processes together is batch k of one process with the global batch.
        steps = [sorted(rank0 + rank1) for rank0, rank1 in zip(*ranks, strict=True)]
        if kind == "sampler_triplet":
            one = EpochSeededBatchSampler(dataset, global_batch, drop_last=False, seed=3)
            one.set_epoch(epoch)
            assert steps == [sorted(batch) for batch in one][: len(steps)]
            assert len(set(seen)) == 40 and set(range(n)) - set(seen) == set(one.order()[40:])
        else:
            generator = torch.Generator()
            one = NoDuplicatesBatchSampler(dataset, global_batch, drop_last=True, generator=generator, seed=3)
            one.set_epoch(epoch)
            assert steps == [sorted(batch) for batch in one]
            for step in steps:  # the shared positive occurs at most once per global batch
                assert sum(run["positives"][row] == "shared positive" for row in step) <= 1


# --- end to end: specter-utils train under torchrun ---


@pytest.fixture(scope="module")
def citation_data(tmp_path_factory) -> Path:
    """16 train and 8 val triplets of distinct papers (no text twice, so every batch is full), with citations
    between rows (data.json) for the mask: q_i cites p_i and p_i+1, and reaches n_i+3 through a citation."""
    out = tmp_path_factory.mktemp("citation_data")
    graph, rows = {}, []
    for first, n in ((0, 16), (16, 8)):  # train, val
        for i in range(first, first + n):
            nxt, third = first + (i - first + 1) % n, first + (i - first + 3) % n
            graph[f"q{i}"] = {f"p{i}": {"count": 5}, f"p{nxt}": {"count": 5}, f"n{third}": {"count": 1}}
            rows.append(Triplet(f"q{i}", f"p{i}", f"n{i}", "easy"))
    write_triplets(out / "train.jsonl", rows[:16])
    write_triplets(out / "val.jsonl", rows[16:])
    papers = [paper for row in rows for paper in (row.query, row.pos, row.neg)]
    metadata = {p: {"paper_id": p, "title": f"title of {p}", "abstract": _words(p, 20)} for p in papers}
    write_json(out / "metadata.json", metadata)
    write_json(out / "data.json", graph)
    return out


def _train_flags(data: Path, model: Path, out: Path, batch: int) -> list[str]:
    flags = ["--triplets", str(data), "--metadata", str(data / "metadata.json"), "--base-model", str(model)]
    flags += ["--out", str(out), "--recipe", "citation-mnrl", "--pooling", "cls", "--max-length", str(SEQ_LEN)]
    flags += ["--batch-size", str(batch), "--effective-batch-size", str(WORLD * BATCH), "--epochs", "2"]
    flags += ["--learning-rate", "1e-3", "--save-steps", "2", "--eval-steps", "100", "--logging-steps", "1"]
    # fp32: the test compares one process with two to 1e-5; bf16 autocast (dtype auto on a CPU with bf16) rounds
    # the two batch splits differently
    return [*flags, "--seed", "11", "--dtype", "fp32", "--quiet"]


@pytest.fixture(scope="module")
def two_process_run(torchrun_job) -> dict:
    """``specter-utils train`` under torchrun with 2 processes (run by :func:`torchrun_job`'s worker)."""
    return torchrun_job


def test_two_process_train_writes_a_loadable_model_with_its_world_size(two_process_run):
    from sentence_transformers import SentenceTransformer

    out = two_process_run["out"]
    model = SentenceTransformer(str(out / "model"), device="cpu")
    assert model.encode(["a paper"]).shape == (1, 32)
    config = json.loads((out / "train_config.json").read_text())
    assert config["world_size"] == WORLD and config["global_batch_size"] == WORLD * BATCH
    assert config["gather_across_devices"] is True
    summary = json.loads((out / "model" / "specter_training.json").read_text())
    derived = summary["derived"]
    assert derived["world_size"] == WORLD and derived["global_batch_size"] == WORLD * BATCH
    assert derived["in_batch_negatives"] == "the global batch (gathered from 2 processes)"
    assert derived["false_negatives_masked"] > 0  # summed over both processes
    assert summary["results"]["global_step"] == 4  # 16 triplets / 8 per step x 2 epochs
    card = (out / "model" / "README.md").read_text()
    assert "| world_size | 2 |" in card and "| global_batch_size | 8 |" in card
    # Rank 0 alone prints the result line and writes the run files.
    assert two_process_run["stdout"].count('"global_step": 4') == 1
    assert two_process_run["stdout"].count("model: ") == 1
    assert sorted(p.name for p in out.iterdir()) == ["log_history.json", "model", "train_config.json"]


def test_two_processes_train_the_model_of_one_process_with_the_global_batch(
    two_process_run, citation_data, no_dropout_model, tmp_path
):
    """The same losses at every step, and the same weights to 1e-5, but for the attention key biases.

    A key bias adds the same number to every attention score of a query, which the softmax ignores: its
    exact gradient is zero, so what each run computes for it is float32 rounding noise (about 1e-9), and
    AdamW, which divides a gradient by its running RMS, turns noise into steps of up to the learning rate
    in either direction. Observed: every other tensor within 1e-6; the key biases within 6e-4.
    """
    from safetensors.torch import load_file

    from specter_utils.cli import main

    out = tmp_path / "one"
    assert main(["train", *_train_flags(citation_data, no_dropout_model, out, WORLD * BATCH)]) == 0
    logs = [json.loads((run / "log_history.json").read_text()) for run in (out, two_process_run["out"])]
    for key in ("loss", "eval_loss", "grad_norm"):
        one, two = ([entry[key] for entry in log if key in entry] for log in logs)
        assert len(one) == len(two) >= 2 and one == pytest.approx(two, rel=1e-5), key
    one = load_file(str(out / "model" / "model.safetensors"))
    two = load_file(str(two_process_run["out"] / "model" / "model.safetensors"))
    start = load_file(str(no_dropout_model / "model.safetensors"))
    assert one.keys() == two.keys()
    assert max(float((one[k] - start[k]).abs().max()) for k in start) > 1e-3  # 4 steps at lr 1e-3 moved the weights
    diff = {k: float((one[k] - two[k]).abs().max()) for k in one}
    rounding_only = {k for k in diff if k.endswith("attention.self.key.bias")}
    assert max(v for k, v in diff.items() if k not in rounding_only) < 1e-5, diff
    assert max(diff[k] for k in rounding_only) < 4 * 1e-3  # at most the learning rate per step


# --- bad input: errors before any training starts ---


def _launch_env(monkeypatch, world: int) -> None:
    for name, value in {"WORLD_SIZE": world, "RANK": 0, "LOCAL_RANK": 0, "LOCAL_WORLD_SIZE": world}.items():
        monkeypatch.setenv(name, str(value))


def test_more_processes_than_the_batch_allows_is_a_one_line_error(citation_data, tmp_path, monkeypatch, capsys):
    from specter_utils.cli import main

    _launch_env(monkeypatch, 4)  # 4 processes x 4 triplets = 16 per step > the effective batch of 8
    flags = _train_flags(citation_data, tmp_path / "never-loaded", tmp_path / "run", BATCH)
    assert main(["train", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "torchrun (WORLD_SIZE=4): 4 processes x per-process batch 4 = 16 triplets per step" in err
    assert "launch at most 2 process(es)" in err
    assert not (tmp_path / "run").exists()


def test_too_few_triplets_for_one_global_batch_is_an_error(citation_data, random_tiny_model, tmp_path, monkeypatch):
    from specter_utils.errors import DataError
    from specter_utils.spec import train_config
    from specter_utils.training.train import train_specter

    _launch_env(monkeypatch, 2)
    config = train_config(
        triplets=str(citation_data),
        metadata=str(citation_data / "metadata.json"),
        out=str(tmp_path / "run"),
        base_model=str(random_tiny_model),
        batch_size=16,
        effective_batch_size=32,
    )
    with pytest.raises(DataError, match="16 training triplets do not fill one batch of 2 processes x 16"):
        train_specter(config)
    assert not (tmp_path / "run").exists()


def test_a_loss_that_cannot_gather_is_an_error_unless_gathering_is_off():
    from specter_utils.errors import DataError
    from specter_utils.spec import train_config
    from specter_utils.training.distributed import check_gathering

    class LocalOnlyLoss(torch.nn.Module):  # an in-batch loss without the library's gathering option
        pass

    config = train_config(triplets="t", metadata="m", loss="mnrl")
    with pytest.raises(DataError, match="cannot gather embeddings across processes.*--no-gather-across-devices"):
        check_gathering(LocalOnlyLoss(), config, world=2)
    check_gathering(
        LocalOnlyLoss(), train_config(triplets="t", metadata="m", loss="mnrl", gather_across_devices=False), 2
    )
    check_gathering(LocalOnlyLoss(), config, world=1)  # one process: nothing to gather


def test_resume_keeps_the_global_batch_and_needs_every_process_part(tmp_path):
    from specter_utils.errors import DataError
    from specter_utils.spec import train_config
    from specter_utils.training.run_folder import CHECKPOINT_DONE, last_checkpoint, prepare_run_dir

    run = tmp_path / "run"
    checkpoint = run / "checkpoints" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    for name in ("trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"):
        (checkpoint / name).write_text("{}")
    assert last_checkpoint(run / "checkpoints") is None  # several processes, not yet marked complete
    write_json(checkpoint / CHECKPOINT_DONE, {"world_size": 2, "global_batch_size": 8})
    assert last_checkpoint(run / "checkpoints") == checkpoint

    config = train_config(triplets="t", metadata="m", out=str(run), batch_size=4, effective_batch_size=8)
    write_json(run / "train_config.json", {**config.to_dict(), "world_size": 2, "global_batch_size": 8})
    assert prepare_run_dir(config, run, world=1) == checkpoint  # 1 x 4 x 2 accumulation: the same global batch
    fixed = train_config(
        triplets="t",
        metadata="m",
        out=str(run),
        batch_size=4,
        effective_batch_size=8,
        gradient_accumulation_steps=2,
    )
    write_json(run / "train_config.json", {**fixed.to_dict(), "world_size": 1, "global_batch_size": 8})
    with pytest.raises(DataError, match="its global batch was 8 triplets per step .* now 16"):
        prepare_run_dir(fixed, run, world=2)


if __name__ == "__main__":
    sys.exit(worker(Path(sys.argv[1]), sys.argv[2], sys.argv[3:]))
