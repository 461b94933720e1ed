#!/usr/bin/env python3
"""Sessions of whole CLINC150 questions, for `switchyard eval`'s conversation replay.

Each session has `--turns` questions from the validation split; after each one the next
continues its intent with probability `--stay` and switches to another intent otherwise
(chosen at random among those with questions left). Every in-scope question is used at
most once; out-of-scope ones are left out (a session's turn has a template to be right
on). Each question is a whole, self-contained question, so a session may help its
continuing turns but must never cost its switching ones: routed with the session they
should be at least as right as alone.

Deterministic: a seed, the split and the settings give the same file.

Usage (relative paths from the repository root):

    python3 infra/scripts/generate_clinc_sessions.py --stay 0.5 \
        --out tests/data/clinc150/sessions-stay50.jsonl

Data: CLINC150 (Larson et al., EMNLP 2019), github.com/clinc/oos-eval, CC BY 3.0.
"""

import argparse
import json
import random
import sys
from collections import OrderedDict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="tests/data/clinc150/val.jsonl")
    parser.add_argument("--stay", type=float, required=True, help="probability a turn continues the intent")
    parser.add_argument("--turns", type=int, default=5, help="turns per session")
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if not 0.0 <= args.stay <= 1.0:
        print("--stay must be within 0 and 1", file=sys.stderr)
        return 2
    if args.turns < 2:
        print("--turns must be at least 2", file=sys.stderr)
        return 2

    path = (REPO_ROOT / args.data) if not Path(args.data).is_absolute() else Path(args.data)
    pools: "OrderedDict[str, list[dict]]" = OrderedDict()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            intent, text = row["intent"], row["text"]
        except (ValueError, KeyError) as e:
            print(f"{path}:{number}: not a line of text, intent and domain: {e}", file=sys.stderr)
            return 1
        if intent == "oos":
            continue
        pools.setdefault(intent, []).append({"text": text, "intent": intent, "domain": row.get("domain")})

    rng = random.Random(args.seed)
    for questions in pools.values():
        rng.shuffle(questions)
    sessions = []
    while True:
        open_intents = [i for i, q in pools.items() if q]
        if len(open_intents) < 2:
            break
        intent = rng.choice(open_intents)
        turns = []
        for _ in range(args.turns):
            if not pools[intent]:
                break
            turns.append(pools[intent].pop())
            stays = rng.random() < args.stay and pools[intent]
            if not stays:
                others = [i for i, q in pools.items() if q and i != intent]
                if not others:
                    break
                intent = rng.choice(others)
        if len(turns) < 2:
            break
        sessions.append(turns)

    out = (REPO_ROOT / args.out) if not Path(args.out).is_absolute() else Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = f"stay{round(args.stay * 100)}"
    with out.open("w", encoding="utf-8") as f:
        for n, turns in enumerate(sessions):
            for turn in turns:
                row = {"session_id": f"clinc-{tag}-{n:04d}", **turn}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    stays = sum(a["intent"] == b["intent"] for s in sessions for a, b in zip(s, s[1:]))
    later = sum(len(s) - 1 for s in sessions)
    print(f"{out}: {len(sessions)} sessions, {sum(map(len, sessions))} turns, "
          f"{stays / max(later, 1):.1%} of later turns continue")
    return 0


if __name__ == "__main__":
    sys.exit(main())
