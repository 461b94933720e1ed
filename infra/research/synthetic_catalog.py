#!/usr/bin/env python3
"""Write a synthetic catalog of N templates (10 examples each) for timing `index build`.

The texts are real questions: CLINC150's training split, each intent's utterances cut into
runs of 10, each run one template (`<intent>_<k>`), in one datasource per CLINC150 domain.
Templates of one intent overlap in meaning, so the catalog is for measuring cost (training,
embedding, graph build, artifact size), not accuracy.

    python3 infra/research/synthetic_catalog.py ../shared/data/clinc150/train.jsonl \
        target/synthetic-1000 --templates 1000
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", type=Path, help="CLINC150 train.jsonl")
    parser.add_argument("out", type=Path, help="catalog folder to write")
    parser.add_argument("--templates", type=int, default=1000)
    parser.add_argument("--examples", type=int, default=10)
    args = parser.parse_args()

    by_intent: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in args.train.read_text().splitlines():
        row = json.loads(line)
        if not row.get("domain"):
            continue  # out-of-scope questions have no intent to be a template of
        by_intent[(row["domain"], row["intent"])].append(row["text"])
    runs = []
    # Round-robin over intents, so any N spreads over all of them.
    k = 0
    while len(runs) < args.templates:
        added = False
        for (domain, intent), texts in sorted(by_intent.items()):
            chunk = texts[k * args.examples:(k + 1) * args.examples]
            if len(chunk) == args.examples and len(runs) < args.templates:
                runs.append((domain, f"{intent}_{k}", chunk))
                added = True
        if not added:
            raise SystemExit(f"only {len(runs)} runs of {args.examples} in {args.train}")
        k += 1

    by_domain: dict[str, list] = defaultdict(list)
    for domain, template_id, chunk in runs:
        by_domain[domain].append((template_id, chunk))
    for domain, templates in by_domain.items():
        folder = args.out / domain
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "datasource.yaml").write_text(
            f'name: "{domain}"\nkind: intent\ndescription: "Synthetic {domain} templates"\n'
        )
        lines = ["templates:"]
        for template_id, chunk in templates:
            lines.append(f'  - id: "{template_id}"')
            lines.append('    version: "1.0.0"')
            lines.append(f'    description: "{template_id.replace("_", " ")}"')
            lines.append("    nl_examples:")
            lines.extend(f"      - {json.dumps(text)}" for text in chunk)
        (folder / "templates.yaml").write_text("\n".join(lines) + "\n")
    print(f"{len(runs)} templates in {len(by_domain)} datasources under {args.out}")


if __name__ == "__main__":
    main()
