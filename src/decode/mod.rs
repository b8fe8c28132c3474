//! One decoder for the full packet map and the numeric flow projection.
pub mod fastpath;
