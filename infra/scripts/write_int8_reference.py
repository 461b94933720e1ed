#!/usr/bin/env python3
"""Write tests/data/minilm-int8-reference.json: the int8 model.onnx's vectors of a few
sentences, as this machine's ONNX Runtime computes them, each sentence alone.

Usage: write_int8_reference.py MODEL_DIR [--output PATH]

The file is committed; `shared/embed/tests/minilm.rs` checks the model of the machine that
runs the tests against it (cosine within a stated tolerance). With the 7-bit weights of
build_onnx_model.py every CPU computes the same integer sums, so the vectors agree across
CPUs to float rounding; run this again only when model.onnx changes (its checksum is
recorded in the file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_onnx_model import feeds_for, load_tokenizer, make_session, sentence_embeddings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# The sentence-transformers reference sentences and a few of other shapes: an acceptance,
# digits and symbols, one word, a long question, an offer.
EXTRA = [
    "yes please",
    "what's the mean of 4, 8, 15 and 16",
    "Move $1,250.50 to savings on 03/15",
    "balance",
    "Find round trip flights from New York to San Francisco leaving next Friday and coming back on Sunday for 3 people",
    "Would you like the headcount of Sales too?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--output", type=Path, default=ROOT / "tests" / "data" / "minilm-int8-reference.json")
    args = parser.parse_args()
    model = args.model_dir / "model.onnx"
    reference = json.loads((ROOT / "tests" / "data" / "minilm-reference.json").read_text())
    texts = [item["text"] for item in reference["items"]] + EXTRA
    tok = load_tokenizer(args.model_dir)
    session = make_session(model)
    import onnxruntime

    items = []
    for text in texts:
        vector = sentence_embeddings(session, feeds_for([tok.encode(text)]))[0]
        items.append({"text": text, "embedding": [float(f"{x:.7g}") for x in vector]})
    out = {
        "model": "all-MiniLM-L6-v2 int8 (model.onnx of infra/scripts/build_onnx_model.py)",
        "model_onnx_sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
        "onnxruntime": onnxruntime.__version__,
        "computed_on": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "pooling": "mean over real tokens, L2-normalised; each sentence alone (no padding)",
        "items": items,
    }
    # One line per sentence: readable diffs when the model changes.
    head = json.dumps({k: v for k, v in out.items() if k != "items"}, indent=1)[:-2]
    lines = ",\n".join("  " + json.dumps(item) for item in items)
    args.output.write_text(f'{head},\n "items": [\n{lines}\n ]\n}}\n')
    print(f"write_int8_reference: {len(items)} vectors to {args.output}")


if __name__ == "__main__":
    main()
