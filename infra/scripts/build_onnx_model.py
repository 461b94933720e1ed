#!/usr/bin/env python3
"""Build MODEL_DIR/model.onnx (all-MiniLM-L6-v2, int8) from MODEL_DIR/model.safetensors.

Usage: build_onnx_model.py MODEL_DIR [--keep-f32] [--weight-type qint8|quint8]

No torch and no hub: the BERT encoder graph is written with onnx.helper from the numpy
weights (safetensors.numpy) and MODEL_DIR/config.json, in plain ONNX ops laid out the way
a transformers export lays them out, so that onnxruntime's transformer optimizer fuses it
(com.microsoft EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu).
The fused float32 graph is then quantized with dynamic quantization (uint8 activations,
per-channel int8 weights in 7 bits, `reduce_range`) into MODEL_DIR/model.onnx.

Why 7-bit weights: ONNX Runtime multiplies u8 activations by s8 weights with a different
kernel per CPU. AVX2 (and AVX-512 without VNNI) adds pairs of products into 16-bit sums
that saturate (vpmaddubsw); AVX-512 VNNI and arm64's dot products do not. With full 8-bit
weights the same model.onnx then gives different vectors per CPU (measured on 200
CLINC150 questions: cosine between an AVX-512 VNNI machine and the same machine emulating
a Haswell AVX2 CPU under qemu, mean 0.9905, min 0.964). With weights in [-64, 63] a pair
of products is at most 2 x 255 x 64 = 32640 < 32767, no kernel saturates, every CPU
computes the same integer sums, and the vectors agree to float rounding (max difference
3e-8, 193 of 200 bit-identical). It costs 0.0005 of mean cosine to sentence-transformers
and no speed (the fast u8 x s8 kernels are kept; u8 x u8 weights measured 1.7x slower). The float32 graph is kept only in a
temporary folder, or as MODEL_DIR/model-f32.onnx with --keep-f32.

Graph interface (the Rust side depends on it): inputs input_ids, attention_mask,
token_type_ids (int64 [batch, sequence]); output last_hidden_state (float32
[batch, sequence, hidden]). Sentence embeddings are its mean over the attention mask,
L2-normalised, as sentence-transformers computes them.

Before writing model.onnx the script checks both graphs against sentence-transformers'
own embeddings (the repository's tests/data/minilm-reference.json, or
$SWITCHYARD_MINILM_REFERENCE, or --reference PATH) and that padding does not change a sentence's vector; it exits
non-zero, saying why, when a check fails. With the same package versions the output is
byte-identical from run to run.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

OPSET = 17
MAX_SEQ_LEN = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
# shared/data beside the repository (infra/scripts/ -> repository -> its parent).
DEFAULT_REFERENCE = Path(__file__).resolve().parents[2] / "tests" / "data" / "minilm-reference.json"

# Acceptance thresholds (cosine to the sentence-transformers reference embeddings).
F32_MIN_COSINE = 0.9999
INT8_MEAN_COSINE = 0.98
INT8_MIN_COSINE = 0.95
PAD_TOLERANCE = 1e-4


def fail(message: str) -> None:
    print(f"build_onnx_model: error: {message}", file=sys.stderr)
    sys.exit(1)


class GraphBuilder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        if name in self._names:
            raise ValueError(f"duplicate initializer {name}")
        self._names.add(name)
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C", copy=True), name))  # 0-d stays 0-d
        return name

    def node(self, op: str, inputs: list[str], output: str | None = None, **attrs) -> str:
        self._count += 1
        name = f"{op}_{self._count}"
        out = output or f"{name}_out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray, prefix: str) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out]. Add(MatMul, bias) as exported.
        w = self.const(f"{prefix}.weight_t", weight.T.astype(np.float32))
        b = self.const(f"{prefix}.bias", bias.astype(np.float32))
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict, prefix: str, eps: float, output: str | None = None) -> str:
        g = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.node("LayerNormalization", [x, g, b], output, axis=-1, epsilon=eps)


def strip_prefix(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    # Some checkpoints name the tensors bert.embeddings.*; sentence-transformers' has no prefix.
    if "embeddings.word_embeddings.weight" not in weights and "bert.embeddings.word_embeddings.weight" in weights:
        return {k[len("bert.") :]: v for k, v in weights.items() if k.startswith("bert.")}
    return weights


def build_bert(weights: dict[str, np.ndarray], config: dict) -> onnx.ModelProto:
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    act = config.get("hidden_act", "gelu")
    if act != "gelu":
        fail(f"hidden_act {act!r} is not supported (only the erf gelu of BERT)")
    if config.get("position_embedding_type", "absolute") != "absolute":
        fail("only absolute position embeddings are supported")
    head_size = hidden // heads
    max_pos = weights["embeddings.position_embeddings.weight"].shape[0]

    g = GraphBuilder()
    # --- embeddings: word + token type + position, then LayerNorm
    word = g.node("Gather", [g.const("embeddings.word_embeddings.weight", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    segment = g.node(
        "Gather", [g.const("embeddings.token_type_embeddings.weight", weights["embeddings.token_type_embeddings.weight"]), "token_type_ids"]
    )
    word_segment = g.node("Add", [word, segment])
    # position ids = position_ids[:, :sequence] as a transformers export has it
    seq_len = g.node("Gather", [g.node("Shape", ["input_ids"]), g.const("const_one_scalar", np.array(1, dtype=np.int64))], axis=0)
    seq_len_1d = g.node("Unsqueeze", [seq_len, g.const("const_axes_0", np.array([0], dtype=np.int64))])
    position_ids = g.node(
        "Slice",
        [
            g.const("embeddings.position_ids", np.arange(max_pos, dtype=np.int64).reshape(1, max_pos)),
            g.const("const_slice_starts", np.array([0], dtype=np.int64)),
            seq_len_1d,
            g.const("const_slice_axes", np.array([1], dtype=np.int64)),
            g.const("const_slice_steps", np.array([1], dtype=np.int64)),
        ],
    )
    position = g.node("Gather", [g.const("embeddings.position_embeddings.weight", weights["embeddings.position_embeddings.weight"]), position_ids])
    x = g.layer_norm(g.node("Add", [word_segment, position]), weights, "embeddings.LayerNorm", eps)

    # --- extended attention mask: (1 - mask[:, None, None, :]) * -10000
    mask = g.node("Unsqueeze", ["attention_mask", g.const("const_axes_1", np.array([1], dtype=np.int64))])
    mask = g.node("Unsqueeze", [mask, g.const("const_axes_2", np.array([2], dtype=np.int64))])
    mask = g.node("Cast", [mask], to=TensorProto.FLOAT)
    mask = g.node("Sub", [g.const("const_one_float", np.array(1.0, dtype=np.float32)), mask])
    mask_bias = g.node("Mul", [mask, g.const("const_mask_filter", np.array(-10000.0, dtype=np.float32))])

    heads_shape = g.const("const_heads_shape", np.array([0, 0, heads, head_size], dtype=np.int64))
    merged_shape = g.const("const_merged_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("const_sqrt_head_size", np.array(math.sqrt(head_size), dtype=np.float32))
    sqrt2 = g.const("const_sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("const_half", np.array(0.5, dtype=np.float32))

    for i in range(layers):
        p = f"encoder.layer.{i}"

        def w(name: str) -> np.ndarray:
            return weights[f"{p}.{name}"]

        def lin(inp: str, name: str) -> str:
            return g.linear(inp, w(f"{name}.weight"), w(f"{name}.bias"), f"{p}.{name}")

        q = g.node("Transpose", [g.node("Reshape", [lin(x, "attention.self.query"), heads_shape])], perm=[0, 2, 1, 3])
        k = g.node("Transpose", [g.node("Reshape", [lin(x, "attention.self.key"), heads_shape])], perm=[0, 2, 3, 1])
        v = g.node("Transpose", [g.node("Reshape", [lin(x, "attention.self.value"), heads_shape])], perm=[0, 2, 1, 3])
        scores = g.node("Add", [g.node("Div", [g.node("MatMul", [q, k]), scale]), mask_bias])
        probs = g.node("Softmax", [scores], axis=-1)
        context = g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.node("Reshape", [context, merged_shape])
        attn_out = lin(context, "attention.output.dense")
        x = g.layer_norm(g.node("Add", [attn_out, x]), weights, f"{p}.attention.output.LayerNorm", eps)

        h = lin(x, "intermediate.dense")
        gelu = g.node("Mul", [g.node("Mul", [h, g.node("Add", [g.node("Erf", [g.node("Div", [h, sqrt2])]), g.const(f"{p}.const_one", np.array(1.0, dtype=np.float32))])]), half])
        out = lin(gelu, "output.dense")
        last = i == layers - 1
        x = g.layer_norm(g.node("Add", [out, x]), weights, f"{p}.output.LayerNorm", eps, "last_hidden_state" if last else None)

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])]
    graph = helper.make_graph(g.nodes, "minilm_encoder", inputs, outputs, g.initializers)
    # No producer_name: the optimizer warns about any producer but "pytorch".
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# ----------------------------------------------------------------------------- checks


def load_tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_SEQ_LEN)
    return tok


def make_session(path: Path, threads: int = 1):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def feeds_for(encodings) -> dict[str, np.ndarray]:
    n = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), n), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for r, e in enumerate(encodings):
        ids[r, : len(e.ids)] = e.ids
        mask[r, : len(e.ids)] = e.attention_mask
        types[r, : len(e.ids)] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def sentence_embeddings(session, feeds: dict[str, np.ndarray]) -> np.ndarray:
    hidden = session.run(["last_hidden_state"], feeds)[0].astype(np.float64)
    mask = feeds["attention_mask"].astype(np.float64)[:, :, None]
    pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def check_model(path: Path, tok, texts: list[str], reference: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Cosines to the reference (one sentence at a time, unpadded); the largest difference
    and the lowest cosine between those vectors and the same sentences in one right-padded
    batch (int8 differs there by design: dynamic quantization scales by the whole batch)."""
    session = make_session(path)
    encodings = [tok.encode(t) for t in texts]
    single = np.stack([sentence_embeddings(session, feeds_for([e]))[0] for e in encodings])
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    cosines = (single * ref).sum(axis=1)
    batched = sentence_embeddings(session, feeds_for(encodings))
    pad_diff = float(np.abs(batched - single).max())
    pad_cos = float((batched * single).sum(axis=1).min())
    return cosines, pad_diff, pad_cos


