#!/usr/bin/env bash
# Run the commands of a queue file one at a time, in order, as they are appended (one shell command a line).
# Usage: experiments/queue.sh QUEUE_FILE LOG_DIR   (stop it by appending the line "STOP")
set -u
queue=$1 logs=$2
mkdir -p "$logs"
done_file="$queue.done"
touch "$queue" "$done_file"
while true; do
  n_done=$(wc -l < "$done_file")
  line=$(sed -n "$((n_done + 1))p" "$queue")
  if [ -z "$line" ]; then sleep 10; continue; fi
  [ "$line" = "STOP" ] && exit 0
  step=$(printf '%03d' "$((n_done + 1))")
  echo "[$(date +%H:%M:%S)] start $step: $line" >> "$logs/queue.log"
  start=$(date +%s)
  bash -c "$line" > "$logs/$step.log" 2>&1
  rc=$?
  echo "[$(date +%H:%M:%S)] end $step rc=$rc $(( $(date +%s) - start ))s" >> "$logs/queue.log"
  echo "$rc $line" >> "$done_file"
done
