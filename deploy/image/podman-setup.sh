#!/usr/bin/env bash
# Makes podman, buildah and runc usable in a sandbox without overlay mounts or rlimits
# (a CI container, a VM without fuse-overlayfs): installs them with apt-get where absent
# and, only where no configuration exists yet, writes vfs storage and the runc runtime.
# An existing /etc/containers/storage.conf or containers.conf is left as it is.
set -euo pipefail

sudo=""
[[ $(id -u) -ne 0 ]] && sudo=sudo
need=()
for pair in podman:podman buildah:buildah runc:runc catatonit:catatonit; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if ((${#need[@]})); then
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi

if [[ ! -f /etc/containers/storage.conf ]]; then
  $sudo mkdir -p /etc/containers
  $sudo tee /etc/containers/storage.conf >/dev/null <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
fi
if [[ ! -f /etc/containers/containers.conf ]]; then
  $sudo tee /etc/containers/containers.conf >/dev/null <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
fi
podman info --format '{{.Store.GraphDriverName}} {{.Host.OCIRuntime.Name}}'
