#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the modules where a silent bug means a
# wrong page or a read outside the document root: cache keys, the store and
# the hot memo, freshness (fingerprints, the watcher, dependencies),
# confinement, the prolog scanner, chain selection and href resolution.
#
#   bash scripts/mutants.sh            # every group below
#   bash scripts/mutants.sh keys chain # some groups
#   UNIT_ONLY=1 bash scripts/mutants.sh chain   # the first pass only
#
# Each group runs in two passes: the unit tests first (`cargo test --lib`,
# which catch most mutants in seconds), then every test for the mutants
# that survived the first pass (`--iterate`). Results per group go to
# target/mutants/<group>/mutants.out (caught.txt, missed.txt, unviable.txt,
# timeout.txt). Not run in CI: it rebuilds the crate once per mutant.
# See docs/contributing.md for how long it takes and what each missed
# mutant means.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo-mutants >/dev/null 2>&1 || cargo install cargo-mutants --locked

declare -A groups=(
  [keys]="src/cache/key.rs"
  [store]="src/cache/store.rs src/cache/hot.rs"
  [freshness]="src/cache/fingerprint.rs src/cache/watch.rs src/cache/mod.rs"
  [confine]="src/provider/confine.rs src/href.rs"
  [prolog]="src/prolog.rs src/prolog/chars.rs src/prolog/pseudo.rs"
  [chain]="src/chain.rs"
)
order=(keys store freshness confine prolog chain)
[ $# -gt 0 ] && order=("$@")

# Smaller, faster builds per mutant: no debug info.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0

for group in "${order[@]}"; do
  files=${groups[$group]:?"unknown group $group (one of: ${!groups[*]})"}
  out="target/mutants/$group"
  mkdir -p "$out"
  args=()
  for f in $files; do args+=(--file "$f"); done
  start=$(date +%s)
  echo "mutants: $group: unit tests"
  cargo mutants "${args[@]}" --output "$out" --no-shuffle --timeout 30 -- --lib || true
  if [ "${UNIT_ONLY:-0}" != 1 ]; then
    echo "mutants: $group: every test, for what the unit tests missed"
    cargo mutants "${args[@]}" --output "$out" --no-shuffle --timeout 300 --iterate \
      -- --all-targets || true
  fi
  end=$(date +%s)
  m="$out/mutants.out"
  echo "mutants: $group ($files): $(( (end - start) / 60 )) min;" \
    "caught $(wc -l < "$m/caught.txt" 2>/dev/null || echo 0)," \
    "missed $(wc -l < "$m/missed.txt" 2>/dev/null || echo 0)," \
    "unviable $(wc -l < "$m/unviable.txt" 2>/dev/null || echo 0)," \
    "timeout $(wc -l < "$m/timeout.txt" 2>/dev/null || echo 0)"
  if [ -s "$m/missed.txt" ]; then
    echo "mutants: $group: missed:"; sed 's/^/  /' "$m/missed.txt"
  fi
done
