#!/usr/bin/env bash
# Builds the base image every sandbox's root file system comes from when its task names no image
# of its own: a Debian 12 root file system from the configured apt mirror (mmdebstrap), with
# Python 3.11 and pytest, git, build tools, and Node 20 copied from this machine's install (Debian
# 12 ships Node 18; the JS test runners need 20). Output: .tools/images/base/rootfs plus
# .tools/images/base/id, the content key sandbox/images/ stacks it under. A second run with the
# same package list and Node skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
PACKAGES=python3,python3-pytest,git,ca-certificates,build-essential,procps,patch,less,file
OUT=.tools/images/base
say() { printf 'build-base-image: %s\n' "$*"; }

command -v mmdebstrap >/dev/null 2>&1 || {
  say "mmdebstrap is missing (apt-get install mmdebstrap)"
  exit 1
}
NODE=$(command -v node)
recipe=$(printf '%s\n' "$SUITE" "$PACKAGES" "$(sha256sum "$NODE" | cut -d' ' -f1)" | sha256sum | cut -c1-16)
if [ -f "$OUT/id" ] && [ "$(cat "$OUT/id")" = "base-$recipe" ] && [ -d "$OUT/rootfs/usr" ]; then
  say "base image base-$recipe already built"
  exit 0
fi
say "building the base image ($SUITE: $PACKAGES; about a minute)"
mkdir -p "$OUT"
scratch="$OUT/rootfs.tmp.$$"
# An interrupted mmdebstrap can leave the host's /sys, /proc or /dev mounted inside the scratch
# root: those are unmounted first (deepest first), and rm never crosses into another file system.
remove_scratch() {
  [ -e "$scratch" ] || return 0
  awk -v root="$scratch/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | while read -r target; do
    umount -l "$target" || true
  done
  rm -rf --one-file-system "$scratch"
}
remove_scratch
trap remove_scratch EXIT
mmdebstrap --quiet --variant=apt --include="$PACKAGES" \
  --customize-hook="copy-in $NODE /usr/local/bin/" \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  "$SUITE" "$scratch"
rm -rf "$OUT/rootfs"
mv "$scratch" "$OUT/rootfs"
trap - EXIT
echo "base-$recipe" >"$OUT/id"
say "base image base-$recipe ready ($(du -sh "$OUT/rootfs" | cut -f1))"
