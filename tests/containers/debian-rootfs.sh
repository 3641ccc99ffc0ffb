# shellcheck shell=bash
# Sourced by the image builders (tests/containers/build-image.sh, ee/build-base-image.sh): no registry is
# reachable, so images are Debian bookworm root filesystems made with debootstrap, then `podman import`ed.

# image_is_current IMAGE RECIPE: the image exists and was built from this recipe (its gpufleet.recipe label).
image_is_current() {
  podman image exists "$1" &&
    [ "$(podman image inspect "$1" --format '{{index .Labels "gpufleet.recipe"}}')" = "$2" ]
}

# debootstrap_rootfs PACKAGES: a minbase bookworm with PACKAGES (comma-separated) in a new temporary directory,
# $rootfs, removed when the script exits; from the Debian mirror this machine already uses (deb822 or one-line
# sources).
debootstrap_rootfs() {
  local mirror
  mirror=$( (grep -shoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* ||
             true) | head -n1 | awk '{print $2}')
  mirror=${mirror:-http://deb.debian.org/debian}
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  echo "debootstrap bookworm from $mirror"
  debootstrap --variant=minbase --include="$1" bookworm "$rootfs" "$mirror" >/dev/null
}
