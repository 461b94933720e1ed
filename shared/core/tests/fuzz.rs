//! Bounded property-based fuzzing of what the domain crate reads from outside: index and
//! chunk artifacts (random bytes, mutated artifacts, mutated length fields, and mutations
//! re-sealed with a correct checksum so they reach the JSON and postcard decoders) and a
//! catalog's YAML files. Built on the test-only `HashingEmbedder`: no model needed.
//!
//! Each property runs 500 to 5,000 cases with a fixed seed (about two seconds in the dev
//! profile); `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more, or other, cases
//! (`infra/scripts/fuzz.sh`). The allocator counts the peak heap and caps it at 2 GiB, so
//! a length field that would allocate gigabytes aborts the run instead of passing.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use cap::Cap;
use proptest::prelude::*;
use proptest::sample::Index as Position;
use proptest::test_runner::RngSeed;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_core::config::Config;
use switchyard_core::documents::chunk::Chunk;
use switchyard_core::documents::{ChunkIndex, Document, DocumentEntry, Query, Signals};
use switchyard_core::embed::{Embedder, HashingEmbedder};
use switchyard_core::head::Head;
use switchyard_core::index::Index;
use switchyard_core::keywords::TermExpansion;
use switchyard_core::router::{Access, Router};
use switchyard_core::template::Catalog;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, 2 << 30);

/// The heap this test binary may reach at its peak, all tests together.
const PEAK_LIMIT: usize = 512 << 20;

fn assert_peak_bounded() {
    let peak = ALLOCATOR.max_allocated();
    assert!(peak < PEAK_LIMIT, "peak heap {peak} bytes");
}

/// `cases` cases with a fixed seed, unless `PROPTEST_CASES` / `PROPTEST_RNG_SEED` say
/// otherwise; no regression files (minimal failures become plain `#[test]`s).
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5717_c4a2_d5ee_d001);
    }
    config.failure_persistence = None;
    config
}

const DIMENSION: usize = 16;
const ORIGIN: &str = "s3://bucket/fuzz.idx";

fn embedder() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::new(DIMENSION))
}

/// The small catalog plus negative examples (so partitions carry negatives too).
fn catalog_dir() -> tempfile::TempDir {
    let hr = format!(
        "{}negative_examples:\n  - What is the weather in Paris?\n",
        common::HR_DATASOURCE
    );
    common::catalog(&[
        ("assistant/datasource.yaml", common::ASSISTANT_DATASOURCE),
        ("assistant/templates.yaml", common::ASSISTANT_TEMPLATES),
        ("hr/datasource.yaml", &hr),
        ("hr/templates.yaml", common::HR_TEMPLATES),
    ])
}

/// Two valid artifacts: exact scan only, and with an HNSW graph in every partition.
fn artifacts() -> &'static [Vec<u8>; 2] {
    static ARTIFACTS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    ARTIFACTS.get_or_init(|| {
        let dir = catalog_dir();
        let build = |pairs: &[(&str, &str)]| {
            let config = Config::load(
                None,
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            )
            .unwrap();
            let catalog = Catalog::load(dir.path()).unwrap();
            let index = Index::build(catalog, embedder().as_ref(), &config, &|_, _| {}).unwrap();
            index.to_bytes().unwrap()
        };
        [
            build(&[]),
            build(&[("SWITCHYARD__INDEX__EXACT_SCAN_MAX_TEMPLATES", "1")]),
        ]
    })
}

fn chunk_artifact() -> &'static [u8] {
    static ARTIFACT: OnceLock<Vec<u8>> = OnceLock::new();
    ARTIFACT.get_or_init(|| {
        let document = |id: &str, text: &str, questions: &[&str]| Document {
            id: id.into(),
            title: format!("{id} cover"),
            text: text.into(),
            summary: None,
            questions: questions.iter().map(|q| q.to_string()).collect(),
            metadata: [("product".to_owned(), vec![id.to_owned()])].into(),
        };
        let documents = [
            document(
                "travel",
                "# Excess\nThe excess is 75 pounds.\n# Baggage\nBaggage is covered up to 1500 pounds.",
                &["What is the excess?"],
            ),
            document("car", "The no claim discount grows 10 percent a year.", &[]),
        ];
        let settings = Config::default().documents;
        ChunkIndex::build(
            "policies",
            &documents,
            &HashingEmbedder::new(DIMENSION),
            &settings,
            &|_, _| {},
        )
        .unwrap()
        .to_bytes()
        .unwrap()
    })
}

