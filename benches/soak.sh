#!/usr/bin/env bash
# The soak (issue #23 item 11): why it exists: a server can pass every
# short test and still leak memory or descriptors, or serve a stale page,
# after minutes of mixed traffic. This runs `axle serve` (release) on a
# generated site of a few hundred documents and stylesheets, at c=256 for
# AXLE_SOAK_SECS (default 300), mixing hits, misses (new ?x=N), 404s and a
# malformed document (benches/soak/mix.lua, through wrk) with edits of
# sources and stylesheets checked for staleness, HEADs, and a few slow
# clients sending heads byte by byte (benches/soak/side.py). It samples the
# server's RSS and open descriptors every 2 s and prints a summary; it
# exits nonzero if there was an unexpected status or socket error, a stale
# response, RSS drift of 10% or more after warm-up, or a descriptor leak.
#
#   bash benches/soak.sh                       # 5 minutes
#   AXLE_SOAK_SECS=60 bash benches/soak.sh     # shorter
#   AXLE_SOAK_ARGS="--render-timeout 2s" bash benches/soak.sh   # extra serve flags
#
# Raw output goes to benches/load/out/soak-<time>/ (git-ignored). Needs
# wrk (apt-get install -y wrk) and python3. Traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${AXLE_SOAK_SECS:-300}
conns=${AXLE_SOAK_CONNS:-256}
threads=${AXLE_SOAK_THREADS:-2}
docs=${AXLE_SOAK_DOCS:-300}
# Warm-up: the cache fills and the allocator settles before RSS is judged.
warm=$(( secs / 4 > 10 ? secs / 4 : 10 ))

for tool in wrk python3; do
  command -v "$tool" >/dev/null || { echo "soak: $tool is required" >&2; exit 2; }
done

cargo build --release --bin axle
out="benches/load/out/soak-$(date -u +%Y-%m-%dT%H%M%SZ)"
mkdir -p "$out"
tmp=$(mktemp -d)
site="$tmp/root"
pid=""
sampler=""
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The site: $docs documents under /docs through /s/page.xsl, which imports
# four part stylesheets; each document and each part carries a marker the
# side process rewrites. /bad.xml is malformed.
python3 - "$site" "$docs" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.join(root, "docs")); os.makedirs(os.path.join(root, "s"))
X = "http://www.w3.org/1999/XSL/Transform"
imports = "".join('<xsl:import href="part%d.xsl"/>\n' % i for i in range(4))
calls = "".join('<xsl:call-template name="p%d"/>' % i for i in range(4))
open(os.path.join(root, "s/page.xsl"), "w").write(
    '<xsl:stylesheet version="1.0" xmlns:xsl="%s">\n%s<xsl:output method="html"/>\n'
    '<xsl:template match="/"><html><head><title><xsl:value-of select="doc/title"/></title></head>'
    '<body><h1><xsl:value-of select="doc/title"/></h1>%s<xsl:apply-templates select="doc/p"/></body></html></xsl:template>\n'
    '<xsl:template match="p"><p><xsl:value-of select="."/></p></xsl:template>\n</xsl:stylesheet>\n'
    % (X, imports, calls))
for i in range(4):
    open(os.path.join(root, "s/part%d.xsl" % i), "w").write(
        '<xsl:stylesheet version="1.0" xmlns:xsl="%s">\n'
        '<xsl:template name="p%d"><span>XSLMARK-p%d-g0</span></xsl:template>\n</xsl:stylesheet>\n' % (X, i, i))
para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6
for k in range(n):
    body = "".join("<p>%s %d</p>" % (para, j) for j in range(8))
    open(os.path.join(root, "docs/d%03d.xml" % k), "w").write(
        '<?xml version="1.0"?>\n<?xml-stylesheet href="/s/page.xsl" type="text/xsl"?>\n'
        '<doc><title>Document %d</title><p>SRCMARK-d%d-g0</p>%s</doc>\n' % (k, k, body))
open(os.path.join(root, "bad.xml"), "w").write(
    '<?xml version="1.0"?>\n<?xml-stylesheet href="/s/page.xsl" type="text/xsl"?>\n<doc><p>unclosed</doc>\n')
PY

ulimit -n 65536 2>/dev/null || true
# shellcheck disable=SC2086
target/release/axle serve --listen 127.0.0.1:0 --root "$site" --cache-size 32MiB \
  ${AXLE_SOAK_ARGS:-} > "$out/server.stdout" 2> "$out/server.log" &
