#!/usr/bin/env bash
# Builds the broker's image (deploy/image/Containerfile) from a release binary built on
# the host, with podman or docker, and prints its size.
#
#   deploy/image/build.sh                     # cargo build --release, then the image
#   BINARY=path/to/tool-broker deploy/image/build.sh   # an already built binary
#   ENGINE=docker TAG=registry.example/tool-broker:1.2.3 deploy/image/build.sh
#
# The binary is stripped into the image; its debug information is kept beside the staged
# context as tool-broker.debug (objcopy --only-keep-debug, linked by .gnu_debuglink), out
# of the image, for a debugger or a symbolised profile of what runs.
# Honours CARGO_TARGET_DIR: everything is staged under <target>/image/.
set -euo pipefail
cd "$(dirname "$0")/../.."

engine=${ENGINE:-$(command -v podman || command -v docker || true)}
if [[ -z $engine ]]; then
  echo "neither podman nor docker found: install one (deploy/image/podman-setup.sh sets up podman)" >&2
  exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source=$(git config --get remote.origin.url 2>/dev/null || echo unknown)
tag=${TAG:-tool-broker:$version}
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
binary=${BINARY:-}
if [[ -z $binary ]]; then
  cargo build --release -p tool-broker --bin tool-broker
  binary=$target/release/tool-broker
fi

stage=$target/image
context=$stage/context
rm -rf "$context"
mkdir -p "$context/rootfs/usr/local/bin" "$context/rootfs/etc/ssl/certs" "$context/data"
objcopy --only-keep-debug "$binary" "$stage/tool-broker.debug"
objcopy --strip-all --add-gnu-debuglink="$stage/tool-broker.debug" "$binary" \
  "$context/rootfs/usr/local/bin/tool-broker"

# Every shared library the binary links, and the loader, at the path it is looked for.
ldd "$binary" | awk '/=> \// {print $3} /^\s*\/[^ ]+ \(/ {print $1}' | while read -r lib; do
  mkdir -p "$context/rootfs$(dirname "$lib")"
  cp -L "$lib" "$context/rootfs$lib"
done

certs=/etc/ssl/certs/ca-certificates.crt
if [[ ! -f $certs ]]; then
  echo "no CA bundle at $certs: install Debian's ca-certificates" >&2
  exit 1
fi
cp "$certs" "$context/rootfs$certs"
printf 'root:x:0:0:root:/:/sbin/nologin\nbroker:x:65532:65532:tool-broker:/data:/sbin/nologin\n' \
  > "$context/rootfs/etc/passwd"
printf 'root:x:0:\nbroker:x:65532:\n' > "$context/rootfs/etc/group"

"$engine" build -q -f deploy/image/Containerfile -t "$tag" \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source" \
  "$context" > /dev/null
size=$("$engine" image inspect "$tag" --format '{{.Size}}')
echo "$tag: $((size / 1000 / 1000)) MB ($size bytes) uncompressed; binary $(stat -c %s "$context/rootfs/usr/local/bin/tool-broker") bytes stripped; debug info in $stage/tool-broker.debug"
