#!/usr/bin/env bash
# Short runs of every fuzz target by hand (fuzz/README.md; CI replays the committed
# corpus in `cargo test` instead): FUZZ_SECONDS each
# (default 20), from the committed corpus, on the machine's stable toolchain. A target
# that finds a disagreement or a panic fails the run and leaves the input under
# fuzz/artifacts/<target>/. New inputs go to target/fuzz-corpus/<target>, never into the
# committed corpus (fuzz/README.md says how to add them).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
# A fixed seed by default: CI explores what the last run here explored, so a submission
# fails on a finding someone could reproduce, not on a new path drawn by chance. Set
# FUZZ_SEED=0 for a random one (a longer hunt by hand).
seed=${FUZZ_SEED:-1}
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi
# cargo fuzz passes -Z flags (sanitizer coverage); the project's machines have only the
# stable toolchain, which takes them with RUSTC_BOOTSTRAP. No sanitizer: the engine
# forbids unsafe code, so AddressSanitizer would find nothing the panics do not; debug
# assertions (-a) are on, so an arithmetic overflow is a finding.
export RUSTC_BOOTSTRAP=1
build() { cargo fuzz build --fuzz-dir fuzz -s none -a "$@"; }
build
for target in $(cargo fuzz list --fuzz-dir fuzz); do
  scratch=target/fuzz-corpus/$target
  mkdir -p "$scratch" "fuzz/corpus/$target"
  echo "-- $target: ${seconds}s"
  log=target/fuzz-$target.log
  status=0
  # FUZZ_SECONDS=0: replay the committed corpus only (every input, no exploration).
  if [ "$seconds" -eq 0 ]; then limit=(-runs=0); else limit=(-max_total_time="$seconds"); fi
  cargo fuzz run --fuzz-dir fuzz -s none -a "$target" "$scratch" "fuzz/corpus/$target" -- \
    "${limit[@]}" -seed="$seed" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "fuzz: $target found a disagreement or a panic (input under fuzz/artifacts/$target/)" >&2
    exit "$status"
  fi
done
echo "fuzz: every target ran ${seconds}s without a finding"
