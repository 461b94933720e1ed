//! Was a request routed with the catalog this function serves? The router routes with its
//! index's catalog (from S3, moved by `index push`), this function runs the templates of
//! its layer (moved by a deploy): after a push without a redeploy they differ, and the
//! function would run a template the router did not mean, or lack the one it routed to.
//! The router names its catalog in each request (`catalog_hash`); this is the one check.
//! The in-process adapters (`switchyard serve`, the router with `SWITCHYARD_TEMPLATES`) are
//! built from the index's own catalog, so they cannot differ and do not check.

/// Requests refused because they were routed with another catalog.
use switchyard_catalog::metric::CATALOG_MISMATCHES;
use switchyard_contract::adapter::AdapterRequest;

/// A hash's first 12 hex characters: enough to tell two catalogs apart in a message.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// `Err` with the refusal's message when `request` was routed with another catalog than
/// `served` (the [`switchyard_catalog::template::Catalog::content_hash`] of the whole catalog
/// this function was deployed with), counted in [`CATALOG_MISMATCHES`]. A request naming
/// no catalog comes from a router older than the check: served as before, with a warning.
pub fn check(served: &str, request: &AdapterRequest) -> Result<(), String> {
    let Some(routed) = request.catalog_hash.as_deref() else {
        tracing::warn!(
            request_id = %request.request_id,
            datasource = %request.datasource,
            catalog = short(served),
            "the request names no catalog (a router older than this function): served without checking it was routed with this function's catalog"
        );
        return Ok(());
    };
    if routed == served {
        return Ok(());
    }
    metrics::counter!(CATALOG_MISMATCHES).increment(1);
    let message = format!(
        "datasource `{}`: the router routed this request with catalog {} but this adapter function serves catalog {}: the published index and the functions' templates differ (an `index push` without a redeploy?); redeploy the adapter functions with the catalog of the published index (`sam build && sam deploy` from the catalog the index was built from), or push the index built from the deployed catalog",
        request.datasource,
        short(routed),
        short(served)
    );
    tracing::error!(
        request_id = %request.request_id,
        datasource = %request.datasource,
        routed_with = routed,
        served,
        "catalog mismatch: request refused"
    );
    Err(message)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };

    use super::*;

    /// Counts `CatalogMismatches`, in this thread only (`with_local_recorder`).
    #[derive(Default)]
    struct Mismatches(Arc<AtomicU64>);

    struct Count(Arc<AtomicU64>);

    impl metrics::CounterFn for Count {
        fn increment(&self, value: u64) {
            self.0.fetch_add(value, Ordering::SeqCst);
        }
        fn absolute(&self, value: u64) {
            self.0.store(value, Ordering::SeqCst);
        }
    }

    impl Recorder for Mismatches {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            assert_eq!(key.name(), CATALOG_MISMATCHES);
            assert_eq!(key.labels().count(), 0, "one series per function");
            Counter::from_arc(Arc::new(Count(self.0.clone())))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    fn routed_with(hash: Option<&str>) -> AdapterRequest {
        let mut request = serde_json::json!({
            "request_id": "r1", "datasource": "hr", "template_id": "t", "query": "q",
            "deadline_ms": 1000,
        });
        if let Some(hash) = hash {
            request["catalog_hash"] = hash.into();
        }
        serde_json::from_value(request).unwrap()
    }

    #[test]
    fn only_a_request_routed_with_another_catalog_is_refused_and_counted() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let recorder = Mismatches::default();
        let results = metrics::with_local_recorder(&recorder, || {
            [Some(b.as_str()), Some(a.as_str()), None].map(|hash| check(&a, &routed_with(hash)))
        });
        let refused = results[0].as_ref().unwrap_err();
        assert!(
            refused.contains(&format!("catalog {}", "b".repeat(12))),
            "{refused}"
        );
        assert!(
            refused.contains(&format!("serves catalog {}", "a".repeat(12))),
            "{refused}"
        );
        assert!(
            !refused.contains(&"a".repeat(13)),
            "short hashes: {refused}"
        );
        assert!(refused.contains("`hr`"), "{refused}");
        assert_eq!(results[1], Ok(()));
        assert_eq!(results[2], Ok(()));
        assert_eq!(recorder.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn short_keeps_twelve_characters() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }
}
