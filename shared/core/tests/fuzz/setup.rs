//! Shared set-up: the allocator that caps the heap, the proptest configuration, and the two
//! valid index artifacts and the chunk artifact, built with the `HashingEmbedder`.

use std::sync::{Arc, OnceLock};

use cap::Cap;
use proptest::prelude::ProptestConfig;
use proptest::test_runner::RngSeed;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_documents::{ChunkIndex, Document};
use switchyard_index::index::Index;
use switchyard_vectors::embed::{Embedder, HashingEmbedder};

use crate::common;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, 2 << 30);

/// The heap this test binary may reach at its peak, all tests together.
const PEAK_LIMIT: usize = 512 << 20;

pub(crate) fn assert_peak_bounded() {
    let peak = ALLOCATOR.max_allocated();
    assert!(peak < PEAK_LIMIT, "peak heap {peak} bytes");
}

/// `cases` cases with a fixed seed, unless `PROPTEST_CASES` / `PROPTEST_RNG_SEED` say
/// otherwise; no regression files (minimal failures become plain `#[test]`s).
pub(crate) fn config(cases: u32) -> ProptestConfig {
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

pub(crate) const DIMENSION: usize = 16;
pub(crate) const ORIGIN: &str = "s3://bucket/fuzz.idx";

pub(crate) fn embedder() -> Arc<dyn Embedder> {
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
pub(crate) fn artifacts() -> &'static [Vec<u8>; 2] {
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
            let index =
                Index::build(catalog, embedder().as_ref(), &config.router(), &|_, _| {}).unwrap();
            index.to_bytes().unwrap()
        };
        [
            build(&[]),
            build(&[("SWITCHYARD__INDEX__EXACT_SCAN_MAX_TEMPLATES", "1")]),
        ]
    })
}

pub(crate) fn chunk_artifact() -> &'static [u8] {
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
