#!/usr/bin/env bash
# New-template candidates, measured on CLINC150 (README, "The catalog learns from its
# traffic"): the catalog without 10 of its intents (the first of each domain), the whole
# validation split played as traffic nobody judged, and `suggest`'s groups of unanswered
# and unsure questions compared with the labels: how many of the 10 intents a group recovers (its
# majority, with the group's purity), and how pure the groups are.
#   SWITCHYARD_LOOP_MODE   `base` (default: the frozen model) or `adapted`
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE="${SWITCHYARD_LOOP_MODE:-base}"
BIN="${SWITCHYARD_BIN:-target/release/switchyard}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
case "$MODE" in
  base) export SWITCHYARD__EMBEDDING__ADAPTATION__MODE=base ;;
  adapted) ;;
  *) echo "suggest-new-templates: SWITCHYARD_LOOP_MODE must be base or adapted, not $MODE" >&2; exit 2 ;;
esac
cp -r templates/clinc150 "$WORK/clinc150"
python3 - "$WORK/clinc150" >"$WORK/removed.txt" <<'PY'
import os, re, sys
root = sys.argv[1]
for domain in sorted(os.listdir(root)):
    path = os.path.join(root, domain, "templates.yaml")
    if not os.path.isfile(path):
        continue
    lines = open(path).read().split("\n")
    starts = [i for i, l in enumerate(lines) if re.match(r'^  - id: ', l)]
    first, second = starts[0], starts[1]
    print(re.match(r'^  - id: "?([^"]+)"?', lines[first]).group(1))
    open(path, "w").write("\n".join(lines[:first] + lines[second:]))
PY
echo "suggest-new-templates: removed $(tr '\n' ' ' <"$WORK/removed.txt")" >&2
"$BIN" --templates "$WORK/clinc150" eval --dataset tests/data/clinc150/val.jsonl --json \
  --judge-out "$WORK/traffic.jsonl" --judge-every 1000000 >/dev/null
"$BIN" --templates "$WORK/clinc150" suggest --feedback "$WORK/traffic.jsonl" \
  --candidates "$WORK/candidates.json" --out "$WORK/catalog.patch" 2>/dev/null
python3 - "$WORK" <<'PY'
import collections, json, sys
work = sys.argv[1]
removed = set(open(f"{work}/removed.txt").read().split())
label = {}
for line in open("tests/data/clinc150/val.jsonl"):
    if line.strip():
        q = json.loads(line)
        label[q["text"]] = q["intent"]
candidates = json.load(open(f"{work}/candidates.json"))
recovered = {}
purities = []
for c in candidates:
    counts = collections.Counter(label.get(q, "?") for q in c["questions"])
    intent, n = counts.most_common(1)[0]
    purity = n / len(c["questions"])
    purities.append(purity)
    if intent in removed and purity >= 0.5:
        recovered[intent] = max(recovered.get(intent, 0), purity)
others = [c for c in candidates if collections.Counter(label.get(q, "?") for q in c["questions"]).most_common(1)[0][0] not in removed]
own = sum(1 for c in others if c["nearest"] and c["nearest"][0][0].split("/")[-1] == collections.Counter(label.get(q, "?") for q in c["questions"]).most_common(1)[0][0])
print(f"candidates: {len(candidates)} groups; mean purity {sum(purities) / max(len(purities), 1):.2f}")
print(f"groups of a template the catalog has: {len(others)}, of which {own} name it as their nearest template (more examples wanted there)")
print(f"removed intents recovered (a group of >= 5 whose majority, >= 50%, is the intent): {len(recovered)} of {len(removed)}")
for intent in sorted(removed):
    print(f"  {intent}: {'purity %.2f' % recovered[intent] if intent in recovered else 'not recovered'}")
PY
