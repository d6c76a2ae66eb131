#!/usr/bin/env bash
# bf16 against fp32 training on hep-th: `train --dtype auto` picks bf16 autocast on a CPU with avx512_bf16 or
# amx_bf16; this runs the recipe-lever study's reference budget (3,000 triplets, specter_utils/studies/levers.py)
# in fp32 (the `reference` row) and in bf16 (the `bf16` row) at 3 seeds each, the seeds one at a time so that a
# killed run leaves the rows paired. Resumable: a finished row is never run again. The table (MAP mean ± sd over
# seeds, paired tests over queries, training minutes and the training loop's triplets/s, the CPU's flags) goes to
# experiments/measured/train_dtype_hepth.md.
#
#   experiments/train_dtype.sh [RESULTS_DIR] [HEPTH_SRC]     # about an hour on 2 cores
set -euo pipefail
results=${1:-results}
src=${2:-../shared/data/hepth}
run="$results/hepth-dtype"
rows=experiments/measured/train_dtype_hepth.jsonl
[ -f "$run/pipeline.json" ] || python -m specter_utils run --preset hepth --run hepth-dtype --notebooks 01 02 \
  --src "$src" --results-dir "$results"
for seed in 0 1 2; do
  python experiments/recipe_levers.py "$run" --split test --only reference bf16 --seeds "$seed" --results "$rows"
done
python experiments/recipe_levers.py "$run" --table --results "$rows" > experiments/measured/train_dtype_hepth.md
