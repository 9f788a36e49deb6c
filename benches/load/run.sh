#!/usr/bin/env bash
# Axle against real peers under load (see benches/load/README.md).
#
# Installs what it needs with apt-get when missing, starts every target on
# 127.0.0.1 with its own config under a temporary prefix, checks that every
# target returns the same body for the same URL before measuring (and again
# after), runs wrk against each (scenario, target, connection mode) cell,
# stops everything it started, prints one markdown table plus a targets
# table, and writes the same as JSON (with the machine's description) to
# benches/load/out/peers-<date>.json (and the markdown to .md); out/ is
# ignored by git. With RECORD=1 the two files go to benches/load/results/
# instead, to be committed (docs/performance.md says which runs are kept).
#
# Usage (from anywhere):   bash benches/load/run.sh
# Environment:
#   DURATION          wrk duration of each measured cell (default 10s)
#   WARMUP            unrecorded wrk run before each cell (default 2s; 0 = none)
#   SCENARIOS         subset, in any order (default: all, in this order):
#                     "doc trivial hello pairs shared c1000 churn dynamic
#                     dynamic-front heavy site compression warm-restart
#                     disk-hit shared-cache xsp"
#   XSP_ROUNDS        interleaved rounds of the xsp scenario (default
#                     PAIR_ROUNDS), each PAIR_DURATION long
#   PAIR_ROUNDS       interleaved rounds of the pairs scenario and of the
#                     dynamic (article) pair (default 9); PAIR_DURATION
#                     their length (default 3s), PAIR_WARMUP the unrecorded
#                     run before each (default 1s)
#   FRONT_ROUNDS      interleaved rounds of each dynamic-front group
#                     (default PAIR_ROUNDS); FRONT_DURATION their length
#                     (default PAIR_DURATION), FRONT_WARMUP the unrecorded
#                     run before each (default PAIR_WARMUP)
#   FRONT_GROUPS      dynamic-front groups (default "cmd-repeat cmd-change
#                     up-repeat up-change fcgi-repeat fcgi-change
#                     php-oneshot": source, then output kind; php-oneshot:
#                     live.php through FastCGI against one php-cgi process
#                     per request, both --cache off)
#   FRONT_FCGI_WORKERS  dynamic-front: the fastcgi source's php-cgi workers
#                     (default 2)
#   FRONT_STATIC      1 (default): the command's program is linked with
#                     cc -static (falls back to dynamic, with a note); 0:
#                     dynamically
#   SHARED_ROUNDS     rounds of the shared scenario (default 7), each
#                     SHARED_DURATION long (default 4s)
#   SITE_DOCS         documents of the site scenario (default 100000)
#   SITE_CACHE_MIB    --cache-size of the site scenario, MiB (default 64)
#   SITE_WARMUP_MAX   longest warm-up of the site scenario, s (default 60)
#   COMP_ROUNDS       interleaved rounds of the compression scenario (default
#                     PAIR_ROUNDS); COMP_DURATION, COMP_WARMUP as PAIR_*
#   WARM_SECONDS      warm-restart: seconds measured from start-up (default 30)
#   WARM_DIR_SIZE     warm-restart: --cache-dir-size (default 2GiB)
#   DISK_DOCS         disk-hit: documents (default 20000)
#   DISK_MEM          disk-hit: --cache-size of the disk-tier server (default 1MiB)
#   DISK_ROUNDS       disk-hit: interleaved rounds (default PAIR_ROUNDS);
#                     DISK_DURATION, DISK_WARMUP as PAIR_*
#   SC_SECONDS        shared-cache: seconds measured per case, from a cold
#                     start (default 60)
#   FILL_PASSES       warm-restart, disk-hit: most passes over every document
#                     to fill the disk tier (default 5; stops at 99%)
#   HEAVY_RUNS        xsltproc runs timed per heavy document (default 20)
#   CHURN_INTERVAL    seconds between rewrites in churn/dynamic (default 0.1)
#   SERVER_CPU / CLIENT_CPU   CPUs for servers and for wrk (default 0 / 1)
#   DOCBOOK_MAX_S     longest off-mode render of a DocBook test document kept
#                     for churn (docbook) (default 5)
#   LIBXSLT_SUITE     the libxslt test data (default ../shared/conformance/libxslt)
#   AXLE_BIN          use this axle binary instead of building one
#   FLOOR_BIN         use this hit_floor binary (examples/hit_floor.rs, the
#                     axum-floor target of doc) instead of building one
#   DYNAMIC_BIN       use this dynamic_source binary (examples/dynamic_source.rs,
#                     the server of the dynamic scenario) instead of building one
#   KEEP_WORK=1       keep the temporary prefix (it is kept anyway when a
#                     body check fails)
#   RECORD=1          write the report to benches/load/results/ (committed)
#                     instead of benches/load/out/ (ignored; the default)
#
# Only 127.0.0.1 is ever targeted. No system service is started: nginx,
# Apache and Starlet run by hand in the foreground (each in its own process
# group, with its own config and pid file under the prefix), and exactly the
# processes started here are stopped on exit.
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
ALL_SCENARIOS="doc trivial hello pairs shared c1000 churn dynamic dynamic-front heavy site compression warm-restart disk-hit shared-cache xsp"
SCENARIOS=${SCENARIOS:-$ALL_SCENARIOS}
PAIR_ROUNDS=${PAIR_ROUNDS:-9}
PAIR_DURATION=${PAIR_DURATION:-3s}
PAIR_WARMUP=${PAIR_WARMUP:-1s}
FRONT_ROUNDS=${FRONT_ROUNDS:-$PAIR_ROUNDS}
XSP_ROUNDS=${XSP_ROUNDS:-$PAIR_ROUNDS}
FRONT_DURATION=${FRONT_DURATION:-$PAIR_DURATION}
FRONT_WARMUP=${FRONT_WARMUP:-$PAIR_WARMUP}
FRONT_GROUPS=${FRONT_GROUPS:-cmd-repeat cmd-change up-repeat up-change fcgi-repeat fcgi-change php-oneshot}
FRONT_FCGI_WORKERS=${FRONT_FCGI_WORKERS:-2}
FRONT_STATIC=${FRONT_STATIC:-1}
SHARED_ROUNDS=${SHARED_ROUNDS:-7}
SHARED_DURATION=${SHARED_DURATION:-4s}
SITE_DOCS=${SITE_DOCS:-100000}
SITE_CACHE_MIB=${SITE_CACHE_MIB:-64}
SITE_WARMUP_MAX=${SITE_WARMUP_MAX:-60}
COMP_ROUNDS=${COMP_ROUNDS:-$PAIR_ROUNDS}
COMP_DURATION=${COMP_DURATION:-$PAIR_DURATION}
COMP_WARMUP=${COMP_WARMUP:-$PAIR_WARMUP}
WARM_SECONDS=${WARM_SECONDS:-30}
WARM_DIR_SIZE=${WARM_DIR_SIZE:-2GiB}
DISK_DOCS=${DISK_DOCS:-20000}
DISK_MEM=${DISK_MEM:-1MiB}
DISK_ROUNDS=${DISK_ROUNDS:-$PAIR_ROUNDS}
DISK_DURATION=${DISK_DURATION:-$PAIR_DURATION}
DISK_WARMUP=${DISK_WARMUP:-$PAIR_WARMUP}
FILL_PASSES=${FILL_PASSES:-5}
SC_SECONDS=${SC_SECONDS:-60}
HEAVY_RUNS=${HEAVY_RUNS:-20}
CHURN_INTERVAL=${CHURN_INTERVAL:-0.1}
DOCBOOK_MAX_S=${DOCBOOK_MAX_S:-5}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
KEEP_WORK=${KEEP_WORK:-0}
RECORD=${RECORD:-0}

HOST=127.0.0.1
THREADS=1            # wrk threads: the client has one CPU
CONNECTIONS=32       # doc, trivial, churn, dynamic, site (as modes.sh)
HELLO_CONNECTIONS=40
C1000_CONNECTIONS=1000
HEAVY_CONNECTIONS=8  # uncached heavy requests take 50-200 ms each
HELLO_BYTES=128

DOC_URL=/articles/xml-pipelines.xml
TRIVIAL_URL=/trivial/
HELLO_URL=/hello/hello.xml
DOCBOOK_URL=/docbook/test/gdp-handbook.xml
DYNAMIC_URL=/dynamic/article.xml     # where examples/dynamic_source.rs serves its generated source
DYNAMIC_DOCBOOK_CANDIDATES="book.xml article.xml"   # the first that renders is the dynamic (docbook) document
XMLSPEC_URL=/xmlspec/REC-xml-20001006.xml

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LIBXSLT_SUITE=${LIBXSLT_SUITE:-$ROOT/../shared/conformance/libxslt}
cd "$ROOT"

for s in $SCENARIOS; do
    [[ " $ALL_SCENARIOS " == *" $s "* ]] || { echo "run.sh: unknown scenario '$s' (known: $ALL_SCENARIOS)" >&2; exit 2; }
done
FRONT_KNOWN="cmd-repeat cmd-change up-repeat up-change fcgi-repeat fcgi-change php-oneshot"
for g in $FRONT_GROUPS; do
    [[ " $FRONT_KNOWN " == *" $g "* ]] ||
        { echo "run.sh: unknown dynamic-front group '$g' (known: $FRONT_KNOWN)" >&2; exit 2; }
done
[[ $FRONT_FCGI_WORKERS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: FRONT_FCGI_WORKERS must be a positive count (got '$FRONT_FCGI_WORKERS')" >&2; exit 2; }
[[ $FRONT_STATIC == 0 || $FRONT_STATIC == 1 ]] || { echo "run.sh: FRONT_STATIC must be 0 or 1 (got '$FRONT_STATIC')" >&2; exit 2; }
# Where the report goes (relative to the repository root): checked here, not
# after an hour of measuring.
case $RECORD in
0) OUT_DIR=benches/load/out ;;     # ignored by git
1) OUT_DIR=benches/load/results ;; # committed: a run the docs cite
*) echo "run.sh: RECORD must be 0 or 1 (got '$RECORD')" >&2; exit 2 ;;
esac
want() { [[ " $SCENARIOS " == *" $1 "* ]]; }

log() { echo "== $*" >&2; }
warn() { echo "run.sh: WARNING: $*" >&2; }
die() {
    echo "run.sh: $*" >&2
    exit 1
}

# --- everything started here is stopped on exit ------------------------------------
# Each process is started with setsid, so it leads its own process group
# (PGID = its PID) and stopping it reaches its children (nginx's worker,
# Apache's and Starlet's preforked children) and nothing else.
PIDS=()
umask 022
WORK=$(mktemp -d "${TMPDIR:-/tmp}/axle-load.XXXXXX")
chmod 755 "$WORK" # Apache's and nginx's children run as www-data and read the sites here
RESULTS=$WORK/results.jsonl
: >"$RESULTS"

stop_pid() { # PID: TERM its process group, then KILL it after 10 s
    local pid=$1 i
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
        kill -0 -- "-$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 -- "-$pid" 2>/dev/null; then
        warn "process group $pid did not stop on SIGTERM; sending SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    local kept=() p
    for p in "${PIDS[@]}"; do
        [[ $p == "$pid" ]] || kept+=("$p")
    done
    PIDS=("${kept[@]}")
}
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        stop_pid "$pid"
    done
    if [[ $KEEP_WORK == 0 ]]; then
        rm -rf "$WORK"
    else
        echo "run.sh: kept $WORK for inspection" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_bg CPU LOG CMD...: start CMD pinned to CPU, in its own session;
# sets STARTED_PID.
start_bg() {
    local cpu=$1 out=$2
    shift 2
    setsid taskset -c "$cpu" "$@" >"$out" 2>&1 </dev/null &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
}

# --- tools --------------------------------------------------------------------------------
APT_UPDATED=0
apt_install() { # progress to stderr: stdout is the report
    log "installing $*"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2; then
        if [[ $APT_UPDATED == 0 ]]; then
            APT_UPDATED=1
            apt-get update >&2
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2
    fi
}
[[ $(id -u) == 0 ]] || die "run as root: it installs packages with apt-get and starts Apache/nginx with their own configs"
NEED=()
command -v curl >/dev/null || NEED+=(curl)
command -v taskset >/dev/null || NEED+=(util-linux)
command -v setsid >/dev/null || NEED+=(util-linux)
command -v wrk >/dev/null || NEED+=(wrk)
command -v nginx >/dev/null || NEED+=(nginx)
[[ -e /usr/lib/nginx/modules/ngx_http_xslt_filter_module.so ]] || NEED+=(libnginx-mod-http-xslt-filter)
[[ -x /usr/sbin/apache2 ]] || NEED+=(apache2)
[[ -e /usr/lib/apache2/modules/mod_perl.so ]] || NEED+=(libapache2-mod-perl2)
perl -MXML::LibXSLT -e1 2>/dev/null || NEED+=(libxml-libxslt-perl)
perl -MPlack::Handler::Starlet -e1 2>/dev/null || NEED+=(starlet)
command -v ab >/dev/null || NEED+=(apache2-utils)
command -v xsltproc >/dev/null || NEED+=(xsltproc)
command -v hyperfine >/dev/null || NEED+=(hyperfine)
# compression decodes Axle's br bodies to check them
if [[ " $SCENARIOS " == *" compression "* ]]; then
    command -v brotli >/dev/null || NEED+=(brotli)
fi
# shared-cache runs a Redis of its own
if [[ " $SCENARIOS " == *" shared-cache "* ]]; then
    command -v redis-server >/dev/null || NEED+=(redis-server)
fi
# dynamic-front compiles its command's program (gen/front.c) and runs
# gen/live.php with php-cgi (FastCGI workers, and one process per request)
if [[ " $SCENARIOS " == *" dynamic-front "* ]]; then
    command -v cc >/dev/null || NEED+=(gcc libc6-dev)
    [[ " $FRONT_GROUPS " != *" fcgi-"* && " $FRONT_GROUPS " != *" php-"* ]] ||
        command -v php-cgi >/dev/null || NEED+=(php-cgi)
