#!/usr/bin/env bash
# Instructions per request of one URL, counted by callgrind: the number the
# performance notes quote for a hit ("Ir per request"), reproducible on a
# shared, noisy machine where req/s is not.
#
# Usage: bash benches/load/callgrind.sh [URL-PATH] [axle serve options...]
#   URL-PATH  default /articles/xml-pipelines.xml (the doc scenario's page)
#   e.g.      bash benches/load/callgrind.sh /trivial/ --cache all
#
# It builds axle (release, honouring CARGO_TARGET_DIR; AXLE_BIN=PATH uses
# that binary instead: a baseline built elsewhere), serves a copy of
# samples/ (or of SITE=DIR, e.g. a site with a dynamic front) under
# valgrind on 127.0.0.1, warms up (the first request renders, the next
# ones hit), turns instrumentation on for 5 s of wrk load (8 connections),
# and prints requests, instructions and their ratio. CONNECTIONS=N and
# SECONDS_MEASURED=S change the measured load: requests in flight when
# instrumentation starts and stops are counted in part, so a slow request
# (a dynamic front's, under valgrind) wants fewer connections and a longer
# run. Needs valgrind and wrk (apt-get install valgrind wrk). The server
# runs on CPU 0, wrk on CPU 1 when there are two.
#
# DOCS=N spreads the load over N copies of URL-PATH's document (under
# /cg/), each requested once first, then uniformly at random (bench.lua):
# with a --cache-size too small for them and a --cache-dir, nearly every
# request is a disk-tier hit; with the default budget, a memory hit. It
# also prints the X-Axle-Cache values counted over the measured run.
#   e.g.  DOCS=400 bash benches/load/callgrind.sh /articles/xml-pipelines.xml \
#             --cache-size 64KiB --cache-dir /tmp/cg-disk
#         DOCS=400 bash benches/load/callgrind.sh /articles/xml-pipelines.xml
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
URL=${1:-/articles/xml-pipelines.xml}
shift || true
ARGS=("$@")
[[ ${#ARGS[@]} -gt 0 ]] || ARGS=(--cache incremental)

for tool in valgrind callgrind_control wrk curl taskset; do
    command -v "$tool" >/dev/null || { echo "callgrind.sh: needs $tool" >&2; exit 1; }
done

if [[ -n ${AXLE_BIN:-} ]]; then
    BIN=$AXLE_BIN # e.g. a copy of an earlier build, for a before/after pair
else
    (cd "$REPO" && cargo build --release --quiet)
    BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/axle"
fi
WORK=$(mktemp -d)
trap 'kill -9 "${VG:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cp -r "${SITE:-$REPO/samples}" "$WORK/site"
DOCS=${DOCS:-0}
[[ $DOCS =~ ^[0-9]+$ ]] || { echo "callgrind.sh: DOCS must be a count" >&2; exit 2; }
WRK_ENV=()
WRK_LUA=()
if ((DOCS > 0)); then
    [[ -f $WORK/site$URL ]] || { echo "callgrind.sh: DOCS needs URL-PATH to be a file of samples/" >&2; exit 2; }
    FMT=/cg/%03d/%06d.xml
    for ((i = 0; i < DOCS; i++)); do
        # shellcheck disable=SC2059
        f=$WORK/site$(printf "$FMT" $((i / 1000)) "$i")
        mkdir -p "$(dirname "$f")"
        cp "$WORK/site$URL" "$f"
    done
    WRK_ENV=(BENCH_RANDOM_N="$DOCS" BENCH_RANDOM_FMT="$FMT" BENCH_COUNT_CACHE=1)
    WRK_LUA=(-s "$HERE/bench.lua")
fi

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
CLIENT_CPU=1
[[ $(nproc) -ge 2 ]] || CLIENT_CPU=0
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/out" \
    "$BIN" serve --root "$WORK/site" --listen "127.0.0.1:$PORT" "${ARGS[@]}" >"$WORK/log" 2>&1 &
VG=$!
for _ in $(seq 120); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT$URL" && break
    sleep 0.5
done
STATUS=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$URL")
[[ $STATUS == 200 ]] || { echo "callgrind.sh: GET $URL gave $STATUS" >&2; cat "$WORK/log" >&2; exit 1; }
CACHE=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PORT$URL" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-axle-cache" {print $2}')
if ((DOCS > 0)); then
    # Every copy requested once (rendered, and written to the tiers), then
    # a moment for the disk tier's writer.
    for ((i = 0; i < DOCS; i++)); do
        # shellcheck disable=SC2059
        printf 'url = "http://127.0.0.1:%s%s"\noutput = "/dev/null"\n' "$PORT" "$(printf "$FMT" $((i / 1000)) "$i")"
    done >"$WORK/urls"
    curl -s --parallel --parallel-max 4 --config "$WORK/urls" >/dev/null 2>&1
    sleep 2
    CACHE="DOCS=$DOCS copies, counted below"
fi
env "${WRK_ENV[@]}" taskset -c "$CLIENT_CPU" wrk -t1 -c8 -d2s "${WRK_LUA[@]}" "http://127.0.0.1:$PORT$URL" >/dev/null
callgrind_control -i on "$VG" >/dev/null 2>&1
env "${WRK_ENV[@]}" taskset -c "$CLIENT_CPU" wrk -t1 -c"${CONNECTIONS:-8}" -d"${SECONDS_MEASURED:-5}s" "${WRK_LUA[@]}" "http://127.0.0.1:$PORT$URL" >"$WORK/wrk.out"
N=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
COUNTS=$(sed -n 's/^BENCHJSON .*"cache_counts":{\([^}]*\)}.*/\1/p' "$WORK/wrk.out")
callgrind_control -i off "$VG" >/dev/null 2>&1
callgrind_control -d "$VG" >/dev/null 2>&1
sleep 1
IR=$(cat "$WORK"/out* | awk '/^totals:/ {s += $2} END {print s}')
echo "GET $URL (${ARGS[*]}; X-Axle-Cache: $CACHE): $N requests, $IR instructions, $((IR / N)) per request"
[[ -z $COUNTS ]] || echo "X-Axle-Cache over the measured run: $COUNTS"
# KEEP=DIR keeps the callgrind output there, for callgrind_annotate.
[[ -z ${KEEP:-} ]] || { mkdir -p "$KEEP"; cp "$WORK"/out* "$KEEP"/; }
