#!/usr/bin/env bash
# Builds, once, a stand-in for AWS's public.ecr.aws/lambda/provided:al2023-x86_64 image
# from Debian's packages, for `sam local invoke` / `sam local start-api` on machines that
# cannot pull from a container registry (but can reach a Debian mirror):
#   lambda-base-image.sh          build unless up to date, then print the image's size
# The image is `debootstrap --variant=minbase bookworm` plus ca-certificates, libstdc++6
# and libgcc-s1 (ONNX Runtime needs the last two), with the ENV and WORKDIR of the official
# image. It is tagged
#   switchyard/lambda-provided:al2023-x86_64     our own name: pass it to SAM with
#                                                --invoke-image (explicit, preferred)
#   public.ecr.aws/lambda/provided:al2023-x86_64 the name SAM builds FROM for a ZIP function
#                                                with Runtime provided.al2023 on x86_64, so
#                                                that plain `sam local ... --skip-pull-image`
#                                                works too
# SAM must always run with --skip-pull-image (or SAM_SKIP_PULL_IMAGE=1): without it SAM asks
# the registry whether the base image is current and fails when it cannot.
# Cache: the image carries the sha256 of this script as a label; when the tagged image has
# the current one nothing is built. When the script changes, the image is rebuilt and the
# images SAM derived from the old one (its "rapid" images, which SAM would otherwise keep
# using as they are) are removed.
# Differences from Amazon Linux 2023: glibc 2.36 (AL2023: 2.34), libstdc++ from GCC 12
# (AL2023: GCC 11), no en_US.UTF-8 locale (the C locale is used). Check binaries meant for
# real Lambda with check-glibc.sh.
# Environment:
#   SWITCHYARD_DEBIAN_MIRROR   Debian mirror (default: the first one apt's sources list for
#                              bookworm)
# Needs root (debootstrap), docker, and debootstrap (installed with apt-get if missing).
set -euo pipefail

IMAGE="switchyard/lambda-provided:al2023-x86_64"
SAM_IMAGE="public.ecr.aws/lambda/provided:al2023-x86_64"
LABEL="org.switchyard.lambda-base.sha256"
SUITE="bookworm"
PACKAGES="ca-certificates,libstdc++6,libgcc-s1"

say() { echo "lambda-base-image: $*" >&2; }
die() { say "$*"; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker not found"
docker info >/dev/null 2>&1 || die "docker daemon not reachable"

SCRIPT_SHA=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)

size_report() {
  local bytes
  bytes=$(docker image inspect -f '{{.Size}}' "$IMAGE")
  say "$IMAGE (also $SAM_IMAGE): $((bytes / 1000000)) MB ($bytes bytes)"
}

# Up to date: keep it; only make sure the second name still points at it.
if [ "$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)" = "$SCRIPT_SHA" ]; then
  docker tag "$IMAGE" "$SAM_IMAGE"
  say "up to date"
  size_report
  exit 0
fi

[ "$(id -u)" = 0 ] || die "debootstrap needs root"

# The mirror this machine reaches: the first URI apt uses for the bookworm suite, from
# one-line (*.list) or deb822 (*.sources) files. Disabled files (other suffixes) are skipped.
find_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    awk -v suite="$SUITE" '
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == suite) { print $i; exit }
      }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Stanzas separated by blank lines; take URIs of an enabled "deb" stanza whose Suites
    # has bookworm.
    awk -v suite="$SUITE" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && enabled != "no" && (" " suites " ") ~ (" " suite " ")) {
          split(uris, u, " "); print u[1]; found = 1
        }
        types = ""; uris = ""; suites = ""; enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); if (found) exit; next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
        if (key == "types") types = $0; else if (key == "uris") uris = $0
        else if (key == "suites") suites = $0; else if (key == "enabled") enabled = tolower($0) }
      END { if (!found) flush() }' "$f"
  done
}
MIRROR="${SWITCHYARD_DEBIAN_MIRROR:-$(find_mirror | head -n 1)}"
[ -n "$MIRROR" ] || die "no Debian $SUITE mirror in /etc/apt/sources.list*; set SWITCHYARD_DEBIAN_MIRROR"

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

START=$(date +%s)
# The tree lives outside the repository and goes away on exit. debootstrap mounts /proc and
# /sys inside it while it works, so unmount anything left before deleting, and never let rm
# cross into another file system.
WORK=$(mktemp -d /var/tmp/lambda-base.XXXXXX)
TREE="$WORK/rootfs"
cleanup() {
  local m
  for m in $(awk -v t="$TREE" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT

say "debootstrap $SUITE from $MIRROR (a few minutes)"
if ! debootstrap --variant=minbase --arch=amd64 --include="$PACKAGES" \
  "$SUITE" "$TREE" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
  tail -n 20 "$WORK/debootstrap.log" >&2
  [ -f "$TREE/debootstrap/debootstrap.log" ] && tail -n 20 "$TREE/debootstrap/debootstrap.log" >&2
  die "debootstrap failed"
fi

# The directories the Lambda runtime contract uses (SAM bind-mounts the code on /var/task
# and its layers under /opt).
mkdir -p "$TREE/var/task" "$TREE/var/runtime" "$TREE/opt" "$TREE/var/lang/bin" "$TREE/var/lang/lib"
# Nothing in the image needs apt's caches, documentation, manual pages or message
# translations (a third of the tree; locale.alias, a file, stays).
rm -rf "$TREE"/var/cache/apt/*.bin "$TREE"/var/cache/apt/archives/*.deb \
  "$TREE"/var/lib/apt/lists/* "$TREE"/usr/share/doc/* "$TREE"/usr/share/man/* \
  "$TREE"/usr/share/locale/*/ \
  "$TREE"/usr/share/info/* "$TREE"/var/log/*.log "$TREE"/var/log/apt/*

# Remove the images built from an older version of this one before it loses its tags: SAM
# derives "rapid" images from it (which inherit the label) and reuses them as long as they
# exist, so they would keep the old base.
stale=$(docker image ls -a --filter "label=$LABEL" --format '{{.ID}}' | sort -u)
for id in $stale; do
  [ "$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$id" 2>/dev/null)" = "$SCRIPT_SHA" ] && continue
  for ref in $(docker image inspect -f '{{join .RepoTags " "}}' "$id" 2>/dev/null); do
    case "$ref" in "$IMAGE" | "$SAM_IMAGE") continue ;; esac
    say "removing stale derived image $ref"
    docker image rm "$ref" >/dev/null || say "could not remove $ref (in use?)"
  done
done

# Docker supplies /dev, /proc and /sys at run time; device nodes need not be imported.
tar -C "$TREE" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . | docker import \
  --change "ENV LANG=en_US.UTF-8" \
  --change "ENV TZ=:/etc/localtime" \
  --change "ENV PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin" \
  --change "ENV LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib" \
  --change "ENV LAMBDA_TASK_ROOT=/var/task" \
  --change "ENV LAMBDA_RUNTIME_DIR=/var/runtime" \
  --change "WORKDIR /var/task" \
  --change "LABEL $LABEL=$SCRIPT_SHA" \
  --message "debootstrap --variant=minbase $SUITE + $PACKAGES" \
  - "$IMAGE" >/dev/null
docker tag "$IMAGE" "$SAM_IMAGE"

# The old base, now untagged, is no longer needed.
for id in $stale; do
  docker image inspect -f '{{len .RepoTags}}' "$id" 2>/dev/null | grep -qx 0 &&
    docker image rm "$id" >/dev/null 2>&1 || true
done

say "built in $(($(date +%s) - START)) s"
size_report
