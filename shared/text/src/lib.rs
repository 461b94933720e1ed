//! Text analysis over a catalog's texts: string similarity (normalisation, LCS patterns),
//! BM25 keywords with term expansion, and parameter extraction from a question.

pub mod keywords;
pub mod params;
pub mod similarity;
