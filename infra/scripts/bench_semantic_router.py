#!/usr/bin/env python3
"""Per-query latency of aurelio-labs semantic-router on Switchyard's catalog, one thread.

Usage:
  bench_semantic_router.py run --templates DIR --dataset FILE --onnx MODEL.onnx
        --model-dir DIR --cache DIR [--queries N] [--label NAME] [--reference FILE]
  bench_semantic_router.py report --switchyard FILE --semantic-router FILE [...] [--json]

Run by infra/scripts/bench-vs-semantic-router.sh in its own virtualenv (semantic-router,
fastembed, onnxruntime, PyYAML; no torch), not in the project's.

`run` builds a semantic-router IndexedRouter (its default LocalIndex, default top_k 5 and
mean aggregation, no threshold) with one Route per catalog template (name = template id,
utterances = nl_examples) and semantic-router's own FastEmbedEncoder for
sentence-transformers/all-MiniLM-L6-v2 at threads=1. FastEmbedEncoder only passes name,
cache_dir and threads on to fastembed, so the model is served from a Hugging Face cache
layout that this script lays out under --cache (models--Qdrant--all-MiniLM-L6-v2-onnx,
the repository fastembed maps that model to) with --onnx as model.onnx and Switchyard's
tokenizer.json and config.json, plus the tokenizer_config.json / special_tokens_map.json
fastembed reads (max length 256, sentence-transformers' max_seq_length for this model).
HF_HUB_OFFLINE=1 makes fastembed resolve it with local_files_only: nothing is downloaded.
Then, like `switchyard bench`, the dataset's first N+1 texts (cycled if fewer): the first
is a warm-up, each of the other N is timed alone with time.perf_counter, first the
encoder alone (encoder([text])), then the whole `router(text)`. Percentiles are nearest
rank, as Switchyard computes them. Top-1 accuracy is the routed name against the line's
intent. One JSON object on stdout.

`report` reads Switchyard's bench JSON and one or more `run` outputs and prints the
side-by-side table (or, with --json, one JSON object).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

# Before anything imports huggingface_hub (it reads these once, at import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"  # fastembed's name for it
HF_REPO = "Qdrant/all-MiniLM-L6-v2-onnx"  # the repository fastembed loads it from
MAX_SEQ_LEN = 256
OUT_OF_SCOPE = "oos"

TOKENIZER_CONFIG = {
    "do_lower_case": True,
    "model_max_length": MAX_SEQ_LEN,
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
    "tokenize_chinese_chars": True,
    "strip_accents": None,
    "tokenizer_class": "BertTokenizer",
}
SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}


def log(message: str) -> None:
    print(f"bench_semantic_router: {message}", file=sys.stderr, flush=True)


def fail(message: str) -> None:
    log(f"error: {message}")
    sys.exit(1)


def percentiles(samples: list[float]) -> dict:
    """Nearest rank, as switchyard_core::eval::percentiles."""
    s = sorted(samples)

    def at(q: float) -> float:
        if not s:
            return 0.0
        rank = min(max(math.ceil(q * len(s)), 1), len(s))
        return s[rank - 1]

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "samples": len(s)}


# ----------------------------------------------------------------------------- inputs


def load_routes(templates: Path):
    """One (id, nl_examples) per template in every YAML file under `templates`."""
    import yaml

    routes: dict[str, list[str]] = {}
    files = sorted(p for p in templates.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    for path in files:
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, dict) or not isinstance(doc.get("templates"), list):
            continue  # datasource.yaml and the like
        for t in doc["templates"]:
            examples = [str(e) for e in t.get("nl_examples") or []]
            if not examples:
                continue
            if t["id"] in routes:
                fail(f"template id {t['id']!r} appears twice (again in {path})")
            routes[str(t["id"])] = examples
    if not routes:
        fail(f"no templates with nl_examples under {templates}")
    return routes


def load_queries(dataset: Path, count: int) -> list[tuple[str, list[str]]]:
    """The first `count` (text, labels) of the JSON lines, cycled like switchyard bench."""
    pool = []
    for line in dataset.read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        labels = [item["intent"]] if item.get("intent") else list(item.get("intents") or [])
        pool.append((item["text"], labels))
    if not pool:
        fail(f"{dataset} has no queries")
    return list(itertools.islice(itertools.cycle(pool), count))


def lay_out_fastembed_cache(cache: Path, onnx: Path, model_dir: Path) -> Path:
    """A Hugging Face cache snapshot of HF_REPO holding the given graph and tokenizer."""
    repo = cache / ("models--" + HF_REPO.replace("/", "--"))
    marker = repo / ".switchyard-bench"
    if repo.exists():
        if not marker.is_file():
            fail(f"{repo} exists and was not laid out by this script (a real fastembed cache?); use another --cache")
        shutil.rmtree(repo)  # ours: rebuilt every run so it always holds --onnx
    revision = hashlib.sha1(f"switchyard-local:{onnx.resolve()}".encode()).hexdigest()
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    marker.write_text("laid out by infra/scripts/bench_semantic_router.py\n")
    (repo / "refs" / "main").write_text(revision)
    (snapshot / "model.onnx").symlink_to(onnx.resolve())
    for name in ("tokenizer.json", "config.json"):
        source = model_dir / name
        if not source.is_file():
            fail(f"{source} is missing (run infra/scripts/fetch-model.sh)")
        (snapshot / name).symlink_to(source.resolve())
    (snapshot / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=2))
    (snapshot / "special_tokens_map.json").write_text(json.dumps(SPECIAL_TOKENS, indent=2))
    return snapshot


# ----------------------------------------------------------------------------- run


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def run(args: argparse.Namespace) -> None:
    if args.queries < 1:
        fail("--queries must be at least 1")
    if not args.onnx.is_file():
        fail(f"{args.onnx} not found")
    routes_by_id = load_routes(args.templates)
    queries = load_queries(args.dataset, args.queries + 1)
    snapshot = lay_out_fastembed_cache(args.cache, args.onnx, args.model_dir)

    started = time.perf_counter()
    import numpy as np
    import onnxruntime
    from semantic_router import IndexedRouter, Route
    from semantic_router import __version__ as sr_version
    from semantic_router.encoders import FastEmbedEncoder
    from semantic_router.index import LocalIndex

    import fastembed

    import_ms = ms_since(started)

    loading = time.perf_counter()
    encoder = FastEmbedEncoder(name=MODEL_NAME, cache_dir=str(args.cache), threads=1)
    model_load_ms = ms_since(loading)
    session = encoder._client.model.model  # fastembed's onnxruntime.InferenceSession
    session_options = session.get_session_options()
    loaded_from = Path(encoder._client.model._model_dir)
    if loaded_from.resolve() != snapshot.resolve():
        fail(f"fastembed loaded the model from {loaded_from}, not the laid-out {snapshot}")

    # The encoder reproduces sentence-transformers? (f32: cosine 1.0; int8: about 0.99.)
    reference_min_cosine = None
    if args.reference and args.reference.is_file():
        ref = json.loads(args.reference.read_text())["items"]
        got = np.array(encoder([item["text"] for item in ref]), dtype=np.float64)
        want = np.array([item["embedding"] for item in ref], dtype=np.float64)
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        reference_min_cosine = float((got * want).sum(axis=1).min())

    routes = [Route(name=name, utterances=examples) for name, examples in routes_by_id.items()]
    indexing = time.perf_counter()
    router = IndexedRouter(encoder=encoder, routes=routes, index=LocalIndex())
    index_build_ms = ms_since(indexing)
    vectors = len(router.index)

    texts = [text for text, _ in queries]
    first = time.perf_counter()
    router(texts[0])
    first_query_ms = ms_since(first)
    measured = queries[1:]

    encode_samples = []
    for text, _ in measured:
        start = time.perf_counter()
        encoder([text])
        encode_samples.append(ms_since(start))

    route_samples = []
    correct = scored = 0
    for text, labels in measured:
        start = time.perf_counter()
        choice = router(text)
        route_samples.append(ms_since(start))
        if labels and labels != [OUT_OF_SCOPE]:
            scored += 1
            correct += choice.name in labels

    report = {
        "tool": "semantic-router",
        "label": args.label,
        "semantic_router_version": sr_version,
        "fastembed_version": fastembed.__version__,
        "onnxruntime_version": onnxruntime.__version__,
        "encoder": f"FastEmbedEncoder({MODEL_NAME}, threads=1)",
        "onnx": str(args.onnx),
        "intra_op_num_threads": session_options.intra_op_num_threads,
        "inter_op_num_threads": session_options.inter_op_num_threads,
        "providers": session.get_providers(),
        "reference_min_cosine": reference_min_cosine,
        "router": {"class": "IndexedRouter", "index": "LocalIndex", "top_k": router.top_k, "aggregation": "mean", "threshold": None},
        "routes": len(routes),
        "vectors": vectors,
        "queries": len(measured),
        "threads": 1,
        "import_ms": import_ms,
        "model_load_ms": model_load_ms,
        "index_build_ms": index_build_ms,
        "first_query_ms": first_query_ms,
        "embedding_ms": percentiles(encode_samples),
        "route_ms": percentiles(route_samples),
        "accuracy": {"top1": correct / scored if scored else None, "correct": correct, "scored": scored},
    }
    print(json.dumps(report, indent=2))


# ----------------------------------------------------------------------------- report


def ratio(a: float, b: float):
    return a / b if b else None


def report(args: argparse.Namespace) -> None:
    sy = json.loads(args.switchyard.read_text())
    runs = [json.loads(p.read_text()) for p in args.semantic_router]
    out = {
        "queries": sy["queries"],
        "threads": 1,
        "switchyard": sy,
        "semantic_router": {r["label"]: r for r in runs},
        "ratios": {
            r["label"]: {
                f"{stage}_{p}": ratio(r[f"{stage}_ms"][p], sy[f"{stage}_ms"][p])
                for stage in ("route", "embedding")
                for p in ("p50", "p95")
            }
            for r in runs
        },
        "packages": dict(pin.split("==", 1) for pin in args.packages.split()) if args.packages else None,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return

    print(f"{sy['queries']} queries, one thread each, catalog {sy['templates']} templates; latency per query in ms")
    print("ratio = semantic-router / Switchyard, same stage (>1: Switchyard is faster)")
    print()
    rows = []  # tool, model, stage, p50, p95, p50 ratio, p95 ratio
    sy_model = sy["model"].split("/")[-1]
    for stage, name in (("route", "route"), ("embedding", "embed")):
        p = sy[f"{stage}_ms"]
        rows.append(("switchyard", sy_model, name, f"{p['p50']:.2f}", f"{p['p95']:.2f}", "1.00", "1.00"))
    for r in runs:
        model = f"all-MiniLM-L6-v2 {r['label']} ONNX (fastembed)"
        for stage, name in (("route", "route"), ("embedding", "embed")):
            p = r[f"{stage}_ms"]
            rp50 = ratio(p["p50"], sy[f"{stage}_ms"]["p50"])
            rp95 = ratio(p["p95"], sy[f"{stage}_ms"]["p95"])
            rows.append(("semantic-router", model, name, f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{rp50:.2f}x", f"{rp95:.2f}x"))
    header = ("tool", "model", "stage", "p50 ms", "p95 ms", "p50 ratio", "p95 ratio")
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    line = lambda row: "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
    print(line(header))
    print("-" * len(line(header)))
    for row in rows:
        print(line(row))
    print()
    print("route = the whole call (switchyard: router.route; semantic-router: router(text));")
    print("embed = the encoder alone on the same text.")
    print(
        f"switchyard: cold start {sy['cold_start_ms']:.0f} ms (model {sy['model_load_ms']:.0f} ms, "
        f"index {sy['index_load_ms']:.0f} ms), first query {sy['first_query_ms']:.1f} ms"
    )
    for r in runs:
        acc = r["accuracy"]
        top1 = f"{acc['top1'] * 100:.1f}% ({acc['correct']}/{acc['scored']})" if acc["top1"] is not None else "n/a"
        cos = f"{r['reference_min_cosine']:.6f}" if r["reference_min_cosine"] is not None else "n/a"
        print(
            f"semantic-router ({r['label']}): import {r['import_ms']:.0f} ms, model load {r['model_load_ms']:.0f} ms, "
            f"index build {r['index_build_ms']:.0f} ms ({r['vectors']} utterances), first query {r['first_query_ms']:.1f} ms; "
            f"top-1 intent accuracy {top1}; min cosine to sentence-transformers {cos}"
        )
    print("(Switchyard's own accuracy: switchyard eval.)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="measure semantic-router")
    r.add_argument("--templates", type=Path, required=True)
    r.add_argument("--dataset", type=Path, required=True)
    r.add_argument("--onnx", type=Path, required=True, help="the ONNX graph fastembed runs")
    r.add_argument("--model-dir", type=Path, required=True, help="folder with tokenizer.json and config.json")
    r.add_argument("--cache", type=Path, required=True, help="fastembed cache_dir to lay the model out in")
    r.add_argument("--queries", type=int, default=600)
    r.add_argument("--label", default="f32")
    r.add_argument("--reference", type=Path, help="sentence-transformers reference embeddings (minilm-reference.json)")
    p = sub.add_parser("report", help="print the comparison")
    p.add_argument("--switchyard", type=Path, required=True)
    p.add_argument("--semantic-router", type=Path, nargs="+", required=True)
    p.add_argument("--packages", help="the pinned packages, 'name==version ...', to include in the JSON")
    p.add_argument("--json", action="store_true")
    args = parser.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
