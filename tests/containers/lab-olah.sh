#!/usr/bin/env bash
# The lab's Hugging Face mirror: olah from PyPI (requirements/dev.in) on 127.0.0.1, serving drafter repos
# made here, offline (olah's mirrors-path: local git repos whose weights are LFS pointers, the objects in
# .git/lfs/objects; no upstream is ever contacted).
#   tests/containers/lab-olah.sh repo DIR ORG/NAME [BLOCK_SIZE] [WEIGHT_MB] [SHARDS]   (prints the commit)
#   tests/containers/lab-olah.sh commit DIR ORG/NAME MESSAGE                           (commit a change; prints it)
#   tests/containers/lab-olah.sh start DIR PORT     (log and pid in DIR; ends by itself after an hour at most)
#   tests/containers/lab-olah.sh stop DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/lab-daemon.sh
. tests/lab-daemon.sh
action=$1
dir=$2
git_lab() { git -C "$1" -c user.email=lab@gpufleet.invalid -c user.name=lab -c commit.gpgsign=false "${@:2}"; }
case "$action" in
  repo)
    repo=$3 block=${4:-16} mb=${5:-4} shards=${6:-2}
    root="$dir/mirrors/models/$repo"
    rm -rf "$root"
    mkdir -p "$root"
    git init -q "$root"
    # A DFlash drafter's config.json (the fields SGLang's parse_dflash_draft_config reads) and SHARDS
    # safetensors files of MB MiB in all (a valid header, random F16 data): LFS pointers in git, objects aside.
    python3 - "$root" "$block" "$mb" "$shards" <<'PY'
import hashlib, json, os, struct, sys
root, block, mb, shards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(os.path.join(root, "config.json"), "w") as f:
    json.dump({"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "num_target_layers": 64,
               "dflash_config": {"block_size": block, "target_layer_ids": [1, 16, 31, 46, 61],
                                 "mask_token": "<|MASK|>", "mask_token_id": 151669}}, f)
with open(os.path.join(root, ".gitattributes"), "w") as f:
    f.write("*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
per = mb * 1024 * 1024 // shards
for i in range(shards):
    n = per // 2
    header = json.dumps({"layers.%d.weight" % i: {"dtype": "F16", "shape": [n], "data_offsets": [0, n * 2]}}).encode()
    data = struct.pack("<Q", len(header)) + header + os.urandom(n * 2)
    oid = hashlib.sha256(data).hexdigest()
    objdir = os.path.join(root, ".git", "lfs", "objects", oid[:2], oid[2:4])
    os.makedirs(objdir, exist_ok=True)
    with open(os.path.join(objdir, oid), "wb") as f:
        f.write(data)
    name = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
    with open(os.path.join(root, name), "w") as f:
        f.write("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (oid, len(data)))
PY
    git_lab "$root" add -A
    git_lab "$root" commit -qm "drafter, block size $block"
    git_lab "$root" rev-parse HEAD ;;
  commit)
    root="$dir/mirrors/models/$3"
    git_lab "$root" add -A
    git_lab "$root" commit -qm "$4"
    git_lab "$root" rev-parse HEAD ;;
  start)
    port=$3
    mkdir -p "$dir/repos"
    "$0" stop "$dir"
    cat >"$dir/olah.toml" <<TOML
[basic]
host = "127.0.0.1"
port = $port
mirrors-path = ["$dir/mirrors"]
repos-path = "$dir/repos"

[accessibility]
offline = true
TOML
    # In DIR: olah writes its own logs under ./logs.
    (cd "$dir" && daemon_start olah.pid olah.log env HF_HUB_OFFLINE=1 "$OLDPWD/.venv/bin/olah-cli" -c olah.toml)
    daemon_ready "lab-olah: olah on 127.0.0.1:$port" "$dir/olah.log" 30 \
      curl -s -m 5 -o /dev/null "http://127.0.0.1:$port/api/whoami-v2" ;;
  stop)
    daemon_stop "$dir/olah.pid" ;;
  *) echo "usage: $0 repo DIR ORG/NAME [BLOCK] [MB] [SHARDS] | commit DIR ORG/NAME MSG | start DIR PORT | stop DIR" >&2
     exit 2 ;;
esac
