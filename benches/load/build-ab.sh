#!/usr/bin/env bash
# Two axle binaries side by side on `axle build`: what a change to the
# static export costs, for a full build and for a re-run with nothing
# changed (the incremental path).
#
# Usage: bash benches/load/build-ab.sh BIN_A BIN_B [ROOT]
#   e.g. bash benches/load/build-ab.sh /tmp/axle-old target/release/axle /tmp/old/samples
#
# ROOT (default: samples/ of this checkout) must be a site both binaries
# load. Each round, in alternating order, each binary builds ROOT into an
# empty folder (full) and then again into the same folder (rerun); the
# wall time of each is taken with bash's EPOCHREALTIME. ROUNDS (default 9)
# rounds after one unrecorded warm-up round per binary. Prints the median
# of each and the ratio B / A as a Markdown table; nothing is sent over
# any network (a build serves itself in-process).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 BIN_A BIN_B [ROOT]" >&2; exit 2; }
BINS=("$1" "$2")
ROOT=${3:-$REPO/samples}
ROUNDS=${ROUNDS:-9}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Milliseconds one command takes (its output discarded; a failure stops
# the script).
ms() {
    local start end
    start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || { echo "build-ab.sh: failed: $*" >&2; exit 1; }
    end=$EPOCHREALTIME
    echo "$(( (${end/./} - ${start/./}) / 1000 ))"
}

declare -A FULL RERUN
round() {
    local i=$1 record=$2 order
    if (( i % 2 == 0 )); then order=(0 1); else order=(1 0); fi
    for b in "${order[@]}"; do
        local out="$WORK/out-$b"
        rm -rf "$out"
        local f r
        f=$(ms "${BINS[$b]}" build --root "$ROOT" --out "$out")
        r=$(ms "${BINS[$b]}" build --root "$ROOT" --out "$out")
        if [[ $record == yes ]]; then
            FULL[$b]+="$f "
            RERUN[$b]+="$r "
        fi
    done
}

median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

round 0 no
for ((i = 1; i <= ROUNDS; i++)); do round "$i" yes; done

echo "| build of $(basename "$ROOT") ($ROUNDS rounds, median ms) | A: ${BINS[0]} | B: ${BINS[1]} | B / A |"
echo "| --- | --- | --- | --- |"
for kind in full rerun; do
    if [[ $kind == full ]]; then a=$(median <<<"${FULL[0]}"); b=$(median <<<"${FULL[1]}");
    else a=$(median <<<"${RERUN[0]}"); b=$(median <<<"${RERUN[1]}"); fi
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')
    echo "| $kind | $a | $b | $ratio |"
done
echo
echo "raw ms, A full: ${FULL[0]}"
echo "raw ms, B full: ${FULL[1]}"
echo "raw ms, A rerun: ${RERUN[0]}"
echo "raw ms, B rerun: ${RERUN[1]}"
