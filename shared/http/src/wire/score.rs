//! Scores on the wire: an f32 is written as the f64 with the same shortest decimal form
//! (0.8f32 → 0.8), so it reads the same through `serde_json::to_vec` and through a
//! `Value`, which holds f64 (where 0.8f32 would become 0.800000011920929). Durations in
//! milliseconds are written to the microsecond (0.047, not 0.047009999999999996).

use serde::{Serialize, Serializer};
use switchyard_catalog::json::decimal;

/// `#[serde(serialize_with = "score")]` for an f32, `Option<f32>` or `Option<Option<f32>>`.
pub(crate) fn score<T: Score, S: Serializer>(x: &T, serializer: S) -> Result<S::Ok, S::Error> {
    x.write(serializer)
}

pub(crate) trait Score {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl Score for f32 {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(decimal(*self))
    }
}

impl<T: Score> Score for Option<T> {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(x) => serializer.serialize_some(&AsScore(x)),
            None => serializer.serialize_none(),
        }
    }
}

/// `#[serde(serialize_with = "millis")]` for a duration in milliseconds: to the microsecond.
pub(crate) fn millis<S: Serializer>(ms: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(to_microsecond(*ms))
}

/// `millis` for an optional duration.
pub(crate) fn millis_option<S: Serializer>(
    ms: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => serializer.serialize_some(&to_microsecond(*ms)),
        None => serializer.serialize_none(),
    }
}

fn to_microsecond(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

struct AsScore<'a, T>(&'a T);

impl<T: Score> Serialize for AsScore<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.write(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Scores {
        #[serde(serialize_with = "score")]
        plain: f32,
        #[serde(serialize_with = "score")]
        maybe: Option<f32>,
        #[serde(serialize_with = "score")]
        nested: Option<Option<f32>>,
    }

    #[derive(Serialize)]
    struct Durations {
        #[serde(serialize_with = "millis")]
        total_ms: f64,
        #[serde(serialize_with = "millis_option")]
        adapter_ms: Option<f64>,
    }

    #[test]
    fn durations_are_written_to_the_microsecond() {
        let durations = Durations {
            total_ms: 0.047009999999999996,
            adapter_ms: Some(12.3456789),
        };
        assert_eq!(
            serde_json::to_string(&durations).unwrap(),
            r#"{"total_ms":0.047,"adapter_ms":12.346}"#
        );
    }

    #[test]
    fn a_score_keeps_its_shortest_form_in_a_value() {
        let scores = Scores {
            plain: 0.8,
            maybe: Some(0.7),
            nested: Some(None),
        };
        let value = serde_json::to_value(&scores).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"plain": 0.8, "maybe": 0.7, "nested": null})
        );
        assert_eq!(
            serde_json::to_string(&scores).unwrap(),
            r#"{"plain":0.8,"maybe":0.7,"nested":null}"#
        );
    }
}
