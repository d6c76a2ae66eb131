#!/usr/bin/env bash
# Kill -9 one rank of a 2-process CPU (gloo) training run mid-way, then resume it; compare with a run never killed.
#
# Usage: experiments/distributed_kill_resume.sh WORK_DIR
#   (from the repository root; about 5 minutes on 2 cores; writes WORK_DIR/results.json and the logs)
#
# 1. reference: torchrun --nproc_per_node 2 ... train, uninterrupted.
# 2. killed: the same command; once checkpoint-12 is complete, kill -9 of rank 1. How long until torchrun
#    exits, with what code, and whether any process is left.
# 3. resumed: the same command again. It resumes from the last complete checkpoint; its model is compared
#    with the reference, tensor by tensor (max abs diff), and its logged losses step by step.
# 4. elastic: the same command with --max-restarts 1; kill -9 of rank 1 once checkpoint-12 is complete.
#    torchrun restarts both processes, which resume from the checkpoint, all within the one command.
# 5. no agent: the two processes started by hand (as a launcher that does not supervise them would), rank 1
#    killed mid-run: how long rank 0 takes to notice.
set -u
work=${1:?usage: $0 WORK_DIR}
mkdir -p "$work"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH=$PWD
python=${PYTHON:-python}

if [ ! -f "$work/mine/train.jsonl" ]; then
  $python -m specter_utils data synthetic --out "$work/synthetic" --papers 300 --overwrite > "$work/data.log" 2>&1
  $python -m specter_utils mine --data-dir "$work/synthetic/train" --out "$work/mine" --overwrite >> "$work/data.log" 2>&1
fi
# The recommended recipe (in-batch negatives gathered across the 2 processes, citation mask), MiniLM with its
# dropout on, 24 optimiser steps of 2 x 8 triplets, a checkpoint every 6 steps.
flags=(--triplets "$work/mine" --metadata "$work/synthetic/train/metadata.json" --recipe citation-mnrl
  --base-model minilm --max-length 32 --batch-size 8 --effective-batch-size 16 --max-triplets 384
  --max-val-triplets 16 --epochs 1 --save-steps 6 --eval-steps 1000 --logging-steps 1 --seed 5 --quiet)
launch=(torchrun --standalone --nproc_per_node 2 -m specter_utils train)

rank_pid() {  # the pid of the worker with RANK=$2 under the torchrun whose pid is $1
  local agent=$1 rank=$2 pid
  for pid in $(pgrep -P "$agent"); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=$rank"; then echo "$pid"; return; fi
  done
}

kill_rank_after_checkpoint() {  # run "${@:3}" in the background; kill -9 rank 1 once checkpoint $2 is complete
  local out=$1 step=$2; shift 2
  "$@" > "$out.log" 2>&1 &
  local agent=$! victim="" t_kill t_end rc
  until [ -f "$out/checkpoints/checkpoint-$step/specter_checkpoint.json" ]; do
    kill -0 "$agent" 2>/dev/null || { echo "run ended before checkpoint-$step" >&2; return 1; }
    sleep 0.2
  done
  victim=$(rank_pid "$agent" 1)
  local workers
  workers=$(pgrep -P "$agent" | tr '\n' ' ')
  t_kill=$(date +%s.%N)
  kill -9 "$victim"
  wait "$agent"
  rc=$?
  t_end=$(date +%s.%N)
  local left=""
  for pid in $workers; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
  printf '{"killed_pid": %s, "agent_exit_code": %s, "seconds_to_exit": %.1f, "workers_left": "%s"}\n' \
    "$victim" "$rc" "$(echo "$t_end - $t_kill" | bc)" "${left# }"
}

echo "1. reference" >&2
[ -d "$work/reference/model" ] || "${launch[@]}" "${flags[@]}" --out "$work/reference" > "$work/reference.log" 2>&1

echo "2. killed" >&2
rm -rf "$work/killed"
killed=$(kill_rank_after_checkpoint "$work/killed" 12 "${launch[@]}" "${flags[@]}" --out "$work/killed")
checkpoints=$(ls "$work/killed/checkpoints" | tr '\n' ' ')

echo "3. resumed" >&2
"${launch[@]}" "${flags[@]}" --out "$work/killed" > "$work/resumed.log" 2>&1
resumed_rc=$?

echo "4. elastic" >&2
rm -rf "$work/elastic"
elastic_launch=(torchrun --standalone --nproc_per_node 2 --max-restarts 1 -m specter_utils train)
elastic=$(kill_rank_after_checkpoint "$work/elastic" 12 "${elastic_launch[@]}" "${flags[@]}" --out "$work/elastic")

echo "5. no agent" >&2
rm -rf "$work/no_agent"
port=$((29600 + RANDOM % 300))
for rank in 0 1; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$rank LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 \
    OMP_NUM_THREADS=1 $python -m specter_utils train "${flags[@]}" --out "$work/no_agent" > "$work/no_agent.$rank.log" 2>&1 &
  eval "pid$rank=$!"
done
until [ -f "$work/no_agent/checkpoints/checkpoint-6/specter_checkpoint.json" ]; do sleep 0.2; done
t_kill=$(date +%s.%N)
kill -9 "$pid1"
for _ in $(seq 600); do kill -0 "$pid0" 2>/dev/null || break; sleep 0.5; done  # give up after 5 minutes
if kill -0 "$pid0" 2>/dev/null; then kill -9 "$pid0"; rank0_rc='"still running after 300 s"'; else wait "$pid0"; rank0_rc=$?; fi
no_agent=$(printf '{"rank0_exit_code": %s, "seconds_to_exit": %.1f, "rank0_last_line": %s}' "$rank0_rc" \
  "$(echo "$(date +%s.%N) - $t_kill" | bc)" "$(tail -1 "$work/no_agent.0.log" | $python -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()[:300]))')")

$python - "$work" "$killed" "$checkpoints" "$resumed_rc" "$elastic" "$no_agent" <<'EOF'
import json
import sys
from pathlib import Path

from safetensors.torch import load_file

work = Path(sys.argv[1])


def compare(run: str) -> dict:
    """Max abs weight difference from the reference, and the logged losses step by step."""
    reference = load_file(str(work / "reference/model/model.safetensors"))
    model = load_file(str(work / run / "model/model.safetensors"))
    diffs = {name: float((reference[name] - model[name]).abs().max()) for name in reference}
    logs = [json.loads((work / r / "log_history.json").read_text()) for r in ("reference", run)]
    losses = [{e["step"]: e["loss"] for e in log if "loss" in e} for log in logs]
    summary = json.loads((work / run / "model/specter_training.json").read_text())
    return {
        "resumed_from": summary["resumed_from"],
        "global_step": summary["results"]["global_step"],
        "world_size": summary["derived"]["world_size"],
        "max_abs_weight_diff": max(diffs.values()),
        "tensors_identical": sum(v == 0.0 for v in diffs.values()),
        "tensors": len(diffs),
        "max_abs_loss_diff_same_step": max(abs(losses[0][s] - losses[1][s]) for s in losses[1] if s in losses[0]),
        "steps_compared": len(set(losses[0]) & set(losses[1])),
    }


results = {
    "killed": {**json.loads(sys.argv[2]), "checkpoints_left": sys.argv[3].split()},
    "resumed": {"exit_code": int(sys.argv[4]), **compare("killed")},
    "elastic": {
        **json.loads(sys.argv[5]),
        **(compare("elastic") if (work / "elastic/model").is_dir() else {"model_written": False}),
    },
    "no_agent": json.loads(sys.argv[6]),
}
(work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
print(json.dumps(results, indent=2))
EOF
