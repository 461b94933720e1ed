//! Timing what the benches measure: milliseconds since an instant, and percentiles of a
//! closure run once per text.

use std::time::Instant;

use anyhow::Result;
use switchyard_eval::{percentiles, Percentiles};

pub fn time_each<E: std::error::Error + Send + Sync + 'static>(
    texts: &[String],
    mut f: impl FnMut(&str) -> std::result::Result<(), E>,
) -> Result<Percentiles> {
    let mut samples = Vec::with_capacity(texts.len());
    for text in texts {
        let start = Instant::now();
        f(text)?;
        samples.push(ms(start));
    }
    Ok(percentiles(samples))
}

pub fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
