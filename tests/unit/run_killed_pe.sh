#!/usr/bin/env bash
# Runs one killed-PE row of test_faults_killed.cpp under mpiexec and passes when every
# survivor (all PEs but the last) printed "row <row>: PE <r> passed" and none printed FAILED.
# Open MPI kills the whole job soon after a rank dies unless told not to:
# --mca orte_abort_on_non_zero_status 0 lets the survivors reach their timeouts.
# usage: run_killed_pe.sh <mpiexec> <program> <np> <row> [mpiexec flags...]
set -uo pipefail
mpiexec=$1 program=$2 np=$3 row=$4
shift 4
# Survivors meet in this directory before they exit (see the end of test_faults_killed.cpp).
done_dir=$(mktemp -d)
trap 'rm -rf "$done_dir"' EXIT
out=$(TMASHMEM_TEST_DONE_DIR=$done_dir timeout 100 "$mpiexec" "$@" -x TMASHMEM_TEST_DONE_DIR \
  --mca orte_abort_on_non_zero_status 0 -np "$np" "$program" "$row" 2>&1)
echo "$out"
passed=$(grep -cE "^row $row: PE [0-9]+ passed" <<<"$out")
if grep -qE "^row $row: PE [0-9]+ FAILED" <<<"$out" || [ "$passed" -ne $((np - 1)) ]; then
  echo "killed-PE row $row at np $np: $passed of $((np - 1)) survivors passed"
  exit 1
fi
echo "killed-PE row $row at np $np: all $passed survivors passed"
