#!/usr/bin/env bash
# The Cedar engine's core crate, as published on crates.io with one change: its
# serde_json dependency without the `preserve_order` feature (docs/decisions/014).
#
#   vendor/cedar-policy-core.sh          write vendor/cedar-policy-core/ from the registry
#   vendor/cedar-policy-core.sh --check  prove the folder is the published crate plus that change
#
# To move to another release: set VERSION and SHA256 (the `checksum` Cargo.lock records
# for that release on crates.io), run the script, then `cargo update -p cedar-policy`.
set -euo pipefail

VERSION=4.14.1
SHA256=84f39a1d02e72014885b6c33d5ec4fbd0c7ede5ed1069b3a9e5775874bca066b

here=$(cd "$(dirname "$0")" && pwd)
target="$here/cedar-policy-core"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

curl -sSfL --retry 3 -o "$work/crate.tar.gz" \
  "https://static.crates.io/crates/cedar-policy-core/cedar-policy-core-$VERSION.crate"
echo "$SHA256  $work/crate.tar.gz" | sha256sum -c --quiet -
tar -xzf "$work/crate.tar.gz" -C "$work"
unpacked="$work/cedar-policy-core-$VERSION"

# The one change: the feature line of the serde_json dependency, and nothing else.
manifest="$unpacked/Cargo.toml"
before=$(grep -c 'features = \["preserve_order"\]' "$manifest" || true)
if [ "$before" != 1 ]; then
  echo "cedar-policy-core $VERSION: expected one preserve_order feature line in Cargo.toml, found $before" >&2
  exit 1
fi
sed -i '/^\[dependencies.serde_json\]$/,/^$/{/^features = \["preserve_order"\]$/d}' "$manifest"
if grep -q preserve_order "$manifest"; then
  echo "cedar-policy-core $VERSION: the preserve_order line is not in [dependencies.serde_json]" >&2
  exit 1
fi
rm -f "$unpacked/.cargo_vcs_info.json" "$unpacked/.cargo-ok"

if [ "${1:-}" = "--check" ]; then
  if diff -r "$unpacked" "$target" >"$work/diff"; then
    echo "vendor/cedar-policy-core is cedar-policy-core $VERSION from crates.io without preserve_order"
  else
    cat "$work/diff" >&2
    echo "vendor/cedar-policy-core differs from cedar-policy-core $VERSION plus the one change" >&2
    exit 1
  fi
else
  rm -rf "$target"
  mv "$unpacked" "$target"
  echo "wrote $target"
fi
