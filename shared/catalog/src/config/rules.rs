//! The checks on configuration values that sections name in their `#[validate(...)]`
//! (`custom(function = "unit")`), the refusal a section's own check across fields returns
//! ([`refuse`]), and [`refused`]: every refusal of a section tree as the field's full
//! path and a message (`load` adds the layer that gave it).

use std::borrow::Cow;
use std::collections::BTreeMap;

use validator::{Validate, ValidationError, ValidationErrors, ValidationErrorsKind};

/// Every rule of every section; the first refused field (by name) and why, with the
/// names of the others refused.
pub fn refused<T: Validate>(config: &T) -> Result<(), (String, String)> {
    let Err(errors) = config.validate() else {
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
pub fn refuse(
    field: impl Into<Cow<'static, str>>,
    message: impl Into<Cow<'static, str>>,
) -> ValidationError {
    ValidationError {
        code: field.into(),
        message: Some(message.into()),
        params: Default::default(),
    }
}

pub fn refuse_value(message: String) -> Result<(), ValidationError> {
    Err(refuse("value", message))
}

pub fn unit(x: f32) -> Result<(), ValidationError> {
    if (0.0..=1.0).contains(&x) {
        return Ok(());
    }
    refuse_value(format!("must be between 0 and 1, not {x}"))
}

pub fn non_negative(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x >= 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be a number of at least 0, not {x}"))
}

pub fn positive(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x > 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be above 0, not {x}"))
}

pub fn stage_one_weight(x: f32) -> Result<(), ValidationError> {
    if x.is_finite() && x > 0.0 {
        return Ok(());
    }
    refuse_value(format!("must be above 0 (stage 1 always runs), not {x}"))
}

pub fn learning_rate(x: f64) -> Result<(), ValidationError> {
    if x > 0.0 && x < 1.0 {
        return Ok(());
    }
    refuse_value(format!("must be a number in (0, 1), not {x}"))
}

pub fn datasource_thresholds(map: &BTreeMap<String, f32>) -> Result<(), ValidationError> {
    match map.iter().find(|(_, t)| !(0.0..=1.0).contains(*t)) {
        Some((datasource, t)) => refuse_value(format!(
            "`{datasource}`: must be a number between 0 and 1, not {t}"
        )),
        None => Ok(()),
    }
}

pub fn no_empty_cue(cues: &[String]) -> Result<(), ValidationError> {
    if cues.iter().any(|c| c.trim().is_empty()) {
        return refuse_value("cues must not be empty".to_owned());
    }
    Ok(())
}
