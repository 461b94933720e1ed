#!/usr/bin/env bash
# The catalog-owner's loop, measured on CLINC150 (README, "The catalog learns from its
# traffic"): the validation split is cut in two by position within each intent; the first
# part plays the traffic (every question judged from its label: the expected template, or
# `none` out of scope), `suggest` writes a patch from it (checked by folds of the judged
# traffic), the patch is applied to a copy of the catalog with `git apply`, and both
# catalogs are measured on the other part, which the loop never saw.
#   SWITCHYARD_LOOP_TRAFFIC   questions per intent in the traffic part (default 7, so
#                             1,050 in scope + half of the out-of-scope ones)
#   SWITCHYARD_LOOP_MODE      the encoder: `base` (frozen, seconds per build) or
#                             `adapted` (the configuration's own, which adapts CLINC150's
#                             encoder: minutes per build)
#   SWITCHYARD_LOOP_FOLDS     the folds `suggest` checks its patch by on the traffic
#                             (default 3, one build each; 0: no check, the patch written
#                             as it is, only the held-out figures measured)
set -euo pipefail
cd "$(dirname "$0")/../.."
PER_INTENT="${SWITCHYARD_LOOP_TRAFFIC:-7}"
MODE="${SWITCHYARD_LOOP_MODE:-base}"
FOLDS="${SWITCHYARD_LOOP_FOLDS:-3}"
BIN="${SWITCHYARD_BIN:-target/release/switchyard}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 - "$PER_INTENT" tests/data/clinc150/val.jsonl "$WORK" <<'PY'
import json, sys, collections
per_intent, source, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = [json.loads(l) for l in open(source) if l.strip()]
seen = collections.Counter()
oos = sum(1 for l in lines if l["intent"] == "oos")
with open(f"{work}/traffic.jsonl", "w") as traffic, open(f"{work}/holdout.jsonl", "w") as holdout:
    for line in lines:
        limit = oos // 2 if line["intent"] == "oos" else per_intent
        seen[line["intent"]] += 1
        (traffic if seen[line["intent"]] <= limit else holdout).write(json.dumps(line) + "\n")
PY
case "$MODE" in
  base) export SWITCHYARD__EMBEDDING__ADAPTATION__MODE=base ;;
  adapted) ;;
  *) echo "suggest-loop: SWITCHYARD_LOOP_MODE must be base or adapted, not $MODE" >&2; exit 2 ;;
esac
cp -r templates/clinc150 "$WORK/clinc150"
echo "suggest-loop: traffic $(wc -l <"$WORK/traffic.jsonl") questions, holdout $(wc -l <"$WORK/holdout.jsonl"), encoder $MODE" >&2
"$BIN" --templates templates/clinc150 eval --dataset "$WORK/traffic.jsonl" --json \
  --judge-out "$WORK/feedback.jsonl" >/dev/null
check=()
if [ "$FOLDS" != 0 ]; then check=(--dataset "$WORK/traffic.jsonl" --folds "$FOLDS"); fi
"$BIN" --templates templates/clinc150 suggest --feedback "$WORK/feedback.jsonl" \
  "${check[@]}" --out "$WORK/catalog.patch"
head -3 "$WORK/catalog.patch" >&2
(cd "$WORK" && sed 's#templates/clinc150/#clinc150/#g' catalog.patch | git apply -)
"$BIN" --templates templates/clinc150 eval --dataset "$WORK/holdout.jsonl" --json >"$WORK/before.json"
"$BIN" --templates "$WORK/clinc150" eval --dataset "$WORK/holdout.jsonl" --json >"$WORK/after.json"
python3 - "$WORK" <<'PY'
import json, sys
before, after = (json.load(open(f"{sys.argv[1]}/{name}.json")) for name in ("before", "after"))
for key in ("intent_accuracy", "in_scope_accuracy", "oos_recall"):
    print(f"holdout {key}: {before[key] * 100:.2f}% -> {after[key] * 100:.2f}%")
PY
