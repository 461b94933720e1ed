//! Index and chunk artifacts: the valid ones load; random bytes, mutations and mutated length
//! fields are refused; mutations re-sealed with a correct checksum never panic.

use proptest::prelude::*;
use serde_json::Value;
use switchyard_documents::ChunkIndex;
use switchyard_index::index::Index;

use crate::frames::{
    load_any, mutated, mutation, refused_naming_origin, seal, sections, use_chunks, use_index,
};
use crate::setup::{artifacts, assert_peak_bounded, chunk_artifact, config, ORIGIN};

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