fi
if ((${#NEED[@]})); then
    # policy-rc.d decides whether the packages' services start on install;
    # they are never started by this script.
    apt_install "${NEED[@]}"
fi
for tool in curl taskset setsid wrk nginx xsltproc hyperfine plackup; do
    command -v "$tool" >/dev/null || die "$tool is not installed and could not be installed"
done

NPROC=$(nproc)
((NPROC >= 2)) || die "needs 2 CPUs to pin servers and client apart (found $NPROC)"
PINNING="every server (and xsltproc) pinned to CPU $SERVER_CPU, wrk (and the churn/dynamic rewriters, and the nginx backend of dynamic-front) pinned to CPU $CLIENT_CPU, with taskset"
HZ=$(getconf CLK_TCK)

# c1000 needs 1,000 client and 1,000 server sockets.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
((NOFILE >= 4096)) || warn "open files limit is only $NOFILE: c1000 will fail"

# --- build ---------------------------------------------------------------------------------
if [[ -n ${AXLE_BIN:-} ]]; then
    BIN=$AXLE_BIN
else
    log "cargo build --release"
    cargo build --release >&2
    BIN="${CARGO_TARGET_DIR:-target}/release/axle"
fi
[[ $BIN == /* ]] || BIN="$ROOT/$BIN"
[[ -x $BIN ]] || die "no axle binary at $BIN"

# build_example NAME OVERRIDE: the example binary NAME (or OVERRIDE if set),
# built like axle (honouring CARGO_TARGET_DIR); prints its path.
build_example() {
    local name=$1 bin=$2
    if [[ -z $bin ]]; then
        log "cargo build --release --example $name"
        cargo build --release --example "$name" >&2
        bin="${CARGO_TARGET_DIR:-target}/release/examples/$name"
    fi
    [[ $bin == /* ]] || bin="$ROOT/$bin"
    [[ -x $bin ]] || die "no $name binary at $bin"
    echo "$bin"
}
FLOOR=""   # the axum-floor target of doc
DYNAMIC="" # the server of the dynamic scenario
if want doc; then FLOOR=$(build_example hit_floor "${FLOOR_BIN:-}"); fi
if want dynamic; then DYNAMIC=$(build_example dynamic_source "${DYNAMIC_BIN:-}"); fi

BENCH=(perl "$HERE/bench.pl")
add() { "${BENCH[@]}" add "$RESULTS" "$@"; }

# --- helpers -------------------------------------------------------------------------------
wait_http() { # PORT NAME: wait until anything answers HTTP on PORT
    local port=$1 name=$2 code i
    for i in $(seq 1 200); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://$HOST:$port/.run-sh-probe" || true)
        [[ $code =~ ^[1-5][0-9][0-9]$ ]] && return 0
        sleep 0.1
    done
    die "$name does not answer on port $port"
}

free_port() { "${BENCH[@]}" free-port; }

# start_listening NAME LOG CMD...: start CMD (which listens on $HOST:0 and
# prints a "... on http://ADDR/ ..." line, as axle serve does) on the server
# CPU; sets AX_PID and AX_PORT
start_listening() {
    local name=$1 out=$2 i port=""
    shift 2
    start_bg "$SERVER_CPU" "$out" "$@"
    AX_PID=$STARTED_PID
    for i in $(seq 1 200); do
        # (not the admin listener's line, which may come first)
        port=$({ grep -v 'admin listener' "$out" || true; } | sed -n "s#.*on http://$HOST:\([0-9][0-9]*\)/.*#\1#p" | head -n1)
        [[ -n $port ]] && break
        kill -0 "$AX_PID" 2>/dev/null || { cat "$out" >&2; die "$name exited at start-up"; }
        sleep 0.1
    done
    [[ -n $port ]] || { cat "$out" >&2; die "$name did not report its address"; }
    AX_PORT=$port
    wait_http "$port" "$name"
}

# start_axle NAME ROOT MODE [ARGS...]: sets AX_PID and AX_PORT
start_axle() {
    local name=$1 root=$2 mode=$3
    shift 3
    start_listening "axle ($name)" "$WORK/logs/axle-$name.log" \
        "$BIN" serve --root "$root" --listen "$HOST:0" --cache "$mode" "$@"
}

# start_dynamic NAME ROOT MODE [ARGS...]: examples/dynamic_source.rs; sets
# AX_PID and AX_PORT
start_dynamic() {
    local name=$1 root=$2 mode=$3
    shift 3
    start_listening "dynamic_source ($name)" "$WORK/logs/dynamic-$name.log" \
        "$DYNAMIC" --root "$root" --listen "$HOST:0" --cache "$mode" "$@"
}

cpu_busy_percent() { # whole machine, 1 s sample
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
    echo "$a $b" | awk '{busy = $3 - $1; idle = $4 - $2; printf "%.0f", (busy + idle) ? 100 * busy / (busy + idle) : 0}'
}
BUSY_MAX=0
sample_busy() { # WHEN
    local b
    b=$(cpu_busy_percent)
    add type=busy "when=$1" "busy_percent=$b" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
    ((b > BUSY_MAX)) && BUSY_MAX=$b
    log "machine ${b}% busy ($1, servers idle)"
    if ((b > 10)); then
        warn "the machine is ${b}% busy with the servers idle ($1): results will be noisy"
    fi
}

# --- body checks ---------------------------------------------------------------------------
declare -A BAD      # "scenario/target" -> 1 when its body check failed
CHECK_FAILURES=0
mkdir -p "$WORK/check" "$WORK/logs" "$WORK/wrk"

# check SCENARIO CASE URL REFERENCE WHEN NAME PORT [NAME PORT...]
# Every target must answer 200 with exactly the bytes of REFERENCE. (No
# normalisation: every peer here gives identical bytes. If one ever needs
# it, it is to be done here, and recorded as normalised-identical with what
# was normalised.)
check() {
    local scen=$1 case=$2 url=$3 ref=$4 when=$5 name port out status result
    shift 5
    while (($#)); do
        name=$1 port=$2
        shift 2
        out="$WORK/check/$scen-$case-$name-$when.body"
        status=$(curl -sS -o "$out" -w '%{http_code}' "http://$HOST:$port$url" 2>>"$WORK/logs/curl.log" || echo 000)
        if [[ $status != 200 ]]; then
            result="HTTP $status"
        elif cmp -s "$ref" "$out"; then
            result=identical
        else
            result="DIFFERENT: $(wc -c <"$out") bytes vs $(wc -c <"$ref") in the reference; $(cmp "$ref" "$out" 2>&1 | sed 's/^.* differ: //' | head -n1)"
        fi
        add type=check "scenario=$scen" "case=$case" "target=$name" "url=$url" "when=$when" "result=$result" \
            "bytes=$(wc -c <"$out")"
        if [[ $result != identical ]]; then
            BAD[$scen/$name]=1
            CHECK_FAILURES=$((CHECK_FAILURES + 1))
            KEEP_WORK=1
            warn "BODY CHECK FAILED: $scen $name $url ($when): $result (reference $ref, got $out)"
            diff <(fold -w 120 "$ref") <(fold -w 120 "$out") 2>/dev/null | head -n 20 >&2 || true
        fi
    done
}

axle_cache_header() { # PORT URL
    curl -sS -o /dev/null -D - "http://$HOST:$1$2" 2>/dev/null | tr -d '\r' | sed -n 's/^[Xx]-[Aa]xle-[Cc]ache: *//p' | head -n1
}

# --- one measured cell ----------------------------------------------------------------------
# cell SCENARIO CASE TARGET CONN CONNECTIONS PORT SERVER_PID URL [key=value...]
# Globals: CELL_ENV (environment for bench.lua), WRK_EXTRA (extra wrk
# options), CELL_BACKEND_PID (a backend pinned to the client CPU, as
# dynamic-front's nginx: its CPU time is reported as backend_cpu_pct and
# not counted as other load on the client CPU)
CELL_ENV=()
WRK_EXTRA=()
CELL_BACKEND_PID=""
cell() {
    local scen=$1 case=$2 target=$3 conn=$4 conns=$5 port=$6 spid=$7 url=$8
    shift 8
    if [[ -n ${BAD[$scen/$target]:-} ]]; then
        warn "skipping $scen $target: its body check failed"
        add type=note "text=$scen: $target was not measured because its body check failed"
        return 0
    fi
    local hdr=()
    [[ $conn == close ]] && hdr=(-H "Connection: close")
    local wrk=(wrk -t"$THREADS" -c"$conns" -s "$HERE/bench.lua" "${hdr[@]}" "${WRK_EXTRA[@]}")
    local full="http://$HOST:$port$url"
    if [[ $WARMUP != 0 ]]; then
        env "${CELL_ENV[@]}" taskset -c "$CLIENT_CPU" "${wrk[@]}" -d"$WARMUP" "$full" >/dev/null 2>&1 || true
    fi
    local cache=""
    if [[ $target == axle-* && $url != / ]]; then cache=$(axle_cache_header "$port" "$url"); fi
    local out="$WORK/wrk/$scen-$case-$target-$conn.txt" before after client st ccpu b0=0 b1=0
    [[ -n $CELL_BACKEND_PID ]] && b0=$("${BENCH[@]}" ticks "$CELL_BACKEND_PID")
    before=$("${BENCH[@]}" snapshot "$SERVER_CPU" "$CLIENT_CPU" "$spid")
    client=$("${BENCH[@]}" client "$out" env "${CELL_ENV[@]}" taskset -c "$CLIENT_CPU" "${wrk[@]}" -d"$DURATION" "$full")
    after=$("${BENCH[@]}" snapshot "$SERVER_CPU" "$CLIENT_CPU" "$spid")
    [[ -n $CELL_BACKEND_PID ]] && b1=$("${BENCH[@]}" ticks "$CELL_BACKEND_PID")
    read -r st ccpu <<<"$client"
    if [[ $st != 0 ]] || ! grep -q '^BENCHJSON ' "$out"; then
        warn "wrk failed for $scen $target $conn (exit $st):"
        cat "$out" >&2
        add type=note "text=$scen ($case): wrk failed for $target ($conn), exit status $st"
        return 0
    fi
    # CPU accounting: ticks of the server's process tree, of wrk, and of the
    # two CPUs, between the snapshots.
    local stats
    stats=$(echo "$before $after $ccpu $HZ $b0 $b1 ${CELL_BACKEND_PID:-0}" | awk '{
        # each snapshot: busy steal total (server CPU), busy steal total
        # (client CPU), server tree ticks, time; then the backend tree
        # ticks before and after
        dt = $16 - $8; hz = $18
        srv = $15 - $7
        s_busy = $9 - $1; s_steal = $10 - $2; s_tot = $11 - $3
        c_busy = $12 - $4; c_tot = $14 - $6
        cli = $17 * hz
        bk = $20 - $19
        o_s = s_tot ? 100 * (s_busy - srv) / s_tot : 0; if (o_s < 0) o_s = 0
        o_c = c_tot ? 100 * (c_busy - cli - bk) / c_tot : 0; if (o_c < 0) o_c = 0
        printf "server_cpu_pct=%.1f client_cpu_pct=%.1f other_server_cpu_pct=%.1f other_client_cpu_pct=%.1f steal_server_cpu_pct=%.1f",
            100 * srv / (dt * hz), 100 * cli / (dt * hz), o_s, o_c, s_tot ? 100 * s_steal / s_tot : 0
        if ($21 != 0) printf " backend_cpu_pct=%.1f", 100 * bk / (dt * hz)
    }')
    # shellcheck disable=SC2086 # stats is key=value words
    add type=cell "scenario=$scen" "case=$case" "target=$target" "conn=$conn" "connections=$conns" \
        "threads=$THREADS" "url=$url" "cache_status=$cache" "duration=$DURATION" $stats "wrk=$out" "$@"
    log "$(printf '%-8s %-9s %-17s %-10s c=%-4s %s' "$scen" "$case" "$target" "$conn" "$conns" \
        "$(awk '/^Requests\/sec:/ {print $2 " req/s"}' "$out") $(grep -o '"status":[0-9]*' "$out" | head -n1)")"
}

# --- the main site: doc, trivial, hello and c1000 ---------------------------------------------
MAIN_UP=0
declare -A PORT
declare -A SPID
REF=$WORK/ref
mkdir -p "$REF"

start_main() {
    ((MAIN_UP)) && return 0
    MAIN_UP=1
    local site=$WORK/main/site static=$WORK/main/static
    mkdir -p "$WORK/main"
    cp -r samples "$site"
    # hello: a one-stage chain whose output is exactly $HELLO_BYTES bytes
    mkdir -p "$site/hello"
    cp "$HERE/gen/hello.xsl" "$site/hello/hello.xsl"
    write_hello() {
        printf '<?xml version="1.0" encoding="UTF-8"?>\n<?xml-stylesheet href="hello.xsl" type="text/xsl"?>\n<hello>%s</hello>\n' "$1" >"$site/hello/hello.xml"
    }
    write_hello ""
    local base pad msg
    base=$("$BIN" render --root "$site" "$site/hello/hello.xml" | wc -c)
    pad=$((HELLO_BYTES - base))
    ((pad > 0)) || die "the empty hello page is already $base bytes"
    msg=$(printf 'Hello, world! %.0s' $(seq 1 20))
    write_hello "${msg:0:pad}"

    for mode in off all incremental; do
        start_axle "main-$mode" "$site" "$mode"
        PORT[axle-$mode]=$AX_PORT
        SPID[axle-$mode]=$AX_PID
    done
    # References: what Axle (off) serves, cold. nginx-static serves exactly
    # these bytes; every other target must give the same.
    local url name
    for name in doc trivial hello; do
        case $name in doc) url=$DOC_URL ;; trivial) url=$TRIVIAL_URL ;; hello) url=$HELLO_URL ;; esac
        [[ $(curl -sS -o "$REF/$name" -w '%{http_code}' "http://$HOST:${PORT[axle-off]}$url") == 200 ]] ||
            die "axle (off) does not serve $url"
    done
    [[ $(wc -c <"$REF/hello") == "$HELLO_BYTES" ]] ||
        die "the hello body is $(wc -c <"$REF/hello") bytes, not $HELLO_BYTES"
    mkdir -p "$static/articles" "$static/trivial" "$static/hello"
    cp "$REF/doc" "$static/articles/xml-pipelines.xml"
    cp "$REF/trivial" "$static/trivial/index.xml"
    cp "$REF/hello" "$static/hello/hello.xml"

    # axum-floor (examples/hit_floor.rs): the same precomputed files, read
    # into memory at start-up, one stat per request: the floor of Axle's
    # HTTP stack for a hit
    if [[ -n $FLOOR ]]; then
        start_listening axum-floor "$WORK/logs/axum-floor.log" "$FLOOR" --root "$static" --listen "$HOST:0"
        PORT[axum-floor]=$AX_PORT
        SPID[axum-floor]=$AX_PID
    fi

    # nginx: static and XSLT filter, one server, two ports
    local ng=$WORK/nginx
    mkdir -p "$ng/tmp"
    PORT[nginx-static]=$(free_port)
    PORT[nginx-xslt]=$(free_port)
    while [[ ${PORT[nginx-xslt]} == "${PORT[nginx-static]}" ]]; do PORT[nginx-xslt]=$(free_port); done
    sed -e "s#@PREFIX@#$ng#g" -e "s#@SITE@#$site#g" -e "s#@STATIC_ROOT@#$static#g" \
        -e "s#@STATIC_PORT@#${PORT[nginx-static]}#g" -e "s#@XSLT_PORT@#${PORT[nginx-xslt]}#g" \
        -e "s#@XSLT_MODULE@#/usr/lib/nginx/modules/ngx_http_xslt_filter_module.so#g" \
        -e "s#@NOFILE@#$NOFILE#g" -e "s#@USER@#www-data#g" -e "s#@GROUP@#www-data#g" \
        "$HERE/peers/nginx/nginx.conf.in" >"$ng/nginx.conf"
    nginx -t -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" >"$WORK/logs/nginx-t.log" 2>&1 ||
        { cat "$WORK/logs/nginx-t.log" >&2; die "nginx rejects its config"; }
    start_bg "$SERVER_CPU" "$WORK/logs/nginx.log" nginx -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log"
    SPID[nginx-static]=$STARTED_PID
    SPID[nginx-xslt]=$STARTED_PID
    wait_http "${PORT[nginx-static]}" nginx-static
    wait_http "${PORT[nginx-xslt]}" nginx-xslt

    # Apache + mod_perl2 + XML::LibXSLT: one prefork server, two ports
    local ap=$WORK/apache
    mkdir -p "$ap/run"
    PORT[modperl]=$(free_port)
    PORT[modperl-cache]=$(free_port)
    while [[ ${PORT[modperl-cache]} == "${PORT[modperl]}" ]]; do PORT[modperl-cache]=$(free_port); done
    sed -e "s#@PREFIX@#$ap#g" -e "s#@SITE@#$site#g" -e "s#@PORT_NOCACHE@#${PORT[modperl]}#g" \
        -e "s#@PORT_CACHE@#${PORT[modperl-cache]}#g" -e "s#@PERL_LIB@#$HERE/peers/perl#g" \
        -e "s#@MODULES@#/usr/lib/apache2/modules#g" -e "s#@USER@#www-data#g" -e "s#@GROUP@#www-data#g" \
        "$HERE/peers/apache/httpd.conf.in" >"$ap/httpd.conf"
    start_bg "$SERVER_CPU" "$WORK/logs/apache.log" apache2 -d "$ap" -f "$ap/httpd.conf" -DFOREGROUND
    SPID[modperl]=$STARTED_PID
    SPID[modperl-cache]=$STARTED_PID
    wait_http "${PORT[modperl]}" modperl
    wait_http "${PORT[modperl-cache]}" modperl-cache

    # Starlet (PSGI): the hello body, read from the reference file
    PORT[starlet]=$(free_port)
    export HELLO_BODY=$REF/hello
    start_bg "$SERVER_CPU" "$WORK/logs/starlet.log" \
        plackup -E deployment -s Starlet --host "$HOST" --port "${PORT[starlet]}" \
        --max-workers "$HELLO_CONNECTIONS" --max-keepalive-reqs 100000000 \
        --max-reqs-per-child 100000000 "$HERE/peers/starlet/hello.psgi"
    SPID[starlet]=$STARTED_PID
    wait_http "${PORT[starlet]}" starlet
    log "main site: axle off=:${PORT[axle-off]} all=:${PORT[axle-all]} incremental=:${PORT[axle-incremental]}" \
        "nginx-static=:${PORT[nginx-static]} nginx-xslt=:${PORT[nginx-xslt]}" \
        "modperl=:${PORT[modperl]} modperl-cache=:${PORT[modperl-cache]} starlet=:${PORT[starlet]}" \
        "${PORT[axum-floor]:+axum-floor=:${PORT[axum-floor]}}"
}

stop_main() {
    ((MAIN_UP)) || return 0
    local pid
    for pid in $(printf '%s\n' "${SPID[@]}" | sort -u); do
        stop_pid "$pid"
    done
    MAIN_UP=0
}

targets_args() { # NAME...: "NAME PORT" pairs for check()
    local n
    for n in "$@"; do printf '%s %s ' "$n" "${PORT[$n]}"; done
}

scenario_doc_like() { # SCENARIO CASE URL REF
    local scen=$1 case=$2 url=$3 ref=$4 t floor=()
    # doc: axum-floor next to nginx-static
    [[ $scen == doc && -n ${PORT[axum-floor]:-} ]] && floor=(axum-floor)
    local peers=(nginx-static "${floor[@]}" nginx-xslt modperl modperl-cache axle-off axle-all axle-incremental)
    # shellcheck disable=SC2046
    check "$scen" "$case" "$url" "$ref" before $(targets_args "${peers[@]}")
    for t in "${peers[@]}"; do
        cell "$scen" "$case" "$t" keep-alive "$CONNECTIONS" "${PORT[$t]}" "${SPID[$t]}" "$url"
    done
    if [[ $scen == doc ]]; then
        for t in nginx-static "${floor[@]}" modperl-cache axle-all axle-incremental; do
            cell "$scen" "$case" "$t" close "$CONNECTIONS" "${PORT[$t]}" "${SPID[$t]}" "$url"
        done
    fi
    # shellcheck disable=SC2046
    check "$scen" "$case" "$url" "$ref" after $(targets_args "${peers[@]}")
}

scenario_hello() {
    local peers=(starlet nginx-static axle-off axle-all axle-incremental) t conn
    # shellcheck disable=SC2046
    check hello hello "$HELLO_URL" "$REF/hello" before $(targets_args "${peers[@]}")
    for conn in keep-alive close; do
        for t in "${peers[@]}"; do
            cell hello hello "$t" "$conn" "$HELLO_CONNECTIONS" "${PORT[$t]}" "${SPID[$t]}" "$HELLO_URL"
        done
    done
    # shellcheck disable=SC2046
    check hello hello "$HELLO_URL" "$REF/hello" after $(targets_args "${peers[@]}")
}

# pairs: the targets whose ratio is close to its goal (incremental ÷ all on
# the all-hit path, near 1; doc hit ÷ nginx static; doc no-cache ÷
# nginx-xslt) are within the drift between two cells measured minutes
# apart on a shared machine; so each pair of targets is measured again in
# PAIR_ROUNDS back-to-back rounds (order alternating), and the target takes
# the median of the per-round ratios. Many short rounds rather than a few
# long ones: the disturbances here come in bursts of seconds, and a median
# over more rounds leaves them out (5 rounds of 5 s still gave medians of
# identical code from 0.91 to 1.02).
# Each entry: CASE URL-NAME CONNECTIONS TARGET-A TARGET-B (ratio A ÷ B).
PAIRS=(
    "doc doc $CONNECTIONS axle-incremental axle-all"
    "trivial trivial $CONNECTIONS axle-incremental axle-all"
    "hello hello $HELLO_CONNECTIONS axle-incremental axle-all"
    "doc-hit doc $CONNECTIONS axle-incremental nginx-static"
    "doc-nocache doc $CONNECTIONS axle-off nginx-xslt"
    "trivial-nocache trivial $CONNECTIONS axle-off nginx-xslt"
)
main_url() { # NAME (doc, trivial, hello): that page's URL on the main site
    case $1 in
    doc) echo "$DOC_URL" ;;
    trivial) echo "$TRIVIAL_URL" ;;
    hello) echo "$HELLO_URL" ;;
    esac
}
scenario_pairs() {
    local entry case name conns a b url round t order
    for entry in "${PAIRS[@]}"; do
        read -r case name conns a b <<<"$entry"
        url=$(main_url "$name")
        # shellcheck disable=SC2046
        check pairs "$case" "$url" "$REF/$name" before $(targets_args "$a" "$b")
        for ((round = 1; round <= PAIR_ROUNDS; round++)); do
            order="$b $a"
            ((round % 2)) || order="$a $b"
            for t in $order; do
                WARMUP=$PAIR_WARMUP DURATION=$PAIR_DURATION cell pairs "$case" "$t" keep-alive "$conns" \
                    "${PORT[$t]}" "${SPID[$t]}" "$url" "round=$round"
            done
        done
    done
}

