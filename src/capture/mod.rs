//! Live capture through libpcap: devices, the managed capture thread, queue policies,
//! statistics and bounded fan-out.
//!
//! - [`handle`]: the libpcap FFI edge, the live [`PacketSource`](crate::source::PacketSource);
//!   non-blocking reads with bounded waits.
//! - [`queue`]: the bounded queue (blocking or dropping) with exact counters.
//! - [`managed`]: the capture thread (the managed producer) and its lifecycle.
//! - [`fanout`]: one source to several bounded branch queues.

pub mod fanout;
pub mod handle;
pub mod managed;
pub mod queue;

pub use handle::{libpcap_version, Handle, LiveOptions};
pub use managed::{BoxedLoop, ManagedCapture, ManagedConfig, OwnedPacket, QueueReader};
pub use queue::{BoundedQueue, Pop, Push, QueueCounters, QueueMode};

use crate::error::{Error, Result};

/// One address of a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAddress {
    /// The address.
    pub addr: String,
    /// Its netmask.
    pub netmask: Option<String>,
    /// The broadcast address.
    pub broadcast: Option<String>,
    /// The point-to-point destination.
    pub destination: Option<String>,
}

/// A capture device as `pcap_findalldevs` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Interface name (what `device=` takes).
    pub name: String,
    /// libpcap's description, trimmed; `None` when blank.
    pub description: Option<String>,
    /// Addresses.
    pub addresses: Vec<DeviceAddress>,
    /// Flag names: `loopback`, `up`, `running`, `wireless`.
    pub flags: Vec<&'static str>,
}

/// The devices libpcap can capture on.
///
/// # Errors
/// `Capture` when `pcap_findalldevs` fails.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    let list = pcap::Device::list()
        .map_err(|e| Error::Capture(format!("pcap_findalldevs failed: {e}")))?;
    Ok(list
        .into_iter()
        .filter(|d| !d.name.trim().is_empty())
        .map(|d| {
            let mut flags = Vec::new();
            if d.flags.is_loopback() {
                flags.push("loopback");
            }
            if d.flags.is_up() {
                flags.push("up");
            }
            if d.flags.is_running() {
                flags.push("running");
            }
            if d.flags.is_wireless() {
                flags.push("wireless");
            }
            DeviceInfo {
                name: d.name,
                description: d
                    .desc
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()),
                addresses: d
                    .addresses
                    .into_iter()
                    .map(|a| DeviceAddress {
                        addr: a.addr.to_string(),
                        netmask: a.netmask.map(|x| x.to_string()),
                        broadcast: a.broadcast_addr.map(|x| x.to_string()),
                        destination: a.dst_addr.map(|x| x.to_string()),
                    })
                    .collect(),
                flags,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_libpcap() {
        assert!(super::libpcap_version().to_lowercase().contains("libpcap"));
    }
}
