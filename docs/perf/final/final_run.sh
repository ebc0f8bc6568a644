#!/usr/bin/env bash
# The lead's final GPU run on merged main: build, every GPU test at np 1/2/4, then the
# (A record of that run, not a script to rerun: tmashmem-coll-perf and coll-perf-nvshmem are
# now `tmashmem-perf coll` and `perf_nvshmem coll`, and it ran ctest -j 2 under MPS.)
# benchmarks of this session's changes, each bounded; logs into $OUT/final.tar.gz.
set -u
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$NV/lib:${LD_LIBRARY_PATH:-}
R=/tmp/final; mkdir -p $R; B=$PWD/build-gpu; T0=$(date +%s)
trap 'mps_stop 2>/dev/null; tar czf $OUT/final.tar.gz -C $R . 2>/dev/null' EXIT
ok_time() { [ $(( $(date +%s) - T0 )) -lt $1 ] || { el "SKIPPED (time): $2"; return 1; }; }
el() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
git_rev=$(cat .carry-final/rev); el "main at $git_rev"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee $R/machine.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DTMASHMEM_WERROR=ON -DTMASHMEM_NVSHMEM_HOME=$NV >$R/configure.log 2>&1 &&
  cmake --build $B -j 16 >$R/build.log 2>&1; el "build rc=$?"; tail -3 $R/build.log
source tools/mps.sh; mps_start
(cd $B && timeout 240 ctest -V -L gpu -j 2 -E "heap|debug_checks" --timeout 160) >$R/gpu-tests.log 2>&1
el "gpu tests (parallel) rc=$?"
(cd $B && timeout 60 ctest -V -R "heap|debug_checks" --timeout 50) >$R/gpu-tests-serial.log 2>&1
el "gpu tests (serial: heap, debug checks) rc=$?"
for f in gpu-tests gpu-tests-serial; do grep -E "% tests passed|tests failed|^\s+[0-9]+ - |Failed|Timeout|Not Run" $R/$f.log | grep -v "^[0-9]*: " | head -20; done
grep -hE "^[0-9]+: .*: [0-9]+ passed, [0-9]+ failed" $R/gpu-tests*.log | sed 's#/.*/tests/#tests/#' | awk '{ $1=""; print }' | sort | uniq -c | awk '{print}' > $R/per-program.txt; wc -l < $R/per-program.txt; grep -v " 0 failed" $R/per-program.txt | head
ok_time 380 "perf quick" && PERF_SET=quick timeout 60 bash tools/perf/run-perf.sh $B $R/perf-quick >$R/perf-quick.log 2>&1; el "perf quick rc=$?"
[ -d $R/perf-quick ] && python3 tools/perf/perf.py compare docs/perf/suite_tmashmem.csv,docs/perf/suite_nvshmem.csv $R/perf-quick --out $R/quick-vs-record.txt 2>&1 | grep -vE "^  .* B: A " | head -30
mkdir -p prebuilt && cp -a $B/runtime/libtmashmem.so* $B/tests/gpu/fused/test_fused $B/tests/gpu/fused/test_reduce_scatter \
  $B/tests/gpu/gemm/test_gemm $B/examples/fused/allgather_gemm $B/examples/fused/gemm_reduce_scatter $B/tools/perf/fused/tmashmem-fused-bench prebuilt/
ok_time 420 fused && OUT=$R/fused FUSED_SKIP_TESTS=1 timeout 45 bash tools/perf/fused/run-fused.sh prebuilt 10 4 >$R/fused.log 2>&1; el "fused rc=$?"
M="mpirun --allow-run-as-root --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x LD_LIBRARY_PATH"
ok_time 440 probe && timeout 30 $M -np 2 $B/tools/perf/coll/tmashmem-small-msg-probe 7 >$R/coll_probe.txt 2>&1; el "probe rc=$?"
ok_time 450 coll && timeout 25 $M -np 2 $B/tools/perf/coll/tmashmem-coll-perf -b 4K -e 16M -f 4 -n 20 -w 2 >$R/coll_tm_np2.txt 2>&1; el "coll tm rc=$?"
ok_time 460 coll-nv && timeout 25 $M -np 2 -x NVSHMEM_SYMMETRIC_SIZE=1G -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 -x NVSHMEM_DISABLE_NCCL=1 \
  -x NVSHMEM_DISABLE_NVLS $B/tools/perf/coll/coll-perf-nvshmem -b 4K -e 1M -f 4 -n 20 -w 2 >$R/coll_nv_np2.txt 2>&1; el "coll nv rc=$?"
ok_time 470 sass && OUT_DIR=$R/sass timeout 20 bash tools/check-sass.sh $B >$R/check-sass.txt 2>&1; el "check-sass rc=$?"; tail -3 $R/check-sass.txt
el done