pid=$!
url=""
for _ in $(seq 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$out/server.stdout" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "soak: the server did not start" >&2; cat "$out/server.log" >&2; exit 1; }
echo "soak: $url, $docs documents, ${secs}s at c=$conns, warm-up ${warm}s, output in $out"

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0; }
fds() { find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
curl_ok=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]+'/docs/d000.xml').status)" "$url")
[ "$curl_ok" = 200 ] || { echo "soak: the first page answered $curl_ok" >&2; exit 1; }
fd_start=$(fds)
start_ts=$(date +%s)
( while kill -0 "$pid" 2>/dev/null; do
    echo "$(( $(date +%s) - start_ts )) $(rss) $(fds)"
    sleep 2
  done ) > "$out/samples.tsv" &
sampler=$!

python3 benches/soak/side.py "$url" "$site" "$out/side.json" "$secs" &
side=$!
SOAK_DOCS=$docs wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s \
  -s benches/soak/mix.lua "$url" > "$out/wrk.txt" 2>&1 || true
wait "$side" || true
# Let closed connections go before descriptors are counted again.
sleep 3
fd_end=$(fds)
rss_final=$(rss)
kill "$sampler" 2>/dev/null || true
sampler=""
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""

python3 - "$out" "$warm" "$fd_start" "$fd_end" "$rss_final" <<'PY'
import json, re, sys
out, warm, fd_start, fd_end, rss_final = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
text = open(out + "/wrk.txt").read()
m = re.search(r"SOAKJSON (\{.*\})", text)
wrk = json.loads(m.group(1)) if m else None
side = json.load(open(out + "/side.json"))
samples = [tuple(map(int, l.split())) for l in open(out + "/samples.tsv") if len(l.split()) == 3]
failures = []
if wrk is None:
    failures.append("wrk printed no SOAKJSON line (see wrk.txt)")
    wrk = {"requests": 0, "statuses": {}, "connect": 0, "read": 0, "write": 0, "timeout": 0}
expected = {"200", "404", "500"}
bad_status = sum(v for k, v in wrk["statuses"].items() if k not in expected)
sock = wrk["connect"] + wrk["read"] + wrk["write"] + wrk["timeout"]
unexpected = bad_status + sock + side["unexpected"]
after = [s for s in samples if s[0] >= warm]
rss_start = after[0][1] if after else 0
rss_end = after[-1][1] if after else 0
rss_max = max((s[1] for s in samples), default=0)
drift = 100.0 * (rss_end - rss_start) / rss_start if rss_start else float("nan")
side_n = side["edit_polls"] + side["checks"] + side["heads"]
requests = wrk["requests"] + side_n
print("== soak summary ==")
print("requests:          %d (wrk %d, side %d of which %d HEADs)" % (requests, wrk["requests"], side_n, side["heads"]))
print("statuses (wrk):    %s" % ", ".join("%s: %d" % kv for kv in sorted(wrk["statuses"].items())))
print("socket errors:     connect %d, read %d, write %d, timeout %d" % (wrk["connect"], wrk["read"], wrk["write"], wrk["timeout"]))
print("unexpected errors: %d (statuses outside 200/404/500: %d, socket: %d, side: %d)" % (unexpected, bad_status, sock, side["unexpected"]))
for s in side["unexpected_samples"]:
    print("   ", s)
print("edits:             %d (visible on the first request after the write: %d, never visible: %d)" % (side["edits"], side["visible_first"], side["never_visible"]))
print("stale responses:   %d (of %d checks after the new content was seen)" % (side["stale"], side["checks"]))
print("slow clients:      %d answered, %d closed by the server, %d other" % (side["slow_done"], side["slow_closed"], side["slow_other"]))
print("RSS (KiB):         start %d (at %ds), end %d, max %d, after load %d; drift %.1f%%" % (rss_start, after[0][0] if after else -1, rss_end, rss_max, rss_final, drift))
print("descriptors:       start %d, end %d" % (fd_start, fd_end))
print("p99 latency:       %.1f ms" % (wrk.get("p99_us", 0) / 1000))
if unexpected:
    failures.append("%d unexpected errors" % unexpected)
if side["stale"]:
    failures.append("%d stale responses" % side["stale"])
if side["never_visible"]:
    failures.append("%d edits never became visible" % side["never_visible"])
if not after or drift != drift or drift >= 10:
    failures.append("RSS drift %.1f%% after warm-up (limit 10%%)" % drift)
if fd_end > fd_start + 4:
    failures.append("descriptors grew from %d to %d" % (fd_start, fd_end))
if failures:
    print("FAIL: " + "; ".join(failures))
    sys.exit(1)
print("PASS")
PY
