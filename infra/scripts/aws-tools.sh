#!/usr/bin/env bash
# Install the AWS tooling the deployment and the local emulator use, from PyPI with pip,
# at pinned versions, into the project's virtualenv (infra/scripts/venv.sh:
# ${SWITCHYARD_CACHE_DIR:-~/.cache/switchyard}/venv); a tool already installed there at its
# version is skipped:
#   moto[server]   moto_server, the local S3/DynamoDB/... endpoint (aws-local.sh)
#   cfn-lint       the CloudFormation linter (lint-template.sh)
#   aws-sam-cli    sam: validate, build, deploy (lint-template.sh, deployment)
#   cargo-lambda   cargo lambda: watch (aws-local.sh), build (sam build's rust-cargolambda)
# Python 3 with its venv module is all it needs. The user's own site-packages and
# ~/.local/bin are never touched; the scripts that use the tools source venv.sh, which puts
# the virtualenv's bin/ on their PATH. By hand: `. infra/scripts/venv.sh` in your shell.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh

PINS="moto==5.2.5 cfn-lint==1.58.0 aws-sam-cli==1.170.0 cargo-lambda==1.9.2"
# moto_server needs moto's `server` extra (flask, flask-cors).
spec() { case "$1" in moto==*) echo "moto[server]==${1#moto==}" ;; *) echo "$1" ;; esac; }

venv_ensure
PYTHON="$SWITCHYARD_VENV/bin/python"

# The pins not installed in the virtualenv at their version (with moto's server extra
# importable).
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
  echo "aws-tools: installing ${specs[*]} into $SWITCHYARD_VENV"
  # PIP_USER would send the packages to ~/.local: never.
  PIP_USER=0 "$PYTHON" -m pip install --quiet --disable-pip-version-check "${specs[@]}"
else
  echo "aws-tools: $PINS already installed in $SWITCHYARD_VENV"
fi

# Each command answers, from the virtualenv.
check() { # command args...
  local out
  [ -x "$SWITCHYARD_VENV/bin/$1" ] || { echo "aws-tools: $1 is not in $SWITCHYARD_VENV/bin" >&2; exit 1; }
  out=$("$SWITCHYARD_VENV/bin/$1" "${@:2}" 2>&1) || { echo "aws-tools: \`$*\` failed:" >&2; echo "$out" >&2; exit 1; }
  echo "aws-tools: $(echo "$out" | head -n 1)"
}
check moto_server --help >/dev/null
echo "aws-tools: moto $("$PYTHON" -c 'from importlib.metadata import version; print(version("moto"))')"
check cfn-lint --version
check sam --version
check cargo-lambda lambda --version
# cargo finds its `lambda` subcommand on PATH, where venv.sh put the virtualenv's bin/.
[ "$(command -v cargo-lambda)" = "$SWITCHYARD_VENV/bin/cargo-lambda" ] &&
  cargo lambda --version >/dev/null 2>&1 || {
  echo "aws-tools: \`cargo lambda\` does not run $SWITCHYARD_VENV/bin/cargo-lambda" >&2
  exit 1
}
