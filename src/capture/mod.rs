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
#[cfg(test)]
mod live_tests;
pub mod managed;
pub mod queue;

pub use handle::{libpcap_version, Handle, LiveOptions};
pub use managed::{BoxedLoop, ManagedCapture, ManagedConfig, OwnedPacket, QueueReader};
pub use queue::{BoundedQueue, Pop, Push, QueueCounters, QueueMode};

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};
use crate::libpcap::{
    pcap_findalldevs, pcap_freealldevs, PcapAddr, PcapIf, PCAP_IF_LOOPBACK, PCAP_IF_RUNNING,
    PCAP_IF_UP, PCAP_IF_WIRELESS,
};

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

/// The devices libpcap can capture on (`pcap_findalldevs`), blank names left out.
///
/// # Errors
/// `Capture` when `pcap_findalldevs` fails.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    let mut errbuf = [0 as std::ffi::c_char; 256];
    let mut head: *mut PcapIf = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and an errbuf of PCAP_ERRBUF_SIZE bytes.
    if unsafe { pcap_findalldevs(&mut head, errbuf.as_mut_ptr()) } < 0 {
        // SAFETY: libpcap NUL-terminates errbuf on failure; it was zeroed.
        let msg = unsafe { CStr::from_ptr(errbuf.as_ptr()) }.to_string_lossy();
        return Err(Error::Capture(format!("pcap_findalldevs failed: {msg}")));
    }
    let mut out = Vec::new();
    let mut dev = head;
    while !dev.is_null() {
        // SAFETY: `dev` is a node of the list libpcap returned, valid until it is freed below.
        let d = unsafe { &*dev };
        if let Some(name) = text(d.name).filter(|n| !n.trim().is_empty()) {
            out.push(DeviceInfo {
                name,
                description: text(d.description)
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()),
                addresses: addresses(d.addresses),
                flags: [
                    (PCAP_IF_LOOPBACK, "loopback"),
                    (PCAP_IF_UP, "up"),
                    (PCAP_IF_RUNNING, "running"),
                    (PCAP_IF_WIRELESS, "wireless"),
                ]
                .into_iter()
                .filter(|(bit, _)| d.flags & bit != 0)
                .map(|(_, name)| name)
                .collect(),
            });
        }
        dev = d.next;
    }
    // SAFETY: the list came from pcap_findalldevs and is freed once, after the last use.
    unsafe { pcap_freealldevs(head) };
    Ok(out)
}

/// A NUL-terminated C string of libpcap's, copied; `None` for NULL.
fn text(p: *const std::ffi::c_char) -> Option<String> {
    // SAFETY: libpcap's strings are NUL-terminated and live as long as the device list.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The IPv4 and IPv6 addresses of a device's address list (link-layer ones left out).
fn addresses(mut a: *mut PcapAddr) -> Vec<DeviceAddress> {
    let mut out = Vec::new();
    while !a.is_null() {
        // SAFETY: a node of libpcap's address list, valid until the device list is freed.
        let node = unsafe { &*a };
        if let Some(addr) = ip(node.addr) {
            out.push(DeviceAddress {
                addr: addr.to_string(),
                netmask: ip(node.netmask).map(|x| x.to_string()),
                broadcast: ip(node.broadaddr).map(|x| x.to_string()),
                destination: ip(node.dstaddr).map(|x| x.to_string()),
            });
        }
        a = node.next;
    }
    out
}

/// The IP address in a `sockaddr` (IPv4 or IPv6), `None` for NULL or another family.
fn ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: libpcap's sockaddrs are complete structures of the family they name; the
    // family is read first and the pointer reinterpreted only as that family's struct.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let sin = &*(sa as *const libc::sockaddr_in);
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    sin.sin_addr.s_addr,
                ))))
            }
            libc::AF_INET6 => {
                let sin6 = &*(sa as *const libc::sockaddr_in6);
                Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_names_libpcap() {
        assert!(super::libpcap_version().to_lowercase().contains("libpcap"));
    }

    /// The list matches the one the `pcap` crate reads (an independent binding).
    #[test]
    fn devices_match_an_independent_reading() {
        let ours = super::devices().unwrap();
        let theirs = pcap::Device::list().unwrap();
        let names = |v: Vec<String>| {
            let mut v = v;
            v.sort();
            v
        };
        assert_eq!(
            names(ours.iter().map(|d| d.name.clone()).collect()),
            names(
                theirs
                    .iter()
                    .filter(|d| !d.name.trim().is_empty())
                    .map(|d| d.name.clone())
                    .collect()
            )
        );
        for d in &ours {
            let t = theirs.iter().find(|t| t.name == d.name).unwrap();
            let addrs: Vec<String> = t.addresses.iter().map(|a| a.addr.to_string()).collect();
            let mine: Vec<String> = d.addresses.iter().map(|a| a.addr.clone()).collect();
            assert_eq!(mine, addrs, "{}", d.name);
            assert_eq!(d.flags.contains(&"loopback"), t.flags.is_loopback());
            assert_eq!(d.flags.contains(&"up"), t.flags.is_up());
        }
        assert!(ours.iter().any(|d| d.flags.contains(&"loopback")));
    }
}
