#!/usr/bin/env bash
# Fails when an ELF binary or shared library needs glibc symbol versions that Amazon Linux
# 2023 (the provided.al2023 Lambda runtime, glibc 2.34) does not have:
#   check-glibc.sh BINARY...
# A binary built on a newer system (Debian bookworm: glibc 2.36) runs in the local
# Debian-based Lambda image (lambda-base-image.sh) but not on real Lambda, so this check
# stands in for the difference. Prints each offending symbol as BINARY: SYMBOL needs
# GLIBC_x.y; exits 1 if there is one, 2 on a usage error or a file that is not ELF.
# Statically linked binaries need no symbol from the system and pass.
# GLIBC_PRIVATE symbols fail too: they are tied to one glibc build.
# Environment: GLIBC_MAX (default 2.34) the newest version allowed.
set -euo pipefail

MAX="${GLIBC_MAX:-2.34}"
[ "$#" -gt 0 ] || { echo "usage: check-glibc.sh BINARY..." >&2; exit 2; }
command -v objdump >/dev/null 2>&1 || { echo "check-glibc: objdump not found (binutils)" >&2; exit 2; }

# True when version $1 is newer than $2 (sort -V orders dotted numbers).
newer() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1)" = "$1" ]; }

status=0
for bin in "$@"; do
  if [ ! -f "$bin" ] || [ "$(head -c 4 "$bin" | od -An -c | tr -d ' ')" != '177ELF' ]; then
    echo "check-glibc: $bin: not an ELF file" >&2
    status=2
    continue
  fi
  # No dynamic symbol table: a static binary (objdump says "not a dynamic object").
  if ! syms=$(objdump -T "$bin" 2>/dev/null); then
    echo "check-glibc: $bin: ok (no dynamic symbols)"
    continue
  fi
  # Undefined (imported) symbols carry the version they need, e.g.
  #   0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) __libc_start_main
  # (objdump puts the version in parentheses when it is not the default one; accept both).
  bad=0
  newest=""
  while read -r version symbol; do
    [ -n "$version" ] || continue
    if [ "$version" = PRIVATE ]; then
      echo "check-glibc: $bin: $symbol needs GLIBC_PRIVATE" >&2
      bad=1
      continue
    fi
    if newer "$version" "$MAX"; then
      echo "check-glibc: $bin: $symbol needs GLIBC_$version (Amazon Linux 2023 has $MAX)" >&2
      bad=1
    fi
    if [ -z "$newest" ] || newer "$version" "$newest"; then newest=$version; fi
  done < <(printf '%s\n' "$syms" | awk '
    $0 ~ /\*UND\*/ {
      for (i = 1; i <= NF; i++) {
        v = $i; gsub(/[()]/, "", v)
        if (v ~ /^GLIBC_([0-9.]+|PRIVATE)$/) { sub(/^GLIBC_/, "", v); print v, $NF; break }
      }
    }' | sort -u)
  if [ "$bad" = 1 ]; then
    [ "$status" != 0 ] || status=1
  else
    echo "check-glibc: $bin: ok (newest GLIBC_${newest:-none} <= $MAX)"
  fi
done
exit "$status"
