#!/usr/bin/env bash
# The small-corpus study: the levers of experiments/small_corpus_levers.yaml on corpora of a few thousand papers,
# 3 seeds each, scored on validation queries only (splits decided per paper, so no report's test query is among
# them). Resumable: each finished row is one line of experiments/measured/small_corpus_<name>_val.jsonl, and a row
# already there is skipped. Seeds run in the outer loop, so every setting has a seed-0 row before any has a second.
# SMALL_CORPORA, SMALL_CORE and SMALL_REST choose corpora and settings (set empty: none of that group).
#
#   bash experiments/small_corpus.sh [RESULTS_DIR]      # default results/ (work files: run folders, models)
#   python experiments/recipe_levers.py RESULTS_DIR/small-hepth2k --results experiments/measured/small_corpus_hepth2k_val.jsonl --table --pairwise
set -euo pipefail
cd "$(dirname "$0")/.."
results_dir=${1:-results}
corpora=(${SMALL_CORPORA:-hepth2k hepth2k-mixarxiv citeseer citeseer-mixhepth hepth5k})
core=${SMALL_CORE-reference epochs3}  # on every corpus, mixed ones too
rest=${SMALL_REST-steps375 triplets15 epochs3-mix epochs3-scincl50 epochs3-lr2e-5}  # on the unmixed corpora
declare -A preset=([hepth2k]=hepth [hepth2k-mixarxiv]=hepth [hepth5k]=hepth [citeseer]=citeseer [citeseer-mixhepth]=citeseer)
declare -A extra=(
  [hepth2k]="data.max_papers=2000 data.n_queries=250 evaluation.time_split=false"
  [hepth2k-mixarxiv]="data.max_papers=2000 data.n_queries=250 evaluation.time_split=false data.mix_with=tables:../shared/data/arxiv2023 data.mix_papers=2000"
  [hepth5k]="data.max_papers=5000 data.n_queries=400 evaluation.time_split=false"
  [citeseer]=""
  [citeseer-mixhepth]="data.mix_with=hepth data.mix_papers=2000"
)
# A mixed corpus has the same benchmark as its own (the mix joins training only), so its rows join its results file
# under setting names that say so.
declare -A results_of=([hepth2k-mixarxiv]=hepth2k [citeseer-mixhepth]=citeseer)
declare -A prefix_of=([hepth2k-mixarxiv]=mixarxiv2000- [citeseer-mixhepth]=mixhepth2000-)
for name in "${corpora[@]}"; do
  if [ ! -f "$results_dir/small-$name/pipeline.json" ]; then
    sets=()
    for kv in ${extra[$name]}; do sets+=(--set "$kv"); done
    python -m specter_utils run --preset "${preset[$name]}" --run "small-$name" --notebooks 01 02 \
      --results-dir "$results_dir" "${sets[@]}"
  fi
done
# Per seed: first every corpus's core settings (mixed corpora included), then the other levers of the unmixed ones.
for seed in 0 1 2; do
  for group in core rest; do
    for name in "${corpora[@]}"; do
      prefix=${prefix_of[$name]:-}
      if [ "$group" = core ]; then wanted=$core; elif [ -z "$prefix" ]; then wanted=$rest; else continue; fi
      [ -n "$wanted" ] || continue
      only=()
      for setting in $wanted; do only+=("$prefix$setting"); done
      python experiments/recipe_levers.py "$results_dir/small-$name" --settings experiments/small_corpus_levers.yaml \
        --only "${only[@]}" --seeds "$seed" --set training.max_triplets=0 --set training.dtype=fp32 --embed scored \
        --results "experiments/measured/small_corpus_${results_of[$name]:-$name}_val.jsonl"
    done
  done
done
# Each corpus's table (validation; every pair of settings tested, Holm over the table), for docs/results.md.
for name in "${corpora[@]}"; do
  rows="experiments/measured/small_corpus_${name}_val.jsonl"
  [ -z "${results_of[$name]:-}" ] && [ -f "$rows" ] || continue
  python experiments/recipe_levers.py "$results_dir/small-$name" --results "$rows" --table --pairwise > "${rows%.jsonl}.md.tmp"
  mv "${rows%.jsonl}.md.tmp" "${rows%.jsonl}.md"
done
