#!/usr/bin/env bash
# Side-by-side per-query latency, one thread: Switchyard's own bench against aurelio-labs
# semantic-router (PyPI semantic-router), same catalog (templates/clinc150: one route per
# template, its nl_examples as utterances), same model (all-MiniLM-L6-v2), same queries
# (the dataset's first N+1 texts, the first a warm-up). Prints p50/p95 of each and the
# ratio semantic-router / Switchyard; --json prints one JSON object instead.
#
# Usage: infra/scripts/bench-vs-semantic-router.sh [--queries N] [--json] [--no-int8]
#          [--templates DIR] [--dataset FILE]
#   --queries N   queries timed after the warm-up (default 600)
#   --no-int8     skip the extra semantic-router run on Switchyard's int8 graph
# Environment: SWITCHYARD_BIN (default target/release/switchyard; this script never builds
# it), SWITCHYARD_MODEL_DIR, SWITCHYARD_CACHE_DIR / XDG_CACHE_HOME (the cache root, as
# fetch-model.sh), PYTHON (the interpreter that creates the virtualenv, default python3,
# 3.11 to 3.13).
#
# The semantic-router side (infra/scripts/bench_semantic_router.py):
# - Encoder: semantic-router's own FastEmbedEncoder (fastembed runs the ONNX graph with
#   onnxruntime, threads=1 -> intra_op and inter_op 1). It is the library's local encoder
#   that runs MiniLM without torch: LocalEncoder / HuggingFaceEncoder need
#   sentence-transformers / transformers and torch, which are not allowed here.
# - Offline: FastEmbedEncoder hands fastembed only name, cache_dir and threads (no
#   local_files_only or specific_model_path), and fastembed fetches
#   sentence-transformers/all-MiniLM-L6-v2 from the hub repository
#   Qdrant/all-MiniLM-L6-v2-onnx. So the Python script lays out that repository's Hugging
#   Face cache snapshot (refs/main, snapshots/<rev>/) in cache_dir with our own files:
#   model.onnx = the float32 graph built here from Switchyard's weights
#   (build_onnx_model.py --keep-f32: cosine 1.0 to sentence-transformers, checked every
#   run against tests/data/minilm-reference.json), tokenizer.json and config.json from
#   Switchyard's model folder, and tokenizer_config.json / special_tokens_map.json (max
#   length 256, as sentence-transformers). HF_HUB_OFFLINE=1 makes fastembed load it with
#   local_files_only; nothing is fetched from the hub.
# - Router: semantic-router 1.x's IndexedRouter (1.x has no SemanticRouter and no
#   auto_sync: routes are indexed when the router is constructed) with its default
#   LocalIndex, top_k 5, mean aggregation, no threshold. Each timed call is the public
#   sync `router(text)`, wall clock; the encoder alone (`encoder([text])`) is timed too.
#   Its sync API runs each call on a background event loop and the encoder and index
#   query in a worker thread (asyncio.to_thread): those hand-offs are part of what a
#   caller pays and are in the route numbers, not in the encoder numbers.
# - Also reported: semantic-router on Switchyard's int8 graph (model.onnx; --no-int8 skips
#   it), and its top-1 intent accuracy on the timed queries (Switchyard's is in
#   `switchyard eval`).
# The Switchyard side: `switchyard bench --json` (one thread, int8 model.onnx); its first
# run builds the cached index (about a minute).
#
# The comparison has its own virtualenv, <cache root>/venv-semantic-router, created with
# `python3 -m venv` when missing (never the project venv: its tools have tight pins). The
# packages that matter are pinned in SR_PACKAGES; the full `pip freeze` is written to
# <venv>/switchyard-bench-freeze.txt when they are installed. torch is never installed.
# The float32 graph is built once into <cache root>/semantic-router-bench/model-f32.onnx
# (rebuilt when model.safetensors changes) with the project venv's build packages, or, if
# that venv lacks them, with fetch-model.sh's pins installed into the comparison venv.
set -euo pipefail

say() { echo "bench-vs: $*" >&2; }
die() {
  say "$*"
  exit 1
}
usage() { sed -n '8,16p' "$0" | sed 's/^# \{0,1\}//' >&2; }

REPO_DIR="$(cd "$(dirname "$0")/../.." && pwd)"
SCRIPTS_DIR="$REPO_DIR/infra/scripts"
cd "$REPO_DIR"

