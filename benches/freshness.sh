#!/usr/bin/env bash
# The long version of the concurrent-edit freshness test (tests/it/edits.rs,
# `long_edit_stress`): for each kind of edit alone and all together, in every
# cache mode and both freshness modes, clients request a page while an editor
# rewrites what it depends on (the source, an external entity, a document()
# target saved atomically and rewritten in place, an imported stylesheet, a
# re-pointed symlink, a swapped stylesheet directory). It prints a table of
# responses, edits, and the stale and wrong responses it saw (both must be 0).
#
#   bash benches/freshness.sh              # 10 s per row (56 rows: ~10 min)
#   AXLE_STRESS_SECS=60 bash benches/freshness.sh
#   RECORD=1 bash benches/freshness.sh     # keep the table in benches/load/results/
#
# Traffic goes to 127.0.0.1 only; every loop is bounded by the time above.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${AXLE_STRESS_SECS:-10}
case "${RECORD:-0}" in
  1) dir=benches/load/results ;;
  0) dir=benches/load/out ;;
  *) echo "freshness: RECORD must be 0 or 1" >&2; exit 2 ;;
esac
mkdir -p "$dir"
out="$dir/freshness-$(date -u +%Y-%m-%dT%H%M%SZ).md"
{
  echo "# Freshness under concurrent edits"
  echo
  echo "At $(git rev-parse --short HEAD 2>/dev/null || echo unknown), ${secs} s a row, 8 clients."
  echo
} > "$out"
AXLE_STRESS_SECS="$secs" cargo test --release --test it edits::long_edit_stress \
  -- --ignored --nocapture --test-threads 1 2>&1 \
  | tee /dev/stderr | grep '^|' >> "$out"
echo "freshness: table written to $out"
