//! What starting the router can fail with: the settings, the index or the encoder (from S3
//! or a file), the model, the stores' and adapters' set-up. Each is the lower crate's own
//! error, kept whole, so the message names the bucket and key, the file or the model folder.

#[derive(Debug, thiserror::Error)]
pub enum ColdStartError {
    #[error(transparent)]
    Catalog(#[from] switchyard_catalog::error::Error),
    #[error(transparent)]
    S3(#[from] switchyard_s3::S3Error),
    #[error(transparent)]
    Vectors(#[from] switchyard_vectors::VectorsError),
    #[error(transparent)]
    Model(#[from] switchyard_embed::EmbedError),
    #[error(transparent)]
    Routing(#[from] switchyard_routing::RoutingError),
    #[error(transparent)]
    Contract(#[from] switchyard_contract::ContractError),
}
