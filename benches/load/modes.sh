#!/usr/bin/env bash
# The three cache modes side by side under wrk.
#
# Starts one release `axle serve` per cache mode (off, all, incremental) on
# 127.0.0.1, all three at once, checks they return byte-identical bodies,
# then runs wrk against each mode in turn for each URL and prints a markdown
# table (requests/sec, p50, p99, ratio to `off`) and writes the same results
# as JSON to benches/load/out/modes-<date>.json (ignored by git), or with
# RECORD=1 to benches/load/results/modes-<date>.json (committed).
#
# Usage (from the repo root):   bash benches/load/modes.sh
# Environment:
#   DURATION   wrk duration per run (default 10s)
#   RECORD     1: write the JSON to benches/load/results/ instead of
#              benches/load/out/ (the default, 0)
#   CARGO_TARGET_DIR   honoured when locating the built binary
#
# The servers are pinned to CPU 0 and wrk to CPU 1 (taskset), so client and
# server do not compete for a core. Only 127.0.0.1 is ever targeted.
set -euo pipefail

DURATION=${DURATION:-10s}
RECORD=${RECORD:-0}
THREADS=1
CONNECTIONS=32
MODES=(off all incremental)
URLS=(/articles/xml-pipelines.xml /trivial/)
WARM_REQUESTS=5
HOST=127.0.0.1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

die() {
    echo "modes.sh: $*" >&2
    exit 1
}

# Where the JSON goes (relative to the repository root), checked before
# anything is built or started.
case $RECORD in
0) OUT_DIR=benches/load/out ;;     # ignored by git
1) OUT_DIR=benches/load/results ;; # committed: a run the docs cite
*) die "RECORD must be 0 or 1 (got '$RECORD')" ;;
esac

# --- everything started here is stopped on exit ---------------------------
PIDS=()
WORK=$(mktemp -d "${TMPDIR:-/tmp}/axle-modes.XXXXXX")
KEEP_WORK=0
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [[ $KEEP_WORK == 0 ]]; then
        rm -rf "$WORK"
    else
        echo "modes.sh: kept $WORK for inspection" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools ------------------------------------------------------------------
SUDO=()
if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then
    SUDO=(sudo)
fi
apt_install() { # progress to stderr: stdout is the report
    echo "== installing $*" >&2
    if ! "${SUDO[@]}" apt-get install -y "$@" >&2; then
        "${SUDO[@]}" apt-get update >&2
        "${SUDO[@]}" apt-get install -y "$@" >&2
    fi
}
command -v wrk >/dev/null || apt_install wrk
command -v curl >/dev/null || apt_install curl
command -v taskset >/dev/null || apt_install util-linux
command -v wrk >/dev/null || die "wrk is not installed and could not be installed"

NPROC=$(nproc)
if ((NPROC >= 2)); then
    SERVER_PIN=(taskset -c 0)
    CLIENT_PIN=(taskset -c 1)
    PINNING="servers pinned to CPU 0, wrk pinned to CPU 1 (taskset)"
else
    SERVER_PIN=()
    CLIENT_PIN=()
    PINNING="NOT pinned: only $NPROC CPU (client and servers share it)"
fi

