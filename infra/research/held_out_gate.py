"""A Python copy of the adaptation gate (infra/cli/src/gate.rs): route each template's
held-out `nl_examples` (every fifth) against the centroids of its other texts, for several
model folders (an int8 `model.onnx` + `tokenizer.json` each: the base model's, an adapted
encoder's cache folder, or an experiment's), and the share right on the held-out turns
holding a word that no training text has. Used for the README's "Why the adapted encoder
trails the base model" (SGD: base 72.44%, adapted 77.03%, the half-way interpolation
76.45%; Switchyard's own gate says 72.50 / 76.80: tokenization and sums differ slightly).

    ~/.cache/switchyard/venv/bin/python infra/research/held_out_gate.py templates/sgd \\
        ~/.cache/switchyard/models/all-MiniLM-L6-v2 ~/.cache/switchyard/encoders/<key>

Needs onnxruntime, tokenizers, numpy (the model virtualenv) and PyYAML."""
import sys, glob, yaml, re, numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
root = sys.argv[1]; models = sys.argv[2:]
templates = []
for ds in sorted(glob.glob(f"{root}/*/templates.yaml")):
    for t in yaml.safe_load(open(ds))["templates"]:
        templates.append(t)
def spread(items, mx):
    stride = max(-(-len(items) // mx), 1); return items[::stride]
held = lambda e, n: n >= 3 and e % 5 == 4
groups = []; queries = []
for i, t in enumerate(templates):
    ex = t["nl_examples"]; n = len(ex)
    texts = [e for j, e in enumerate(ex) if not held(j, n)] + [t["description"], " ".join(re.split(r"[_\W]+", t["id"]))]
    groups.append(spread(texts, 100))
    queries += [(i, e) for j, e in enumerate(ex) if held(j, n)]
queries = spread(queries, 2000)
print(len(templates), "templates", len(queries), "queries")
opts = ort.SessionOptions(); opts.intra_op_num_threads = 2
for m in models:
    tok = Tokenizer.from_file(f"{m}/tokenizer.json"); tok.enable_truncation(256); tok.enable_padding()
    s = ort.InferenceSession(f"{m}/model.onnx", opts, providers=["CPUExecutionProvider"])
    types = {i.name: i.type for i in s.get_inputs()}
    def embed(texts):
        out = []
        for k in range(0, len(texts), 64):
            enc = tok.encode_batch(texts[k:k+64])
            ids = np.array([e.ids for e in enc], dtype=np.int64); mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            feed = {k2: (v.astype(np.int32) if "int32" in types[k2] else v) for k2, v in feed.items() if k2 in types}
            h = s.run(None, feed)[0]
            v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        return np.concatenate(out)
    cents = []
    for g in groups:
        v = embed(g).sum(0); cents.append(v / np.linalg.norm(v))
    C = np.stack(cents)
    Q = embed([q for _, q in queries])
    pred = (Q @ C.T).argmax(1)
    vocab=set(w for g in groups for t in g for w in re.findall(r"[a-z0-9']+", t.lower()))
    novel=[any(w not in vocab for w in re.findall(r"[a-z0-9']+", q.lower())) for _,q in queries]
    rn=sum(int(p==i) for p,(i,_),nv in zip(pred,queries,novel) if nv)
    right = sum(int(p == i) for p, (i, _) in zip(pred, queries))
    print(m, "all %.2f%%" % (100 * right / len(queries)), flush=True)
    print(m, "held-out turns with a word no training text has:", sum(novel), "right %.2f%%" % (100 * rn / max(sum(novel), 1)))
