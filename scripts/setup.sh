#!/usr/bin/env bash
# Idempotent set-up of a fresh Debian 12 machine (as root): Debian packages for the
# containers, a project venv (.venv) with the pinned Python tools.
set -euo pipefail
cd "$(dirname "$0")/.."

# ansible-test's shellcheck sanity test runs only where shellcheck is installed.
debs=(python3-venv podman runc fuse-overlayfs slirp4netns uidmap debootstrap iproute2 rsync git curl ripgrep openssh-client chromium
  shellcheck)
missing=()
for pkg in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python tools from requirements-dev.txt"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt 2>&1 | { grep -v "^WARNING: Location" || true; }
  echo "$want" > "$stamp"
fi

# The execution environment's tools (scripts/ee.sh: ansible-builder, ansible-navigator) in a venv of their
# own: they bring their own ansible-runner, ansible-lint and black, which the project venv does not need.
ee_tools=.cache/ee-tools
want=$(sha256sum ee/requirements-tools.txt | cut -d' ' -f1)
if [ "$(cat "$ee_tools/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  echo "setup: ansible-builder and ansible-navigator in $ee_tools"
  rm -rf "$ee_tools"
  python3 -m venv "$ee_tools"
  "$ee_tools/bin/pip" install -q --disable-pip-version-check -r ee/requirements-tools.txt 2>&1 | { grep -v "^WARNING: Location" || true; }
  echo "$want" > "$ee_tools/.requirements.sha256"
fi

# One venv per other ansible-core release that requires_ansible claims (tests/sanity/ansible-core-matrix.txt),
# with the project's pytest: `scripts/test.sh versions` runs ansible-test sanity and the unit tests in each.
pytest_pin=$(grep -o '^pytest==[0-9.]*' requirements-dev.txt)
grep -v '^#' tests/sanity/ansible-core-matrix.txt | while read -r core; do
  venv=.cache/ansible-core/${core%.*}
  want="ansible-core==$core $pytest_pin"
  if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ]; then
    echo "setup: ansible-core $core in $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086 # two requirements
    "$venv/bin/pip" install -q --disable-pip-version-check $want 2>&1 | { grep -v "^WARNING: Location" || true; }
    echo "$want" > "$venv/.requirements"
  fi
done

# ansible-test fetches its pip bootstrap script from a host this network does not reach;
# it documents that the script may be put in its cache by hand: ours bootstraps via ensurepip.
mkdir -p "$HOME/.ansible/test/cache"
for py in .venv/bin/python .cache/ansible-core/*/bin/python; do
  at_dir=$("$py" -c "import ansible_test, os; print(os.path.dirname(ansible_test.__file__))")
  for v in $(grep -ho "pip='[0-9.]*'" "$at_dir/_internal/python_requirements.py" | tr -dc '0-9.\n' | sort -u); do
    cp tests/sanity/get_pip_offline.py "$HOME/.ansible/test/cache/get_pip_${v//./_}.py"
  done
done
