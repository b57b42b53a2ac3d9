#!/usr/bin/env bash
# The developer's loop: one line added to a file, then the time until the integration
# test binary is built again (`cargo test -p broker-tests --no-run`), the tree built
# before. Each file is put back as it was afterwards, even when the build fails.
#
#   bench/devloop.sh                 # the console, the catalog, the call driver
#   bench/devloop.sh FILE...         # any files of the engine (Rust sources)
#
# Prints one line per file: its path and the seconds the build took. Run it on a quiet
# machine: the figure is a build's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
if ((${#files[@]} == 0)); then
  files=(
    engine/surfaces/src/console/overview.rs
    engine/catalog/src/catalog/search.rs
    engine/core/src/call/mod.rs
  )
fi
for file in "${files[@]}"; do
  [[ -f $file ]] || { echo "no such file: $file" >&2; exit 2; }
done

build() { cargo test -q -p broker-tests --no-run >/dev/null 2>&1; }
echo "building the tree once first" >&2
build

saved=$(mktemp)
restore() { [[ -n ${current:-} ]] && cp "$saved" "$current"; rm -f "$saved"; }
trap restore EXIT
for file in "${files[@]}"; do
  current=$file
  cp "$file" "$saved"
  echo 'const _: () = ();' >>"$file"
  start=$(date +%s.%N)
  build
  end=$(date +%s.%N)
  cp "$saved" "$file"
  current=""
  awk -v f="$file" -v s="$start" -v e="$end" 'BEGIN {printf "%s: %.1f s\n", f, e - s}'
done
# The tree as it was, built again, so the next command starts from it.
build
