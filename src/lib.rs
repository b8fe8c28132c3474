//! paclo: packet capture, decode and flow analysis, with Python bindings.
//!
//! Data flows one way: a source (a pcap/pcapng file over an mmap, or a libpcap live
//! device: one [`PacketSource`] trait) yields borrowed [`RawPacket`]s; one loop per
//! consumer ([`source::SourceLoop`]) turns them into Python objects, full packet maps,
//! numeric flow columns, aggregated flow tables or pcap files, and reports one
//! [`stats::Stats`].
//!
//! - [`source`]: the packet source trait, the loop over it ([`source::SourceLoop`],
//!   [`source::fold`]), stop conditions and the wake-up of a waiting device.
//! - [`stats`]: the one statistics type of reads, reductions, captures and fan-outs.
//! - [`pcap`]: file formats, the mmap reader, the writer, BPF on buffers.
//! - [`capture`]: libpcap live capture, managed capture, queue policies, statistics.
//! - [`decode`]: one decoder for the full packet map and the flow projection.
//! - [`fingerprint`]: the JA4 family of fingerprints, with bounded per-connection state.
//! - [`flow`]: projection columns and the aggregated flow table.
//! - [`perf`]: deterministic datasets and measurement helpers.
//! - [`alloc`]: the counting global allocator behind the zero-allocation tests.
//! - `python` (feature `python`): the only module that imports pyo3.
//!
//! Core modules never import pyo3, so `cargo test` runs without Python.

pub mod alloc;
pub mod capture;
pub mod decode;
pub mod error;
pub mod fingerprint;
pub mod flow;
mod libpcap;
pub mod pcap;
pub mod perf;
pub mod source;
pub mod stats;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};
pub use source::{PacketSource, RawPacket};

#[global_allocator]
static GLOBAL: alloc::CountingAllocator = alloc::CountingAllocator;
