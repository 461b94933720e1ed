//! The one error type of the adapters crate. Each variant names the template, tool or
//! parameter it is about; the dispatcher turns them into `status: error` answers.

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// A built-in tool refused its input: division by zero, a bad date, an unknown operation.
    #[error("{tool}.{operation}: {message}")]
    Tool {
        tool: String,
        operation: String,
        message: String,
    },

    /// A parameter the adapter needs is absent or of the wrong shape.
    #[error("parameter `{name}`: {message}")]
    Parameter { name: String, message: String },

    /// A `response_template` that does not render.
    #[error("template `{template}`: response_template: {message}")]
    Render { template: String, message: String },

    /// A SQL template that may not run (not one read-only statement) or a database failure.
    #[error("template `{template}`: {message}")]
    Sql { template: String, message: String },

    /// Datasource configuration (connection settings, files) that cannot be used.
    #[error("datasource `{datasource}`: {message}")]
    Datasource { datasource: String, message: String },
}

pub type Result<T, E = AdapterError> = std::result::Result<T, E>;
