#!/usr/bin/env bash
# int8 classification parity on CiteSeer: MAG-slot macro-F1 of fp32 and int8 vectors, paired over the test papers.
# Usage: parity-citeseer.sh [CITESEER_DIR] [WORK_DIR]   (defaults: ../shared/data/citeseer, ./parity-citeseer)
set -eu
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
SRC=$(realpath "${1:-../shared/data/citeseer}")
WORK=${2:-parity-citeseer}
if [ -e "$WORK" ]; then echo "parity-citeseer.sh: error: $WORK exists; give another WORK_DIR" >&2; exit 2; fi
mkdir -p "$WORK" && cd "$WORK"
S="python -m specter_utils"
$S build-benchmark --corpus citeseer --src "$SRC" --out cs-bench
M=cs-bench/scidocs/paper_metadata_mag_mesh.json
for d in float32 int8; do
  /usr/bin/time -f "$d %e s" $S embed --model minilm --metadata $M --max-length 128 --dtype $d --out emb/minilm-128-$d.jsonl
  $S evaluate --data-dir cs-bench/scidocs --embeddings emb/minilm-128-$d.jsonl --tasks mag --out eval-$d.json
done
python - <<'PY'
import json
from specter_utils.data.scidocs import read_classification_splits
from specter_utils.evaluation.deltas import paired_f1_delta
pred = {d: json.load(open(f"eval-{d}.json"))["details"]["mag"]["predictions"] for d in ("float32", "int8")}
truth = [label for _, label in read_classification_splits("cs-bench/scidocs", "mag")["test"]]
test = paired_f1_delta(truth, pred["int8"], pred["float32"])
f1 = {d: json.load(open(f"eval-{d}.json"))["mag"]["f1"] for d in pred}
out = {"macro_f1": f1, "int8_minus_float32": test}
print(json.dumps(out, indent=1)); json.dump(out, open("f1-parity.json", "w"), indent=1)
PY
