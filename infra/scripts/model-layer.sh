#!/usr/bin/env bash
# Fill the EmbeddingModelLayer's folder before `sam build` / `sam deploy`: copy
# all-MiniLM-L6-v2 int8 (model.onnx, tokenizer.json) and ONNX Runtime (libonnxruntime.so)
# from the folder that
# fetch-model.sh fills ($SWITCHYARD_MODEL_DIR, or <cache root>/models/all-MiniLM-L6-v2)
# into infra/model-layer/model/, which the layer mounts at /opt/model in the router function.
# fetch-model.sh runs first, so the files are there and their checksums verified.
set -euo pipefail
cd "$(dirname "$0")/../.."

MODEL_DIR="${SWITCHYARD_MODEL_DIR:-${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}/models/all-MiniLM-L6-v2}"
LAYER_DIR="infra/model-layer/model"
FILES="model.onnx tokenizer.json libonnxruntime.so"

./infra/scripts/fetch-model.sh
mkdir -p "$LAYER_DIR"
for f in $FILES; do
  if cmp -s "$MODEL_DIR/$f" "$LAYER_DIR/$f"; then
    continue
  fi
  cp "$MODEL_DIR/$f" "$LAYER_DIR/$f.partial"
  chmod 0644 "$LAYER_DIR/$f.partial"
  mv "$LAYER_DIR/$f.partial" "$LAYER_DIR/$f"
done
# Only these files: anything else in the folder would ship in the layer too.
for extra in "$LAYER_DIR"/* "$LAYER_DIR"/.[!.]*; do
  [ -e "$extra" ] || continue
  case " $FILES " in *" $(basename "$extra") "*) ;; *) rm -rf "$extra" ;; esac
done
echo "model layer: $LAYER_DIR ($(du -sh "$LAYER_DIR" | cut -f1)), mounted at /opt/model"
