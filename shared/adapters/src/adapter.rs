//! What every adapter is: an [`Adapter`] runs a template whose parameters are complete;
//! extraction, clarification and the optional model around it are the dispatcher's
//! ([`crate::LocalAdapters`]). An [`AdapterFactory`] checks one kind of datasource as an
//! index build needs and opens it to serve; [`crate::registry`] knows the kinds.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::AdapterRequest;

use crate::error::Result;

/// What an executed template answers: the text shown to the user and the data behind it.
pub type Answer = (String, Value);

/// Runs one datasource's templates.
pub trait Adapter: Send + Sync {
    /// Run `template` (one of this datasource's) with complete `parameters`, finishing
    /// within `deadline`; `request` is the routed request (its question and, for a
    /// documents search, its vector).
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        request: &'a AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>>;

    /// Why `question` cannot be answered by `template` at all, said before the dispatcher
    /// asks for parameters it could not use; `None` (the default) lets extraction run.
    fn refuse_before_extraction(&self, _template: &Template, _question: &str) -> Option<String> {
        None
    }
}

/// How one kind of datasource is checked and opened.
pub trait AdapterFactory: Sync {
    /// The checks an index build runs, so a template that could never run is refused
    /// before it is published. Nothing is opened or connected.
    fn check(&self, datasource: &Datasource) -> Result<()>;

    /// The adapter serving `datasource`, checked again; `None` when this process cannot
    /// serve it (its files or connection settings are absent here). `folder` holds the
    /// datasource's files: its folder in the catalog, or where they were fetched to.
    fn open<'a>(
        &'a self,
        datasource: &'a Datasource,
        folder: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Box<dyn Adapter>>>>;
}