# shared: two Axle servers of the main site loaded at the same time, both
# on SERVER_CPU, each by its own wrk on CLIENT_CPU, for SHARED_ROUNDS rounds
# of SHARED_DURATION. The scheduler splits the one server CPU between the
# two busy servers, so the ratio of their throughputs is the inverse ratio
# of their CPU cost per request, and a change in the machine's speed
# (other tenants, clock) hits both alike, which interleaved rounds cannot
# promise. An A/A pair (two incremental servers of the same site) in the
# same run shows the method's own spread. Used for incremental ÷ all on
# the all-hit path, two modes of one binary whose true ratio is near 1.
# Only for servers that run the same threads: the scheduler shares the CPU
# between threads, not processes, so a server whose transform thread is
# busy too (a miss, `off`) gets more than half (off ÷ incremental on the
# trivial page measured 8.5–9× shared against 16× in single cells).
# Each entry: CASE URL-NAME CONNECTIONS TARGET-A TARGET-B (ratio A ÷ B).
SHARED_PAIRS=(
    "doc-aa doc $CONNECTIONS axle-incremental axle-incremental-2"
    "doc doc $CONNECTIONS axle-incremental axle-all"
    "trivial trivial $CONNECTIONS axle-incremental axle-all"
    "hello hello $HELLO_CONNECTIONS axle-incremental axle-all"
)
scenario_shared() {
    if [[ -z ${PORT[axle-incremental-2]:-} ]]; then
        start_axle main-incremental-2 "$WORK/main/site" incremental
        PORT[axle-incremental-2]=$AX_PORT
        SPID[axle-incremental-2]=$AX_PID
    fi
    add type=note "text=shared: both servers of a pair loaded at the same time for $SHARED_ROUNDS rounds of $SHARED_DURATION, both on CPU $SERVER_CPU, each by its own wrk on CPU $CLIENT_CPU; the ratio of their throughputs is the inverse ratio of their CPU cost per request. doc-aa pairs two incremental servers of the same site: the method's own spread"
    local entry case name conns a b url round t full out st
    local wrk=(wrk -t"$THREADS" -s "$HERE/bench.lua")
    for entry in "${SHARED_PAIRS[@]}"; do
        read -r case name conns a b <<<"$entry"
        url=$(main_url "$name")
        # shellcheck disable=SC2046
        check shared "$case" "$url" "$REF/$name" before $(targets_args "$a" "$b")
        for t in "$a" "$b"; do
            [[ -n ${BAD[shared/$t]:-} ]] && continue 2
            taskset -c "$CLIENT_CPU" "${wrk[@]}" -c"$conns" -d"$PAIR_WARMUP" "http://$HOST:${PORT[$t]}$url" >/dev/null 2>&1 || true
        done
        for ((round = 1; round <= SHARED_ROUNDS; round++)); do
            local pids=()
            for t in "$a" "$b"; do
                full="http://$HOST:${PORT[$t]}$url"
                out="$WORK/wrk/shared-$case-$t-$round.txt"
                "${BENCH[@]}" client "$out" taskset -c "$CLIENT_CPU" "${wrk[@]}" -c"$conns" -d"$SHARED_DURATION" "$full" \
                    >"$out.status" &
                pids+=($!)
            done
            wait "${pids[@]}"
            for t in "$a" "$b"; do
                out="$WORK/wrk/shared-$case-$t-$round.txt"
                read -r st _ <"$out.status"
                if [[ $st != 0 ]] || ! grep -q '^BENCHJSON ' "$out"; then
                    warn "wrk failed for shared $case $t (exit $st)"
                    add type=note "text=shared ($case): wrk failed for $t in round $round, exit status $st"
                    continue
                fi
                add type=cell scenario=shared "case=$case" "target=$t" conn=keep-alive "connections=$conns" \
                    "threads=$THREADS" "url=$url" "duration=$SHARED_DURATION" "wrk=$out" "round=$round"
            done
            log "$(printf '%-8s %-9s round %d: %s' shared "$case" "$round" \
                "$(for t in "$a" "$b"; do printf '%s %s req/s  ' "$t" "$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk/shared-$case-$t-$round.txt")"; done)")"
        done
        # shellcheck disable=SC2046
        check shared "$case" "$url" "$REF/$name" after $(targets_args "$a" "$b")
    done
}

scenario_c1000() {
    local peers=(nginx-static axle-all axle-incremental) t
    # shellcheck disable=SC2046
    check c1000 article "$DOC_URL" "$REF/doc" before $(targets_args "${peers[@]}")
    for t in "${peers[@]}"; do
        cell c1000 article "$t" keep-alive "$C1000_CONNECTIONS" "${PORT[$t]}" "${SPID[$t]}" "$DOC_URL"
    done
    # shellcheck disable=SC2046
    check c1000 article "$DOC_URL" "$REF/doc" after $(targets_args "${peers[@]}")
}

# --- churn and dynamic ----------------------------------------------------------------------
# The DocBook part of the churn and dynamic sites: the suite's docbook
# folder, a site layout stylesheet that wraps DocBook's HTML body in a page
# frame (its footer carries a revision comment), and processors for
# /docbook: docbook.xsl, then the layout (the suite's documents have no PI).
# docbook_site SITE: returns 1 (with a note) when there is no suite.
DOCBOOK_LAYOUT=/stylesheets/site-layout.xsl
docbook_site() {
    local site=$1
    if [[ ! -d $LIBXSLT_SUITE/docbook ]]; then
        add type=note "text=churn/dynamic: the docbook row groups were skipped, no libxslt suite at $LIBXSLT_SUITE"
        warn "no $LIBXSLT_SUITE/docbook: skipping the docbook row groups"
        return 1
    fi
    cp -r "$LIBXSLT_SUITE/docbook" "$site/"
    chmod -R u+w "$site/docbook"
    local tmpl=$WORK/site-layout.xsl.in
    cat >"$tmpl" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!-- The bench site's layout over DocBook's HTML (benches/load/run.sh):
     DocBook's body inside a page frame with a header and a footer. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8"/>
  <xsl:template match="@*|node()">
    <xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy>
  </xsl:template>
  <xsl:template match="body">
    <body>
      <xsl:apply-templates select="@*"/>
      <div class="site-page">
        <header class="site-header"><a href="/">Axle bench site</a> / <xsl:value-of select="/html/head/title"/></header>
        <main class="site-main"><xsl:apply-templates select="node()"/></main>
        <footer class="site-footer"><xsl:comment> rev @REV@ </xsl:comment><p>Rendered from DocBook by the site layout.</p></footer>
      </div>
    </body>
  </xsl:template>
</xsl:stylesheet>
EOF
    sed 's/@REV@/0/g' "$tmpl" >"$site$DOCBOOK_LAYOUT"
    cat >>"$site/axle.toml" <<EOF

# --- added by benches/load/run.sh: the DocBook documents (no PI) ---
[[location."/docbook".processor]]
type = "text/xsl"
href = "/docbook/html/docbook.xsl"

[[location."/docbook".processor]]
type = "text/xsl"
href = "$DOCBOOK_LAYOUT"
EOF
    "$BIN" check --config "$site/axle.toml" >&2
}

