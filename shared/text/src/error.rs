//! The one way text analysis fails: a value found for a parameter that its type, allowed
//! values or bounds refuse. Extraction does not fail on it; it reports the parameter as
//! invalid with this error's text as the reason (`InvalidParameter::reason`), which the
//! answer shows the caller.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error("not one of the allowed values: {}", allowed.join(", "))]
    NotAllowed { allowed: Vec<String> },
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// "1e400" parses to infinity, and "NaN" to itself.
    #[error("`{0}` is not a finite number (the largest magnitude is about 1.8e308)")]
    NotFinite(String),
    /// A finite number serde_json still cannot hold.
    #[error("`{0}` is not a finite number")]
    NotRepresentable(String),
    #[error("`{0}` is not a whole number")]
    NotWhole(String),
    #[error("{value} is below the minimum {min}")]
    BelowMinimum { value: f64, min: f64 },
    #[error("{value} is above the maximum {max}")]
    AboveMaximum { value: f64, max: f64 },
    #[error("`{0}` is not yes/no")]
    NotYesNo(String),
    #[error("`{0}` is not a date (for example 2024-03-15 or March 15, 2024)")]
    NotADate(String),
}
