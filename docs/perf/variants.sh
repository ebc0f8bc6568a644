# Sourced, not run, by the A/B scripts of docs/perf (mcast17/run.sh, launch19/run.sh) from the
# repository root, with D the script's folder and $OUT/r made:
#   variants SPEC...   V=(T NAME...): /tmp/src_T is a copy of the tree and, for each
#                      NAME=P1[+P2...], /tmp/src_NAME the tree with those patches of $D applied
#                      in order; each configured into /tmp/b_NAME (Release, sm_90a, WERROR), in
#                      parallel (logs $OUT/r/cfg_NAME.log). The callers build their targets.
#                      Returns 1, configuring nothing, if a patch does not apply.
variants() {
  local R spec v p
  R=$(pwd)
  V=()
  for spec in T= "$@"; do  # T: the tree, no patch
    v=${spec%%=*}
    V+=("$v")
    rm -rf /tmp/src_$v && mkdir -p /tmp/src_$v && tar -C $R --exclude=./build* -cf - . | tar -C /tmp/src_$v -xf -
    (cd /tmp/src_$v && for p in $(echo "${spec#*=}" | tr + ' '); do patch -p1 < $D/$p > /dev/null || exit 1; done) ||
      { echo "variant $v: a patch of ${spec#*=} failed"; return 1; }
  done
  for v in "${V[@]}"; do
    cmake -S /tmp/src_$v -B /tmp/b_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DTMASHMEM_WERROR=ON > $OUT/r/cfg_$v.log 2>&1 &
  done
  wait
}
