#!/usr/bin/env bash
# The SASS check of the multicast paths (docs/multicast.md, "Checking the instructions"):
# what the sm_90a instructions of the multimem forms and of the tile put to every PE are,
# and that the built library and GPU tests hold them. Needs cuobjdump (CUDA toolkit) and,
# for step 2, ninja and the build directory the objects came from.
#
#   tools/check-sass.sh [BUILD_DIR]      (default build-gpu; OUT_DIR keeps the probe's dump)
#
# 1. Compiles tools/sass/multimem_probe.cu to an sm_90a cubin (addresses from kernel
#    arguments, so nothing folds away) and prints each probe's memory instructions:
#    multimem.ld_reduce must be an instruction of its own (LDGMC); each multimem.st /
#    multimem.red is compared with its unicast control (st / red .global, same semantics).
# 2. Compiles the built objects' sources to PTX with their own build commands and counts
#    the multimem forms (the library: device/on_stream.cu, whose barrier kernel takes the
#    context as a launch argument; test_barrier; with CHECK_SASS_FULL=1 also
#    test_multicast, whose PTX takes a minute or more to compile).
# 3. Counts the LDGMC instructions in the built objects' SASS.
# 4. Counts the tensor stores (UTMASTG) of the tile put: fan-out only vs multicast map
#    opted in, which must have one more (the store through the multicast map).
# Exit status 0 when all of that holds.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build-gpu}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CUDA_BIN=${CUDA_BIN:-/usr/local/cuda/bin}
cuobjdump=$(command -v cuobjdump || echo "$CUDA_BIN/cuobjdump")
nvcc=$(command -v nvcc || echo "$CUDA_BIN/nvcc")
if [ ! -x "$cuobjdump" ]; then
  echo "check-sass: no cuobjdump (looked on PATH and in $CUDA_BIN): SASS not checked"
  exit 2
fi
fail=0
failed() {
  echo "  FAIL: $*"
  fail=1
}

# SASS text -> "function opcode" per instruction (predicates dropped)
opcodes() {
  awk '/Function :/ { f = $3 }
       /\/\*[0-9a-f]+\*\// {
         line = $0; sub(/^.*\/\*[0-9a-f]+\*\/[ \t]*/, "", line); sub(/;.*$/, "", line)
         n = split(line, w, /[ \t]+/); i = 1
         if (w[i] ~ /^@/) i++
         if (w[i] != "" && f != "") print f, w[i]
       }'
}
# the memory instructions of one function: loads, stores, reductions (not the result store
# STG.E / STG.E.64 / STG.E.128 of an ld_reduce probe, which are weak)
memory_ops() {
  awk -v f="$1" '$1 == f && $2 ~ /^(LDGMC|STG|REDG|ATOMG|RED|ATOM|ST|LD)[.]/ && $2 ~ /STRONG/ {print $2}' \
    "$out/probe.opcodes"
}

echo "== 1. multimem forms and their sm_90a SASS (tools/sass/multimem_probe.cu)"
if ! "$nvcc" -std=c++17 -O2 -arch=sm_90a -cubin -I"$root/include" \
    "$root/tools/sass/multimem_probe.cu" -o "$out/probe.cubin"; then
  echo "check-sass: the probe did not compile"
  exit 1
fi
"$cuobjdump" -sass "$out/probe.cubin" > "$out/probe.sass"
opcodes < "$out/probe.sass" > "$out/probe.opcodes"
for f in $(awk '$1 ~ /^mm_/ {print $1}' "$out/probe.opcodes" | sort -u); do
  mine=$(memory_ops "$f" | sort -u | tr '\n' ' ')
  case "$f" in
    mm_ld_reduce_*)
      printf '  %-36s %-44s (own instruction)\n' "$f" "$mine"
      echo "$mine" | grep -q LDGMC || failed "$f has no LDGMC"
      ;;
    *)
      control="uc_${f#mm_}"
      theirs=$(memory_ops "$control" | sort -u | tr '\n' ' ')
      if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then
        verdict="same as $control"
      else
        verdict="differs from $control: $theirs"
      fi
      printf '  %-36s %-44s (%s)\n' "$f" "$mine" "$verdict"
      [ -n "$mine" ] || failed "$f holds no strong store or reduction"
      ;;
  esac
