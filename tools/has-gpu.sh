#!/usr/bin/env bash
# Exit 0 when at least one CUDA device is usable here; prints how many.
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${n:-0}" -gt 0 ]; then echo "$n"; exit 0; fi
echo 0
exit 1
