#!/usr/bin/env bash
# Idempotent set-up of a fresh Debian 12 machine (as root): Debian packages for the
# containers and the lab's kernel limits, the Python venvs from the locks in requirements/ (hashes).
set -euo pipefail
cd "$(dirname "$0")/.."

# ansible-test's shellcheck sanity test runs only where shellcheck is installed. haproxy: the traffic lab's
# second gateway kind (tests/traffic/lab-haproxy.sh starts its own; the package's service is not needed).
debs=(python3-venv podman runc fuse-overlayfs slirp4netns uidmap debootstrap iproute2 rsync git curl ripgrep openssh-client chromium
  shellcheck haproxy)
missing=()
for pkg in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The canary lab's Prometheus (tests/traffic/lab-prometheus.sh starts its own, on 127.0.0.1): without the
# recommended node exporter, and Debian's own service is not left running (it would listen on every address).
if ! dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing Debian package: prometheus"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ -d /run/systemd/system ]; then systemctl disable --now prometheus.service >/dev/null 2>&1 || true; fi
fi

# venv_from_lock VENV LOCK WHAT: VENV made anew with exactly what LOCK pins (every package, by version and
# sha256: pip refuses a file whose hash differs, and a dependency the lock lacks), when LOCK changed since.
venv_from_lock() {
  local venv=$1 lock=$2 what=$3 want
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  [ "$(cat "$venv/.lock.sha256" 2>/dev/null)" != "$want" ] || return 0
  echo "setup: $what in $venv from $lock"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$lock" 2>&1 |
    { grep -v "^WARNING: Location" || true; }
  echo "$want" > "$venv/.lock.sha256"
}

venv_from_lock .venv requirements/dev.txt "the project's Python tools"
# The execution environment's tools (scripts/ee.sh: ansible-builder, ansible-navigator) in a venv of their
# own: they bring their own ansible-runner, ansible-lint and black, which the project venv does not need.
venv_from_lock .cache/ee-tools requirements/ee-tools.txt "ansible-builder and ansible-navigator"
# One venv per other ansible-core release that requires_ansible claims (tests/sanity/ansible-core-matrix.txt),
# with the project's pytest: `scripts/test.sh versions` runs ansible-test sanity and the unit tests in each.
grep -v '^#' tests/sanity/ansible-core-matrix.txt | while read -r core; do
  lock=requirements/ansible-core-${core%.*}.txt
  grep -q "^ansible-core==$core " "$lock" 2>/dev/null ||
    { echo "setup: $lock does not pin ansible-core==$core (tests/sanity/ansible-core-matrix.txt): run scripts/update-locks.sh" >&2; exit 1; }
  venv_from_lock ".cache/ansible-core/${core%.*}" "$lock" "ansible-core $core"
done

# The kernel limits of the lab's systemd containers (inotify instances), in /etc/sysctl.d/.
tests/containers/lab-sysctl.sh

# ansible-test fetches its pip bootstrap script from a host this network does not reach;
# it documents that the script may be put in its cache by hand: ours bootstraps via ensurepip.
mkdir -p "$HOME/.ansible/test/cache"
for py in .venv/bin/python .cache/ansible-core/*/bin/python; do
  at_dir=$("$py" -c "import ansible_test, os; print(os.path.dirname(ansible_test.__file__))")
  for v in $(grep -ho "pip='[0-9.]*'" "$at_dir/_internal/python_requirements.py" | tr -dc '0-9.\n' | sort -u); do
    cp tests/sanity/get_pip_offline.py "$HOME/.ansible/test/cache/get_pip_${v//./_}.py"
  done
done
