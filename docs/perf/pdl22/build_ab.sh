#!/usr/bin/env bash
# Builds what docs/perf/pdl22/wide.sh carries to the GPU machine, on the CPU machine (nvcc
# builds sm_90a without a GPU), from the repository root:
#   build-ab/base  BASE (default HEAD): tools/perf/tmashmem-perf, runtime/libtmashmem.so.0
#   build-ab/wide  BASE + docs/perf/pdl22/wide_ll.patch: the same, and
#                  tests/test_collectives, test_collectives_stress, test_collectives_device
# With arguments NAME=PATCH ... (PATCH may be empty), build-ab/NAME for each instead, tmashmem-perf
# and the library only (docs/perf/pdl23/).
# Release builds in git worktrees under /tmp, removed afterwards; about 4 minutes on 2 cores. Then, on the device:
#   run(command="bash docs/perf/pdl22/wide.sh", carry=["build-ab"])
set -eu
R=$(pwd); BASE=${BASE:-HEAD}
build() {  # build NAME PATCH TARGETS...
  local name=$1 patch=$2 w=/tmp/tmashmem-ab-$1; shift 2
  git worktree remove --force $w 2>/dev/null || rm -rf $w
  git worktree add --detach -f $w $BASE >/dev/null
  [ -n "$patch" ] && git -C $w apply $R/$patch
  cmake -S $w -B $w/build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C $w/build "$@" >/dev/null
  rm -rf $R/build-ab/$name && mkdir -p $R/build-ab/$name/tools/perf $R/build-ab/$name/runtime
  cp $w/build/tools/perf/tmashmem-perf $R/build-ab/$name/tools/perf/
  cp -L $w/build/runtime/libtmashmem.so.0 $R/build-ab/$name/runtime/
  for t in "$@"; do case $t in test_*)
    mkdir -p $R/build-ab/$name/tests && cp $w/build/tests/gpu/$t $R/build-ab/$name/tests/ ;;
  esac; done
  echo "$name: $(git -C $w log -1 --format=%h)${patch:+ + $patch}"
  git worktree remove --force $w
}
if [ $# -gt 0 ]; then  # NAME=PATCH ...: those trees only, tmashmem-perf and the library
  for tree in "$@"; do  # WITH_TESTS=1: the collectives' test programs too
    build ${tree%%=*} "${tree#*=}" tmashmem-perf \
      ${WITH_TESTS:+test_collectives test_collectives_stress test_collectives_device}
  done
else
  build base "" tmashmem-perf
  build wide docs/perf/pdl22/wide_ll.patch tmashmem-perf test_collectives test_collectives_stress \
    test_collectives_device
fi
du -sh build-ab
