//! The confidence threshold in force, and where it came from.

use std::time::Instant;

use serde::Serialize;

use switchyard_index::config::{CompositeRetrieval, Threshold};
use switchyard_index::index::Index;

/// The threshold used when `auto` has nothing to go on (a single datasource).
pub const FALLBACK_THRESHOLD: f32 = 0.40;

/// Above this many templates the router does not choose the automatic threshold again at
/// start when the confidence settings changed since the build.
const RECALIBRATE_MAX_TEMPLATES: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdSource {
    /// A number in `confidence_threshold`.
    Configured,
    /// Chosen from the templates for the confidence settings in force.
    Automatic,
    /// Chosen at build time for other confidence settings (big catalogs are not rescanned).
    AutomaticForBuildSettings,
    /// `auto` with a single datasource: nothing to choose from.
    FallbackSingleDatasource,
}

impl ThresholdSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ThresholdSource::Configured => "configured",
            ThresholdSource::Automatic => "automatic",
            ThresholdSource::AutomaticForBuildSettings => "automatic_for_build_settings",
            ThresholdSource::FallbackSingleDatasource => "fallback_single_datasource",
        }
    }
}

impl std::fmt::Display for ThresholdSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The threshold for `retrieval` on `index`: the configured number, the index's automatic
/// one when it was chosen for these confidence settings, else chosen again now.
pub fn choose(index: &Index, retrieval: &CompositeRetrieval) -> (f32, ThresholdSource) {
    if let Threshold::Fixed(value) = retrieval.confidence_threshold {
        return (value, ThresholdSource::Configured);
    }
    let built = index.manifest.calibration.as_ref();
    let current = built.filter(|c| {
        c.embedding_weight == retrieval.scoring.embedding_weight
            && c.string_similarity == retrieval.string_similarity
    });
    if let Some(calibration) = current {
        return (calibration.threshold, ThresholdSource::Automatic);
    }
    // Choosing again scans every example against every template: too slow for a cold
    // start on a big catalog. Keep the built one and say so.
    if let Some(built) = built {
        if index.catalog.template_count() > RECALIBRATE_MAX_TEMPLATES {
            tracing::warn!("the index's automatic threshold was chosen for other confidence settings; rebuild the index to choose it for these");
            return (built.threshold, ThresholdSource::AutomaticForBuildSettings);
        }
    }
    let began = Instant::now();
    match index.calibrate(retrieval) {
        Some(calibration) => {
            let took_ms = began.elapsed().as_secs_f64() * 1000.0;
            tracing::info!(
                threshold = calibration.threshold,
                took_ms,
                "automatic threshold recomputed for the current confidence settings"
            );
            (calibration.threshold, ThresholdSource::Automatic)
        }
        None => (
            FALLBACK_THRESHOLD,
            ThresholdSource::FallbackSingleDatasource,
        ),
    }
}
