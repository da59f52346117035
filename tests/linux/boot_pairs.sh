#!/usr/bin/env bash
# Boot a Debian system disk of the test bed N times under QEMU/KVM and N times under
# `hvprof record`, in turns, in one L1 session, and count the boots that did their job: reached
# multi-user.target online, answered the 40 requests sent through the forwarded port, powered
# off, and (hvprof) said so; no panic, oops or BUG on the console (docs/disk-boot.md, "The
# reference"). Not a test: ~3 minutes a pair; the counts and L1 times go to standard output.
#
# Usage: boot_pairs.sh CACHE HVPROF_BINARY SYSTEM N OUT
#   SYSTEM: debian12 or debian13 (prepare.sh builds CACHE/SYSTEM.qcow2 and its boot files)
# Env: HVPROF_TB_VCPUS  vCPUs of both (default 1)
set -euo pipefail
cache=${1:?usage: boot_pairs.sh CACHE HVPROF SYSTEM N OUT}
hvprof=${2:?}
sys=${3:?}
n=${4:?}
out=${5:?}
vcpus=${HVPROF_TB_VCPUS:-1}
case "$sys" in debian12|debian13) ;; *) echo "boot_pairs.sh: SYSTEM is debian12 or debian13" >&2; exit 2 ;; esac
case "$n" in ''|*[!0-9]*) echo "boot_pairs.sh: N is a count" >&2; exit 2 ;; esac
[ -f "$cache/$sys.qcow2" ] || { echo "boot_pairs.sh: no $cache/$sys.qcow2 (run prepare.sh)" >&2; exit 2; }

mkdir -p "$out"
scen=$out/pairs.scenarios
: >"$scen"
fwd="--net user,hostfwd=tcp:127.0.0.1:8080-:80"
for i in $(seq 1 "$n"); do
  echo "$sys-ref.$i|qemu-disk|$sys|$vcpus|1G|||HVTEST_NET_LOAD=8080" >>"$scen"
  echo "$sys-hvprof.$i|record-disk|$sys|$vcpus|1G||--hz 1000 --timeout 420 --disk /guest/$sys.qcow2,readonly $fwd|HVTEST_NET_LOAD=8080" >>"$scen"
done
# One L1 boot for all of them (a pair's two boots share their L1), about 3 minutes a pair.
secs=$((600 + 300 * n))
HVPROF_TB_TIMEOUT=$secs HVPROF_TB_DEADLINE=$secs HVPROF_TB_L1_BOOTS=1 HVPROF_TB_FAULT_ATTEMPTS=1 \
  HVPROF_TB_WARMUP= bash "$(dirname "$0")/run.sh" "$cache" "$hvprof" "$scen" "$out/runs"

for kind in ref hvprof; do
  ok=0
  times=()
  for i in $(seq 1 "$n"); do
    r=$out/runs/$sys-$kind.$i
    good=1
    [ "$(cat "$r/status" 2>/dev/null)" = 0 ] || good=0
    grep -q "HVTEST systemd multi-user 10.0.2.15/24" "$r/console.log" 2>/dev/null || good=0
    grep -q "^pages 20 answered 20 cgi 20 answered 20" "$r/net-load.txt" 2>/dev/null || good=0
    if grep -qE "Kernel panic|Oops|BUG:|Call Trace" "$r/console.log" 2>/dev/null; then good=0; fi
    if [ "$kind" = hvprof ] && ! grep -q "guest stopped (poweroff)" "$r/summary.txt" 2>/dev/null; then
      good=0
    fi
    if [ "$good" = 1 ]; then
      ok=$((ok + 1))
      times+=("$(awk '{printf "%.0f", $2 - $1}' "$r/time")")
    else
      echo "boot_pairs.sh: $sys-$kind.$i did not do its job (see $r)"
    fi
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
  echo "$sys $kind: $ok of $n boots did their job; L1 seconds each: $sorted"
done
