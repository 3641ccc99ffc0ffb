#!/usr/bin/env bash
# Build the "GPU node" image the role is tested on: the systemd base image plus real SGLang
# releases from PyPI, each in its own venv (/opt/sglang-X.Y.Z, installed with --no-deps), sharing
# one venv of the packages `--help` needs on a CPU (/opt/sglang-deps, CPU torch, linked in with a
# .pth file), exactly as the lock requirements/sglang-help.txt pins them (hashes). Wheels are
# downloaded once on the host into a wheelhouse cache and mounted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="$here/containers.conf"
base=${GPUFLEET_IMAGE:-localhost/gpufleet-debian-systemd:bookworm}
image=${GPUFLEET_NODE_IMAGE:-localhost/gpufleet-sglang-node:bookworm}
cache=${GPUFLEET_TEST_CACHE:-$HOME/.cache/gpufleet-sglang-tests}
wheelhouse="$cache/wheelhouse"
python=${PYTHON:-python3}
releases="0.5.6 0.5.11 0.5.16 0.5.23"
lock="$here/../../requirements/sglang-help.txt"

"$here/build-image.sh"
base_id=$(podman image inspect "$base" --format '{{.Id}}')
recipe=$(printf '%s\n' "$base_id" "$releases" | cat - "$lock" "$0" | sha256sum | cut -c1-16)
if podman image exists "$image" &&
   [ "$(podman image inspect "$image" --format '{{index .Labels "gpufleet.recipe"}}')" = "$recipe" ]; then
  echo "image $image is up to date ($recipe)"
  exit 0
fi

mkdir -p "$wheelhouse"
echo "wheelhouse: $wheelhouse"
"$python" -m pip download -q --disable-pip-version-check --require-hashes -d "$wheelhouse" -r "$lock" 2>&1 |
  { grep -v '^WARNING: Location' || true; }
for v in $releases; do
  "$python" -m pip download -q --disable-pip-version-check --no-deps -d "$wheelhouse" "sglang==$v" 2>&1 |
    { grep -v '^WARNING: Location' || true; }
done

name=gpufleet-node-build-$$
trap 'podman rm -f "$name" >/dev/null 2>&1 || true' EXIT
podman run -d --name "$name" -v "$wheelhouse:/wheelhouse:ro" -v "$lock:/sglang-help.txt:ro" "$base" sleep infinity >/dev/null
podman exec -e RELEASES="$releases" "$name" bash -euo pipefail -c '
  python3 -m venv /opt/sglang-deps
  /opt/sglang-deps/bin/pip install -q --disable-pip-version-check --no-index --find-links /wheelhouse \
    --require-hashes -r /sglang-help.txt
  site=$(/opt/sglang-deps/bin/python -c "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])")
  for v in $RELEASES; do
    python3 -m venv /opt/sglang-$v
    /opt/sglang-$v/bin/pip install -q --disable-pip-version-check --no-index --find-links /wheelhouse --no-deps sglang==$v
    echo "$site" > "$(/opt/sglang-$v/bin/python -c "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])")/gpufleet-deps.pth"
  done
  rm -rf /root/.cache
'
# Its PID 1 is `sleep`, which ignores SIGTERM: kill it rather than have `podman stop` warn that it had to.
podman kill "$name" >/dev/null
podman wait "$name" >/dev/null
podman commit -q --change "LABEL gpufleet.recipe=$recipe" --change "CMD /sbin/init" "$name" "$image" >/dev/null
echo "built $image ($recipe)"