QUERIES=600
JSON=false
INT8=true
TEMPLATES=templates/clinc150
DATASET=tests/data/clinc150/val.jsonl
while [ $# -gt 0 ]; do
  case "$1" in
    --queries)
      [ $# -ge 2 ] || die "--queries needs a number"
      QUERIES="$2"
      shift 2
      ;;
    --queries=*)
      QUERIES="${1#*=}"
      shift
      ;;
    --json)
      JSON=true
      shift
      ;;
    --no-int8)
      INT8=false
      shift
      ;;
    --templates)
      [ $# -ge 2 ] || die "--templates needs a folder"
      TEMPLATES="$2"
      shift 2
      ;;
    --dataset)
      [ $# -ge 2 ] || die "--dataset needs a file"
      DATASET="$2"
      shift 2
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      usage
      die "unknown argument: $1"
      ;;
  esac
done
case "$QUERIES" in
  '' | *[!0-9]*) die "--queries must be a positive integer, not '$QUERIES'" ;;
esac
[ "$QUERIES" -ge 1 ] && [ "$QUERIES" -le 100000 ] || die "--queries must be between 1 and 100000"
[ -d "$TEMPLATES" ] || die "no catalog folder $TEMPLATES"
[ -f "$DATASET" ] || die "no dataset $DATASET"

CACHE_ROOT="${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}"
MODEL_DIR="${SWITCHYARD_MODEL_DIR:-$CACHE_ROOT/models/all-MiniLM-L6-v2}"
PROJECT_VENV="$CACHE_ROOT/venv" # infra/scripts/venv.sh's
SR_VENV="$CACHE_ROOT/venv-semantic-router"
BENCH_DIR="$CACHE_ROOT/semantic-router-bench"
F32_MODEL="$BENCH_DIR/model-f32.onnx"
REFERENCE="${SWITCHYARD_MINILM_REFERENCE:-$REPO_DIR/tests/data/minilm-reference.json}"
BIN="${SWITCHYARD_BIN:-$REPO_DIR/target/release/switchyard}"

# What the semantic-router side runs on; the rest of its dependencies are whatever pip
# resolves for these (recorded in the freeze file). onnxruntime, numpy and tokenizers are
# the versions fetch-model.sh builds and checks the model with.
SR_PACKAGES="semantic-router==1.1.1 fastembed==0.9.1 onnxruntime==1.31.1 numpy==2.4.6 tokenizers==0.23.3 huggingface_hub==1.33.0 PyYAML==6.0.3"
# fetch-model.sh's BUILD_PACKAGES less those already above, plus sympy (onnxruntime's
# transformer optimizer needs it; the project venv has it from elsewhere): only installed
# (into the comparison venv) when the project venv cannot build the float32 graph. With
# these the graph is byte-identical to the project venv's build (sha256 5e7fe861... on
# x86_64).
F32_BUILD_PACKAGES="onnx==1.23.2 safetensors==0.8.0 protobuf==7.36.2 ml_dtypes==0.6.0 sympy==1.14.0 mpmath==1.3.0"

# One thread everywhere (Switchyard's bench forces its own).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1
export TOKENIZERS_PARALLELISM=false
# Nothing from the Hugging Face hub.
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

if [ ! -x "$BIN" ]; then
  say "no Switchyard binary at $BIN."
  say "Build it with \`cargo build --release --bin switchyard\` (or point SWITCHYARD_BIN at one), then run this again."
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The model (fast when it is there). Its messages go to stderr: stdout is the result.
"$SCRIPTS_DIR/fetch-model.sh" >&2

# 2. The comparison's virtualenv.
sr_python="$SR_VENV/bin/python"
if ! "$sr_python" -m pip --version >/dev/null 2>&1; then
  python="${PYTHON:-python3}"
  command -v "$python" >/dev/null 2>&1 || die "$python not found; install Python 3.11 to 3.13 (or set PYTHON)"
  if [ -e "$SR_VENV" ] && [ ! -f "$SR_VENV/pyvenv.cfg" ]; then
    die "$SR_VENV exists and is not a virtualenv; move it away"
  fi
  say "creating $SR_VENV"
  rm -rf "$SR_VENV"
  mkdir -p "$(dirname "$SR_VENV")"
  "$python" -m venv "$SR_VENV" >&2 || die "\`$python -m venv $SR_VENV\` failed (Debian/Ubuntu: apt-get install python3-venv)"
