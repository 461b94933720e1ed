//! Text analysis over a catalog's texts: string similarity (normalisation, LCS patterns),
//! BM25 keywords with term expansion, and parameter extraction from a question. Only a
//! parameter's value can be refused (`ParamError`); nothing else here fails.

pub mod config;
pub mod error;
pub mod keywords;
pub mod params;
pub mod similarity;
pub mod spelling;

pub use error::ParamError;
