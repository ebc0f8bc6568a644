#!/usr/bin/env bash
# The thirteenth session's refresh of the collectives and multicast rows on main (one device
# call): builds tmashmem-perf and perf_nvshmem (Release, sm_90a), then under MPS, two launches
# each, CSVs and logs into $OUT/r: coll at 2 PEs (tmashmem enqueued and in one graph, NVSHMEM
# enqueued), mcast at 2 and 4 PEs with 1 source and at 4 PEs with 4 sources.
# `run.sh graphs` instead: coll at 2 PEs with NVSHMEM in one graph too, and at 4 PEs both
# runtimes enqueued and in one graph (the second device call).
set -u
R=$(pwd); B=/tmp/b_refresh; mkdir -p $OUT/r
NV=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nvshmem 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
echo "NVSHMEM: $NV; main at $(git -C $R log -1 --format=%h 2>/dev/null)" >> $OUT/r/machine.txt
cmake -S $R -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON \
  -DTMASHMEM_NVSHMEM_HOME=$NV > $OUT/r/cfg.log 2>&1 && ninja -C $B tmashmem-perf perf_nvshmem > $OUT/r/build.log 2>&1
echo "build rc=$?"
source docs/perf/coll_env.sh  # the environment, MPS and run() (moved there after the runs)
C=(coll -b 4K -e 1M -f 4 -n 200 -w 20 -r 5)
S=(-b 64K -e 16M -f 4 -s 16,all -r 8)
if [ "${1:-}" = graphs ]; then
  for l in 1 2; do
    run coll_nvgraph_l$l 2 perf_nvshmem "${C[@]}" --graph 1
    for p in tmashmem-perf perf_nvshmem; do
      run coll_np4_${p}_l$l 4 $p "${C[@]}"
      run coll_np4_${p}_graph_l$l 4 $p "${C[@]}" --graph 1
    done
  done
else for l in 1 2; do
  run coll_tm_l$l 2 tmashmem-perf "${C[@]}"
  run coll_nv_l$l 2 perf_nvshmem "${C[@]}"
  run coll_tmgraph_l$l 2 tmashmem-perf "${C[@]}" --graph 1
  run mcast_np2_l$l 2 tmashmem-perf mcast "${S[@]}"
  run mcast_np4_l$l 4 tmashmem-perf mcast "${S[@]}"
  run mcast_src4_np4_l$l 4 tmashmem-perf mcast "${S[@]}" --sources 4
done; fi
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
