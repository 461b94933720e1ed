//! The checks on configuration values. Each field's rule is declared beside it in
//! `settings` (`#[validate(...)]`); the checks here are the rules' functions and the
//! checks across fields. A refused value is reported as the field's full path and a
//! message; `load` adds the layer that gave it.

use std::borrow::Cow;
use std::collections::BTreeMap;

use validator::{Validate, ValidationError, ValidationErrors, ValidationErrorsKind};

use super::{
    AdaptationConfig, AuthConfig, Config, ContextConfig, DocumentsConfig, DriftConfig, LlmConfig,
    Reranking, StringSimilarity, Threshold, VectorWeights,
};

impl Config {
    /// Every rule of every section; the first refused field (by name) and why, with the
    /// names of the others refused.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        let Err(errors) = Validate::validate(self) else {
            return Ok(());
        };
        let mut refused = Vec::new();
        flatten("", &errors, &mut refused);
        refused.sort();
        let (field, message) = refused.remove(0);
        let message = match refused.len() {
            0 => message,
            n => format!(
                "{message} (and {n} more: {})",
                refused
                    .iter()
                    .map(|(f, _)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err((field, message))
    }
}

/// Each refused field as (`section.field`, message). A check across fields (validator's
/// `__all__`) names its field in its code.
fn flatten(prefix: &str, errors: &ValidationErrors, out: &mut Vec<(String, String)>) {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}.{name}")
        }
    };
    for (name, kind) in errors.errors() {
        match kind {
            ValidationErrorsKind::Field(list) => {
                for error in list {
                    let field = if name == "__all__" {
                        join(&error.code)
                    } else {
                        join(name)
                    };
                    let message = error
                        .message
                        .as_deref()
                        .unwrap_or("is not valid")
                        .to_owned();
                    out.push((field, message));
                }
            }
            ValidationErrorsKind::Struct(inner) => flatten(&join(name), inner, out),
            ValidationErrorsKind::List(items) => {
                for (index, inner) in items {
                    flatten(&join(&format!("{name}.{index}")), inner, out);
                }
            }
        }
    }
}

/// A refusal of `field` (relative to the struct checked) with `message`.
fn refuse(
    field: impl Into<Cow<'static, str>>,
    message: impl Into<Cow<'static, str>>,
) -> ValidationError {
    ValidationError {
        code: field.into(),
        message: Some(message.into()),
        params: Default::default(),
    }
}

fn refuse_value(message: String) -> Result<(), ValidationError> {
    Err(refuse("value", message))
}

pub(super) fn unit(x: f32) -> Result<(), ValidationError> {
    if (0.0..=1.0).contains(&x) {
        return Ok(());
    }
    refuse_value(format!("must be between 0 and 1, not {x}"))
}

pub(super) fn non_negative(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x >= 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be a number of at least 0, not {x}"))
}

pub(super) fn positive(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x > 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be above 0, not {x}"))
}

pub(super) fn stage_one_weight(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x > 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be above 0 (stage 1 always runs), not {x}"))
}

pub(super) fn learning_rate(x: f64) -> Result<(), ValidationError> {
    if x > 0.0 && x < 1.0 {
        return Ok(());
    }
    refuse_value(format!("must be a number in (0, 1), not {x}"))
}

pub(super) fn threshold(t: &Threshold) -> Result<(), ValidationError> {
    match t {
        Threshold::Fixed(t) if !(0.0..=1.0).contains(t) => refuse_value(format!(
            "must be `auto` or a number between 0 and 1, not {t}"
        )),
        _ => Ok(()),
    }
}

pub(super) fn datasource_thresholds(map: &BTreeMap<String, f32>) -> Result<(), ValidationError> {
    match map.iter().find(|(_, t)| !(0.0..=1.0).contains(*t)) {
        Some((datasource, t)) => refuse_value(format!(
            "`{datasource}`: must be a number between 0 and 1, not {t}"
        )),
        None => Ok(()),
    }
}

