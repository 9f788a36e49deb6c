#!/usr/bin/env bash
# Two axle binaries side by side on uncached DocBook renders with every
# transform thread busy: what one heavy stylesheet gets out of the machine.
#
# Usage: bash benches/load/docbook-ab.sh BIN_A BIN_B
#   e.g. bash benches/load/docbook-ab.sh /tmp/target-old/release/axle /tmp/target-load/release/axle
#
# Serves the libxslt suite's DocBook test documents through one stylesheet
# (html/docbook.xsl) with `--cache off` and the default transform threads
# (one per CPU), unpinned, and loads them with wrk (bench.lua, a uniformly
# random document per request, c = 2 × CPUs). A and B alternate for ROUNDS
# rounds of DURATION each (one server at a time), so a change in machine
# load hits both; the last line is the median ratio B ÷ A. Needs wrk and
# curl, and the suite (LIBXSLT_SUITE, default ../shared/conformance/libxslt
# beside the repository).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[[ $# -eq 2 ]] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
BINS=("$1" "$2")
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-12s}
SUITE=${LIBXSLT_SUITE:-$REPO/../shared/conformance/libxslt}
[[ -d $SUITE/docbook/test ]] || { echo "docbook-ab.sh: no $SUITE/docbook (set LIBXSLT_SUITE)" >&2; exit 1; }
for tool in wrk curl python3; do
    command -v "$tool" >/dev/null || { echo "docbook-ab.sh: needs $tool" >&2; exit 1; }
done

WORK=$(mktemp -d)
PID=
trap '[[ -n $PID ]] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/site"
cp -r "$SUITE/docbook" "$WORK/site/docbook"
cp -r "$WORK/site/docbook/test" "$WORK/site/docbook/h"
printf '[[location."/docbook/h".processor]]\ntype = "text/xsl"\nhref = "/docbook/html/docbook.xsl"\n' >"$WORK/site/axle.toml"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
CONNS=$((2 * $(nproc)))

echo "DocBook html, --cache off, $(nproc) CPUs, c=$CONNS, $ROUNDS rounds of $DURATION; A=${BINS[0]} B=${BINS[1]}"
declare -a RATIOS=()
for round in $(seq "$ROUNDS"); do
    declare -a RPS=()
    for i in 0 1; do
        "${BINS[$i]}" serve --root "$WORK/site" --listen "127.0.0.1:$PORT" --cache off >"$WORK/log-$i" 2>&1 &
        PID=$!
        for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
        # Documents that render (each once: compiles the stylesheet, warms the DTDs).
        paths=""
        for f in "$WORK"/site/docbook/h/*.xml; do
            p=/docbook/h/$(basename "$f")
            [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://127.0.0.1:$PORT$p") == 200 ]] && paths+=" $p"
        done
        rps=$(BENCH_PATHS="$paths" wrk -t1 -c"$CONNS" -d"$DURATION" --timeout 30s -s "$HERE/bench.lua" \
            "http://127.0.0.1:$PORT/" | awk '/Requests\/sec/ {print $2}')
        RPS[$i]=$rps
        kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    done
    ratio=$(awk -v a="${RPS[0]}" -v b="${RPS[1]}" 'BEGIN {printf "%.2f", b / a}')
    RATIOS+=("$ratio")
    echo "round $round: A ${RPS[0]} req/s, B ${RPS[1]} req/s, B/A $ratio ($(wc -w <<<"$paths") documents)"
done
echo "median B/A: $(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
