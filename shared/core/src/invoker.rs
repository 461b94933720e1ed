//! Execution: handing a routed question to the adapter that owns its datasource, through
//! the contract's `AdapterInvoker` (in-process locally, a Lambda `Invoke` on AWS).

use std::sync::Arc;

use switchyard_catalog::template::Catalog;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_contract::error::Result;

/// The service's invoker: names the catalog its router routes with on every request, so
/// no way of building one (the winner's, a workflow task's, the text-to-SQL fallback's)
/// can leave it out.
pub(crate) struct RoutedWith {
    inner: Arc<dyn AdapterInvoker>,
    catalog_hash: String,
}

impl RoutedWith {
    pub(crate) fn new(inner: Arc<dyn AdapterInvoker>, catalog: &Catalog) -> RoutedWith {
        RoutedWith {
            inner,
            catalog_hash: catalog.content_hash(),
        }
    }
}

impl AdapterInvoker for RoutedWith {
    fn invoke<'a>(&'a self, mut request: AdapterRequest) -> BoxFuture<'a, Result<AdapterResponse>> {
        request.catalog_hash = Some(self.catalog_hash.clone());
        self.inner.invoke(request)
    }
}
