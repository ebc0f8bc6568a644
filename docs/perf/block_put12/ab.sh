#!/usr/bin/env bash
# ab.sh "name=srcdir ..." PASSES CMD...   builds tmashmem-perf (+EXTRA_TARGETS) per variant into /tmp/b_<name>,
# (each srcdir: `git archive 3f0f13d` with the variant's ctx.cuh and copy_loop.cuh copied in; A is
# 3f0f13d itself, F is 0ab477c's headers), then runs CMD (with @B@ replaced by the build dir, @N@ by name_pass) alternating, PASSES times.
set -u
R=$(pwd); VARS=$1; PASSES=$2; shift 2
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r/machine.txt
for v in $VARS; do n=${v%%=*}; d=${v#*=}; [ "$d" = . ] && d=$R; (cmake -S $d -B /tmp/b_$n -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTMASHMEM_WERROR=ON > /tmp/b_$n.cfg.log 2>&1 && ninja -C /tmp/b_$n tmashmem-perf ${EXTRA_TARGETS:-} > /tmp/b_$n.build.log 2>&1; echo "build $n rc=$?") & done; wait
source tools/mps.sh; mps_start
export TMASHMEM_MULTICAST=off NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export M="mpirun --oversubscribe --bind-to none -x TMASHMEM_MULTICAST -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
for pass in $(seq $PASSES); do for v in $VARS; do n=${v%%=*}
  c="$*"; c=${c//@B@//tmp/b_$n}; c=${c//@N@/${n}_$pass}
  s=$SECONDS; timeout 200 bash -c "$c" > $OUT/r/${n}_$pass.log 2>&1; echo "$n pass $pass rc=$? $((SECONDS-s)) s"
done; done
${AFTER:-true}
mps_stop
cd $OUT && tar czf x.tgz r && rm -rf r
