//! Support of the jq differential test: the corpus, the reference engine (gojq) and the comparison.

pub mod compare;
pub mod corpus;
pub mod gojq;
pub mod ours;
pub mod report;
