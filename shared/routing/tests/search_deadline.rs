//! `search_timeout_ms` bounds the wait for the partition searches. Their own binary: the
//! test occupies every thread of rayon's global pool, where partitions are searched, as a
//! busy machine would, so no partition's search can finish by the deadline.

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_index::config::RouterConfig;
use switchyard_index::index::Index;
use switchyard_routing::router::{Outcome, Router};
use switchyard_vectors::embed::{Embedder, HashingEmbedder};

/// What a loaded two-core machine may add to the deadline before the route returns.
const MARGIN_MS: u64 = 200;

#[test]
fn the_route_stops_waiting_for_partitions_at_the_deadline() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let catalog = Catalog::load(&root.join("templates/demo")).unwrap();
    let datasources: Vec<String> = catalog
        .datasources
        .iter()
        .map(|d| d.name().to_owned())
        .collect();
    let mut config = RouterConfig::default();
    let deadline_ms = 50;
    config.composite_retrieval.search_timeout_ms = deadline_ms;
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::default());
    let index = Index::build(catalog, embedder.as_ref(), &config, &|_, _| {}).unwrap();
    let router = Router::new(index, config, embedder, "test").unwrap();
    let question = "How many employees work in Engineering?";
    let unhurried = router.route(question, &Access::All).unwrap();
    assert!(unhurried.timed_out.is_empty(), "{:?}", unhurried.timed_out);

    // Every pool thread busy for 3 s; each has started before the question is routed.
    let busy = Duration::from_secs(3);
    let (started, all_started) = mpsc::channel();
    for _ in 0..rayon::current_num_threads() {
        let started = started.clone();
        rayon::spawn(move || {
            started.send(()).unwrap();
            std::thread::sleep(busy);
        });
    }
    for _ in 0..rayon::current_num_threads() {
        all_started.recv().unwrap();
    }
    let began = Instant::now();
    let routing = router.route(question, &Access::All).unwrap();
    let took = began.elapsed();
    assert!(
        took < Duration::from_millis(deadline_ms + MARGIN_MS),
        "the route took {} ms with every partition's search held up; the deadline is {deadline_ms} ms \
         (+{MARGIN_MS} ms margin); timed out: {:?}",
        took.as_millis(),
        routing.timed_out
    );
    assert_eq!(routing.timed_out, datasources, "each partition is reported");
    assert!(routing.matches.is_empty());
    assert_eq!(routing.outcome, Outcome::NoMatch);
}
