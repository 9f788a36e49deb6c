#!/usr/bin/env bash
# The render attacks of issue #23, one fresh `axle serve` (release, default
# limits) per attack on 127.0.0.1: status and time of the attack, peak RSS
# (VmHWM), RSS 5 s later, and whether a normal page still answers. The
# "after" column of the issue's closing note; connections.py beside it
# measures the connection attacks.
#
#   bash benches/attacks/renders.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin axle
BIN=target/release/axle
H=tests/fixtures/hostile/root
SITE=$(mktemp -d)
trap 'rm -rf "$SITE"' EXIT
cp -r samples/. "$SITE/"
mkdir -p "$SITE/s" "$SITE/fan"
cp "$H/s/cubic.xsl" "$H/s/double.xsl" "$H/s/fanout-axle.xsl" "$SITE/s/"
cp "$H/cubic-count.xml" "$SITE/cubic.xml"
cp "$H/string-doubling.xml" "$H/axle-fanout.xml" "$SITE/"
printf '\n[location."/fan"]\nxinclude = true\n' >>"$SITE/axle.toml"
python3 - "$SITE" <<'PY'
import sys
site = sys.argv[1]
with open(f"{site}/big.xml", "w") as f:  # a 50 MB source
    f.write('<?xml-stylesheet href="/s/cubic.xsl" type="text/xsl"?>\n<r>')
    chunk = '<leaf a="1">text</leaf>' * 1000
    n = 0
    while n < 50_000_000:
        f.write(chunk)
        n += len(chunk)
    f.write("</r>")
open(f"{site}/pis.xml", "w").write('<?xml-stylesheet href="/s/cubic.xsl" type="text/xsl"?>\n' * 10000 + "<r/>")
for i in range(21):  # XInclude fan-out: 2^21 leaves
    open(f"{site}/fan/l{i}.xml", "w").write(
        f'<x xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="l{i+1}.xml"/><xi:include href="l{i+1}.xml"/></x>')
open(f"{site}/fan/l21.xml", "w").write("<leaf/>")
open(f"{site}/fan/fan.xml", "w").write(
    '<?xml-stylesheet href="/s/cubic.xsl" type="text/xsl"?>\n<r xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="l0.xml"/></r>')
open(f"{site}/form.txt", "w").write("&".join(f"f{i}=" for i in range(170000)))
PY
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
U="http://127.0.0.1:$PORT"
run() {
  local name=$1; shift
  "$BIN" serve --root "$SITE" --listen "127.0.0.1:$PORT" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "$U/index.xml" && break; sleep 0.1; done
  local base out hwm after ok
  base=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
  out=$("$@" 2>/dev/null || true)
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
  sleep 5
  after=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
  ok=$(curl -s -o /dev/null -w "%{http_code}" "$U/index.xml")
  echo "$name | $out | peak $((hwm / 1024)) MiB | base $((base / 1024)) MiB, 5 s later $((after / 1024)) MiB | then /index.xml $ok"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
c() { curl -s -o /dev/null -w "%{http_code} in %{time_total}s" "$@"; }
run "string doubled 20 times" c "$U/string-doubling.xml"
run "50 MB source" c "$U/big.xml"
run "10,000 PIs" c "$U/pis.xml"
run "axle: fan-out" c "$U/axle-fanout.xml"
run "XInclude fan-out 2^21" c "$U/fan/fan.xml"
run "170,000-field form" c -X POST -H 'Content-Type: application/x-www-form-urlencoded' --data-binary "@$SITE/form.txt" "$U/index.xml"
run "cubic count()" c "$U/cubic.xml"
