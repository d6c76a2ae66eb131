#!/usr/bin/env bash
# The recipe study: which training recipe beats its base model on held-out hep-th papers?
# Every command the results in docs/results.md ("Training recipes") came from, in order. About 2 hours on
# 2 CPU cores; run it in the background (each step is resumable by re-running it; a finished step is skipped).
set -euo pipefail
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
R=${R:-runs/r11}
SRC=${SRC:-../shared/data/hepth}
META=$R/bench/scidocs/paper_metadata_view_cite_read.json

# 1. Benchmark: 500 held-out queries per ranking task (400 test), negatives from a 4,000-paper pool.
[ -f $R/bench/benchmark.json ] || specter-utils build-benchmark --corpus hepth --src $SRC --out $R/bench --seed 0 \
    --n-queries 500 --max-class-papers 600 --negative-pool 4000
# the papers the test split of cite and co-cite reads (6,447): every row embeds exactly these, at 128 wordpieces
python -c "
from specter_utils.workflow.embed import papers_to_embed
p = papers_to_embed('$R/bench/scidocs', split='test', tasks=['cite', 'cocite'])
open('$R/test_ids.txt', 'w').write('\n'.join(sorted(p)) + '\n')"

# 2. Triplets: SPECTER's sampler, and SciNCL neighbourhood sampling, from the leakage-free training dir.
[ -f $R/triplets/train.jsonl ] || specter-utils mine --data-dir $R/bench/train --out $R/triplets --seed 0
[ -f $R/triplets_scincl/train.jsonl ] || specter-utils mine --data-dir $R/bench/train --out $R/triplets_scincl \
    --strategy scincl --seed 0

# 3. Base model and TF-IDF rows.
[ -f $R/emb/base.npy ] || specter-utils embed --model minilm --metadata $META --ids $R/test_ids.txt \
    --out $R/emb/base.jsonl --max-length 128 --batch-size 32 --quiet
[ -f $R/emb/tfidf-svd.npy ] || python experiments/embed_baselines.py $R

# 4. Training runs (name seed triplets-dir triplets-per-run recipe flags), each embedded at 128 wordpieces.
train() {
  [ -f $R/emb/$1.npy ] && return 0
  specter-utils train --profile cpu --triplets $3 --metadata $R/bench/train/metadata.json --out $R/train/$1 \
      --max-length 64 --max-triplets $4 --max-val-triplets 100 --epochs 1 --seed $2 \
      --save-steps 1000 --eval-steps 1000 --logging-steps 5 --no-progress-bar --overwrite --no-resume ${@:5}
  specter-utils embed --model $R/train/$1/model --metadata $META --ids $R/test_ids.txt \
      --out $R/emb/$1.jsonl --max-length 128 --batch-size 32 --quiet
}
MC="--recipe citation-mnrl --learning-rate 5e-5"
PAPER="--recipe paper --batch-size 32"
for s in 0 1 2; do train mc3_s$s $s $R/triplets 3000 $MC; done          # the recommended recipe
for s in 0 1 2; do train paper_s$s $s $R/triplets 2000 $PAPER; done     # SPECTER's recipe
train mc_s0 0 $R/triplets 2000 $MC                                       # exploration rows: one seed, 2,000 triplets
train mnrl_s0 0 $R/triplets 2000 $MC --loss mnrl
train scincl_s0 0 $R/triplets_scincl 2000 $MC
train tripauto_s0 0 $R/triplets 2000 $PAPER --pooling auto

# 5. The tables: MAP mean ± sd over seeds, paired tests over the 400 test queries of each task.
E=$R/emb
specter-utils compare --data-dir $R/bench/scidocs --tasks cite cocite --reference base tfidf-svd \
    --row base $E/base.jsonl --row tfidf-svd $E/tfidf-svd.jsonl \
    --row "paper (triplet, [CLS]), 2K" $E/paper_s0.jsonl $E/paper_s1.jsonl $E/paper_s2.jsonl \
    --row "citation-mnrl, 3K" $E/mc3_s0.jsonl $E/mc3_s1.jsonl $E/mc3_s2.jsonl \
    --out $R/compare_main.json
specter-utils compare --data-dir $R/bench/scidocs --tasks cite cocite --reference "mnrl-citation" base \
    --row "mnrl-citation" $E/mc_s0.jsonl --row base $E/base.jsonl \
    --row "paper (triplet, [CLS])" $E/paper_s0.jsonl --row "triplet + auto pooling" $E/tripauto_s0.jsonl \
    --row mnrl $E/mnrl_s0.jsonl --row "scincl sampling + mnrl-citation" $E/scincl_s0.jsonl \
    --out $R/compare_exploration.json
python bench/bench_losses.py --triplets $R/triplets --metadata $R/bench/train/metadata.json --steps 1 \
    --out $R/bench_losses.json
