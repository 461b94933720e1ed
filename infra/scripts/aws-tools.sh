#!/usr/bin/env bash
# Install the AWS tooling the deployment and the local emulator use, from PyPI with pip,
# at pinned versions; a tool already installed at its version is skipped:
#   moto[server]   moto_server, the local S3/DynamoDB/... endpoint (aws-local.sh)
#   cfn-lint       the CloudFormation linter (lint-template.sh)
#   aws-sam-cli    sam: validate, build, deploy (lint-template.sh, deployment)
#   cargo-lambda   cargo lambda: watch (aws-local.sh), build (sam build's rust-cargolambda)
# Python 3 with pip is all it needs. Where pip may not install into the interpreter
# (a Debian system Python, PEP 668), it installs into a virtualenv at
# $SWITCHYARD_AWS_TOOLS_VENV (default ~/.local/share/switchyard/aws-tools) and links the
# four commands into ~/.local/bin.
set -euo pipefail

PINS="moto==5.2.5 cfn-lint==1.58.0 aws-sam-cli==1.170.0 cargo-lambda==1.9.2"
# moto_server needs moto's `server` extra (flask, flask-cors).
spec() { case "$1" in moto==*) echo "moto[server]==${1#moto==}" ;; *) echo "$1" ;; esac; }

PYTHON="${PYTHON:-python3}"
VENV="${SWITCHYARD_AWS_TOOLS_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/switchyard/aws-tools}"

# Does pip refuse to install into this interpreter (PEP 668's EXTERNALLY-MANAGED marker)?
externally_managed() {
  "$1" - <<'PY'
import os, sys, sysconfig
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if os.path.exists(marker) and sys.prefix == sys.base_prefix else 1)
PY
}
if [ -x "$VENV/bin/python" ]; then
  PYTHON="$VENV/bin/python"
elif externally_managed "$PYTHON"; then
  echo "aws-tools: $PYTHON is externally managed; using the virtualenv $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV" || {
    echo "aws-tools: could not create $VENV (on Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  PYTHON="$VENV/bin/python"
fi

# The pins not installed at their version (with moto's server extra importable).
missing=$("$PYTHON" - $PINS <<'PY'
import sys
from importlib import metadata, util
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        ok = metadata.version(name) == version
    except metadata.PackageNotFoundError:
        ok = False
    if ok and name == "moto":
        ok = all(util.find_spec(m) is not None for m in ("flask", "flask_cors"))
    if not ok:
        print(pin)
PY
)
if [ -n "$missing" ]; then
  specs=()
  for pin in $missing; do specs+=("$(spec "$pin")"); done
  echo "aws-tools: installing ${specs[*]}"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${specs[@]}"
  if [ "$PYTHON" != "$VENV/bin/python" ] && command -v pyenv >/dev/null 2>&1; then
    pyenv rehash
  fi
fi

# Commands installed into a virtualenv go on the PATH through ~/.local/bin.
if [ "$PYTHON" = "$VENV/bin/python" ]; then
  mkdir -p "$HOME/.local/bin"
  for cmd in moto_server cfn-lint sam cargo-lambda; do
    ln -sf "$VENV/bin/$cmd" "$HOME/.local/bin/$cmd"
  done
  case ":$PATH:" in *":$HOME/.local/bin:"*) ;; *)
    echo "aws-tools: add ~/.local/bin to PATH: export PATH=\"\$HOME/.local/bin:\$PATH\""
    export PATH="$HOME/.local/bin:$PATH" ;;
  esac
fi

# Each command answers.
check() {
  local out
  out=$("$@" 2>&1) || { echo "aws-tools: \`$*\` failed:" >&2; echo "$out" >&2; exit 1; }
  echo "aws-tools: $(echo "$out" | head -n 1)"
}
check moto_server --help >/dev/null
echo "aws-tools: moto $("$PYTHON" -c 'from importlib.metadata import version; print(version("moto"))')"
check cfn-lint --version
check sam --version
check cargo lambda --version