# --- build --------------------------------------------------------------------
echo "== cargo build --release" >&2
cargo build --release >&2
BIN="${CARGO_TARGET_DIR:-target}/release/axle"
[[ $BIN == /* ]] || BIN="$ROOT/$BIN"
[[ -x $BIN ]] || die "no binary at $BIN after the build"

# --- start one server per mode ------------------------------------------------
# Port 0: the kernel picks a free port; the server prints the address it got.
declare -A PORT
for mode in "${MODES[@]}"; do
    log="$WORK/server-$mode.log"
    "${SERVER_PIN[@]}" "$BIN" serve --root samples --listen "$HOST:0" --cache "$mode" \
        >"$log" 2>&1 &
    PIDS+=($!)
    port=""
    for _ in $(seq 1 100); do
        port=$(sed -n "s#.*on http://$HOST:\([0-9][0-9]*\)/.*#\1#p" "$log" | head -n1)
        [[ -n $port ]] && break
        kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$log" >&2; die "server ($mode) exited at start-up"; }
        sleep 0.1
    done
    [[ -n $port ]] || { cat "$log" >&2; die "server ($mode) did not report its address"; }
    PORT[$mode]=$port
done

# Wait until each answers.
for mode in "${MODES[@]}"; do
    ok=0
    for _ in $(seq 1 100); do
        # Any HTTP answer will do; a missing path leaves no trace in a cache.
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://$HOST:${PORT[$mode]}/.modes-sh-probe" || true)
        if [[ $code =~ ^[1-5][0-9][0-9]$ ]]; then
            ok=1
            break
        fi
        sleep 0.1
    done
    ((ok)) || { cat "$WORK/server-$mode.log" >&2; die "server ($mode) on port ${PORT[$mode]} does not answer"; }
done
echo "== servers: off=:${PORT[off]} all=:${PORT[all]} incremental=:${PORT[incremental]}" >&2
echo "== $PINNING" >&2

# --- the modes must agree byte for byte, cold (computed) and warm (cached) ----
check_identical() { # $1: label
    local url slug mode status
    for url in "${URLS[@]}"; do
        slug=$(echo "$url" | tr -c 'A-Za-z0-9.\n' '_')
        for mode in "${MODES[@]}"; do
            status=$(curl -sS -o "$WORK/body-$1-$mode-$slug" -w '%{http_code}' "http://$HOST:${PORT[$mode]}$url")
            [[ $status == 200 ]] || die "GET $url (mode $mode, $1) answered $status"
        done
        for mode in "${MODES[@]:1}"; do
            if ! cmp -s "$WORK/body-$1-off-$slug" "$WORK/body-$1-$mode-$slug"; then
                KEEP_WORK=1
                echo "modes.sh: BODIES DIFFER for $url ($1): off vs $mode" >&2
                echo "  off: $(wc -c <"$WORK/body-$1-off-$slug") bytes, $mode: $(wc -c <"$WORK/body-$1-$mode-$slug") bytes" >&2
                cmp "$WORK/body-$1-off-$slug" "$WORK/body-$1-$mode-$slug" >&2 || true
                diff "$WORK/body-$1-off-$slug" "$WORK/body-$1-$mode-$slug" | head -n 20 >&2 || true
                die "mode $mode returned different bytes from off for $url ($1)"
            fi
        done
        echo "== $url ($1): identical bodies in all modes ($(wc -c <"$WORK/body-$1-off-$slug") bytes)" >&2
    done
}
check_identical cold

# --- warm up, and record what the cache says afterwards ---------------------------
declare -A CACHE_STATUS
for url in "${URLS[@]}"; do
    for mode in "${MODES[@]}"; do
        for _ in $(seq 1 "$WARM_REQUESTS"); do
            curl -fsS -o /dev/null "http://$HOST:${PORT[$mode]}$url"
        done
        CACHE_STATUS[$mode$url]=$(curl -fsS -o /dev/null -D - "http://$HOST:${PORT[$mode]}$url" |
            tr -d '\r' | sed -n 's/^[Xx]-[Aa]xle-[Cc]ache: *//p')
    done
done
check_identical warm

# --- measure: per URL, the modes one after another ---------------------------------
to_ms() { # wrk latency ("812.00us", "1.23ms", "1.02s") -> milliseconds
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
        else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.3f", v * 60000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
        else { exit 1 }
    }'
}

# Other work on the machine skews everything below: say how busy it is with
# the servers idle (a 1 s sample of /proc/stat), and warn when it is busy.
cpu_busy_percent() {
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
    echo "$a $b" | awk '{busy = $3 - $1; idle = $4 - $2; printf "%.0f", (busy + idle) ? 100 * busy / (busy + idle) : 0}'
}
BUSY_BEFORE=$(cpu_busy_percent)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
if ((BUSY_BEFORE > 10)); then
    echo "modes.sh: WARNING: the machine is ${BUSY_BEFORE}% busy before measuring (servers idle); results will be noisy" >&2
fi

declare -A RPS P50 P99 REQS ERRS
for url in "${URLS[@]}"; do
    for mode in "${MODES[@]}"; do
        out="$WORK/wrk-$mode-$(echo "$url" | tr -c 'A-Za-z0-9.\n' '_').txt"
        echo "== wrk -t$THREADS -c$CONNECTIONS -d$DURATION $url ($mode)" >&2
        "${CLIENT_PIN[@]}" wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency \
            "http://$HOST:${PORT[$mode]}$url" >"$out"
        if grep -q 'Non-2xx or 3xx responses' "$out"; then
            KEEP_WORK=1
            cat "$out" >&2
            die "wrk saw error responses for $url (mode $mode)"
        fi
        RPS[$mode$url]=$(awk '/^Requests\/sec:/ {print $2}' "$out")
        P50[$mode$url]=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
        P99[$mode$url]=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
        REQS[$mode$url]=$(awk '/requests in/ {print $1}' "$out")
        ERRS[$mode$url]=$(sed -n 's/^ *Socket errors: *//p' "$out")
        [[ -n ${RPS[$mode$url]} && -n ${P50[$mode$url]} && -n ${P99[$mode$url]} ]] ||
            { KEEP_WORK=1; cat "$out" >&2; die "could not parse wrk's output"; }
    done
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ---------------------------------------------------------------------------
CPU_MODEL=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
CPU_MODEL=${CPU_MODEL:-unknown}
KERNEL=$(uname -r)
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo
echo "### Axle cache modes under wrk ($NOW)"
echo
echo "- Machine: $NPROC CPUs, $CPU_MODEL, Linux $KERNEL."
echo "- Load: \`wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency\` over HTTP/1.1 on 127.0.0.1; $PINNING."
echo "- Other load: CPUs ${BUSY_BEFORE}% busy with the servers idle just before measuring; load average $LOAD_BEFORE before, $LOAD_AFTER after."
for url in "${URLS[@]}"; do
    statuses=()
    for mode in "${MODES[@]}"; do
        statuses+=("$mode=${CACHE_STATUS[$mode$url]:-?}")
    done
    echo "- X-Axle-Cache after warm-up, $url: ${statuses[*]}."
done
echo
echo "| URL | mode | requests/sec | p50 | p99 | vs off |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for url in "${URLS[@]}"; do
    for mode in "${MODES[@]}"; do
        k=$mode$url
        # shellcheck disable=SC2016 # the backticks are markdown
        printf '| `%s` | %s | %s | %s ms | %s ms | %s× |\n' "$url" "$mode" \
            "$(printf '%.0f' "${RPS[$k]}")" "${P50[$k]}" "${P99[$k]}" "$(ratio "${RPS[$k]}" "${RPS[off$url]}")"
    done
done
if [[ -n $(for k in "${!ERRS[@]}"; do echo "${ERRS[$k]}"; done) ]]; then
    echo
    echo "wrk socket errors:"
    for url in "${URLS[@]}"; do
        for mode in "${MODES[@]}"; do
            if [[ -n ${ERRS[$mode$url]} ]]; then
                echo "- \`$url\` $mode: ${ERRS[$mode$url]}"
            fi
        done
    done
fi

# --- JSON -------------------------------------------------------------------------------
json_str() { # a JSON string literal
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}
mkdir -p "$OUT_DIR"
RESULT="$OUT_DIR/modes-$(date -u +%Y-%m-%dT%H%M%SZ).json"
{
    printf '{\n'
    printf '  "date": %s,\n' "$(json_str "$NOW")"
    printf '  "git_commit": %s,\n' "$(json_str "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")"
    printf '  "machine": {"nproc": %s, "cpu_model": %s, "kernel": %s},\n' \
        "$NPROC" "$(json_str "$CPU_MODEL")" "$(json_str "$KERNEL")"
    printf '  "load": {"tool": "wrk", "threads": %s, "connections": %s, "duration": %s, "pinning": %s},\n' \
        "$THREADS" "$CONNECTIONS" "$(json_str "$DURATION")" "$(json_str "$PINNING")"
    printf '  "background": {"cpu_busy_percent_before": %s, "loadavg_before": %s, "loadavg_after": %s},\n' \
        "$BUSY_BEFORE" "$(json_str "$LOAD_BEFORE")" "$(json_str "$LOAD_AFTER")"
    printf '  "results": [\n'
    first=1
    for url in "${URLS[@]}"; do
        for mode in "${MODES[@]}"; do
            k=$mode$url
            ((first)) || printf ',\n'
            first=0
            printf '    {"url": %s, "mode": %s, "cache_status": %s, "requests": %s, "requests_per_sec": %s, "p50_ms": %s, "p99_ms": %s, "ratio_to_off": %s, "socket_errors": %s}' \
                "$(json_str "$url")" "$(json_str "$mode")" "$(json_str "${CACHE_STATUS[$k]:-}")" \
                "${REQS[$k]:-null}" "${RPS[$k]}" "${P50[$k]}" "${P99[$k]}" \
                "$(ratio "${RPS[$k]}" "${RPS[off$url]}")" "$(json_str "${ERRS[$k]:-}")"
        done
    done
    printf '\n  ]\n}\n'
} >"$RESULT"
echo
if [[ $RECORD == 1 ]]; then
    echo "Results written to $RESULT (recorded: commit it with the docs that cite it)"
else
    echo "Results written to $RESULT (not tracked; RECORD=1 writes to benches/load/results/)"
fi
