//! The chunk artifact and its search, on the deterministic hashing embedder.

use std::collections::BTreeMap;

use super::*;
use switchyard_text::keywords::TermExpansion;
use switchyard_vectors::embed::HashingEmbedder;

fn doc(id: &str, product: &str, text: &str, questions: &[&str]) -> Document {
    Document {
        id: id.into(),
        title: format!("{product} cover"),
        text: text.into(),
        summary: None,
        questions: questions.iter().map(|q| q.to_string()).collect(),
        metadata: BTreeMap::from([("product".to_owned(), vec![product.to_owned()])]),
    }
}

fn corpus() -> Vec<Document> {
    vec![
        doc(
            "travel",
            "travel",
            "# Excess\nThe excess on travel claims is 75 pounds per person.\n# Baggage\nBaggage is covered up to 1500 pounds.",
            &["What is the excess on the travel policy?"],
        ),
        doc(
            "car",
            "car",
            "# No claim discount\nThe no claim discount on car cover grows 10 percent each year without a claim.",
            &[],
        ),
        doc(
            "home",
            "home",
            "# No claim discount\nHome cover earns a no claim discount of 5 percent a year, at most 25 percent.",
            &[],
        ),
    ]
}

fn settings() -> DocumentsConfig {
    DocumentsConfig::default()
}

fn built() -> (ChunkIndex, HashingEmbedder) {
    let embedder = HashingEmbedder::new(256);
    let index =
        ChunkIndex::build("policies", &corpus(), &embedder, &settings(), &|_, _| {}).unwrap();
    (index, embedder)
}

fn search(
    index: &ChunkIndex,
    embedder: &HashingEmbedder,
    text: &str,
    filters: &[(&str, &[&str])],
) -> Found {
    let vector = embedder.embed_one(text).unwrap();
    let query = Query {
        text,
        vector: Some(&vector),
        filters: filters
            .iter()
            .map(|(f, v)| (f.to_string(), v.iter().map(|x| x.to_string()).collect()))
            .collect(),
        top_k: 3,
        signals: Signals::ALL,
        balance: true,
    };
    index.search(&query, &settings(), &TermExpansion::default())
}

fn ids(index: &ChunkIndex, found: &Found) -> Vec<String> {
    found
        .hits
        .iter()
        .map(|h| index.documents[h.document].id.clone())
        .collect()
}

#[test]
fn the_document_that_answers_comes_first_once() {
    let (index, embedder) = built();
    assert_eq!(index.manifest.documents, 3);
    assert!(index.manifest.chunks >= 4, "headings make chunks");
    assert_eq!(index.manifest.questions, 1);
    let found = search(
        &index,
        &embedder,
        "What is the excess on the travel policy?",
        &[],
    );
    assert_eq!(ids(&index, &found)[0], "travel");
    let hit = &found.hits[0];
    assert!(
        hit.scores.questions.is_some() && hit.scores.bm25 > 0.0,
        "{hit:?}"
    );
    let mut documents = ids(&index, &found);
    documents.dedup();
    assert_eq!(documents.len(), found.hits.len(), "one chunk per document");
}

#[test]
fn filters_narrow_and_several_values_share_the_results() {
    let (index, embedder) = built();
    let found = search(
        &index,
        &embedder,
        "no claim discount",
        &[("product", &["home"])],
    );
    assert_eq!(ids(&index, &found), ["home"]);
    assert_eq!(found.documents_searched, 1);
    let found = search(
        &index,
        &embedder,
        "no claim discount",
        &[("product", &["car", "home"])],
    );
    let mut got = ids(&index, &found);
    got.sort();
    assert_eq!(got, ["car", "home"]);
    assert_eq!(found.balanced_by.as_deref(), Some("product"));
}

#[test]
fn without_a_vector_the_search_is_bm25_alone() {
    let (index, _) = built();
    let query = Query {
        text: "baggage",
        vector: None,
        filters: BTreeMap::new(),
        top_k: 2,
        signals: Signals::ALL,
        balance: true,
    };
    let found = index.search(&query, &settings(), &TermExpansion::default());
    assert_eq!(ids(&index, &found), ["travel"]);
    assert_eq!(found.hits[0].scores.vectors, None);
}

#[test]
fn question_filters_resolve_aliases_and_request_filters_refuse_unknown_values() {
    let filter: switchyard_catalog::template::Parameter =
        serde_json::from_value(serde_json::json!({
            "name": "product", "allowed_values": ["car", "home", "travel"],
            "aliases": {"motor": "car", "house": "home"}
        }))
        .unwrap();
    let found = filters_in_question(
        std::slice::from_ref(&filter),
        "Compare the motor and house cover",
    );
    assert_eq!(found["product"], ["car", "home"]);
    assert!(filters_in_question(std::slice::from_ref(&filter), "carpet").is_empty());
    let given = serde_json::json!({"product": ["Car", "boat"]});
    let error =
        requested_filters(std::slice::from_ref(&filter), given.as_object().unwrap()).unwrap_err();
    assert!(
        error.contains("product") && error.contains("boat"),
        "{error}"
    );
}

#[test]
fn corrupt_truncated_and_foreign_artifacts_are_refused() {
    let (index, _) = built();
    let bytes = index.to_bytes().unwrap();
    let back = ChunkIndex::from_bytes(&bytes, "mem").unwrap();
    assert_eq!(back.manifest, index.manifest);
    let mut flipped = bytes.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0xff;
    let error = ChunkIndex::from_bytes(&flipped, "mem")
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("checksum"), "{error}");
    let error = ChunkIndex::from_bytes(&bytes[..bytes.len() - 5], "mem")
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("truncated"), "{error}");
    let routing = b"SWYDIDX\0 not a chunk artifact at all, but long enough to be read";
    let error = ChunkIndex::from_bytes(routing, "x.chunks")
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("magic") && error.contains("x.chunks"),
        "{error}"
    );
    let error = back
        .check_datasource("other", "x.chunks")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("policies") && error.contains("other"),
        "{error}"
    );
    let error = check_model(&back, "minilm", 384).unwrap_err().to_string();
    assert!(error.contains("rebuild"), "{error}");
}
