#!/usr/bin/env bash
# int8 task parity: the hep-th benchmark of docs/benchmarks.md, fp32 vs int8 (and --dtype auto).
# Usage: parity-vnni.sh [HEPTH_DIR] [WORK_DIR]   (defaults: ../shared/data/hepth, ./parity)
set -eu
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
HEPTH=$(realpath "${1:-../shared/data/hepth}")
WORK=${2:-parity}
if [ -e "$WORK" ]; then echo "parity-vnni.sh: error: $WORK exists; give another WORK_DIR" >&2; exit 2; fi
mkdir -p "$WORK" && cd "$WORK"
S="python -m specter_utils"
$S build-benchmark --corpus hepth --src "$HEPTH" --out hepth-bench --n-queries 550 --negative-pool 2000 --seed 0
cat hepth-bench/scidocs/cite/test.qrel hepth-bench/scidocs/cocite/test.qrel | awk '{print $1; print $3}' | sort -u > test-ids.txt
wc -l < test-ids.txt
M=hepth-bench/scidocs/paper_metadata_view_cite_read.json
/usr/bin/time -f "fp32 %e s" $S embed --model minilm --metadata $M --ids test-ids.txt --max-length 256 --dtype float32 --out emb/minilm-256-fp32.jsonl
/usr/bin/time -f "int8 %e s" $S embed --model minilm --metadata $M --ids test-ids.txt --max-length 256 --dtype int8 --out emb/minilm-256-int8.jsonl
/usr/bin/time -f "auto %e s" $S embed --model minilm --metadata $M --ids test-ids.txt --max-length 256 --dtype auto --out emb/minilm-256-auto.jsonl
for d in fp32 int8; do $S evaluate --data-dir hepth-bench/scidocs --embeddings emb/minilm-256-$d.jsonl --tasks cite co-cite --out eval-$d.json; done
$S compare --data-dir hepth-bench/scidocs --row fp32 emb/minilm-256-fp32.jsonl --row int8 emb/minilm-256-int8.jsonl --out compare.json
python - <<'PY'
import json, numpy as np
def read(p):
    d = {}
    for line in open(p):
        r = json.loads(line); d[r["paper_id"]] = np.array(r["embedding"], dtype=np.float64)
    return d
a, b = read("emb/minilm-256-fp32.jsonl"), read("emb/minilm-256-int8.jsonl")
ids = sorted(a)
cos = np.array([a[i] @ b[i] / np.linalg.norm(a[i]) / np.linalg.norm(b[i]) for i in ids])
out = {"papers": len(ids), "cos_min": round(float(cos.min()), 4), "cos_mean": round(float(cos.mean()), 4), "cos_p1": round(float(np.percentile(cos, 1)), 4)}
print(out); json.dump(out, open("cosine.json", "w"), indent=1)
PY
head -c 600 emb/minilm-256-auto.meta.json 2>/dev/null || true
