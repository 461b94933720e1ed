//! Serde for the artifact's long number arrays as one byte string each (little-endian):
//! postcard reads a byte string at memory speed, where a sequence costs a call per number,
//! and at 100,000 templates a sequence of floats was most of a cold start.

use serde::de::{Error, Visitor};
use serde::{Deserializer, Serializer};

pub mod f32s {
    use super::*;

    pub fn serialize<S: Serializer>(values: &[f32], serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        serializer.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<f32>, D::Error> {
        deserializer.deserialize_bytes(Numbers::<4>).map(|bytes| {
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect()
        })
    }
}

pub mod i8s {
    use super::*;

    pub fn serialize<S: Serializer>(values: &[i8], serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = values.iter().map(|v| *v as u8).collect();
        serializer.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i8>, D::Error> {
        deserializer
            .deserialize_bytes(Numbers::<1>)
            .map(|bytes| bytes.iter().map(|b| *b as i8).collect())
    }
}

/// A byte string of whole `WIDTH`-byte numbers, borrowed from the artifact where the
/// format allows.
struct Numbers<const WIDTH: usize>;

impl<'de, const WIDTH: usize> Visitor<'de> for Numbers<WIDTH> {
    type Value = std::borrow::Cow<'de, [u8]>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a byte string of {WIDTH}-byte numbers")
    }

    fn visit_borrowed_bytes<E: Error>(self, bytes: &'de [u8]) -> Result<Self::Value, E> {
        whole::<E, WIDTH>(bytes)?;
        Ok(bytes.into())
    }

    fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Self::Value, E> {
        whole::<E, WIDTH>(bytes)?;
        Ok(bytes.to_vec().into())
    }
}

fn whole<E: Error, const WIDTH: usize>(bytes: &[u8]) -> Result<(), E> {
    if bytes.len().is_multiple_of(WIDTH) {
        Ok(())
    } else {
        Err(E::custom(format!(
            "{} bytes is not a whole number of {WIDTH}-byte values",
            bytes.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Both {
        #[serde(with = "super::f32s")]
        floats: Vec<f32>,
        #[serde(with = "super::i8s")]
        codes: Vec<i8>,
    }

    #[test]
    fn numbers_survive_postcard_and_a_torn_string_is_refused() {
        let both = Both {
            floats: vec![0.0, -1.5, f32::MIN_POSITIVE, 3.25e7],
            codes: vec![-128, -1, 0, 127],
        };
        let bytes = postcard::to_stdvec(&both).unwrap();
        assert_eq!(postcard::from_bytes::<Both>(&bytes).unwrap(), both);
        // 5 bytes cannot be f32s.
        let torn = postcard::to_stdvec(&(Bytes(&[0u8; 5]), Bytes(&[]))).unwrap();
        assert!(postcard::from_bytes::<Both>(&torn).is_err());
    }

    /// A byte string as serde writes one.
    struct Bytes<'a>(&'a [u8]);

    impl Serialize for Bytes<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
}