# ----------------------------------------------------------------------------- main


def fused_counts(optimizer) -> dict[str, int]:
    counts = optimizer.get_fused_operator_statistics()
    return {k: v for k, v in sorted(counts.items()) if v}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--keep-f32", action="store_true", help="also write MODEL_DIR/model-f32.onnx (fused, float32)")
    # qint8 (u8 activations x s8 weights), measured on an AVX2 x86_64 at one thread over 600
    # CLINC150 queries: p50 2.2 ms against quint8's 2.5 ms, cosine to the reference 0.992
    # against 0.993 (mean); the speed is worth more than the 0.001.
    parser.add_argument("--weight-type", choices=["qint8", "quint8"], default="qint8", help="int8 weight type (default qint8)")
    parser.add_argument(
        "--full-range",
        action="store_true",
        help="8-bit weights instead of 7 (faster nowhere, and the vectors then depend on the CPU: see above)",
    )
    parser.add_argument("--output", type=Path, help="int8 model path (default MODEL_DIR/model.onnx)")
    parser.add_argument("--reference", type=Path, default=Path(os.environ.get("SWITCHYARD_MINILM_REFERENCE", DEFAULT_REFERENCE)))
    args = parser.parse_args()

    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    model_dir: Path = args.model_dir
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        if not (model_dir / name).is_file():
            fail(f"{model_dir / name} is missing (run infra/scripts/fetch-model.sh)")
    if not args.reference.is_file():
        fail(f"reference embeddings {args.reference} not found (set SWITCHYARD_MINILM_REFERENCE or --reference)")
    output = args.output or model_dir / "model.onnx"

    config = json.loads((model_dir / "config.json").read_text())
    weights = strip_prefix(load_file(str(model_dir / "model.safetensors")))
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    print(f"build_onnx_model: onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, numpy {np.__version__}")
    print(f"build_onnx_model: BERT {layers} layers, hidden {hidden}, {heads} heads, vocab {config['vocab_size']}")

    reference = json.loads(args.reference.read_text())
    texts = [item["text"] for item in reference["items"]]
    ref = np.array([item["embedding"] for item in reference["items"]], dtype=np.float64)
    if ref.shape[1] != hidden:
        fail(f"reference embeddings have dimension {ref.shape[1]}, the model {hidden}")
    tok = load_tokenizer(model_dir)

    with tempfile.TemporaryDirectory(prefix="switchyard-onnx-") as tmp:
        tmp = Path(tmp)
        plain = build_bert(weights, config)
        plain_path = tmp / "model-plain.onnx"
        onnx.save(plain, str(plain_path))

        options = FusionOptions("bert")
        # Keep the 2-D mask (int32) on Attention: correct for any padding layout.
        options.use_raw_attention_mask(True)
        optimizer = optimize_model(
            str(plain_path), model_type="bert", num_heads=heads, hidden_size=hidden, optimization_options=options, opt_level=0
        )
        counts = fused_counts(optimizer)
        print("build_onnx_model: fused operators: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
        expected = {"Attention": layers, "EmbedLayerNormalization": 1, "SkipLayerNormalization": 2 * layers}
        missing = {k: v for k, v in expected.items() if counts.get(k, 0) != v}
        gelu = counts.get("BiasGelu", 0) + counts.get("Gelu", 0) + counts.get("FastGelu", 0)
        if missing or gelu != layers:
            fail(f"fusion incomplete: expected {expected} and {layers} (Bias)Gelu, got {counts}")
        remaining = sorted({n.op_type for n in optimizer.model.graph.node})
        print("build_onnx_model: fused graph op types: " + ", ".join(remaining))
        f32_path = tmp / "model-f32.onnx"
        optimizer.save_model_to_file(str(f32_path), use_external_data_format=False)

        cos_plain, pad_plain, _ = check_model(plain_path, tok, texts, ref)
        cos_f32, pad_f32, _ = check_model(f32_path, tok, texts, ref)
        print(f"build_onnx_model: f32 (plain) cosine to reference: mean {cos_plain.mean():.6f} min {cos_plain.min():.6f}; padded batch max diff {pad_plain:.1e}")
        print(f"build_onnx_model: f32 (fused) cosine to reference: mean {cos_f32.mean():.6f} min {cos_f32.min():.6f}; padded batch max diff {pad_f32:.1e}")
        if cos_f32.min() < F32_MIN_COSINE or cos_plain.min() < F32_MIN_COSINE:
            fail(f"float32 graph does not reproduce sentence-transformers (cosine min {min(cos_f32.min(), cos_plain.min()):.6f} < {F32_MIN_COSINE})")
        if max(pad_f32, pad_plain) > PAD_TOLERANCE:
            fail(f"padding changes float32 embeddings by {max(pad_f32, pad_plain):.2e} (> {PAD_TOLERANCE})")

        weight_type = QuantType.QInt8 if args.weight_type == "qint8" else QuantType.QUInt8
        int8_tmp = tmp / "model-int8.onnx"
        root_logger = logging.getLogger()  # quantize_dynamic advises pre-processing on the root logger
        level = root_logger.level
        root_logger.setLevel(logging.ERROR)
        try:
            quantize_dynamic(
                str(f32_path),
                str(int8_tmp),
                per_channel=True,
                reduce_range=not args.full_range,
                weight_type=weight_type,
                # ONNX shape inference does not know the com.microsoft ops' outputs: they are float.
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
        finally:
            root_logger.setLevel(level)
        qtypes = {}
        for n in onnx.load(str(int8_tmp)).graph.node:
            qtypes[n.op_type] = qtypes.get(n.op_type, 0) + 1
        print(f"build_onnx_model: weights in {8 if args.full_range else 7} bits")
        print("build_onnx_model: int8 graph ops: " + ", ".join(f"{k}={v}" for k, v in sorted(qtypes.items())))
        cos_q, pad_q, pad_q_cos = check_model(int8_tmp, tok, texts, ref)
        print(
            f"build_onnx_model: int8 ({args.weight_type}, per-channel) cosine to reference: mean {cos_q.mean():.6f} min {cos_q.min():.6f}; "
            f"padded batch vs single: min cosine {pad_q_cos:.4f}"
        )
        if cos_q.mean() < INT8_MEAN_COSINE or cos_q.min() < INT8_MIN_COSINE:
            fail(f"int8 model too far from the reference (mean {cos_q.mean():.6f} < {INT8_MEAN_COSINE} or min {cos_q.min():.6f} < {INT8_MIN_COSINE})")

        if args.keep_f32:
            os.replace(f32_path, model_dir / "model-f32.onnx")
            print(f"build_onnx_model: wrote {model_dir / 'model-f32.onnx'} ({(model_dir / 'model-f32.onnx').stat().st_size} bytes)")
        tmp_out = output.with_name(output.name + ".tmp")
        with open(int8_tmp, "rb") as src, open(tmp_out, "wb") as dst:
            dst.write(src.read())
        os.replace(tmp_out, output)
    print(f"build_onnx_model: wrote {output} ({output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
