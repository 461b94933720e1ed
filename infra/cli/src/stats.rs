//! `switchyard stats`: templates per datasource and the configuration in force.

use anyhow::Result;
use switchyard_catalog::auth::Access;
use switchyard_routing::router::Router;

pub fn run(router: &Router) -> Result<()> {
    let stats = switchyard_http::render::Render(router).stats(&Access::All);
    println!("{}", serde_json::to_string_pretty(&stats)?);
    Ok(())
}