# rewrite_group SCENARIO CASE TEMPLATE TARGET CONNECTIONS URL... (globals P, S:
# the three modes' ports and pids): body checks, then axle-all,
# axle-incremental and axle-off measured while TARGET is rewritten from
# TEMPLATE every CHURN_INTERVAL s, then the final-state check: the three
# modes agree on every URL and show the last revision ("<!-- rev N -->").
# With several URLs, requests are spread uniformly over them (bench.lua's
# BENCH_PATHS).
rewrite_group() {
    local scen=$1 case=$2 tmpl=$3 target=$4 conns=$5
    shift 5
    local urls=("$@") url i ref mode
    for i in "${!urls[@]}"; do
        url=${urls[$i]} ref=$REF/$scen-$case-$i-before
        curl -sS -o "$ref" "http://$HOST:${P[off]}$url"
        check "$scen" "$case" "$url" "$ref" before axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    done
    local count=$WORK/$scen/rewrites-$case
    start_bg "$CLIENT_CPU" "$WORK/logs/$scen-$case-writer.log" perl "$HERE/bench.pl" rewrite "$tmpl" "$target" \
        "$CHURN_INTERVAL" "$count"
    local writer=$STARTED_PID t0 t1 wurl=${urls[0]}
    t0=$(date +%s.%N)
    CELL_ENV=(BENCH_COUNT_CACHE=1)
    if ((${#urls[@]} > 1)); then
        CELL_ENV+=("BENCH_PATHS=${urls[*]}")
        wurl=/
    fi
    for mode in all incremental off; do
        cell "$scen" "$case" "axle-$mode" keep-alive "$conns" "${P[$mode]}" "${S[$mode]}" "$wurl" "documents=${#urls[@]}"
    done
    CELL_ENV=()
    stop_pid "$writer"
    t1=$(date +%s.%N)
    local n
    n=$(cat "$count" 2>/dev/null || echo 0)
    add type=note "text=$scen ($case): $n rewrites of $(basename "$target") in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s (every ${CHURN_INTERVAL} s, write a temporary file and rename it), during the warm-ups and the measured runs"
    # After the last rewrite: the three modes must agree, and show the last revision.
    sleep 0.3
    for i in "${!urls[@]}"; do
        url=${urls[$i]} ref=$REF/$scen-$case-$i-after
        curl -sS -o "$ref" "http://$HOST:${P[off]}$url"
        check "$scen" "$case" "$url" "$ref" after axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
        if ! grep -q -- "<!-- rev $n -->" "$ref"; then
            add type=check "scenario=$scen" "case=$case" target=axle-off "url=$url" when=after \
                "result=STALE: the body does not show the last revision ($n)" "bytes=$(wc -c <"$ref")"
            CHECK_FAILURES=$((CHECK_FAILURES + 1))
            KEEP_WORK=1
            warn "$scen ($case): axle (off) does not show the last revision $n at $url"
        fi
    done
}

# churn: a site layout stylesheet rewritten every CHURN_INTERVAL s, under
# (article) the sample article's chain (layout.xsl: article.xsl → layout.xsl)
# and (docbook) the suite's DocBook test documents (docbook.xsl → the
# site layout), on one site copy served by the three modes.
scenario_churn() {
    local site=$WORK/churn/site mode docbook=1
    mkdir -p "$WORK/churn"
    cp -r samples "$site"
    local tmpl=$WORK/churn/layout.xsl.in
    sed 's#<footer class="site-footer">#<footer class="site-footer"><xsl:comment> rev @REV@ </xsl:comment>#' \
        samples/stylesheets/layout.xsl >"$tmpl"
    grep -q '@REV@' "$tmpl" || die "churn: could not make the rewrite template"
    sed 's/@REV@/0/g' "$tmpl" >"$site/stylesheets/layout.xsl"
    docbook_site "$site" || docbook=0
    local -A P S
    for mode in off all incremental; do
        start_axle "churn-$mode" "$site" "$mode"
        P[$mode]=$AX_PORT
        S[$mode]=$AX_PID
    done
    rewrite_group churn article "$tmpl" "$site/stylesheets/layout.xsl" "$CONNECTIONS" "$DOC_URL"
    if ((docbook)); then
        # Keep the test documents that Axle (off) renders with status 200
        # within DOCBOOK_MAX_S seconds.
        local f name url code secs kept=() seen=() dropped=()
        for f in "$site"/docbook/test/*.xml; do
            name=$(basename "$f") url=/docbook/test/$name
            read -r code secs < <(curl -s -o /dev/null -m "$DOCBOOK_MAX_S" -w '%{http_code} %{time_total}\n' \
                "http://$HOST:${P[off]}$url" || true)
            code=${code:-000}
            if [[ $code == 200 ]]; then
                kept+=("$url")
                seen+=("$name $(awk -v s="${secs:-0}" 'BEGIN {printf "%.2f", s}') s")
            elif [[ $code == 000 ]]; then
                dropped+=("$name (no answer within ${DOCBOOK_MAX_S} s)")
                # let the server finish that render before timing the next
                curl -s -o /dev/null -m 300 "http://$HOST:${P[off]}$url" || true
            else
                dropped+=("$name (HTTP $code)")
            fi
        done
        ((${#kept[@]})) || die "churn (docbook): Axle renders none of the DocBook test documents"
        local list gone=none
        list=$(printf '%s, ' "${seen[@]}")
        ((${#dropped[@]})) && gone=$(printf '%s, ' "${dropped[@]}")
        log "churn (docbook): kept ${#kept[@]} documents (first off-mode render time): ${list%, }; dropped: ${gone%, }"
        add type=note "text=churn (docbook): requests spread uniformly over the ${#kept[@]} DocBook test documents that Axle (off) renders with status 200 within ${DOCBOOK_MAX_S} s (time of that first render): ${list%, }; dropped: ${gone%, }. Chain docbook.xsl → site-layout.xsl (the rewritten stylesheet), c = $HEAVY_CONNECTIONS, wrk timeout 30 s"
        WRK_EXTRA=(--timeout 30s)
        rewrite_group churn docbook "$WORK/site-layout.xsl.in" "$site$DOCBOOK_LAYOUT" "$HEAVY_CONNECTIONS" "${kept[@]}"
        WRK_EXTRA=()
    fi
    for mode in off all incremental; do stop_pid "${S[$mode]}"; done
}

# dynamic: examples/dynamic_source.rs serves DYNAMIC_URL, a source generated
# on every request from a document of the site (a <volatile n="..."/>
# counter after the root start tag, and a first stage that strips it), so
# stage 1's output repeats. (article) the sample article; (docbook) a
# medium DocBook test document given PIs for docbook.xsl and the site
# layout. One server per mode and row group.
dynamic_group() { # CASE DOCUMENT-URL STATIC-REF-NAME
    local case=$1 doc=$2 mode
    local -A P S
    for mode in off all incremental; do
        start_dynamic "$case-$mode" "$WORK/dynamic/site" "$mode" --document "$doc"
        P[$mode]=$AX_PORT
        S[$mode]=$AX_PID
    done
    local ref=$REF/dynamic-$case-before
    [[ $(curl -sS -o "$ref" -w '%{http_code}' "http://$HOST:${P[off]}$DYNAMIC_URL") == 200 ]] ||
        warn "dynamic ($case): dynamic_source (off) does not serve $DYNAMIC_URL"
    check dynamic "$case" "$DYNAMIC_URL" "$ref" before axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    # the same document, served as a plain file by the same server
    local static=$REF/dynamic-$case-static
    curl -sS -o "$static" "http://$HOST:${P[off]}$doc"
    if cmp -s "$ref" "$static"; then
        add type=note "text=dynamic ($case): $DYNAMIC_URL (generated from $doc on every request) gives the same bytes as $doc itself"
    else
        add type=note "text=dynamic ($case): $DYNAMIC_URL (generated from $doc) renders differently from $doc itself ($(wc -c <"$ref") vs $(wc -c <"$static") bytes)"
        warn "dynamic ($case): the generated source renders differently from $doc"
    fi
    local conns=$CONNECTIONS
    if [[ $case == docbook ]]; then
        conns=$HEAVY_CONNECTIONS
        WRK_EXTRA=(--timeout 30s)
    fi
    CELL_ENV=(BENCH_COUNT_CACHE=1)
    for mode in all incremental off; do
        cell dynamic "$case" "axle-$mode" keep-alive "$conns" "${P[$mode]}" "${S[$mode]}" "$DYNAMIC_URL" "document=$doc"
    done
    if [[ $case == article ]]; then
        # Its ratio is near the 3x goal, within the drift between two cells:
        # measured again as the pairs scenario measures (interleaved short
        # rounds, the target takes the median ratio), as case dynamic-article.
        local round m order
        for ((round = 1; round <= PAIR_ROUNDS; round++)); do
            order="all incremental"
            ((round % 2)) || order="incremental all"
            for m in $order; do
                WARMUP=$PAIR_WARMUP DURATION=$PAIR_DURATION cell pairs dynamic-article "axle-$m" keep-alive "$conns" \
                    "${P[$m]}" "${S[$m]}" "$DYNAMIC_URL" "round=$round" "document=$doc"
            done
        done
    fi
    CELL_ENV=()
    WRK_EXTRA=()
    ref=$REF/dynamic-$case-after
    curl -sS -o "$ref" "http://$HOST:${P[off]}$DYNAMIC_URL"
    check dynamic "$case" "$DYNAMIC_URL" "$ref" after axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    cmp -s "$ref" "$REF/dynamic-$case-before" ||
        warn "dynamic ($case): the page changed during the run (the volatile part should not show)"
    for mode in off all incremental; do stop_pid "${S[$mode]}"; done
}

scenario_dynamic() {
    local site=$WORK/dynamic/site docbook=1
    mkdir -p "$WORK/dynamic"
    cp -r samples "$site"
    docbook_site "$site" || docbook=0
    dynamic_group article "$DOC_URL"
    ((docbook)) || return 0
    # A copy of a medium DocBook test document with PIs naming docbook.xsl
    # and the site layout (after the XML declaration); the first candidate
    # that `axle render` renders within DOCBOOK_MAX_S s is used.
    local cand doc="" f
    for cand in $DYNAMIC_DOCBOOK_CANDIDATES; do
        f=$site/docbook/test/dynamic-$cand
        LAYOUT=$DOCBOOK_LAYOUT perl -0pe 's{\A(<\?xml[^>]*\?>\s*)?}{($1 // "") . qq(<?xml-stylesheet href="/docbook/html/docbook.xsl" type="text/xsl"?>\n<?xml-stylesheet href="$ENV{LAYOUT}" type="text/xsl"?>\n)}e' \
            "$site/docbook/test/$cand" >"$f"
        if timeout "$DOCBOOK_MAX_S" taskset -c "$SERVER_CPU" "$BIN" render --root "$site" "$f" >"$WORK/dynamic/render-$cand" 2>"$WORK/logs/dynamic-render-$cand.err"; then
            doc=/docbook/test/dynamic-$cand
            break
        fi
        warn "dynamic (docbook): $cand does not render (see $WORK/logs/dynamic-render-$cand.err)"
        rm -f "$f"
    done
    if [[ -z $doc ]]; then
        add type=note "text=dynamic (docbook): skipped, none of $DYNAMIC_DOCBOOK_CANDIDATES renders"
        return 0
    fi
    add type=note "text=dynamic (docbook): $DYNAMIC_URL generated on every request from $doc (a copy of docbook/test/${doc#/docbook/test/dynamic-}, $(wc -c <"$site$doc") bytes, with PIs for docbook.xsl and site-layout.xsl), chain strip-volatile.xsl → docbook.xsl → site-layout.xsl, c = $HEAVY_CONNECTIONS, wrk timeout 30 s"
    dynamic_group docbook "$doc"
}

# --- dynamic-front: the article chain behind a command and an upstream source -------------------
# One site copy (samples/) whose axle.toml mounts the dynamic sources, all
# cache = "none":
#   /cmd    a command: gen/front.c, compiled here into the site as
#           bench/front (cc -O2 -static unless FRONT_STATIC=0), argv
#           ["bench/front", "articles/xml-pipelines.xml"]
#   /up     an upstream: nginx (peers/nginx/front.conf.in), pinned to the
#           client CPU, serving the article; url http://127.0.0.1:PORT{path}
#   /fcgi   a fastcgi source: gen/live.php (copied to the site's root) run
#           by FRONT_FCGI_WORKERS php-cgi workers Axle spawns (left out,
#           with a note, when this axle has no fastcgi source)
#   /phpcmd a command running the same live.php once per request with
#           php-cgi (argv: env -u GATEWAY_INTERFACE -u SERVER_SOFTWARE -u
#           REQUEST_METHOD php-cgi -q live.php: without those three
#           variables php-cgi runs the script named on its command line
#           and writes no CGI headers; with them it wants REDIRECT_STATUS
#           and SCRIPT_FILENAME and writes headers, which a command's
#           document cannot hold)
# Under each, /repeat.xml is the sample article as it is (the same bytes on
# every request: incremental reuses both stages, `partial 2/2`) and
# /change.xml the article with a token in its title that differs on every
# request (the title reaches both stages' outputs: every stage runs again,
# `miss`). Three axle serve processes (off, all, incremental). Each group
# (source, output kind) is measured in FRONT_ROUNDS rounds of the three
# modes, FRONT_DURATION each after FRONT_WARMUP, the order rotated every
# round; the targets take the median of the per-round ratios. The group
# php-oneshot is measured on axle-off alone: FRONT_ROUNDS rounds of
# /fcgi/repeat.xml and /phpcmd/repeat.xml (order alternating), for the
# ratio FastCGI ÷ one process per request.
FRONT_DOC=/articles/xml-pipelines.xml
FRONT_REF=/articles/front-reference.xml # a copy of FRONT_DOC, for the reference page
FRONT_SRCS="cmd up fcgi phpcmd" # the sources mounted (fcgi dropped when unsupported)
front_changes() { # WHEN: two requests of each /SRC/change.xml differ, in every mode (globals P)
    local when=$1 src mode a b
    for src in $FRONT_SRCS; do
        for mode in off all incremental; do
            a=$WORK/check/front-$src-$mode-$when-1 b=$WORK/check/front-$src-$mode-$when-2
            curl -sS -o "$a" "http://$HOST:${P[$mode]}/$src/change.xml" 2>>"$WORK/logs/curl.log" || true
            curl -sS -o "$b" "http://$HOST:${P[$mode]}/$src/change.xml" 2>>"$WORK/logs/curl.log" || true
            if [[ ! -s $a ]] || cmp -s "$a" "$b"; then
                add type=check scenario=dynamic-front "case=$src-change" "target=axle-$mode" "url=/$src/change.xml" \
                    "when=$when" "result=DID NOT CHANGE between two requests" "bytes=$(wc -c <"$a")"
                BAD[dynamic-front/axle-$mode]=1
                CHECK_FAILURES=$((CHECK_FAILURES + 1))
                KEEP_WORK=1
                warn "dynamic-front: /$src/change.xml gave the same page twice in mode $mode ($when)"
            fi
        done
    done
}
front_checks() { # WHEN (globals P)
    local when=$1 src
    for src in $FRONT_SRCS; do
        check dynamic-front "$src-repeat" "/$src/repeat.xml" "$REF/front-repeat" "$when" \
            axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
        check dynamic-front "$src-change" "/$src/change.xml?token=check" "$REF/front-change" "$when" \
            axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    done
    front_changes "$when"
}
# php-oneshot (globals P, S, FRONT_SRCS): live.php on axle-off through
# FastCGI and through one php-cgi per request, in interleaved rounds.
front_oneshot() {
    local round t order url
    local -A URL=([axle-off-fastcgi]=/fcgi/repeat.xml [axle-off-command]=/phpcmd/repeat.xml)
    if [[ " $FRONT_SRCS " != *" fcgi "* ]]; then
        warn "dynamic-front: php-oneshot measures the command alone (no /fcgi source)"
        unset 'URL[axle-off-fastcgi]'
    fi
    if [[ -n ${BAD[dynamic-front/axle-off]:-} ]]; then
        warn "dynamic-front: php-oneshot not run: axle-off failed its body check"
        return 0
    fi
    for ((round = 1; round <= FRONT_ROUNDS; round++)); do
        order="axle-off-fastcgi axle-off-command"
        ((round % 2)) || order="axle-off-command axle-off-fastcgi"
        for t in $order; do
            url=${URL[$t]:-}
            [[ -n $url ]] || continue
            WARMUP=$FRONT_WARMUP DURATION=$FRONT_DURATION cell dynamic-front php-oneshot "$t" keep-alive "$CONNECTIONS" \
                "${P[off]}" "${S[off]}" "$url" "round=$round" "source=${url%/repeat.xml}" "output=repeat"
        done
    done
}
scenario_dynamic_front() {
    local base=$WORK/front
    local site=$base/site docs=$base/docs ng=$base/nginx mode
    mkdir -p "$base" "$docs" "$ng/tmp"
    cp -r samples "$site"
    # The command's program: as cheap as an exec'd program gets.
    mkdir -p "$site/bench"
    local linked=dynamic
    if [[ $FRONT_STATIC == 1 ]] && cc -O2 -static -o "$site/bench/front" "$HERE/gen/front.c" 2>"$WORK/logs/front-cc.log"; then
        linked=static
    else
        [[ $FRONT_STATIC == 1 ]] && warn "dynamic-front: cc -static failed (see $WORK/logs/front-cc.log); linking gen/front.c dynamically"
        cc -O2 -o "$site/bench/front" "$HERE/gen/front.c" 2>>"$WORK/logs/front-cc.log" ||
            { cat "$WORK/logs/front-cc.log" >&2; die "dynamic-front: cc failed on gen/front.c"; }
    fi
    # The backend's two documents: the article, and the article with an SSI
    # token before its first </title> (what bench/front writes for
    # /change.xml).
    cp "samples$FRONT_DOC" "$docs/repeat.xml"
    perl -0pe 's{</title>}{ (<!--# if expr="\$arg_token" --><!--# echo var="arg_token" --><!--# else --><!--# echo var="request_id" --><!--# endif -->)</title>}' \
        "$docs/repeat.xml" >"$docs/change.xml"
    grep -q 'echo var="request_id"' "$docs/change.xml" || die "dynamic-front: samples$FRONT_DOC has no </title>"
    # The PHP front, in the document root (its `script`), next to articles/;
    # the article's page for the body checks, from a copy.
    cp "$HERE/gen/live.php" "$site/live.php"
    cp "samples$FRONT_DOC" "$site$FRONT_REF"
    local port
    port=$(free_port)
    sed -e "s#@PREFIX@#$ng#g" -e "s#@DOCS@#$docs#g" -e "s#@PORT@#$port#g" -e "s#@NOFILE@#$NOFILE#g" \
        -e "s#@USER@#www-data#g" -e "s#@GROUP@#www-data#g" \
        "$HERE/peers/nginx/front.conf.in" >"$ng/nginx.conf"
    nginx -t -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" >"$WORK/logs/front-nginx-t.log" 2>&1 ||
        { cat "$WORK/logs/front-nginx-t.log" >&2; die "nginx rejects the dynamic-front backend's config"; }
    start_bg "$CLIENT_CPU" "$WORK/logs/front-nginx.log" nginx -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log"
    local backend=$STARTED_PID
    wait_http "$port" "nginx (dynamic-front backend)"
    # Only the dynamic sources (the samples' own locations are left out).
    local fcgi_toml=(
        '' '[location."/fcgi"]'
        "provider = { type = \"fastcgi\", spawn = [\"php-cgi\"], script = \"live.php\", workers = $FRONT_FCGI_WORKERS, cache = \"none\" }"
    )
    front_toml() { # [FASTCGI-LINES...]
        printf '%s\n' \
            '# benches/load/run.sh, dynamic-front: the article chain behind dynamic sources.' \
            '[location."/cmd"]' \
            'provider = { type = "command", argv = ["bench/front", "articles/xml-pipelines.xml"], cache = "none" }' \
            '' \
            '[location."/up"]' \
            "provider = { type = \"upstream\", url = \"http://$HOST:$port{path}\", cache = \"none\" }" \
            '' \
            '[location."/phpcmd"]' \
            'provider = { type = "command", argv = ["env", "-u", "GATEWAY_INTERFACE", "-u", "SERVER_SOFTWARE", "-u", "REQUEST_METHOD", "php-cgi", "-q", "live.php"], cache = "none" }' \
            "$@" >"$site/axle.toml"
    }
    FRONT_SRCS="cmd up fcgi phpcmd"
    front_toml "${fcgi_toml[@]}"
    if ! "$BIN" check --config "$site/axle.toml" >"$WORK/logs/front-check-fcgi.log" 2>&1; then
        warn "dynamic-front: this axle rejects the fastcgi source (see $WORK/logs/front-check-fcgi.log); the fcgi groups are not run"
        add type=note "text=dynamic-front: the FastCGI groups were not run: this axle rejects a fastcgi source ($(grep -m1 . "$WORK/logs/front-check-fcgi.log" | cut -c1-200))"
        FRONT_SRCS="cmd up phpcmd"
        front_toml
    fi
    "$BIN" check --config "$site/axle.toml" >&2
    local -A P S
    for mode in off all incremental; do
        start_axle "front-$mode" "$site" "$mode"
        P[$mode]=$AX_PORT
        S[$mode]=$AX_PID
    done
    # References: the article's page as a file (what /SRC/repeat.xml must
    # give), and the change page with a fixed token, which must show in it
    # (it reaches the last stage's output).
    # (The article itself is a program file of /cmd, named in its argv,
    # which Axle does not serve: its page comes from a copy.)
    [[ $(curl -sS -o "$REF/front-repeat" -w '%{http_code}' "http://$HOST:${P[off]}$FRONT_REF") == 200 ]] ||
        die "axle (off) does not serve $FRONT_REF"
    [[ $(curl -sS -o "$REF/front-change" -w '%{http_code}' "http://$HOST:${P[off]}/cmd/change.xml?token=check") == 200 ]] ||
        die "dynamic-front: axle (off) does not serve /cmd/change.xml (see $WORK/logs/axle-front-off.log)"
    grep -q 'publishing pipelines (check)' "$REF/front-change" ||
        die "dynamic-front: the token does not reach the page of /cmd/change.xml"
    front_checks before
    add type=note "text=dynamic-front: the sample article's chain (article.xsl → layout.xsl) behind a command source (/cmd: gen/front.c linked $linked, run per request as bench/front articles/xml-pipelines.xml) and an upstream source (/up: nginx on CPU $CLIENT_CPU with wrk, fetched on a new connection per request), both cache = \"none\". /SRC/repeat.xml is the article as it is on every request (its page is the file's page), /SRC/change.xml the article with a new token in its title on every request (nginx SSI \$request_id; front: the time in ns and its PID). Each group: $FRONT_ROUNDS rounds of off, all and incremental, $FRONT_DURATION each after $FRONT_WARMUP, the order rotated every round, c = $CONNECTIONS. The server CPU includes the programs Axle ran; nginx's CPU is in backend_cpu_pct (JSON), not in the other load of the client CPU. /fcgi: live.php (gen/live.php: the same bytes as front) through a fastcgi source, $FRONT_FCGI_WORKERS php-cgi workers spawned by Axle (pinned with it); /phpcmd: the same script run by php-cgi once per request through a command source (env -u GATEWAY_INTERFACE -u SERVER_SOFTWARE -u REQUEST_METHOD php-cgi -q live.php); php-oneshot: $FRONT_ROUNDS rounds of axle-off on /fcgi/repeat.xml and /phpcmd/repeat.xml, the order alternating"
    local g src kind url round i m
    local modes=(off all incremental)
    CELL_ENV=(BENCH_COUNT_CACHE=1)
    for g in $FRONT_GROUPS; do
        src=${g%-*} kind=${g#*-}
        url=/$src/$kind.xml
        if [[ $g == php-oneshot ]]; then
            front_oneshot
            continue
        fi
        if [[ " $FRONT_SRCS " != *" $src "* ]]; then
            warn "dynamic-front: $g not run (no /$src source)"
            continue
        fi
        CELL_BACKEND_PID=""
        [[ $src == up ]] && CELL_BACKEND_PID=$backend
        for ((round = 1; round <= FRONT_ROUNDS; round++)); do
            for i in 0 1 2; do
                m=${modes[$(((round - 1 + i) % 3))]}
                WARMUP=$FRONT_WARMUP DURATION=$FRONT_DURATION cell dynamic-front "$g" "axle-$m" keep-alive "$CONNECTIONS" \
                    "${P[$m]}" "${S[$m]}" "$url" "round=$round" "source=$src" "output=$kind"
            done
        done
    done
    CELL_BACKEND_PID=""
    CELL_ENV=()
    front_checks after
    unset -f front_toml
    for mode in off all incremental; do stop_pid "${S[$mode]}"; done
    stop_pid "$backend"
}

# --- xsp: an XSP front before the article chain ---------------------------------------------
# The sample article made by an XSP page (the same elements, as literal
# content of xsp:page, plus one xsp:expr), then article.xsl and
# layout.xsl. The XSP stage runs on every request in every mode; its
# output repeats, so incremental serves article.xsl and layout.xsl from
# the cache (partial 1/3) while all computes the three stages each time
# (uncacheable).
scenario_xsp() {
    local base=$WORK/xsp
    local site=$base/site mode
    mkdir -p "$base"
    cp -r samples "$site"
    perl -0pe 's{<\?xml-stylesheet href="/stylesheets/article.xsl"}{<?xml-stylesheet href="." type="application/x-xsp"?>\n<?xml-stylesheet href="/stylesheets/article.xsl"}; s{<article\b([^>]*)>}{<xsp:page xmlns:xsp="http://apache.org/xsp/core/v1"><article$1><!-- made by XSP: <xsp:expr>1+2</xsp:expr> -->}; s{</article>\s*$}{</article></xsp:page>\n}' \
        "samples$FRONT_DOC" >"$site/articles/xsp.xml"
    grep -q 'application/x-xsp' "$site/articles/xsp.xml" || die "xsp: could not make the XSP article from samples$FRONT_DOC"
    local url=/articles/xsp.xml
    local -A P S
    for mode in off all incremental; do
        start_axle "xsp-$mode" "$site" "$mode"
        P[$mode]=$AX_PORT
        S[$mode]=$AX_PID
    done
    [[ $(curl -sS -o "$REF/xsp" -w '%{http_code}' "http://$HOST:${P[off]}$url") == 200 ]] ||
        die "xsp: axle (off) does not serve $url (see $WORK/logs/axle-xsp-off.log)"
    grep -q 'A short history of XML publishing pipelines' "$REF/xsp" || die "xsp: the article's title is not on $url"
    check xsp article "$url" "$REF/xsp" before axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    add type=note "text=xsp: the sample article as an XSP page (its elements as the literal content of xsp:page, plus one xsp:expr) before article.xsl and layout.xsl; the XSP stage runs on every request and its output repeats. $XSP_ROUNDS rounds of off, all and incremental, $PAIR_DURATION each after $PAIR_WARMUP, the order rotated every round, c = $CONNECTIONS"
    local round i m
    local modes=(off all incremental)
    CELL_ENV=(BENCH_COUNT_CACHE=1)
    for ((round = 1; round <= XSP_ROUNDS; round++)); do
        for i in 0 1 2; do
            m=${modes[$(((round - 1 + i) % 3))]}
            WARMUP=$PAIR_WARMUP DURATION=$PAIR_DURATION cell xsp article "axle-$m" keep-alive "$CONNECTIONS" \
                "${P[$m]}" "${S[$m]}" "$url" "round=$round"
        done
    done
    CELL_ENV=()
    check xsp article "$url" "$REF/xsp" after axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
    for mode in off all incremental; do stop_pid "${S[$mode]}"; done
}

# --- heavy: DocBook and xmlspec from the libxslt suite ---------------------------------------
scenario_heavy() {
    local site=$WORK/heavy/site mode
    [[ -d $LIBXSLT_SUITE/docbook && -d $LIBXSLT_SUITE/xmlspec ]] ||
        { add type=note "text=heavy: skipped, no libxslt suite at $LIBXSLT_SUITE"; warn "heavy: no $LIBXSLT_SUITE"; return 0; }
    mkdir -p "$site"
    cp -r "$LIBXSLT_SUITE/docbook" "$LIBXSLT_SUITE/xmlspec" "$site/"
    chmod -R u+w "$site"
    # The pairings of MANIFEST.tsv: docbook/html/gdp-handbook (--nonet
    # html/docbook.xsl on test/gdp-handbook.xml) and xmlspec/REC-xml-20001006
    # (REC-xml-2e.xsl on REC-xml-20001006.xml). The sources are unchanged:
    # a site config names the stylesheet (used when a document has no PI).
    cat >"$site/axle.toml" <<'EOF'
[[location."/docbook".processor]]
type = "text/xsl"
href = "/docbook/html/docbook.xsl"

[[location."/xmlspec".processor]]
type = "text/xsl"
href = "/xmlspec/REC-xml-2e.xsl"
EOF
    "$BIN" check --config "$site/axle.toml" >&2
    local -A P S
    for mode in off all incremental; do
        start_axle "heavy-$mode" "$site" "$mode"
        P[$mode]=$AX_PORT
        S[$mode]=$AX_PID
    done
    local case xsl xml url
    for case in docbook xmlspec; do
        if [[ $case == docbook ]]; then
            xsl=docbook/html/docbook.xsl xml=docbook/test/gdp-handbook.xml url=$DOCBOOK_URL
        else
            xsl=xmlspec/REC-xml-2e.xsl xml=xmlspec/REC-xml-20001006.xml url=$XMLSPEC_URL
        fi
        # the reference is xsltproc's output
        (cd "$site" && xsltproc --nonet "$xsl" "$xml") >"$REF/heavy-$case" 2>"$WORK/logs/xsltproc-$case.err" ||
            warn "xsltproc $case exited non-zero (see $WORK/logs/xsltproc-$case.err)"
        check heavy "$case" "$url" "$REF/heavy-$case" before axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
        WRK_EXTRA=(--timeout 30s)
        for mode in off all incremental; do
            cell heavy "$case" "axle-$mode" keep-alive "$HEAVY_CONNECTIONS" "${P[$mode]}" "${S[$mode]}" "$url" \
                "body_bytes_each=$(wc -c <"$REF/heavy-$case")"
        done
        WRK_EXTRA=()
        check heavy "$case" "$url" "$REF/heavy-$case" after axle-off "${P[off]}" axle-all "${P[all]}" axle-incremental "${P[incremental]}"
        # xsltproc per request: process start, parse, compile, transform, write
        (cd "$site" && hyperfine -N --runs "$HEAVY_RUNS" --warmup 2 --export-json "$WORK/heavy/hf-$case.json" \
            "taskset -c $SERVER_CPU xsltproc --nonet -o /dev/null $xsl $xml") >"$WORK/logs/hyperfine-$case.log" 2>&1 ||
            { cat "$WORK/logs/hyperfine-$case.log" >&2; die "hyperfine failed"; }
        "${BENCH[@]}" hyperfine "$RESULTS" "$WORK/heavy/hf-$case.json" type=xsltproc scenario=heavy "case=$case" \
            target=xsltproc conn=– connections=1 "url=$url" \
            "notes=per request: hyperfine -N, $HEAVY_RUNS runs of xsltproc --nonet (pinned to CPU $SERVER_CPU); req/s = 1 / mean, p50 = median, max = slowest run"
        log "heavy    $case xsltproc: $(perl -MJSON::PP -0 -ne 'my $r = decode_json($_)->{results}[0]; printf "%.1f ms mean = %.1f req/s", 1000 * $r->{mean}, 1 / $r->{mean}' "$WORK/heavy/hf-$case.json")"
    done
    for mode in off all incremental; do stop_pid "${S[$mode]}"; done
}

# --- site: many small documents, cache smaller than the working set --------------------------
scenario_site() {
    local base=$WORK/sitegen site mode
    site=$base
    log "generating $SITE_DOCS documents"
    mkdir -p "$site/stylesheets"
    cp samples/stylesheets/*.xsl "$site/stylesheets/"
    perl "$HERE/gen/site.pl" "$site" "$SITE_DOCS"
    local fmt="/site/%03d/%06d.xml" cache_bytes=$((SITE_CACHE_MIB * 1024 * 1024))
    # Stage sizes on a sample (for the incremental mode, which also keeps
    # every stage-1 output in the same budget).
    local i n sample=() s1=0 s2=0 tr=$WORK/sitegen-trace
    for i in $(seq 1 20); do
        n=$(((i * 7919 * 13) % SITE_DOCS))
        sample+=("$n")
    done
    mkdir -p "$tr"
    for n in "${sample[@]}"; do
        local f
        # shellcheck disable=SC2059 # the format is ours
        f=$site$(printf "$fmt" $((n / 1000)) "$n")
        "$BIN" render --root "$site" --trace "$tr" "$f" >"$tr/out-$n"
    done
    # Trace files mirror the URL path under the trace directory.
    s1=$(find "$tr" -type f -name '*.xml.1' -exec cat {} + | wc -c)
    s2=$(cat "$tr"/out-* | wc -c)
    local avg1=$((s1 / ${#sample[@]})) avg2=$((s2 / ${#sample[@]}))
    for mode in all incremental; do
        start_axle "site-$mode" "$site" "$mode" --cache-size "${SITE_CACHE_MIB}MiB"
        local port=$AX_PORT pid=$AX_PID url
        for n in "${sample[@]}"; do
            # shellcheck disable=SC2059 # the format is ours
            url=$(printf "$fmt" $((n / 1000)) "$n")
            check site "$mode" "$url" "$tr/out-$n" before "axle-$mode" "$port"
        done
        # Warm up until the cache must be full: with uniform requests,
        # K distinct documents take about -N ln(1 - K/N) requests; go to
        # 1.5 times that (at most SITE_WARMUP_MAX seconds).
        local k need warmed=0 t=0 chunk=5 out hits
        k=$(awk -v c="$cache_bytes" -v b="$avg2" 'BEGIN {printf "%d", c / b}')
        need=$(awk -v k="$k" -v n="$SITE_DOCS" 'BEGIN {r = k / n; if (r >= 1) r = 0.999; printf "%d", -1.5 * n * log(1 - r)}')
        log "site $mode: warming up to $need requests (K ≈ $k of N = $SITE_DOCS)"
        while ((warmed < need && t < SITE_WARMUP_MAX)); do
            out=$WORK/wrk/site-$mode-warm-$t.txt
            BENCH_RANDOM_N=$SITE_DOCS BENCH_RANDOM_FMT=$fmt BENCH_COUNT_CACHE=1 taskset -c "$CLIENT_CPU" \
                wrk -t"$THREADS" -c"$CONNECTIONS" -d"${chunk}s" -s "$HERE/bench.lua" "http://$HOST:$port/" >"$out" 2>&1 || true
            n=$(sed -n 's/^BENCHJSON {"requests":\([0-9]*\).*/\1/p' "$out")
            hits=$(grep -o '"hit":[0-9]*' "$out" | head -n1 | cut -d: -f2 || true)
            warmed=$((warmed + ${n:-0}))
            t=$((t + chunk))
            log "site $mode: warm-up ${t}s, $warmed requests, hit ratio of the last ${chunk}s: $(awk -v h="${hits:-0}" -v n="${n:-0}" 'BEGIN {printf "%.1f%%", n ? 100 * h / n : 0}')"
        done
        CELL_ENV=(BENCH_RANDOM_N="$SITE_DOCS" BENCH_RANDOM_FMT="$fmt" BENCH_COUNT_CACHE=1)
        local saved_warmup=$WARMUP
        WARMUP=0
        cell site "$mode" "axle-$mode" keep-alive "$CONNECTIONS" "$port" "$pid" / \
            "cache_size_bytes=$cache_bytes" "documents=$SITE_DOCS" "warmup_requests=$warmed"
        WARMUP=$saved_warmup
        CELL_ENV=()
        local hwm rss
        hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
        for n in "${sample[@]}"; do
            # shellcheck disable=SC2059 # the format is ours
            url=$(printf "$fmt" $((n / 1000)) "$n")
            check site "$mode" "$url" "$tr/out-$n" after "axle-$mode" "$port"
        done
        stop_pid "$pid"
        # The site row: hit ratio against the ideal K/N.
        perl -MJSON::PP -e '
            my ($results, $mode, $docs, $cache, $hwm, $rss, $avg1, $avg2, $warm) = @ARGV;
            open my $fh, "<", $results or die;
            my $cell;
            while (<$fh>) { my $r = decode_json($_); $cell = $r if $r->{type} eq "cell" && $r->{scenario} eq "site" && $r->{case} eq $mode }
            die "no site cell for $mode\n" unless $cell;
            my $c = $cell->{cache_counts} || {};
            my $n = 0; $n += $_ for values %$c;
            my $avg = $cell->{responses_counted} ? $cell->{body_bytes} / $cell->{responses_counted} : $avg2;
            my $k = $cache / $avg;
            my $k2 = $cache / ($avg + $avg1);
            my %row = (type => "site", mode => $mode, documents => $docs + 0, cache_size_bytes => $cache + 0,
                avg_body_bytes => 0 + sprintf("%.0f", $avg), working_set_bytes => 0 + sprintf("%.0f", $avg * $docs),
                avg_stage1_bytes => $avg1 + 0, ideal_k => 0 + sprintf("%.0f", $k),
                ideal_hit_ratio => 0 + sprintf("%.4f", $k >= $docs ? 1 : $k / $docs),
                ideal_hit_ratio_with_stage_outputs => 0 + sprintf("%.4f", $k2 >= $docs ? 1 : $k2 / $docs),
                hit_ratio => 0 + sprintf("%.4f", $n ? ($c->{hit} // 0) / $n : 0),
                partial_ratio => 0 + sprintf("%.4f", $n ? (eval { my $p = 0; $p += $c->{$_} for grep { /^partial/ } keys %$c; $p }) / $n : 0),
                responses => $n, requests_per_sec => $cell->{requests_per_sec},
                rss_peak_kb => $hwm + 0, rss_end_kb => $rss + 0, warmup_requests => $warm + 0);
            open my $o, ">>", $results or die;
            print $o JSON::PP->new->canonical->encode(\%row), "\n";
        ' "$RESULTS" "$mode" "$SITE_DOCS" "$cache_bytes" "$hwm" "$rss" "$avg1" "$avg2" "$warmed"
        # and a note in the main table's row
        local last
        last=$(tail -n1 "$RESULTS")
        add type=note "text=site ($mode): $(echo "$last" | perl -MJSON::PP -ne '
            my $s = decode_json($_);
            printf "hit ratio %.1f%% (ideal K/N = %.1f%%), avg body %d B, working set %.0f MiB > cache %.0f MiB, peak RSS %.1f MiB (VmHWM), %d warm-up requests",
                100 * $s->{hit_ratio}, 100 * $s->{ideal_hit_ratio},
                $s->{avg_body_bytes}, $s->{working_set_bytes} / 1048576, $s->{cache_size_bytes} / 1048576,
                $s->{rss_peak_kb} / 1024, $s->{warmup_requests}')"
    done
}

# --- cache tiers (#25): compression, warm-restart, disk-hit ------------------------------------
# admin_stats ADMIN-PORT: one line of the admin listener's /stats: "hits
# misses disk_hits memory_hits hot_hits disk_entries disk_bytes
# memory_entries evictions rejected" (GET /stats first waits for the disk
# tier's pending writes).
admin_stats() {
    curl -sS "http://$HOST:$1/stats" | perl -MJSON::PP -0 -ne '
        my $s = decode_json($_);
        my ($d) = grep { $_->{name} eq "disk" } @{ $s->{tiers} };
        my ($m) = grep { $_->{name} eq "memory" } @{ $s->{tiers} };
        printf "%d %d %d %d %d %d %d %d %d %d\n", $s->{hits}, $s->{misses}, $d ? $d->{hits} : 0, $s->{memory_hits},
            $s->{hot_hits}, $d ? $d->{entries} : 0, $d ? $d->{bytes} : 0, $m ? $m->{entries} : 0, $s->{evictions},
            $d ? $d->{rejected} : 0'
}

# fill_pass NAME PORT N FMT: request each of the N paths FMT (as bench.lua's
# BENCH_RANDOM_FMT) once, in order, 16 at a time (one curl --parallel on the
# client CPU); every answer must be 200. Prints the seconds it took.
fill_pass() {
    local name=$1 port=$2 n=$3 fmt=$4 cfg=$WORK/fill-$1.cfg codes=$WORK/fill-$1.codes t0 t1 total bad
    perl -e 'my ($h, $p, $n, $f) = @ARGV; my $line = "url = \"http://$h:$p$f\"\noutput = \"/dev/null\"\n";
        printf $line, int($_ / 1000), $_ for 0 .. $n - 1' "$HOST" "$port" "$n" "$fmt" >"$cfg"
    t0=$(date +%s.%N)
    taskset -c "$CLIENT_CPU" curl -sS -Z --parallel-max 16 -K "$cfg" -w '%{http_code}\n' >"$codes" 2>>"$WORK/logs/curl.log" || true
    t1=$(date +%s.%N)
    total=$(wc -l <"$codes")
    bad=$(grep -vc '^200$' "$codes" || true)
    ((total == n && bad == 0)) || { KEEP_WORK=1; die "$name: the fill pass got $total answers for $n paths, $bad not 200 (see $codes)"; }
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}'
}

# fill_disk NAME PORT ADMIN-PORT N FMT: fill_pass until the disk tier
# holds at least 99% of the N documents (at most FILL_PASSES passes). The
# disk tier writes through a bounded queue (1,024 writes) and drops what
# does not fit, so one fast pass leaves many pages unwritten; a page not in
# memory misses again in the next pass and is written then. Sets FILL_TEXT
# (what each pass took and left) and FILL_ENTRIES.
fill_disk() {
    local name=$1 port=$2 admin=$3 n=$4 fmt=$5 pass secs prev st i
    FILL_TEXT="" FILL_ENTRIES=0
    for ((pass = 1; pass <= FILL_PASSES; pass++)); do
        secs=$(fill_pass "$name-$pass" "$port" "$n" "$fmt")
        # wait until the writer is done (the entry count stops moving)
        prev=-1
        for i in $(seq 1 60); do
            read -r -a st <<<"$(admin_stats "$admin")"
            ((st[5] == prev)) && break
            prev=${st[5]}
            sleep 1
        done
        FILL_ENTRIES=${st[5]}
        FILL_TEXT+="pass $pass: $secs s, then $FILL_ENTRIES disk entries (misses so far ${st[1]}); "
        log "$name: fill pass $pass took $secs s; the disk tier holds $FILL_ENTRIES of $n"
        ((FILL_ENTRIES * 100 >= n * 99)) && break
    done
    FILL_TEXT=${FILL_TEXT%; }
}

# wire_bytes FILE: wire bytes per response (headers included) of a wrk output
wire_bytes() {
    sed -n 's/^BENCHJSON {"requests":\([0-9]*\),"duration_us":[0-9]*,"bytes":\([0-9]*\).*/\2 \1/p' "$1" |
        awk '{printf "%.0f", $2 ? $1 / $2 : 0}'
}

# site_gen DIR N: N generated articles (gen/site.pl) and the stylesheets
site_gen() {
    mkdir -p "$1/stylesheets"
    cp samples/stylesheets/*.xsl "$1/stylesheets/"
    perl "$HERE/gen/site.pl" "$1" "$2"
}
SITE_FMT="/site/%03d/%06d.xml"

# compression: the sample article's page (a hit) from one Axle server,
# asked for identity, gzip and br; and nginx serving the same page as a
# static file with gzip_static (FILE.gz made by gzip -9 -k from the same
# bytes) for gzip and identity. COMP_ROUNDS interleaved rounds of the five
# cells, the order rotated every round; the targets take the median of the
# per-round ratios. Every (target, encoding) is checked before and after:
# status 200, the Content-Encoding asked for (none for identity), Vary:
# Accept-Encoding on Axle's, and the body decodes to the identity bytes.
COMP_TARGETS=(axle-identity axle-gzip axle-br nginx-gzip-static nginx-identity)
comp_encoding() { # TARGET: the encoding asked for
    case $1 in *-gzip | *-gzip-static) echo gzip ;; *-br) echo br ;; *) echo identity ;; esac
}
comp_verify() { # WHEN (globals CP: ports by target, REF)
    local when=$1 t enc port hdr body dec got vary result
    for t in "${COMP_TARGETS[@]}"; do
        enc=$(comp_encoding "$t") port=${CP[$t]}
        hdr=$WORK/check/comp-$t-$when.head body=$WORK/check/comp-$t-$when.body dec=$WORK/check/comp-$t-$when.decoded
        local ae=()
        [[ $enc != identity ]] && ae=(-H "Accept-Encoding: $enc")
        status=$(curl -sS "${ae[@]}" -D "$hdr" -o "$body" -w '%{http_code}' "http://$HOST:$port$DOC_URL" || echo 000)
        got=$(tr -d '\r' <"$hdr" | sed -n 's/^[Cc]ontent-[Ee]ncoding: *//p' | head -n1)
        vary=$(tr -d '\r' <"$hdr" | sed -n 's/^[Vv]ary: *//p' | head -n1)
        case $enc in
        gzip) gzip -dc <"$body" >"$dec" 2>/dev/null || : >"$dec" ;;
        br) brotli -dc <"$body" >"$dec" 2>/dev/null || : >"$dec" ;;
        identity) cp "$body" "$dec" ;;
        esac
        if [[ $status != 200 ]]; then
            result="HTTP $status"
        elif [[ ${got:-identity} != "$enc" ]]; then
            result="Content-Encoding '${got:-none}', asked for $enc"
        elif [[ $t == axle-* && ${vary,,} != *accept-encoding* ]]; then
            result="no Vary: Accept-Encoding (Vary: '${vary:-none}')"
        elif ! cmp -s "$REF/comp-identity" "$dec"; then
            result="the $enc body ($(wc -c <"$body") B) does not decode to the identity page"
        else
            result=identical
        fi
        add type=check scenario=compression case=article "target=$t" "url=$DOC_URL" "when=$when" "result=$result" \
            "bytes=$(wc -c <"$body")" "encoding=$enc"
        if [[ $result != identical ]]; then
            KEEP_WORK=1
            die "compression: $t ($when): $result (headers in $hdr)"
        fi
        log "compression: $t ($when): $enc, $(wc -c <"$body") B on the wire, decodes to the identity page"
    done
}
scenario_compression() {
    local site=$WORK/comp/site static=$WORK/comp/static t
    mkdir -p "$WORK/comp"
    cp -r samples "$site"
    local -A CP CS
    start_axle comp-incremental "$site" incremental
    for t in axle-identity axle-gzip axle-br; do CP[$t]=$AX_PORT CS[$t]=$AX_PID; done
    [[ $(curl -sS -o "$REF/comp-identity" -w '%{http_code}' "http://$HOST:$AX_PORT$DOC_URL") == 200 ]] ||
        die "compression: axle does not serve $DOC_URL"
    mkdir -p "$static/articles"
    cp "$REF/comp-identity" "$static/articles/xml-pipelines.xml"
    gzip -9 -k "$static/articles/xml-pipelines.xml"
    local ng=$WORK/nginx-gzip port
    mkdir -p "$ng/tmp"
    port=$(free_port)
    sed -e "s#@PREFIX@#$ng#g" -e "s#@STATIC_ROOT@#$static#g" -e "s#@PORT@#$port#g" \
        -e "s#@NOFILE@#$NOFILE#g" -e "s#@USER@#www-data#g" -e "s#@GROUP@#www-data#g" \
        "$HERE/peers/nginx/gzip.conf.in" >"$ng/nginx.conf"
    nginx -t -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" >"$WORK/logs/nginx-gzip-t.log" 2>&1 ||
        { cat "$WORK/logs/nginx-gzip-t.log" >&2; die "nginx rejects its gzip_static config"; }
    start_bg "$SERVER_CPU" "$WORK/logs/nginx-gzip.log" nginx -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log"
    for t in nginx-gzip-static nginx-identity; do CP[$t]=$port CS[$t]=$STARTED_PID; done
    local ngpid=$STARTED_PID
    wait_http "$port" nginx-gzip-static
    # Axle makes a variant the first time a client asks for it: ask once
    # for each before the check.
    curl -sS -o /dev/null -H 'Accept-Encoding: gzip' "http://$HOST:${CP[axle-gzip]}$DOC_URL"
    curl -sS -o /dev/null -H 'Accept-Encoding: br' "http://$HOST:${CP[axle-br]}$DOC_URL"
    comp_verify before
    add type=note "text=compression: $DOC_URL, the identity page $(wc -c <"$REF/comp-identity") B; Axle's gzip body $(wc -c <"$WORK/check/comp-axle-gzip-before.body") B, br $(wc -c <"$WORK/check/comp-axle-br-before.body") B; nginx's .gz (gzip -9 -k) $(wc -c <"$static/articles/xml-pipelines.xml.gz") B. One axle serve (incremental, defaults) answers the three Axle targets (wrk -H 'Accept-Encoding: gzip' / 'br' / none); one nginx (gzip_static on, gzip off) the two nginx ones. $COMP_ROUNDS interleaved rounds of $COMP_DURATION after $COMP_WARMUP, the order rotated every round, c = $CONNECTIONS"
    local round i n=${#COMP_TARGETS[@]} enc
    declare -A WB=()
    for ((round = 1; round <= COMP_ROUNDS; round++)); do
        for ((i = 0; i < n; i++)); do
            t=${COMP_TARGETS[$(((round - 1 + i) % n))]}
            enc=$(comp_encoding "$t")
            WRK_EXTRA=()
            [[ $enc != identity ]] && WRK_EXTRA=(-H "Accept-Encoding: $enc")
            WARMUP=$COMP_WARMUP DURATION=$COMP_DURATION cell compression article "$t" keep-alive "$CONNECTIONS" \
                "${CP[$t]}" "${CS[$t]}" "$DOC_URL" "round=$round" "encoding=$enc"
            WB[$t]=$(wire_bytes "$WORK/wrk/compression-article-$t-keep-alive.txt")
        done
    done
    WRK_EXTRA=()
    comp_verify after
    add type=note "text=compression: wire bytes per response in the last round (headers included; what wrk read): $(for t in "${COMP_TARGETS[@]}"; do printf '%s %s B, ' "$t" "${WB[$t]:-?}"; done | sed 's/, $//')"
    stop_pid "${CS[axle-identity]}"
    stop_pid "$ngpid"
}

# warm-restart: the site scenario's documents (SITE_DOCS, gen/site.pl) and
# request mix (uniform over all of them, bench.lua) with --cache-size
# SITE_CACHE_MIB, for WARM_SECONDS from the first request after start-up:
#   cold: a new server without a disk tier;
#   warm: a server restarted on a disk tier (--cache-dir) that a first
#         server filled by rendering every document once (fill_pass), then
#         stopped (SIGTERM, after GET /stats, which waits for pending disk
#         writes).
# The X-Axle-Cache values are counted (bench.lua) and the admin listener's
# /stats read after each run.
scenario_warm_restart() {
    local site=$WORK/warm/site dir=$WORK/warm/cache-dir fmt=$SITE_FMT cache="${SITE_CACHE_MIB}MiB" secs
    mkdir -p "$WORK/warm"
    log "warm-restart: generating $SITE_DOCS documents"
    site_gen "$site" "$SITE_DOCS"
    local i n sample=() tr=$WORK/warm/trace url
    for i in $(seq 1 20); do sample+=($(((i * 7919 * 13) % SITE_DOCS))); done
    mkdir -p "$tr"
    for n in "${sample[@]}"; do
        # shellcheck disable=SC2059 # the format is ours
        "$BIN" render --root "$site" "$site$(printf "$fmt" $((n / 1000)) "$n")" >"$tr/out-$n"
    done
    local admin port pid
    CELL_ENV=(BENCH_RANDOM_N="$SITE_DOCS" BENCH_RANDOM_FMT="$fmt" BENCH_COUNT_CACHE=1)
    local saved_warmup=$WARMUP saved_duration=$DURATION
    # cold: no disk tier, a new process
    admin=$(free_port)
    start_axle warm-cold "$site" incremental --cache-size "$cache" --admin "$HOST:$admin"
    port=$AX_PORT pid=$AX_PID
    WARMUP=0 DURATION=${WARM_SECONDS}s cell warm-restart site axle-cold keep-alive "$CONNECTIONS" "$port" "$pid" / \
        "documents=$SITE_DOCS" "cache_size=$cache" "disk_tier=none"
    read -r -a st <<<"$(admin_stats "$admin")"
    add type=note "text=warm-restart (cold): /stats after its first ${WARM_SECONDS} s: hits ${st[0]}, misses ${st[1]} (hit ratio $(awk -v h="${st[0]}" -v m="${st[1]}" 'BEGIN {printf "%.1f%%", (h + m) ? 100 * h / (h + m) : 0}')), memory hits ${st[3]}, hot-memo hits ${st[4]}, memory entries ${st[7]}, evictions ${st[8]}"
    for n in "${sample[@]}"; do
        # shellcheck disable=SC2059
        check warm-restart cold "$(printf "$fmt" $((n / 1000)) "$n")" "$tr/out-$n" after axle-cold "$port"
    done
    stop_pid "$pid"
    # fill: a server with the disk tier renders every document once
    admin=$(free_port)
    start_axle warm-fill "$site" incremental --cache-size "$cache" --cache-dir "$dir" --cache-dir-size "$WARM_DIR_SIZE" --admin "$HOST:$admin"
    port=$AX_PORT pid=$AX_PID
    log "warm-restart: filling the disk tier: every one of $SITE_DOCS documents, pass after pass"
    fill_disk warm-fill "$port" "$admin" "$SITE_DOCS" "$fmt"
    read -r -a st <<<"$(admin_stats "$admin")"
    local du_mib
    du_mib=$(du -sm "$dir" | cut -f1)
    add type=note "text=warm-restart (fill): passes over all $SITE_DOCS documents (curl --parallel, 16 at a time, pinned to the client CPU) on a server with --cache-dir, until the disk tier held 99% of them: $FILL_TEXT; then /stats: misses ${st[1]}, disk tier ${st[5]} entries, $(awk -v b="${st[6]}" 'BEGIN {printf "%.0f", b / 1048576}') MiB of entries ($du_mib MiB on disk, du), evictions (all tiers) ${st[8]}, rejected ${st[9]}; the server was then stopped (SIGTERM) and a new one started on the same directory"
    ((st[5] >= SITE_DOCS * 95 / 100)) || warn "warm-restart: the disk tier holds only ${st[5]} entries of $SITE_DOCS"
    stop_pid "$pid"
    # warm: a new process on the filled directory
    admin=$(free_port)
    local t0 t1
    t0=$(date +%s.%N)
    start_axle warm-warm "$site" incremental --cache-size "$cache" --cache-dir "$dir" --cache-dir-size "$WARM_DIR_SIZE" --admin "$HOST:$admin"
    t1=$(date +%s.%N)
    port=$AX_PORT pid=$AX_PID
    WARMUP=0 DURATION=${WARM_SECONDS}s cell warm-restart site axle-warm keep-alive "$CONNECTIONS" "$port" "$pid" / \
        "documents=$SITE_DOCS" "cache_size=$cache" "disk_tier=$WARM_DIR_SIZE"
    read -r -a st <<<"$(admin_stats "$admin")"
    add type=note "text=warm-restart (warm): start-up on the filled directory (until the port answered) $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s; /stats after its first ${WARM_SECONDS} s: hits ${st[0]} (disk tier ${st[2]}, memory ${st[3]}, hot memo ${st[4]}), misses ${st[1]} (hit ratio $(awk -v h="${st[0]}" -v m="${st[1]}" 'BEGIN {printf "%.1f%%", (h + m) ? 100 * h / (h + m) : 0}')), disk entries ${st[5]}, rejected ${st[9]}. The disk tier's files were written minutes before, so they are likely in the OS page cache (a process restart, not a reboot)"
    for n in "${sample[@]}"; do
        # shellcheck disable=SC2059
        check warm-restart warm "$(printf "$fmt" $((n / 1000)) "$n")" "$tr/out-$n" after axle-warm "$port"
    done
    stop_pid "$pid"
    WARMUP=$saved_warmup DURATION=$saved_duration
    CELL_ENV=()
    rm -rf "$dir"
}

# --- shared cache (#27) ---------------------------------------------------------------------
# sc_stats ADMIN-PORT: "stage_runs hits misses redis_hits redis_rejected
# redis_errors redis_available" from one instance's /stats.
sc_stats() {
    curl -sS "http://$HOST:$1/stats" | perl -MJSON::PP -0 -ne '
        my $s = decode_json($_);
        my ($r) = grep { $_->{name} eq "redis" } @{ $s->{tiers} };
        printf "%d %d %d %d %d %d %d\n", $s->{stage_runs}, $s->{hits}, $s->{misses}, $r ? $r->{hits} : 0,
            $r ? $r->{rejected} : 0, $r ? $r->{errors} : 0, $r ? ($r->{available} ? 1 : 0) : 0'
}

# redis_ping PORT: true once redis-server answers PONG on PORT
redis_ping() {
    local reply=""
    { exec 9<>"/dev/tcp/$HOST/$1"; } 2>/dev/null || return 1
    printf 'PING\r\n' >&9
    read -r -t 1 reply <&9 || true
    exec 9<&- 9>&-
    [[ $reply == +PONG* ]]
}

# shared-cache: two Axle instances (A and B, both on the server CPU, each
# --cache-size SITE_CACHE_MIB) behind one nginx doing round robin on
# loopback (pinned to the client CPU, keep-alive to both), the site
# scenario's documents (SITE_DOCS, gen/site.pl) asked uniformly at random
# (bench.lua), for SC_SECONDS from a cold start of both, in two cases:
#   local:  each instance with its own memory tier only;
#   shared: both with --shared-cache on one fresh redis-server (started
#           here on the server CPU, no persistence).
# Reported per case: wrk's req/s through the balancer, the X-Axle-Cache
# values counted, and the sum over both instances' /stats of stage runs
# (transforms computed), hits and misses, and the redis tier's hits. The
# servers' CPU share in the cell is A's alone (cell takes one PID).
scenario_shared_cache() {
    local base=$WORK/sc site=$WORK/sc/site fmt=$SITE_FMT cache="${SITE_CACHE_MIB}MiB"
    mkdir -p "$base"
    log "shared-cache: generating $SITE_DOCS documents"
    site_gen "$site" "$SITE_DOCS"
    local i n sample=() tr=$base/trace
    for i in $(seq 1 20); do sample+=($(((i * 7919 * 13) % SITE_DOCS))); done
    mkdir -p "$tr"
    for n in "${sample[@]}"; do
        # shellcheck disable=SC2059 # the format is ours
        "$BIN" render --root "$site" "$site$(printf "$fmt" $((n / 1000)) "$n")" >"$tr/out-$n"
    done
    local saved_warmup=$WARMUP saved_duration=$DURATION case
    for case in local shared; do
        local extra=() rport="" rpid="" aa ab pa pb pida pidb ng=$base/nginx-$case lb lbpid
        if [[ $case == shared ]]; then
            rport=$(free_port)
            start_bg "$SERVER_CPU" "$WORK/logs/redis-$case.log" redis-server --port "$rport" --bind "$HOST" \
                --save '' --appendonly no
            rpid=$STARTED_PID
            for i in $(seq 1 100); do redis_ping "$rport" && break; sleep 0.1; done
            redis_ping "$rport" || die "shared-cache: redis-server does not answer on $rport"
            extra=(--shared-cache "redis://$HOST:$rport/0")
        fi
        aa=$(free_port)
        start_axle "sc-$case-a" "$site" incremental --cache-size "$cache" --admin "$HOST:$aa" "${extra[@]}"
        pa=$AX_PORT pida=$AX_PID
        ab=$(free_port)
        while [[ $ab == "$aa" ]]; do ab=$(free_port); done
        start_axle "sc-$case-b" "$site" incremental --cache-size "$cache" --admin "$HOST:$ab" "${extra[@]}"
        pb=$AX_PORT pidb=$AX_PID
        if [[ $case == shared ]]; then
            for i in $(seq 1 100); do
                [[ $(sc_stats "$aa" | cut -d' ' -f7)$(sc_stats "$ab" | cut -d' ' -f7) == 11 ]] && break
                sleep 0.1
            done
        fi
        mkdir -p "$ng/tmp"
        lb=$(free_port)
        sed -e "s#@PREFIX@#$ng#g" -e "s#@PORT@#$lb#g" -e "s#@A@#$pa#g" -e "s#@B@#$pb#g" -e "s#@NOFILE@#$NOFILE#g" \
            -e "s#@USER@#www-data#g" -e "s#@GROUP@#www-data#g" \
            "$HERE/peers/nginx/round-robin.conf.in" >"$ng/nginx.conf"
        nginx -t -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log" >"$WORK/logs/sc-nginx-t.log" 2>&1 ||
            { cat "$WORK/logs/sc-nginx-t.log" >&2; die "nginx rejects the shared-cache balancer's config"; }
        start_bg "$CLIENT_CPU" "$WORK/logs/sc-nginx-$case.log" nginx -p "$ng" -c "$ng/nginx.conf" -e "$ng/error.log"
        lbpid=$STARTED_PID
        wait_http "$lb" "nginx (shared-cache balancer)"
        CELL_ENV=(BENCH_RANDOM_N="$SITE_DOCS" BENCH_RANDOM_FMT="$fmt" BENCH_COUNT_CACHE=1)
        CELL_BACKEND_PID=$lbpid
        WARMUP=0 DURATION=${SC_SECONDS}s cell shared-cache "$case" "axle-2x-$case" keep-alive "$CONNECTIONS" "$lb" "$pida" / \
            "documents=$SITE_DOCS" "cache_size=$cache" "instances=2" "shared_tier=$([[ $case == shared ]] && echo redis || echo none)"
        CELL_BACKEND_PID=""
        local sa sb
        read -r -a sa <<<"$(sc_stats "$aa")"
        read -r -a sb <<<"$(sc_stats "$ab")"
        local runs=$((sa[0] + sb[0])) hits=$((sa[1] + sb[1])) misses=$((sa[2] + sb[2])) rhits=$((sa[3] + sb[3]))
        local rps
        rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk/shared-cache-$case-axle-2x-$case-keep-alive.txt")
        add type=note "text=shared-cache ($case): after ${SC_SECONDS} s from a cold start, through the balancer: $rps req/s; both instances' /stats summed: stage runs (transforms computed) $runs (A ${sa[0]}, B ${sb[0]}), hits $hits, misses $misses (hit ratio $(awk -v h="$hits" -v m="$misses" 'BEGIN {printf "%.1f%%", (h + m) ? 100 * h / (h + m) : 0}')), redis tier hits $rhits (A ${sa[3]}, B ${sb[3]}), rejected $((sa[4] + sb[4])), errors $((sa[5] + sb[5]))"
        log "shared-cache ($case): $rps req/s, stage runs $runs, hits $hits, misses $misses, redis hits $rhits"
        for n in "${sample[@]}"; do
            # shellcheck disable=SC2059
            check shared-cache "$case" "$(printf "$fmt" $((n / 1000)) "$n")" "$tr/out-$n" after \
                "axle-2x-$case" "$lb" "axle-$case-a" "$pa" "axle-$case-b" "$pb"
        done
        stop_pid "$lbpid"
        stop_pid "$pida"
        stop_pid "$pidb"
        [[ -n $rpid ]] && stop_pid "$rpid"
    done
    WARMUP=$saved_warmup DURATION=$saved_duration
    CELL_ENV=()
}

# disk-hit: DISK_DOCS generated documents, every one rendered once (a fill
# pass) by two servers: axle-disk with --cache-dir and a tiny memory tier
# (--cache-size DISK_MEM, so nearly every hit comes from the disk tier:
# each disk hit is promoted into memory, which evicts another), and
# axle-memory with the default memory budget (all of them fit) and no disk
# tier. Requests uniform over all documents; DISK_ROUNDS interleaved rounds
# of DISK_DURATION after DISK_WARMUP, without counting headers in wrk (which
# would make wrk the limit for memory hits); the share of disk-tier hits is
# taken from /stats around the rounds, and one more counted cell of each
# checks the X-Axle-Cache values.
scenario_disk_hit() {
    local site=$WORK/disk/site dir=$WORK/disk/cache-dir fmt=$SITE_FMT secs t
    mkdir -p "$WORK/disk"
    log "disk-hit: generating $DISK_DOCS documents"
    site_gen "$site" "$DISK_DOCS"
    local -A DP DS DA
    DA[axle-disk]=$(free_port)
    start_axle disk-disk "$site" incremental --cache-size "$DISK_MEM" --cache-dir "$dir" --cache-dir-size 1GiB --admin "$HOST:${DA[axle-disk]}"
    DP[axle-disk]=$AX_PORT DS[axle-disk]=$AX_PID
    DA[axle-memory]=$(free_port)
    while [[ ${DA[axle-memory]} == "${DA[axle-disk]}" ]]; do DA[axle-memory]=$(free_port); done
    start_axle disk-memory "$site" incremental --admin "$HOST:${DA[axle-memory]}"
    DP[axle-memory]=$AX_PORT DS[axle-memory]=$AX_PID
    for t in axle-disk axle-memory; do
        if [[ $t == axle-disk ]]; then
            fill_disk "disk-$t" "${DP[$t]}" "${DA[$t]}" "$DISK_DOCS" "$fmt"
        else
            FILL_TEXT="one pass: $(fill_pass "disk-$t" "${DP[$t]}" "$DISK_DOCS" "$fmt") s"
        fi
        read -r -a st <<<"$(admin_stats "${DA[$t]}")"
        log "disk-hit: $t filled ($FILL_TEXT; misses ${st[1]}, memory entries ${st[7]}, disk entries ${st[5]})"
        add type=note "text=disk-hit ($t): fill passes over all $DISK_DOCS documents: $FILL_TEXT; then memory entries ${st[7]}, disk entries ${st[5]}, evictions (all tiers) ${st[8]}"
    done
    # every server must serve axle render's bytes (20 documents)
    local i n url tr=$WORK/disk/trace
    mkdir -p "$tr"
    for i in $(seq 1 20); do
        n=$(((i * 7919 * 13) % DISK_DOCS))
        # shellcheck disable=SC2059
        url=$(printf "$fmt" $((n / 1000)) "$n")
        "$BIN" render --root "$site" "$site$url" >"$tr/out-$n"
        check disk-hit site "$url" "$tr/out-$n" before axle-disk "${DP[axle-disk]}" axle-memory "${DP[axle-memory]}"
    done
    local -A B0
    for t in axle-disk axle-memory; do B0[$t]=$(admin_stats "${DA[$t]}"); done
    CELL_ENV=(BENCH_RANDOM_N="$DISK_DOCS" BENCH_RANDOM_FMT="$fmt")
    local round order
    for ((round = 1; round <= DISK_ROUNDS; round++)); do
        order="axle-memory axle-disk"
        ((round % 2)) || order="axle-disk axle-memory"
        for t in $order; do
            WARMUP=$DISK_WARMUP DURATION=$DISK_DURATION cell disk-hit site "$t" keep-alive "$CONNECTIONS" \
                "${DP[$t]}" "${DS[$t]}" / "round=$round" "documents=$DISK_DOCS"
        done
    done
    local a b
    for t in axle-disk axle-memory; do
        read -r -a a <<<"${B0[$t]}"
        read -r -a b <<<"$(admin_stats "${DA[$t]}")"
        local dh=$((b[2] - a[2])) mh=$((b[3] - a[3])) hh=$((b[4] - a[4])) h=$((b[0] - a[0])) m=$((b[1] - a[1]))
        add type=note "text=disk-hit ($t): over the rounds (warm-ups included), /stats: hits $h (disk tier $dh = $(awk -v x="$dh" -v y="$((h + m))" 'BEGIN {printf "%.1f%%", y ? 100 * x / y : 0}') of responses, memory $mh, hot memo $hh), misses $m; memory entries ${b[7]}, disk entries ${b[5]}"
        log "disk-hit: $t: hits $h (disk $dh, memory $mh, hot $hh), misses $m"
    done
    # one counted cell each: the X-Axle-Cache values themselves
    CELL_ENV+=(BENCH_COUNT_CACHE=1)
    for t in axle-disk axle-memory; do
        WARMUP=0 DURATION=$DISK_DURATION cell disk-hit site-counted "$t" keep-alive "$CONNECTIONS" \
            "${DP[$t]}" "${DS[$t]}" / "documents=$DISK_DOCS"
    done
    CELL_ENV=()
    for i in $(seq 1 20); do
        n=$(((i * 7919 * 13) % DISK_DOCS))
        # shellcheck disable=SC2059
        url=$(printf "$fmt" $((n / 1000)) "$n")
        check disk-hit site "$url" "$tr/out-$n" after axle-disk "${DP[axle-disk]}" axle-memory "${DP[axle-memory]}"
    done
    for t in axle-disk axle-memory; do stop_pid "${DS[$t]}"; done
    rm -rf "$dir"
}

# --- run ---------------------------------------------------------------------------------------
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
START_S=$(date +%s)
sample_busy start
log "$PINNING"
log "scenarios: $SCENARIOS; DURATION=$DURATION per cell, WARMUP=$WARMUP"

for scen in $ALL_SCENARIOS; do
    want "$scen" || continue
    case $scen in
    doc | trivial | hello | pairs | shared | c1000)
        start_main
        sample_busy "before $scen"
        case $scen in
        doc) scenario_doc_like doc article "$DOC_URL" "$REF/doc" ;;
        trivial) scenario_doc_like trivial trivial "$TRIVIAL_URL" "$REF/trivial" ;;
        hello) scenario_hello ;;
        pairs) scenario_pairs ;;
        shared) scenario_shared ;;
        c1000) scenario_c1000 ;;
        esac
        ;;
    churn)
        stop_main
        sample_busy "before churn"
        scenario_churn
        ;;
    dynamic)
        stop_main
        sample_busy "before dynamic"
        scenario_dynamic
        ;;
    dynamic-front)
        stop_main
        sample_busy "before dynamic-front"
        scenario_dynamic_front
        ;;
    xsp)
        stop_main
        sample_busy "before xsp"
        scenario_xsp
        ;;
    heavy)
        stop_main
        sample_busy "before heavy"
        scenario_heavy
        ;;
    site)
        stop_main
        sample_busy "before site"
        scenario_site
        ;;
    compression | warm-restart | disk-hit | shared-cache)
        stop_main
        sample_busy "before $scen"
        case $scen in
        compression) scenario_compression ;;
        warm-restart) scenario_warm_restart ;;
        disk-hit) scenario_disk_hit ;;
        shared-cache) scenario_shared_cache ;;
        esac
        ;;
    esac
