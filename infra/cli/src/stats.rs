//! `switchyard stats`: templates per datasource and the configuration in force.

use anyhow::Result;
use switchyard_catalog::auth::Access;
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::Router;
use switchyard_routing::transitions::{TransitionCounts, TransitionRates};

/// A process of its own has seen no sessions: the transition rates are the configured ones.
pub fn run(router: &Router, sessions: &SessionsConfig) -> Result<()> {
    let catalog = &router.index().catalog;
    let sizes: Vec<usize> = catalog
        .datasources
        .iter()
        .map(|d| d.templates.len())
        .collect();
    let rates = TransitionRates::new(
        &sessions.context,
        &sessions.transitions,
        &sizes,
        TransitionCounts::default(),
    );
    let stats = switchyard_http::render::Render(router)
        .stats(&Access::All, (&rates, &sessions.transitions));
    println!("{}", serde_json::to_string_pretty(&stats)?);
    Ok(())
}
