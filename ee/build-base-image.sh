#!/usr/bin/env bash
# Build the base image of the execution environment (EE) the way the lab's images are made: no
# registry is reachable, so debootstrap Debian bookworm and `podman import` it. It holds what
# ansible-builder's build stages expect of a base image (python3 with pip and venv, bash) and what
# Ansible needs on a controller that reaches hosts over SSH (openssh-client); ansible-core,
# ansible-runner and the collection are added by ansible-builder (ee/execution-environment.yml).
# Rebuilt only when this script changes (the hash is stored as an image label).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/../tests/containers/containers.conf}
image=${GPUFLEET_EE_BASE_IMAGE:-localhost/gpufleet-ee-base:bookworm}
packages=python3,python3-pip,python3-venv,openssh-client,ca-certificates
recipe=$(cat "$0" "$here/../tests/containers/debian-rootfs.sh" | sha256sum | cut -c1-16)
# shellcheck source=tests/containers/debian-rootfs.sh
. "$here/../tests/containers/debian-rootfs.sh"

if image_is_current "$image" "$recipe"; then
  echo "image $image is up to date ($recipe)"
  exit 0
fi
for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "ee: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

debootstrap_rootfs "$packages"
# ansible-builder's scripts call "$PKGMGR install -y PKG..." (the system packages bindep lists) and
# "$PKGMGR clean all"; they expect dnf. This is their package manager on Debian (the definition's
# options.package_manager_path).
cat > "$rootfs/usr/local/sbin/ee-pkgmgr" <<'SH'
#!/bin/sh
# ansible-builder's package manager calls on Debian: install -y PKG..., clean all.
set -e
case "$1" in
  install) shift; apt-get update -qq; DEBIAN_FRONTEND=noninteractive exec apt-get install -y -qq --no-install-recommends "$@" ;;
  clean) apt-get clean; rm -rf /var/lib/apt/lists/* ;;
  *) exec apt-get "$@" ;;
esac
SH
chmod 0755 "$rootfs/usr/local/sbin/ee-pkgmgr"
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
tar -C "$rootfs" -c . | podman import -q --change "LABEL gpufleet.recipe=$recipe" --change "ENV LANG=C.UTF-8" \
  --change "CMD /bin/bash" - "$image" >/dev/null
echo "built $image ($recipe)"
