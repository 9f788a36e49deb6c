#!/usr/bin/env bash
# Two axle binaries side by side on a plain memory hit (the sample
# article's page, keep-alive): what a change to the hot path costs.
#
# Usage: bash benches/load/hit-ab.sh BIN_A BIN_B
#   e.g. bash benches/load/hit-ab.sh /tmp/target-old/release/axle target/release/axle
#
# Both servers run at once on one copy of samples/ (`--cache incremental`,
# defaults otherwise), both pinned to SERVER_CPU (default 0), wrk (-t1,
# bench.lua, c = 32) to CLIENT_CPU (default 1). Two methods, each giving a
# median ratio B ÷ A:
#   alternating: ROUNDS rounds (default 9) of DURATION (default 3s, after a
#                1 s unrecorded run), one server loaded at a time, the order
#                alternating;
#   shared:      SHARED_ROUNDS rounds (default 7) of SHARED_DURATION
#                (default 4s), both loaded at once, each by its own wrk:
#                the scheduler splits the server CPU between them, so the
#                ratio is the inverse ratio of their CPU cost per request.
# Before and after, both must serve the same bytes and say
# `X-Axle-Cache: hit`. Only 127.0.0.1 is used.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
BINS=("$1" "$2")
ROUNDS=${ROUNDS:-9}
DURATION=${DURATION:-3s}
SHARED_ROUNDS=${SHARED_ROUNDS:-7}
SHARED_DURATION=${SHARED_DURATION:-4s}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
URL=/articles/xml-pipelines.xml
for tool in wrk curl taskset setsid; do
    command -v "$tool" >/dev/null || { echo "hit-ab.sh: needs $tool" >&2; exit 1; }
done

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
cp -r "$REPO/samples" "$WORK/site"
PORTS=()
for i in 0 1; do
    setsid taskset -c "$SERVER_CPU" "${BINS[$i]}" serve --root "$WORK/site" --listen 127.0.0.1:0 --cache incremental \
        >"$WORK/log-$i" 2>&1 </dev/null &
    PIDS+=($!)
    port=""
    for _ in $(seq 200); do
        port=$(sed -n 's#.*on http://127.0.0.1:\([0-9][0-9]*\)/.*#\1#p' "$WORK/log-$i" | head -n1)
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || { cat "$WORK/log-$i" >&2; echo "hit-ab.sh: ${BINS[$i]} did not start" >&2; exit 1; }
    PORTS[$i]=$port
done
verify() {
    local i
    for i in 0 1; do
        curl -sS -o "$WORK/body-$i" "http://127.0.0.1:${PORTS[$i]}$URL"
        curl -sS -o "$WORK/body-$i" -D "$WORK/head-$i" "http://127.0.0.1:${PORTS[$i]}$URL"
        tr -d '\r' <"$WORK/head-$i" | grep -qi '^x-axle-cache: hit$' ||
            { echo "hit-ab.sh: ${BINS[$i]} does not answer a plain hit ($1)" >&2; cat "$WORK/head-$i" >&2; exit 1; }
    done
    cmp -s "$WORK/body-0" "$WORK/body-1" || { echo "hit-ab.sh: the two bodies differ ($1)" >&2; exit 1; }
}
verify before
rps() { awk '/^Requests\/sec:/ {print $2}' "$1"; }
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
wrkc() { taskset -c "$CLIENT_CPU" wrk -t1 -c32 -s "$HERE/bench.lua" "$@"; }

echo "memory hit $URL, keep-alive, c=32; servers on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU"
echo "A=${BINS[0]}"
echo "B=${BINS[1]}"
echo "alternating: $ROUNDS rounds of $DURATION"
R=()
for round in $(seq "$ROUNDS"); do
    order="0 1"
    ((round % 2)) || order="1 0"
    declare -a V=()
    for i in $order; do
        wrkc -d1s "http://127.0.0.1:${PORTS[$i]}$URL" >/dev/null 2>&1 || true
        wrkc -d"$DURATION" "http://127.0.0.1:${PORTS[$i]}$URL" >"$WORK/wrk-$i" 2>&1
        V[$i]=$(rps "$WORK/wrk-$i")
    done
    r=$(awk -v a="${V[0]}" -v b="${V[1]}" 'BEGIN {printf "%.3f", b / a}')
    R+=("$r")
    echo "  round $round: A ${V[0]} req/s, B ${V[1]} req/s, B/A $r"
done
echo "alternating median B/A: $(printf '%s\n' "${R[@]}" | median)"
echo "shared: $SHARED_ROUNDS rounds of $SHARED_DURATION, both loaded at once"
S=()
for round in $(seq "$SHARED_ROUNDS"); do
    W=()
    for i in 0 1; do
        wrkc -d"$SHARED_DURATION" "http://127.0.0.1:${PORTS[$i]}$URL" >"$WORK/shared-$i" 2>&1 &
        W+=($!)
    done
    wait "${W[@]}"
    a=$(rps "$WORK/shared-0") b=$(rps "$WORK/shared-1")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')
    S+=("$r")
    echo "  round $round: A $a req/s, B $b req/s, B/A $r"
done
echo "shared median B/A: $(printf '%s\n' "${S[@]}" | median)"
verify after