done
stop_main
sample_busy end
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(($(date +%s) - START_S))

# --- report -------------------------------------------------------------------------------------
CPU_MODEL=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo || true)
MEM_GIB=$(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
# shellcheck disable=SC1091
OS=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || echo unknown)
GIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || GIT="$GIT (with uncommitted changes)"
NGINX_V=$(nginx -v 2>&1 | sed 's#.*nginx/##' || true)
APACHE_V=$(apache2 -v 2>/dev/null | sed -n 's#^Server version: Apache/\([^ ]*\).*#\1#p' || true)
MODPERL_V=$(dpkg-query -W -f '${Version}' libapache2-mod-perl2 2>/dev/null || echo '?')
LIBXSLT_PERL_V=$(perl -MXML::LibXSLT -e 'print $XML::LibXSLT::VERSION, " (libxslt ", XML::LibXSLT::LIBXSLT_DOTTED_VERSION(), ")"' 2>/dev/null || echo '?')
STARLET_V=$(dpkg-query -W -f '${Version}' starlet 2>/dev/null || echo '?')
WRK_V=$( (wrk -v 2>&1 || true) | head -n1 | awk '{print $2}')
XSLTPROC_V=$( (xsltproc --version 2>/dev/null || true) | head -n1 | sed 's/^Using //')
HYPERFINE_V=$(hyperfine --version 2>/dev/null | awk '{print $2}' || true)

