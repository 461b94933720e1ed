//! Artifact bytes: the frame's sections and re-sealing with a correct checksum, byte
//! mutations, and loading bytes as either kind of artifact, which must then route or search.

use proptest::prelude::*;
use proptest::sample::Index as Position;
use switchyard_catalog::auth::Access;
use switchyard_documents::config::DocumentsConfig;
use switchyard_documents::{ChunkIndex, Query, Signals};
use switchyard_index::config::RouterConfig;
use switchyard_index::index::Index;
use switchyard_routing::router::Router;
use switchyard_text::keywords::TermExpansion;
use switchyard_vectors::embed::{Embedder, HashingEmbedder};
use switchyard_vectors::frame;

use crate::setup::{embedder, ORIGIN};

/// The frame's parts: (magic and version, manifest, body).
pub(crate) fn sections(artifact: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let manifest_len = u32::from_le_bytes(artifact[12..16].try_into().unwrap()) as usize;
    let body_at = 16 + manifest_len + 8;
    (
        &artifact[..12],
        &artifact[16..16 + manifest_len],
        &artifact[body_at..artifact.len() - frame::CHECKSUM_LEN],
    )
}

/// Frame `manifest` and `body` as the artifact format does, with a correct checksum.
pub(crate) fn seal(head: &[u8], manifest: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = head.to_vec();
    out.extend_from_slice(&(manifest.len() as u32).to_le_bytes());
    out.extend_from_slice(manifest);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    let checksum = frame::checksum(&out);
    out.extend_from_slice(&checksum);
    out
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    Flip(Position, u8),
    Set(Position, u8),
    Truncate(Position),
    Insert(Position, Vec<u8>),
    Delete(Position, usize),
    Append(Vec<u8>),
    /// Copy a slice of the bytes over another place (moves plausible values around).
    Splice(Position, Position, usize),
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
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

pub(crate) fn mutated(original: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for m in mutations {
        apply(&mut bytes, m);
    }
    bytes
}

/// Load both kinds of artifact from `bytes`; whichever loads must refuse or be usable.
pub(crate) fn load_any(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let index = Index::from_bytes(bytes, ORIGIN).map(use_index);
    let chunks = ChunkIndex::from_bytes(bytes, ORIGIN).map(use_chunks);
    (
        index.err().map(|e| e.to_string()),
        chunks.err().map(|e| e.to_string()),
    )
}

/// A loaded index must route without panicking.
pub(crate) fn use_index(index: Index) {
    let Ok(router) = Router::new(index, RouterConfig::default(), embedder(), ORIGIN) else {
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
pub(crate) fn use_chunks(chunks: ChunkIndex) {
    let settings = DocumentsConfig::default();
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

pub(crate) fn refused_naming_origin(
    result: Option<String>,
    what: &str,
) -> Result<(), TestCaseError> {
    let message = result.ok_or_else(|| TestCaseError::fail(format!("{what} was accepted")))?;
    prop_assert!(
        message.starts_with(&format!("index {ORIGIN}: ")),
        "{message}"
    );
    Ok(())
}
