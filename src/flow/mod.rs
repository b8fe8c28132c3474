//! The numeric flow projection (columns) and the aggregated flow table.

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
pub(crate) mod testdata;