done

echo "== 2. multimem forms in the PTX of the built objects (${build})"
ptx_of() {  # ptx_of NINJA_TARGET SOURCE: the PTX of SOURCE, compiled as the build compiles it
  local cmd
  cmd=$(cd "$build" && ninja -t commands "$1" 2>/dev/null | grep -- "-c [^ ]*$2" | tail -1)
  [ -n "$cmd" ] || return 1
  cmd=${cmd#*ccache }
  cmd=$(echo "$cmd" | sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+/ -o PTX_OUT/; s/ -c / -ptx /')
  (cd "$build" && eval "${cmd/PTX_OUT/$out/x.ptx}") && cat "$out/x.ptx"
}
sources=("runtime/libtmashmem.so device/on_stream.cu" "tests/gpu/test_barrier tests/gpu/test_barrier.cu")
[ "${CHECK_SASS_FULL:-0}" = 1 ] && sources+=("tests/gpu/test_multicast tests/gpu/test_multicast.cu")
for pair in "${sources[@]}"; do
  set -- $pair
  if ! ptx_of "$1" "$2" > "$out/obj.ptx"; then
    failed "no PTX for $2 (is $build a ninja build of this tree?)"
    continue
  fi
  forms=$(grep -o 'multimem\.[a-z_]*\.[^ ]*' "$out/obj.ptx" | sort -u)
  printf '  %-28s %3d multimem instructions, %2d distinct forms\n' "$2" \
    "$(grep -c 'multimem\.' "$out/obj.ptx")" "$(echo "$forms" | grep -c .)"
  echo "$forms" | head -4 | sed 's/^/      /'
  [ -n "$forms" ] || failed "$2 holds no multimem instruction"
done

echo "== 3. LDGMC (multimem.ld_reduce) in the SASS of the built objects"
for obj in "$build/runtime/libtmashmem.so" "$build/tests/gpu/test_multicast" \
           "$build/tests/gpu/test_barrier"; do
  [ -e "$obj" ] || { failed "$obj is missing"; continue; }
  "$cuobjdump" -sass "$obj" | opcodes | awk '$2 ~ /^LDGMC/ {print $2}' > "$out/ldgmc"
  printf '  %-16s %4d LDGMC, %2d kinds %s\n' "$(basename "$obj")" "$(wc -l < "$out/ldgmc")" \
    "$(sort -u "$out/ldgmc" | grep -c .)" "$(sort -u "$out/ldgmc" | head -3 | tr '\n' ' ')"
  if [ "$(basename "$obj")" = test_multicast ] && [ ! -s "$out/ldgmc" ]; then
    failed "test_multicast holds no LDGMC"
  fi
done

echo "== 4. tile put to every PE: tensor stores"
fan_sites=$(awk '$1 == "tile_put_fan_out" && $2 ~ /^UTMASTG/' "$out/probe.opcodes" | wc -l)
mc_sites=$(awk '$1 == "tile_put_multicast_map" && $2 ~ /^UTMASTG/' "$out/probe.opcodes" | wc -l)
echo "  UTMASTG sites: fan-out only $fan_sites, multicast map opted in $mc_sites"
[ "$fan_sites" -gt 0 ] || failed "no UTMASTG in the fan-out"
[ "$mc_sites" -gt "$fan_sites" ] || failed "the opted-in path has no store of its own"

if [ -n "${OUT_DIR:-}" ]; then
  mkdir -p "$OUT_DIR/sass"
  cp "$out/probe.sass" "$out/probe.opcodes" "$OUT_DIR/sass/"
fi
[ "$fail" -eq 0 ] && echo "check-sass: passed" || echo "check-sass: FAILED"
exit "$fail"
