#!/usr/bin/env bash
# (run Y) issue 12: start the wide-refiner run (version 3 widened to 64 channels by tools/train/widen.py, output
# unchanged) at 1024 for the minutes left; its state comes back for the next call to resume.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state
python3 tools/train/widen.py models/ckey-small.safetensors /tmp/wide.safetensors --seed 0
PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes ${TRAIN_MIN:-2.6} --init /tmp/wide.safetensors \
  --size 1024 --batch 4 --lr 1.5e-4 --steps 1800 --warmup 200 --seed 6 --recipe 2 --fg-weight 2 > $OUT/train.log 2>&1
grep -E '^\{"step"' $OUT/train.log | cut -c1-220; tail -2 $OUT/train.log
