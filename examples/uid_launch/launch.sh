#!/usr/bin/env bash
# Starts N local PEs of a tmashmem program with the unique-id bootstrap, no mpirun:
# one id from `PROGRAM --make-id`, then N processes with their rank in the environment.
#   bash launch.sh N PROGRAM [ARGS...]      (e.g. bash launch.sh 4 ./uid_ring)
# Exits 0 when every PE exited 0, else the first non-zero status.
set -uo pipefail
n=${1:?usage: launch.sh N PROGRAM [ARGS...]}
shift
program=${1:?usage: launch.sh N PROGRAM [ARGS...]}
id=$("$program" --make-id) || { echo "launch.sh: $program --make-id failed" >&2; exit 1; }
pids=()
for ((rank = 0; rank < n; rank++)); do
  TMASHMEM_BOOTSTRAP_UID=$id TMASHMEM_BOOTSTRAP_UID_RANK=$rank TMASHMEM_BOOTSTRAP_UID_SIZE=$n \
    "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  rc=$?
  if ((rc != 0 && status == 0)); then status=$rc; fi
done
exit $status