pub(super) fn no_empty_cue(cues: &[String]) -> Result<(), ValidationError> {
    if cues.iter().any(|c| c.trim().is_empty()) {
        return refuse_value("cues must not be empty".to_owned());
    }
    Ok(())
}

pub(super) fn chat_decomposer_has_a_model(c: &Config) -> Result<(), ValidationError> {
    if c.orchestration.chat_decomposer && (c.llm.endpoint.is_none() || c.llm.model.is_none()) {
        return Err(refuse(
            "orchestration.chat_decomposer",
            "needs the chat model: set llm.endpoint and llm.model",
        ));
    }
    Ok(())
}

pub(super) fn informative_above_uninformative(c: &ContextConfig) -> Result<(), ValidationError> {
    if c.uninformative_below >= c.informative_above {
        return Err(refuse(
            "informative_above",
            "must be above uninformative_below",
        ));
    }
    Ok(())
}

pub(super) fn documents_sizes(d: &DocumentsConfig) -> Result<(), ValidationError> {
    if d.overlap_words >= d.chunk_words {
        return Err(refuse(
            "chunk_words",
            "must be above documents.overlap_words",
        ));
    }
    if d.top_k > d.candidates {
        return Err(refuse("top_k", "must be at most documents.candidates"));
    }
    Ok(())
}

pub(super) fn some_vector_weight(w: &VectorWeights) -> Result<(), ValidationError> {
    if w.questions + w.summary + w.content <= 0.0 {
        return Err(refuse(
            "questions",
            "at least one of the weights must be above 0",
        ));
    }
    Ok(())
}

/// API keys are listed by their SHA-256 and name a listed principal.
pub(super) fn api_keys_name_principals(auth: &AuthConfig) -> Result<(), ValidationError> {
    for (hash, principal) in &auth.api_keys {
        let is_sha256 = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_sha256 {
            return Err(refuse(
                format!("api_keys.{hash}"),
                "keys are listed by the SHA-256 of the key, as 64 hex digits (never the key itself)",
            ));
        }
        if !auth.principals.contains_key(principal) {
            return Err(refuse(
                format!("api_keys.{hash}"),
                format!("names principal `{principal}`, which auth.principals does not list"),
            ));
        }
    }
    Ok(())
}

pub(super) fn llm_features_have_a_model(llm: &LlmConfig) -> Result<(), ValidationError> {
    if (llm.fill_missing_parameters || llm.synthesize_response || llm.text_to_sql)
        && (llm.endpoint.is_none() || llm.model.is_none())
    {
        return Err(refuse(
            if llm.endpoint.is_none() {
                "endpoint"
            } else {
                "model"
            },
            "endpoint and model are needed when an LLM feature is on",
        ));
    }
    Ok(())
}

pub(super) fn provider_has_endpoint_and_model(r: &Reranking) -> Result<(), ValidationError> {
    if r.enabled && r.provider.is_some() && (r.endpoint.is_none() || r.model.is_none()) {
        return Err(refuse(
            if r.endpoint.is_none() {
                "endpoint"
            } else {
                "model"
            },
            "endpoint and model are needed when a provider is set",
        ));
    }
    Ok(())
}

pub(super) fn fields_to_compare(s: &StringSimilarity) -> Result<(), ValidationError> {
    if s.enabled && s.compare_fields.is_empty() {
        return Err(refuse(
            "compare_fields",
            "must name at least one field when the stage is enabled",
        ));
    }
    Ok(())
}

pub(super) fn some_layer_trains(a: &AdaptationConfig) -> Result<(), ValidationError> {
    if let Some(layers) = a.layers {
        if a.first_trained_layer >= layers {
            return Err(refuse(
                "first_trained_layer",
                "must be below embedding.adaptation.layers (some layer must train)",
            ));
        }
    }
    Ok(())
}

pub(super) fn refuse_below_warn(d: &DriftConfig) -> Result<(), ValidationError> {
    if !(0.0..=d.warn_below).contains(&d.refuse_below) {
        return Err(refuse(
            "refuse_below",
            "must be a cosine in [0, embedding.drift.warn_below]",
        ));
    }
    Ok(())
}
