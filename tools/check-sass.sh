#!/usr/bin/env bash
# The SASS check of the multicast paths (docs/multicast.md, "Checking the instructions"):
# which sm_90a instructions the multimem forms and the tile put to every PE compile to,
# and that the built library and GPU tests hold them. Needs cuobjdump (CUDA toolkit).
#
#   tools/check-sass.sh [BUILD_DIR]      (default build-gpu; OUT_DIR keeps the probe's dump)
#
# 1. Compiles tools/sass/multimem_probe.cu to an sm_90a cubin: one kernel per multimem
#    form (addresses from kernel arguments, so nothing folds away) and unicast controls.
#    Each probe's opcodes, less the bookkeeping ones, are printed; the opcodes found in a
#    multimem probe and in no control are the multimem mnemonics.
# 2. Counts those mnemonics in the built objects (libtmashmem: the on-stream barrier
#    kernel, whose ctx is a launch argument; test_multicast; test_barrier).
# 3. Counts the tensor stores (UTMASTG) of the tile put: fan-out only vs multicast map
#    opted in, which must have one more (the store through the multicast map).
# Exit status 0 when every multimem probe compiled to an instruction no control has, every
# object holds at least one multimem mnemonic, and the opted-in tile put has its own store.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
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

# function -> opcodes, one "function opcode" line per instruction (predicates dropped)
opcodes() {
  awk '/Function :/ { f = $3 }
       /\/\*[0-9a-f]+\*\// {
         line = $0; sub(/^.*\/\*[0-9a-f]+\*\/[ \t]*/, "", line); sub(/;.*$/, "", line)
         n = split(line, w, /[ \t]+/); i = 1
         if (w[i] ~ /^@/) i++
         if (w[i] != "" && f != "") print f, w[i]
       }'
}
boring='^(MOV|IMAD|IMAD\.MOV\.U32|IMAD\.WIDE|IMAD\.WIDE\.U32|IADD3|ULDC|ULDC\.64|LDC|LDC\.64|S2R|S2UR|CS2R|EXIT|BRA|NOP|ISETP|UMOV|SHF|LEA|LOP3|SEL|BSSY|BSYNC|PLOP3|R2UR|UIADD3|ULOP3|USHF|ULEA|UISETP|USEL|MOV\.64|PRMT|F2FP|HFMA2\.MMA|SHFL\.IDX|VOTEU\.ANY|UMOV\.64)$'

echo "== 1. probes (tools/sass/multimem_probe.cu, sm_90a)"
if ! "$nvcc" -std=c++17 -O2 -arch=sm_90a -cubin -I"$root/include" \
    "$root/tools/sass/multimem_probe.cu" -o "$out/probe.cubin"; then
  echo "check-sass: the probe did not compile"
  exit 1
fi
"$cuobjdump" -sass "$out/probe.cubin" > "$out/probe.sass"
opcodes < "$out/probe.sass" | sort -u > "$out/probe.opcodes"
for f in $(awk '{print $1}' "$out/probe.opcodes" | sort -u); do
  printf '  %-36s %s\n' "$f" "$(awk -v f="$f" '$1 == f {print $2}' "$out/probe.opcodes" |
    grep -Ev "$boring" | tr '\n' ' ')"
done
awk '$1 ~ /^uc_/ {print $2}' "$out/probe.opcodes" | sort -u > "$out/control.opcodes"
awk '$1 ~ /^mm_/ {print $2}' "$out/probe.opcodes" | sort -u |
  grep -Ev "$boring" | grep -vxF -f "$out/control.opcodes" > "$out/multimem.opcodes"
echo "  multimem mnemonics (in a multimem probe, in no control): $(tr '\n' ' ' < "$out/multimem.opcodes")"
for f in $(awk '$1 ~ /^mm_/ {print $1}' "$out/probe.opcodes" | sort -u); do
  if ! awk -v f="$f" '$1 == f {print $2}' "$out/probe.opcodes" | grep -qxF -f "$out/multimem.opcodes"; then
    echo "  FAIL: $f holds no instruction that the unicast controls lack"
    fail=1
  fi
done
[ -s "$out/multimem.opcodes" ] || { echo "  FAIL: no multimem mnemonic found"; fail=1; }

echo "== 2. built objects (${build})"
for obj in "$build/runtime/libtmashmem.so" "$build/tests/gpu/test_multicast" \
           "$build/tests/gpu/test_barrier"; do
  if [ ! -e "$obj" ]; then
    echo "  FAIL: $obj is missing"
    fail=1
    continue
  fi
  name=$(basename "$obj")
  "$cuobjdump" -sass "$obj" > "$out/$name.sass" 2>&1
  total=0
  summary=""
  while read -r m; do
    [ -n "$m" ] || continue
    c=$(opcodes < "$out/$name.sass" | awk -v m="$m" '$2 == m' | wc -l)
    total=$((total + c))
    summary="$summary $m=$c"
  done < "$out/multimem.opcodes"
  echo "  $name: $total multimem instructions:$summary"
  [ "$total" -gt 0 ] || { echo "  FAIL: $name holds no multimem instruction"; fail=1; }
done
echo "  sample lines from test_multicast:"
grep -F -f <(sed 's/^/ /; s/$/ /' "$out/multimem.opcodes") "$out/test_multicast.sass" 2>/dev/null |
  sed 's/^[ \t]*/    /; s/[ \t]*\/\* 0x[0-9a-f]* \*\/[ \t]*$//' | head -8

echo "== 3. tile put to every PE: tensor stores"
fan_sites=$(opcodes < "$out/probe.sass" | awk '$1 == "tile_put_fan_out" && $2 ~ /^UTMASTG/' | wc -l)
mc_sites=$(opcodes < "$out/probe.sass" | awk '$1 == "tile_put_multicast_map" && $2 ~ /^UTMASTG/' | wc -l)
echo "  UTMASTG sites: fan-out only $fan_sites, multicast map opted in $mc_sites"
[ "$mc_sites" -gt "$fan_sites" ] || { echo "  FAIL: the opted-in path has no store of its own"; fail=1; }
[ "$fan_sites" -gt 0 ] || { echo "  FAIL: no UTMASTG in the fan-out"; fail=1; }

if [ -n "${OUT_DIR:-}" ]; then
  mkdir -p "$OUT_DIR/sass"
  cp "$out/probe.sass" "$out/probe.opcodes" "$out/multimem.opcodes" "$OUT_DIR/sass/"
fi
[ "$fail" -eq 0 ] && echo "check-sass: passed" || echo "check-sass: FAILED"
exit "$fail"
