//! The AWS edges' own error: which call on which table, bucket or function failed, with
//! the SDK's error kept as the source. It becomes the contract's `ContractError` (`Store`,
//! `AdapterFailed`) at the trait boundary, the SDK error still reachable through
//! `source()`, and the message the same one-line chain callers saw before.

use switchyard_catalog::error::{describe, BoxError};
use switchyard_contract::ContractError;

#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    /// A DynamoDB call behind one of the stores failed.
    #[error("{store}: {operation} failed")]
    Store {
        store: String,
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    /// Invoking a datasource's adapter function failed before it answered.
    #[error("adapter for datasource `{datasource}` failed: function `{function}`")]
    Invoke {
        datasource: String,
        function: String,
        #[source]
        source: BoxError,
    },
}

/// A store kept in one DynamoDB table: its errors name the table.
pub(crate) trait TableStore {
    /// What errors call the store ("sessions table `t`").
    fn store_name(&self) -> String;

    /// A problem with what the table holds (an item that does not parse).
    fn fail(&self, message: String) -> ContractError {
        ContractError::store(self.store_name(), message)
    }

    /// A DynamoDB call that failed, its error kept as the source.
    fn sdk(
        &self,
        operation: &'static str,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> ContractError {
        AwsError::store(self.store_name(), operation, error).into()
    }
}

impl AwsError {
    pub fn store(
        store: impl Into<String>,
        operation: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        AwsError::Store {
            store: store.into(),
            operation,
            source: Box::new(source),
        }
    }
}

impl From<AwsError> for ContractError {
    fn from(error: AwsError) -> ContractError {
        match &error {
            AwsError::Store { store, source, .. } => ContractError::Store {
                store: store.clone(),
                message: describe(source.as_ref()),
                source: Some(Box::new(error)),
            },
            AwsError::Invoke {
                datasource,
                function,
                source,
            } => ContractError::AdapterFailed {
                datasource: datasource.clone(),
                message: format!("function `{function}`: {}", describe(source.as_ref())),
                source: Some(Box::new(error)),
            },
        }
    }
}