add type=meta "date=$NOW" "git_commit=$GIT" "axle_bin=$BIN" \
    "machine=$NPROC CPUs ($CPU_MODEL), $MEM_GIB GiB RAM, $OS, Linux $(uname -r)" \
    "machine_detail:={\"nproc\": $NPROC, \"cpu_model\": \"$CPU_MODEL\", \"mem_gib\": $MEM_GIB, \"os\": \"$OS\", \"kernel\": \"$(uname -r)\"}" \
    "software=nginx $NGINX_V (static; XSLT filter module), Apache $APACHE_V prefork + mod_perl $MODPERL_V + XML::LibXSLT $LIBXSLT_PERL_V, Starlet $STARLET_V (plackup -E deployment, $HELLO_CONNECTIONS workers, keep-alive on), xsltproc ($XSLTPROC_V), wrk $WRK_V, hyperfine $HYPERFINE_V" \
    "pinning=$PINNING" \
    "axle_workers=Axle with its defaults (--workers 0 = one transform thread per CPU it may run on = 1 here; --cache-size 256MiB except in site)" \
    "load=wrk -t$THREADS with bench.lua, $DURATION per cell after an unrecorded $WARMUP warm-up; c=$CONNECTIONS unless the c column says otherwise; HTTP/1.1 keep-alive, or close (request header Connection: close: a new connection per request); open files limit $NOFILE; $ELAPSED s in all" \
    "duration=$DURATION" "warmup=$WARMUP" "scenarios=$SCENARIOS" \
    "loadavg_before=$LOAD_BEFORE" "loadavg_after=$LOAD_AFTER" "busy_max_percent=$BUSY_MAX" "elapsed_s=$ELAPSED"

mkdir -p "$ROOT/$OUT_DIR"
OUT_JSON="$OUT_DIR/peers-$STAMP.json"
OUT_MD="$OUT_DIR/peers-$STAMP.md"
echo
"${BENCH[@]}" report "$RESULTS" "$ROOT/$OUT_JSON" "$ROOT/$OUT_MD"
if [[ $RECORD == 1 ]]; then
    echo "run.sh: wrote $OUT_JSON and $OUT_MD (recorded: commit them with the docs that cite them)" >&2
else
    echo "run.sh: wrote $OUT_JSON and $OUT_MD (not tracked; RECORD=1 writes to benches/load/results/)" >&2
fi
if ((CHECK_FAILURES)); then
    echo
    echo "run.sh: $CHECK_FAILURES body check(s) FAILED (see above); kept $WORK" >&2
    exit 1
fi
