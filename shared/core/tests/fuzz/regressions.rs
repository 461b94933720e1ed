//! Regressions found by `resealed_mutations_never_panic`: artifacts whose checksum is right
//! but whose contents this code never writes. The bodies are decoded into mirrors of the
//! format-5 body (postcard is not self-describing), edited and re-sealed.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard_documents::chunk::Chunk;
use switchyard_documents::{ChunkIndex, DocumentEntry};
use switchyard_index::bytes::f32s;
use switchyard_index::head::Head;
use switchyard_index::index::Index;

use crate::frames::{load_any, seal, sections};
use crate::setup::{artifacts, chunk_artifact, ORIGIN};

#[derive(Serialize, Deserialize)]
struct PartitionMirror {
    datasource: String,
    dimension: usize,
    #[serde(with = "f32s")]
    vectors: Vec<f32>,
    offsets: Vec<u32>,
    #[serde(with = "f32s")]
    centroids: Vec<f32>,
    #[serde(with = "f32s")]
    negatives: Vec<f32>,
    /// The exact-scan artifact has no graph.
    graph: Option<()>,
}

#[derive(Serialize, Deserialize)]
struct BodyMirror {
    catalog_json: String,
    partitions: Vec<PartitionMirror>,
    head: Option<Head>,
}

/// The exact-scan artifact with its manifest and body edited, re-sealed.
fn edited_index(edit: impl FnOnce(&mut Value, &mut BodyMirror)) -> Vec<u8> {
    let (head, manifest, body) = sections(&artifacts()[0]);
    let mut manifest: Value = serde_json::from_slice(manifest).unwrap();
    let mut body: BodyMirror = postcard::from_bytes(body).unwrap();
    edit(&mut manifest, &mut body);
    seal(
        head,
        &serde_json::to_vec(&manifest).unwrap(),
        &postcard::to_stdvec(&body).unwrap(),
    )
}

fn assert_index_refused(bytes: &[u8], expected: &str) {
    let (index, _) = load_any(bytes);
    let message = index.expect("refused");
    assert!(message.contains(expected), "{message}");
}

#[test]
fn the_mirrors_round_trip() {
    let bytes = edited_index(|_, _| {});
    assert!(sections(&bytes).2 == sections(&artifacts()[0]).2);
    assert!(Index::from_bytes(&bytes, ORIGIN).is_ok());
    let (head, manifest, body) = sections(chunk_artifact());
    let mirror: ChunkBodyMirror = postcard::from_bytes(body).unwrap();
    let bytes = seal(head, manifest, &postcard::to_stdvec(&mirror).unwrap());
    assert!(ChunkIndex::from_bytes(&bytes, ORIGIN).is_ok());
}

/// Was: "attempt to subtract with overflow" in `Partition::template_count` (debug builds).
#[test]
fn regression_resealed_index_without_offsets_is_refused() {
    let bytes = edited_index(|_, body| body.partitions[0].offsets.clear());
    assert_index_refused(&bytes, "counts do not match the partitions");
}

/// Was: loaded, then routing panicked slicing the vectors ("range end index … out of range").
#[test]
fn regression_resealed_index_with_decreasing_offsets_is_refused() {
    let bytes = edited_index(|_, body| body.partitions[0].offsets[1] = 200);
    assert_index_refused(&bytes, "counts do not match the partitions");
}

/// Was: "chunk size must be non-zero" quantising the centroids while loading.
#[test]
fn regression_resealed_index_of_dimension_zero_is_refused() {
    let bytes = edited_index(|manifest, body| {
        manifest["dimension"] = 0.into();
        manifest["head"] = Value::Null;
        for datasource in manifest["datasources"].as_array_mut().unwrap() {
            datasource["vectors"] = 0.into();
        }
        body.head = None;
        for partition in &mut body.partitions {
            partition.dimension = 0;
            partition.vectors.clear();
            partition.centroids.clear();
            partition.negatives.clear();
            partition.offsets.iter_mut().for_each(|o| *o = 0);
        }
    });
    assert_index_refused(&bytes, "counts do not match the partitions");
}

#[derive(Serialize, Deserialize)]
struct TermIndexMirror {
    postings: HashMap<String, Vec<(u32, f32)>>,
    idf: HashMap<String, f32>,
    length_norm: Vec<f32>,
    k1: f32,
}

#[derive(Serialize, Deserialize)]
struct ChunkBodyMirror {
    documents: Vec<DocumentEntry>,
    chunks: Vec<Chunk>,
    content: Vec<f32>,
    summaries: Vec<f32>,
    questions: Vec<f32>,
    question_owner: Vec<u32>,
    terms: TermIndexMirror,
}

/// Was: loaded, then the search panicked scoring BM25 ("index out of bounds: the len is 3
/// but the index is …").
#[test]
fn regression_resealed_chunks_with_a_posting_out_of_range_are_refused() {
    let (head, manifest, body) = sections(chunk_artifact());
    let mut body: ChunkBodyMirror = postcard::from_bytes(body).unwrap();
    let postings = body.terms.postings.get_mut("excess").expect("a term");
    postings[0].0 = 26449;
    let bytes = seal(head, manifest, &postcard::to_stdvec(&body).unwrap());
    let (_, chunks) = load_any(&bytes);
    let message = chunks.expect("refused");
    assert!(message.contains("counts do not match"), "{message}");
}

/// Was: "attempt to multiply with overflow" checking the counts (debug builds).
#[test]
fn regression_resealed_chunks_with_a_huge_count_are_refused() {
    let (head, manifest, body) = sections(chunk_artifact());
    let mut manifest: Value = serde_json::from_slice(manifest).unwrap();
    manifest["chunks"] = u64::MAX.into();
    let bytes = seal(head, &serde_json::to_vec(&manifest).unwrap(), body);
    let (_, chunks) = load_any(&bytes);
    let message = chunks.expect("refused");
    assert!(message.contains("counts do not match"), "{message}");
}
