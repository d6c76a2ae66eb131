#!/usr/bin/env bash
# The small-corpus study: the levers of experiments/small_corpus_levers.yaml on corpora of a few thousand papers,
# 3 seeds each, scored on validation queries only (splits decided per paper, so no report's test query is among
# them). Resumable: each finished row is one line of experiments/measured/small_corpus_<name>_val.jsonl, and a row
# already there is skipped. Seeds run in the outer loop, so every setting has a seed-0 row before any has a second.
#
#   bash experiments/small_corpus.sh [RESULTS_DIR]      # default results/ (work files: run folders, models)
#   python experiments/recipe_levers.py RESULTS_DIR/small-hepth2k --results experiments/measured/small_corpus_hepth2k_val.jsonl --table --pairwise
set -euo pipefail
cd "$(dirname "$0")/.."
results_dir=${1:-results}
corpora=(${SMALL_CORPORA:-hepth2k citeseer hepth5k})
settings=${SMALL_SETTINGS:-reference epochs3 epochs3-mix epochs3-scincl50 epochs3-lr2e-5}
declare -A preset=([hepth2k]=hepth [hepth5k]=hepth [citeseer]=citeseer)
declare -A extra=(
  [hepth2k]="data.max_papers=2000 data.n_queries=250 evaluation.time_split=false"
  [hepth5k]="data.max_papers=5000 data.n_queries=400 evaluation.time_split=false"
  [citeseer]=""
)
for name in "${corpora[@]}"; do
  if [ ! -f "$results_dir/small-$name/pipeline.json" ]; then
    sets=()
    for kv in ${extra[$name]}; do sets+=(--set "$kv"); done
    python -m specter_utils run --preset "${preset[$name]}" --run "small-$name" --notebooks 01 02 \
      --results-dir "$results_dir" "${sets[@]}"
  fi
done
for seed in 0 1 2; do
  for name in "${corpora[@]}"; do
    # shellcheck disable=SC2086
    python experiments/recipe_levers.py "$results_dir/small-$name" --settings experiments/small_corpus_levers.yaml \
      --only $settings --seeds "$seed" --set training.max_triplets=0 --set training.dtype=fp32 --embed scored \
      --results "experiments/measured/small_corpus_${name}_val.jsonl"
  done
done