fi
stamp="$SR_VENV/.switchyard-bench-packages"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$SR_PACKAGES" ]; then
  say "installing $SR_PACKAGES into $SR_VENV"
  rm -f "$stamp"
  # shellcheck disable=SC2086 # word splitting of the package list is meant
  "$sr_python" -m pip install --quiet --disable-pip-version-check $SR_PACKAGES >&2 ||
    die "pip could not install $SR_PACKAGES (onnxruntime 1.31.1 needs Python 3.11 or newer, semantic-router older than 3.14)"
  if "$sr_python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)'; then
    die "torch ended up in $SR_VENV; this comparison must run without it (remove the venv and check the pins)"
  fi
  "$sr_python" -m pip freeze --disable-pip-version-check >"$SR_VENV/switchyard-bench-freeze.txt"
  echo "$SR_PACKAGES" >"$stamp"
  say "installed; full package list in $SR_VENV/switchyard-bench-freeze.txt"
fi

# 3. The float32 graph semantic-router runs (FastEmbedEncoder runs f32 models), built from
#    the same weights as Switchyard's int8 model.onnx, outside Switchyard's model folder.
weights_sha=$(sha256sum "$MODEL_DIR/model.safetensors" | cut -d' ' -f1)
if [ ! -s "$F32_MODEL" ] || [ "$(cat "$F32_MODEL.source" 2>/dev/null || true)" != "$weights_sha" ]; then
  can_build='import onnx, numpy, safetensors, sympy, tokenizers; import onnxruntime.transformers.optimizer'
  if "$PROJECT_VENV/bin/python" -c "$can_build" >/dev/null 2>&1; then
    build_python="$PROJECT_VENV/bin/python"
  else
    say "the project venv ($PROJECT_VENV) cannot build the graph; installing $F32_BUILD_PACKAGES into $SR_VENV"
    # shellcheck disable=SC2086
    "$sr_python" -m pip install --quiet --disable-pip-version-check $F32_BUILD_PACKAGES >&2
    "$sr_python" -m pip freeze --disable-pip-version-check >"$SR_VENV/switchyard-bench-freeze.txt"
    build_python="$sr_python"
  fi
  say "building the float32 graph into $F32_MODEL"
  # build_onnx_model.py writes model-f32.onnx into the folder it reads: a scratch folder
  # linking to the model's files, so Switchyard's model folder is left as it is.
  mkdir -p "$work/model" "$BENCH_DIR"
  for f in model.safetensors config.json tokenizer.json; do
    ln -s "$MODEL_DIR/$f" "$work/model/$f"
  done
  "$build_python" "$SCRIPTS_DIR/build_onnx_model.py" "$work/model" --keep-f32 \
    --output "$work/model/model-int8.onnx" --reference "$REFERENCE" >&2 ||
    die "build_onnx_model.py failed; no float32 graph"
  mv "$work/model/model-f32.onnx" "$F32_MODEL.partial"
  mv "$F32_MODEL.partial" "$F32_MODEL"
  echo "$weights_sha" >"$F32_MODEL.source"
fi

# 4. Switchyard's bench (one thread: it forces it).
say "switchyard bench: $QUERIES queries ($BIN)"
"$BIN" bench --templates "$TEMPLATES" --dataset "$DATASET" --queries "$QUERIES" --json >"$work/switchyard.json" ||
  die "switchyard bench failed"
"$sr_python" -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/switchyard.json" 2>/dev/null ||
  die "switchyard bench did not print JSON: $(head -c 300 "$work/switchyard.json")"

# 5. semantic-router, on the float32 graph and (unless --no-int8) on Switchyard's int8 one.
sr_run() { # LABEL ONNX
  say "semantic-router ($1): $QUERIES queries"
  "$sr_python" "$SCRIPTS_DIR/bench_semantic_router.py" run --label "$1" --onnx "$2" \
    --templates "$TEMPLATES" --dataset "$DATASET" --queries "$QUERIES" \
    --model-dir "$MODEL_DIR" --cache "$BENCH_DIR/fastembed-$1" --reference "$REFERENCE" \
    >"$work/sr-$1.json" || die "the semantic-router bench ($1) failed"
}
sr_run f32 "$F32_MODEL"
results=("$work/sr-f32.json")
if [ "$INT8" = true ]; then
  sr_run int8 "$MODEL_DIR/model.onnx"
  results+=("$work/sr-int8.json")
fi

# 6. The comparison.
report_args=(report --switchyard "$work/switchyard.json" --semantic-router "${results[@]}" --packages "$SR_PACKAGES")
[ "$JSON" = true ] && report_args+=(--json)
"$sr_python" "$SCRIPTS_DIR/bench_semantic_router.py" "${report_args[@]}"
