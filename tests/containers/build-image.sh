#!/usr/bin/env bash
# Build the local Debian bookworm image with systemd as PID 1 that the Molecule scenarios and
# the local deployment run in. No registry is reachable: debootstrap from Debian's packages,
# then `podman import`. The image is rebuilt only when this script or the package list changes
# (the hash is stored as an image label).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="$here/containers.conf"
image=${GPUFLEET_IMAGE:-localhost/gpufleet-debian-systemd:bookworm}
packages=python3,python3-venv,systemd,systemd-sysv,dbus,iproute2,curl,ca-certificates,procps,libgomp1,openssh-server,sudo
recipe=$(cat "$0" "$here/debian-rootfs.sh" "$here/fake-nvidia-smi" | sha256sum | cut -c1-16)
# shellcheck source=tests/containers/debian-rootfs.sh
. "$here/debian-rootfs.sh"

if image_is_current "$image" "$recipe"; then
  echo "image $image is up to date ($recipe)"
  exit 0
fi

debootstrap_rootfs "$packages"
install -m 0755 "$here/fake-nvidia-smi" "$rootfs/usr/local/bin/nvidia-smi"
mkdir -p "$rootfs/etc/gpufleet-fake-gpu"
# Units that fight with a container: no consoles, no udev, no time sync.
for unit in getty@tty1.service console-getty.service systemd-udevd.service systemd-timesyncd.service \
            systemd-logind.service; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
# Reached as a fleet is: SSH on port 22 as a non-root user with passwordless sudo. The lab's public
# key is bind-mounted at /home/ops/.ssh/authorized_keys when a container starts (lab-ssh-key.sh).
chroot "$rootfs" useradd --create-home --shell /bin/bash --uid 1000 ops
install -d -m 0700 -o 1000 -g 1000 "$rootfs/home/ops/.ssh"
echo "ops ALL=(ALL) NOPASSWD: ALL" > "$rootfs/etc/sudoers.d/ops"
chmod 0440 "$rootfs/etc/sudoers.d/ops"
printf 'PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin no\nUseDNS no\n' \
  > "$rootfs/etc/ssh/sshd_config.d/gpufleet-lab.conf"
rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
tar -C "$rootfs" -c . | podman import --change "LABEL gpufleet.recipe=$recipe" --change "CMD /sbin/init" - "$image" >/dev/null
echo "built $image ($recipe)"
