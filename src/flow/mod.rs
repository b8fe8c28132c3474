//! The numeric flow projection (columns) and the aggregated flow table.