/// The frame's parts: (magic and version, manifest, body).
fn sections(artifact: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let manifest_len = u32::from_le_bytes(artifact[12..16].try_into().unwrap()) as usize;
    let body_at = 16 + manifest_len + 8;
    (
        &artifact[..12],
        &artifact[16..16 + manifest_len],
        &artifact[body_at..artifact.len() - 32],
    )
}

/// Frame `manifest` and `body` as the artifact format does, with a correct checksum.
fn seal(head: &[u8], manifest: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = head.to_vec();
    out.extend_from_slice(&(manifest.len() as u32).to_le_bytes());
    out.extend_from_slice(manifest);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    let checksum = Sha256::digest(&out);
    out.extend_from_slice(&checksum);
    out
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(Position, u8),
    Set(Position, u8),
    Truncate(Position),
    Insert(Position, Vec<u8>),
    Delete(Position, usize),
    Append(Vec<u8>),
    /// Copy a slice of the bytes over another place (moves plausible values around).
    Splice(Position, Position, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop::collection::vec(any::<u8>(), 1..16);
    prop_oneof![
        4 => (any::<Position>(), 0u8..8).prop_map(|(p, bit)| Mutation::Flip(p, bit)),
        3 => (any::<Position>(), prop_oneof![Just(0u8), Just(0xff), Just(0x80), any::<u8>()])
            .prop_map(|(p, b)| Mutation::Set(p, b)),
        1 => any::<Position>().prop_map(Mutation::Truncate),
        2 => (any::<Position>(), bytes.clone()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        2 => (any::<Position>(), 1usize..16).prop_map(|(p, n)| Mutation::Delete(p, n)),
        1 => bytes.prop_map(Mutation::Append),
        1 => (any::<Position>(), any::<Position>(), 1usize..16)
            .prop_map(|(from, to, n)| Mutation::Splice(from, to, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let at = |p: &Position, len: usize| if len == 0 { 0 } else { p.index(len) };
    match mutation {
        Mutation::Flip(p, bit) if !bytes.is_empty() => {
            let i = at(p, bytes.len());
            bytes[i] ^= 1 << bit;
        }
        Mutation::Set(p, byte) if !bytes.is_empty() => {
            let i = at(p, bytes.len());
            bytes[i] = *byte;
        }
        Mutation::Truncate(p) => bytes.truncate(at(p, bytes.len())),
        Mutation::Insert(p, extra) => {
            let i = at(p, bytes.len() + 1);
            bytes.splice(i..i, extra.iter().copied());
        }
        Mutation::Delete(p, n) if !bytes.is_empty() => {
            let i = at(p, bytes.len());
            bytes.drain(i..(i + n).min(bytes.len()));
        }
        Mutation::Append(extra) => bytes.extend_from_slice(extra),
        Mutation::Splice(from, to, n) if !bytes.is_empty() => {
            let from = at(from, bytes.len());
            let to = at(to, bytes.len());
            let n = (*n).min(bytes.len() - from).min(bytes.len() - to);
            let piece = bytes[from..from + n].to_vec();
            bytes[to..to + n].copy_from_slice(&piece);
        }
        _ => {}
    }
}

fn mutated(original: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for m in mutations {
        apply(&mut bytes, m);
    }
    bytes
}

/// Load both kinds of artifact from `bytes`; whichever loads must refuse or be usable.
fn load_any(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let index = Index::from_bytes(bytes, ORIGIN).map(use_index);
    let chunks = ChunkIndex::from_bytes(bytes, ORIGIN).map(use_chunks);
    (
        index.err().map(|e| e.to_string()),
        chunks.err().map(|e| e.to_string()),
    )
}

/// A loaded index must route without panicking.
fn use_index(index: Index) {
    let Ok(router) = Router::new(index, Config::default(), embedder(), ORIGIN) else {
        return;
    };
    for query in [
        "How many employees work in Engineering?",
        "remind me to call mom",
        "",
        "zzz",
    ] {
        let _ = router.route(query, &Access::All);
    }
}

/// A loaded chunk artifact must search without panicking.
fn use_chunks(chunks: ChunkIndex) {
    let settings = Config::default().documents;
    let vector = HashingEmbedder::new(chunks.manifest.dimension.min(4096))
        .embed_one("what is the excess")
        .unwrap();
    let _ = chunks.check_datasource("policies", ORIGIN);
    for vector in [Some(vector.as_slice()), None] {
        let query = Query {
            text: "what is the excess on baggage",
            vector,
            filters: [("product".to_owned(), vec!["travel".to_owned()])].into(),
            top_k: 3,
            signals: Signals::ALL,
            balance: true,
        };
        let _ = chunks.search(&query, &settings, &TermExpansion::default());
    }
}

fn refused_naming_origin(result: Option<String>, what: &str) -> Result<(), TestCaseError> {
    let message = result.ok_or_else(|| TestCaseError::fail(format!("{what} was accepted")))?;
    prop_assert!(
        message.starts_with(&format!("index {ORIGIN}: ")),
        "{message}"
    );
    Ok(())
}

#[test]
fn the_valid_artifacts_load() {
    for artifact in artifacts() {
        use_index(Index::from_bytes(artifact, ORIGIN).unwrap());
    }
    assert!(Index::from_bytes(&artifacts()[1], ORIGIN)
        .unwrap()
        .partitions[0]
        .uses_graph());
    use_chunks(ChunkIndex::from_bytes(chunk_artifact(), ORIGIN).unwrap());
}

proptest! {
    #![proptest_config(config(5000))]

    /// Random bytes, bare or behind a valid magic and version, are refused.
    #[test]
    fn random_bytes_are_refused(
        prefix in prop_oneof![Just(0usize), Just(12), Just(16)],
        which in 0usize..3,
        tail in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let valid: &[u8] = match which {
            0 => &artifacts()[0],
            1 => &artifacts()[1],
            _ => chunk_artifact(),
        };
        let mut bytes = valid[..prefix].to_vec();
        bytes.extend_from_slice(&tail);
        let (index, chunks) = load_any(&bytes);
        refused_naming_origin(index, "random index bytes")?;
        refused_naming_origin(chunks, "random chunk bytes")?;
        assert_peak_bounded();
    }

    /// Any change to a valid artifact is refused: the SHA-256 seal covers every byte.
    #[test]
    fn mutated_artifacts_are_refused(
        which in 0usize..3,
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let original: &[u8] = match which {
            0 => &artifacts()[0],
            1 => &artifacts()[1],
            _ => chunk_artifact(),
        };
        let bytes = mutated(original, &mutations);
        prop_assume!(bytes != original);
        let (index, chunks) = load_any(&bytes);
        refused_naming_origin(index, "a mutated artifact (as an index)")?;
        refused_naming_origin(chunks, "a mutated artifact (as chunks)")?;
        assert_peak_bounded();
    }

    /// A length field set to anything else is refused before anything is allocated for it.
    #[test]
    fn mutated_length_fields_are_refused(
        which in 0usize..3,
        body_field in any::<bool>(),
        value in prop_oneof![
            any::<u64>(),
            0u64..70_000,
            Just(u64::from(u32::MAX)),
            Just(u64::MAX),
            Just(u64::MAX - 31),
        ],
        near in -40i64..40,
        use_near in any::<bool>(),
    ) {
        let original: &[u8] = match which {
            0 => &artifacts()[0],
            1 => &artifacts()[1],
            _ => chunk_artifact(),
        };
        let mut bytes = original.to_vec();
        let manifest_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let (at, width) = if body_field { (16 + manifest_len, 8) } else { (12, 4) };
        let current = if body_field {
            u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
        } else {
            manifest_len as u64
        };
        let value = if use_near { current.wrapping_add_signed(near) } else { value };
        prop_assume!(value != current);
        if width == 4 {
            bytes[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
        } else {
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        prop_assume!(bytes != original);
        let (index, chunks) = load_any(&bytes);
        refused_naming_origin(index, "a mutated length (as an index)")?;
        refused_naming_origin(chunks, "a mutated length (as chunks)")?;
        assert_peak_bounded();
    }
}

/// A number somewhere in a JSON value, replaced.
fn replace_number(value: &mut Value, pick: &mut usize, with: &Value) -> bool {
    match value {
        Value::Number(_) => {
            if *pick == 0 {
                *value = with.clone();
                return true;
            }
            *pick -= 1;
            false
        }
        Value::Array(items) => items.iter_mut().any(|v| replace_number(v, pick, with)),
        Value::Object(map) => map.values_mut().any(|v| replace_number(v, pick, with)),
        _ => false,
    }
}

fn interesting_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(0)),
        Just(Value::from(1)),
        Just(Value::from(2)),
        Just(Value::from(u32::MAX)),
        Just(Value::from(u64::MAX)),
        Just(Value::from(-1)),
        Just(Value::from(0.5)),
        (0u64..100).prop_map(Value::from),
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    /// Mutations re-sealed with a correct checksum reach the manifest's JSON and the body's
    /// postcard: they may load or be refused, never panic, allocate gigabytes or load an
    /// index or chunk artifact that then panics when routed or searched.
    #[test]
    fn resealed_mutations_never_panic(
        which in 0usize..3,
        in_body in prop::bool::weighted(0.75),
        mutations in prop::collection::vec(mutation(), 1..4),
        number_edit in prop::option::weighted(0.3, (any::<usize>(), interesting_number())),
    ) {
        let original: &[u8] = match which {
            0 => &artifacts()[0],
            1 => &artifacts()[1],
            _ => chunk_artifact(),
        };
        let (head, manifest, body) = sections(original);
        let mut manifest = manifest.to_vec();
        let mut body = body.to_vec();
        if let Some((pick, with)) = number_edit {
            let mut value: Value = serde_json::from_slice(&manifest).unwrap();
            let mut pick = pick % 64;
            replace_number(&mut value, &mut pick, &with);
            manifest = serde_json::to_vec(&value).unwrap();
        } else if in_body {
            body = mutated(&body, &mutations);
        } else {
            manifest = mutated(&manifest, &mutations);
        }
        let bytes = seal(head, &manifest, &body);
        let _ = load_any(&bytes);
        assert_peak_bounded();
    }
}

// ---------------------------------------------------------------------------------------
// Regressions found by `resealed_mutations_never_panic`: artifacts whose checksum is right
// but whose contents this code never writes. The bodies are decoded into mirrors of the
// format-3 body (postcard is not self-describing), edited and re-sealed.

#[derive(Serialize, Deserialize)]
struct PartitionMirror {
    datasource: String,
    dimension: usize,
    vectors: Vec<f32>,
    offsets: Vec<u32>,
    centroids: Vec<f32>,
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

// ---------------------------------------------------------------------------------------
// Catalog YAML.

const DATASOURCE_YAML: &str = "name: ds\nkind: sql\ndescription: Employees and departments\nconnection:\n  engine: sqlite\nlimits:\n  max_rows: 10\nnegative_examples:\n  - what is the weather\n";
const TEMPLATES_YAML: &str = r#"templates:
  - id: employees_by_department
    description: Count the employees in a department
    nl_examples:
      - How many employees work in Engineering?
      - "Headcount of the Sales department"
    parameters:
      - name: department
        type: enum
        required: true
        allowed_values: [Engineering, Sales]
        aliases: {eng: Engineering}
        extraction_patterns: ['(?i)in (\w+)']
        min: 1
        max: 2
    sql_template: SELECT COUNT(*) FROM employees WHERE department = :department
  - id: top_earners
    description: >-
      The highest paid employees
    nl_examples: [Who are the best paid people?]
    sql_template: |
      SELECT name FROM employees ORDER BY salary DESC LIMIT 5
"#;

/// Text that looks like YAML: its punctuation, indentation and a few words.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("- ".to_owned()),
        Just(": ".to_owned()),
        Just("templates".to_owned()),
        Just("id".to_owned()),
        Just("name".to_owned()),
        Just("kind".to_owned()),
        Just("sql".to_owned()),
        Just("nl_examples".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("&a ".to_owned()),
        Just("*a".to_owned()),
        Just("<<: *a".to_owned()),
        Just("!!str ".to_owned()),
        Just("!!binary ".to_owned()),
        Just("|".to_owned()),
        Just(">-".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\u00".to_owned()),
        Just("#".to_owned()),
        Just("---\n".to_owned()),
        Just("...\n".to_owned()),
        Just("%YAML 1.2\n".to_owned()),
        Just("? ".to_owned()),
        Just("~".to_owned()),
        Just("1e999".to_owned()),
        Just("-0x1F".to_owned()),
        Just("\t".to_owned()),
        Just("\u{feff}".to_owned()),
        "[a-z_]{1,8}",
        any::<String>(),
    ];
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat())
}

/// Line edits of a valid file: delete, duplicate, move, re-indent, replace, insert.
fn mutated_lines(original: &'static str) -> impl Strategy<Value = String> {
    let edit = (0u8..7, any::<Position>(), any::<Position>(), yamlish());
    prop::collection::vec(edit, 1..4).prop_map(move |edits| {
        let mut lines: Vec<String> = original.lines().map(str::to_owned).collect();
        for (kind, a, b, text) in edits {
            if lines.is_empty() {
                lines.push(text);
                continue;
            }
            let i = a.index(lines.len());
            let j = b.index(lines.len());
            match kind {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let line = lines[i].clone();
                    lines.insert(j, line);
                }
                2 => lines.swap(i, j),
                3 => lines[i] = format!("  {}", lines[i]),
                4 => lines[i] = lines[i].trim_start().to_owned(),
                5 => {
                    let line = &lines[i];
                    let cut = line.find(": ").map_or(line.len(), |c| c + 2);
                    lines[i] = format!("{}{}", &line[..cut], text);
                }
                _ => lines.insert(i, text),
            }
        }
        lines.join("\n")
    })
}

/// Character edits of a valid file (it stays UTF-8).
fn mutated_chars(original: &'static str) -> impl Strategy<Value = String> {
    let edit = (0u8..3, any::<Position>(), any::<char>());
    prop::collection::vec(edit, 1..6).prop_map(move |edits| {
        let mut chars: Vec<char> = original.chars().collect();
        for (kind, at, c) in edits {
            let i = at.index(chars.len().max(1)).min(chars.len());
            match kind {
                0 if i < chars.len() => {
                    chars.remove(i);
                }
                1 if i < chars.len() => chars[i] = c,
                _ => chars.insert(i, c),
            }
        }
        chars.into_iter().collect()
    })
}

fn file_text(original: &'static str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => Just(original.as_bytes().to_vec()),
        3 => mutated_lines(original).prop_map(String::into_bytes),
        3 => mutated_chars(original).prop_map(String::into_bytes),
        2 => yamlish().prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// A fresh catalog folder with one datasource `ds`, the two files written as given.
fn write_catalog(datasource: &[u8], templates: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("ds");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("datasource.yaml"), datasource).unwrap();
    std::fs::write(folder.join("templates.yaml"), templates).unwrap();
    dir
}

/// A catalog error names the file at fault (or, when the datasource has no template at
/// all, its folder).
fn names_a_file(message: &str, folder: &Path) -> bool {
    let file = |name: &str| folder.join(name).display().to_string();
    message.starts_with(&file("datasource.yaml"))
        || message.starts_with(&file("templates.yaml"))
        || message.starts_with(&format!(
            "{}: templates: the datasource has no templates",
            folder.display()
        ))
}

proptest! {
    #![proptest_config(config(500))]

    /// Random and mutated YAML never panics the loader, and every error names its file.
    #[test]
    fn catalog_yaml_errors_name_the_file(
        datasource in file_text(DATASOURCE_YAML),
        templates in file_text(TEMPLATES_YAML),
    ) {
        let dir = write_catalog(&datasource, &templates);
        let started = std::time::Instant::now();
        let loaded = Catalog::load(dir.path());
        prop_assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
        if let Err(e) = loaded {
            let message = e.to_string();
            prop_assert!(names_a_file(&message, &dir.path().join("ds")), "{message}");
        }
        assert_peak_bounded();
    }
}

#[test]
fn the_valid_yaml_loads() {
    let dir = write_catalog(DATASOURCE_YAML.as_bytes(), TEMPLATES_YAML.as_bytes());
    let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(catalog.template_count(), 2);
}

/// "Billion laughs": nested aliases must not expand into gigabytes.
#[test]
fn yaml_alias_bombs_are_bounded() {
    let mut bomb = String::from(
        "a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n",
    );
    for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        bomb.push_str(&format!(
            "{name}: &{name} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"
        ));
    }
    let templates = format!("{bomb}templates: [*i]\n");
    let dir = write_catalog(DATASOURCE_YAML.as_bytes(), templates.as_bytes());
    let started = std::time::Instant::now();
    let Err(error) = Catalog::load(dir.path()) else {
        panic!("a billion-laughs catalog must be refused");
    };
    let message = error.to_string();
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert!(names_a_file(&message, &dir.path().join("ds")), "{message}");
    assert_peak_bounded();
}
