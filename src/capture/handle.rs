//! A live libpcap handle: open a device, install a filter, read without blocking, wait with
//! a bounded timeout, read statistics. The FFI edge of the capture module, and the live
//! [`PacketSource`].
//!
//! The handle is used non-blocking: `fetch` never sleeps, and `wait` polls the capture
//! descriptor together with a [`Waker`] for at most the given time. On Linux a blocking
//! `pcap_next_ex` on a quiet interface never returns (the TPACKET_V3 timeout only runs once
//! a packet arrives), so this is what lets `duration`, `idle_timeout` and stop requests take
//! effect on an idle device. Without a waker, the wait's timeout alone bounds how late a
//! stop takes effect.

use std::ffi::{c_char, c_int, c_uchar, CStr, CString};
use std::ptr::NonNull;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::libpcap::*;
use crate::source::{Fetch, PacketSource, PcapCounters, RawPacket, SourceInfo, Waker};

const ERRBUF_SIZE: usize = 256;
const TSTAMP_PRECISION_NANO: c_int = 1;
const ERROR_NO_SUCH_DEVICE: c_int = -5;
const ERROR_PERM_DENIED: c_int = -8;
const ERROR_PROMISC_PERM_DENIED: c_int = -11;

/// What grants the right to capture, as the permission error says it.
#[cfg(target_os = "linux")]
const PERMISSION_HINT: &str =
    "live capture needs CAP_NET_RAW (and CAP_NET_ADMIN for promiscuous mode) or root";
/// What grants the right to capture, as the permission error says it.
#[cfg(not(target_os = "linux"))]
const PERMISSION_HINT: &str =
    "live capture needs read access to the BPF devices (/dev/bpf*, e.g. Wireshark's ChmodBPF group) or root";

/// libpcap's version string (`pcap_lib_version`).
pub fn libpcap_version() -> String {
    // SAFETY: pcap_lib_version returns a pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(pcap_lib_version()) }
        .to_string_lossy()
        .into_owned()
}

/// How to open a live device. Defaults match `paclo.capture`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveOptions {
    /// Bytes kept per packet.
    pub snaplen: u32,
    /// Put the interface in promiscuous mode.
    pub promisc: bool,
    /// libpcap's read timeout (how long the kernel may batch packets), milliseconds.
    pub timeout_ms: u32,
    /// Kernel ring size in bytes; `None` keeps libpcap's default.
    pub buffer_size: Option<u32>,
    /// Immediate mode (deliver each packet at once; TPACKET_V2 on Linux); `None` leaves it off.
    pub immediate: Option<bool>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            snaplen: 65535,
            promisc: true,
            timeout_ms: 10,
            buffer_size: None,
            immediate: None,
        }
    }
}

impl LiveOptions {
    /// Whether the options ask for more than `pcap_open_live` can configure.
    pub fn uses_create_path(&self) -> bool {
        self.buffer_size.is_some() || self.immediate.is_some()
    }

    /// Check the value ranges.
    ///
    /// # Errors
    /// `InvalidArgument` naming the option and its allowed values.
    pub fn validate(&self) -> Result<()> {
        if self.snaplen == 0 || self.snaplen > 262_144 {
            return Err(Error::InvalidArgument(format!(
                "snaplen must be an integer between 1 and 262144, not {}",
                self.snaplen
            )));
        }
        if self.timeout_ms == 0 || self.timeout_ms > i32::MAX as u32 {
            return Err(Error::InvalidArgument(format!(
                "timeout_ms must be an integer between 1 and 2147483647, not {}",
                self.timeout_ms
            )));
        }
        if let Some(b) = self.buffer_size {
            if b == 0 || b > i32::MAX as u32 {
                return Err(Error::InvalidArgument(format!(
                    "buffer_size must be None or an integer between 1 and 2147483647, not {b}"
                )));
            }
        }
        Ok(())
    }
}

/// An open live libpcap handle. Closed exactly once, when dropped.
pub struct Handle {
    p: NonNull<PcapT>,
    linktype: u32,
    snaplen: u32,
    nano: bool,
    fd: c_int,
    device: String,
}

// SAFETY: a pcap_t may move between threads; Handle is not Sync, so it is used by one
// thread at a time.
unsafe impl Send for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `p` came from pcap_create and is closed only here.
        unsafe { pcap_close(self.p.as_ptr()) }
    }
}

fn errbuf_string(buf: &[c_char]) -> String {
    // SAFETY: libpcap NUL-terminates errbuf; the buffer was zeroed, so a NUL exists.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string()
}

fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s)
        .map_err(|_| Error::InvalidArgument(format!("{what} must not contain NUL characters")))
}

/// Names of the devices libpcap can open (for error messages).
pub fn device_names() -> Vec<String> {
    super::devices()
        .map(|l| l.into_iter().map(|d| d.name).collect())
        .unwrap_or_default()
}

impl Handle {
    fn geterr(&self) -> String {
        // SAFETY: pcap_geterr returns a NUL-terminated buffer owned by the live handle.
        unsafe { CStr::from_ptr(pcap_geterr(self.p.as_ptr())) }
            .to_string_lossy()
            .into_owned()
    }

    /// Open a live device: create, configure, activate, then switch to non-blocking reads.
    ///
    /// The default options configure exactly what `pcap_open_live` does (snaplen, promisc,
    /// timeout); `buffer_size` and `immediate` are set only when given. Going through
    /// `pcap_activate` gives status codes, so errors are classified reliably.
    ///
    /// # Errors
    /// `Capture` for an unknown device (listing the available ones) or an activation
    /// failure, `PermissionDenied` without CAP_NET_RAW, `InvalidArgument` for bad options.
    pub fn open_live(device: &str, opts: &LiveOptions) -> Result<Handle> {
        opts.validate()?;
        if device.trim().is_empty() {
            return Err(Error::InvalidArgument(
                "device must be a non-empty string".into(),
            ));
        }
        let name = cstring("device", device)?;
        let mut errbuf = [0 as c_char; ERRBUF_SIZE];
        // SAFETY: valid C string and an errbuf of PCAP_ERRBUF_SIZE bytes.
        let raw = unsafe { pcap_create(name.as_ptr(), errbuf.as_mut_ptr()) };
        let Some(p) = NonNull::new(raw) else {
            return Err(Error::Capture(format!(
                "pcap_create failed for {device:?}: {}",
                errbuf_string(&errbuf)
            )));
        };
        let mut handle = Handle {
            p,
            linktype: 0,
            snaplen: opts.snaplen,
            nano: false,
            fd: -1,
            device: device.to_string(),
        };
        let pp = handle.p.as_ptr();
        // SAFETY: `pp` is a valid, not yet activated handle for all of these setters.
        unsafe {
            pcap_set_snaplen(pp, opts.snaplen as c_int);
            pcap_set_promisc(pp, opts.promisc as c_int);
            pcap_set_timeout(pp, opts.timeout_ms as c_int);
            if let Some(size) = opts.buffer_size {
                pcap_set_buffer_size(pp, size as c_int);
            }
            if let Some(on) = opts.immediate {
                pcap_set_immediate_mode(pp, on as c_int);
            }
            // Not every platform supports nanosecond stamps; the precision is read back below.
            pcap_set_tstamp_precision(pp, TSTAMP_PRECISION_NANO);
        }
        // SAFETY: activating a created handle; positive values are warnings, not errors.
        let status = unsafe { pcap_activate(pp) };
        if status < 0 {
            let detail = handle.geterr();
            // SAFETY: pcap_statustostr returns a static string for any status.
            let status_text = unsafe { CStr::from_ptr(pcap_statustostr(status)) }
                .to_string_lossy()
                .into_owned();
            let detail = if detail.trim().is_empty() {
                status_text
            } else {
                detail
            };
            return Err(match status {
                ERROR_NO_SUCH_DEVICE => {
                    let names = device_names();
                    Error::Capture(format!(
                        "no such capture device {device:?}; available devices: {}",
                        if names.is_empty() {
                            "(none)".to_string()
                        } else {
                            names.join(", ")
                        }
                    ))
                }
                ERROR_PERM_DENIED | ERROR_PROMISC_PERM_DENIED => Error::PermissionDenied {
                    what: format!("capture on {device:?}: {detail}"),
                    hint: Some(PERMISSION_HINT),
                },
                _ => Error::Capture(format!("cannot activate capture on {device:?}: {detail}")),
            });
        }
        // SAFETY: the handle is active.
        unsafe {
            handle.nano = pcap_get_tstamp_precision(pp) == TSTAMP_PRECISION_NANO;
            handle.linktype = pcap_datalink(pp) as u32;
            let mut errbuf = [0 as c_char; ERRBUF_SIZE];
            if pcap_setnonblock(pp, 1, errbuf.as_mut_ptr()) < 0 {
                return Err(Error::Capture(format!(
                    "pcap_setnonblock failed: {}",
                    errbuf_string(&errbuf)
                )));
            }
            handle.fd = pcap_get_selectable_fd(pp);
        }
        if handle.fd < 0 {
            return Err(Error::Capture(format!(
                "device {device:?} has no selectable descriptor"
            )));
        }
        Ok(handle)
    }

    /// The device this handle captures on.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The link-layer type of every packet.
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// Compile `expr` and install it in the kernel, with the device's netmask from
    /// `pcap_lookupnet` (0 when it has none).
    ///
    /// # Errors
    /// `Filter` with libpcap's message.
    pub fn set_filter(&mut self, expr: &str) -> Result<()> {
        let filter_err = |message: String| Error::Filter {
            expr: expr.to_string(),
            message,
        };
        let c =
            CString::new(expr).map_err(|_| filter_err("filter contains a NUL character".into()))?;
        let mut netmask: u32 = 0;
        if let Ok(d) = CString::new(self.device.as_str()) {
            let (mut net, mut mask) = (0u32, 0u32);
            let mut errbuf = [0 as c_char; ERRBUF_SIZE];
            // SAFETY: valid C string, out-pointers to live u32s, errbuf of the right size.
            if unsafe { pcap_lookupnet(d.as_ptr(), &mut net, &mut mask, errbuf.as_mut_ptr()) } == 0
            {
                netmask = mask;
            }
        }
        let mut prog = BpfProgram {
            bf_len: 0,
            bf_insns: std::ptr::null_mut(),
        };
        // SAFETY: valid handle, program struct and C string.
        if unsafe { pcap_compile(self.p.as_ptr(), &mut prog, c.as_ptr(), 1, netmask) } < 0 {
            return Err(filter_err(self.geterr()));
        }
        // SAFETY: `prog` was filled by pcap_compile; libpcap copies it, so it is freed here.
        let rc = unsafe { pcap_setfilter(self.p.as_ptr(), &mut prog) };
        unsafe { pcap_freecode(&mut prog) };
        if rc < 0 {
            return Err(filter_err(self.geterr()));
        }
        Ok(())
    }

    /// The next packet if one is ready; never blocks.
    ///
    /// # Errors
    /// `Capture` with libpcap's message for a read error (never reported as the end).
    #[inline]
    pub fn try_next(&mut self) -> Result<Fetch<'_>> {
        let mut hdr: *mut PktHdr = std::ptr::null_mut();
        let mut data: *const c_uchar = std::ptr::null();
        // SAFETY: valid handle and out-pointers.
        let rc = unsafe { pcap_next_ex(self.p.as_ptr(), &mut hdr, &mut data) };
        match rc {
            1 => {
                // SAFETY: on 1 libpcap sets both pointers; `data` holds caplen bytes that stay
                // valid until the next call on this handle, which the borrow of `self` enforces.
                let (h, bytes) = unsafe {
                    let h = &*hdr;
                    (h, std::slice::from_raw_parts(data, h.caplen as usize))
                };
                // time_t and suseconds_t are narrower than i64 on some platforms.
                #[allow(clippy::unnecessary_cast)]
                let (sec, frac) = (h.ts.tv_sec as i64, h.ts.tv_usec as i64);
                let ts_ns = sec
                    .saturating_mul(1_000_000_000)
                    .saturating_add(if self.nano { frac } else { frac * 1_000 });
                Ok(Fetch::Packet(RawPacket {
                    ts_ns,
                    caplen: h.caplen,
                    wirelen: h.len,
                    linktype: self.linktype,
                    data: bytes,
                }))
            }
            // 0: nothing ready; -2 (pcap_breakloop) is not used by paclo: treated the same.
            0 | -2 => Ok(Fetch::Idle),
            _ => Err(Error::Capture(format!(
                "libpcap read error: {}",
                self.geterr()
            ))),
        }
    }

    /// Wait until a packet may be ready, `waker` is woken, or `timeout` passes.
    ///
    /// # Errors
    /// `Capture` when the descriptor reports an error (the interface went away).
    pub fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        let mut fds = [
            libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: waker.map_or(-1, |w| w.fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = timeout.as_millis().clamp(0, i32::MAX as u128) as c_int;
        // SAFETY: two valid pollfd entries (a negative fd is ignored by poll).
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(Error::Capture(format!(
                "poll on the capture descriptor failed: {err}"
            )));
        }
        // POLLERR/POLLHUP/POLLNVAL are left for the next read, which returns libpcap's message.
        Ok(())
    }

    /// Counters from `pcap_stats`; `None` when libpcap cannot provide them.
    pub fn stats(&mut self) -> Option<PcapCounters> {
        let mut s = PcapStat {
            ps_recv: 0,
            ps_drop: 0,
            ps_ifdrop: 0,
        };
        // SAFETY: valid handle and a pcap_stat-sized out struct (the portable prefix).
        if unsafe { pcap_stats(self.p.as_ptr(), &mut s) } < 0 {
            return None;
        }
        Some(PcapCounters {
            received: s.ps_recv as u64,
            dropped: s.ps_drop as u64,
            interface_dropped: s.ps_ifdrop as u64,
        })
    }
}

impl PacketSource for Handle {
    #[inline]
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        self.try_next()
    }

    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        Handle::wait(self, timeout, waker)
    }

    fn counters(&mut self) -> Option<PcapCounters> {
        self.stats()
    }

    fn info(&self) -> SourceInfo {
        SourceInfo::Device(self.device.clone())
    }

    fn linktype(&self) -> Option<u32> {
        Some(self.linktype)
    }

    fn snaplen(&self) -> u32 {
        self.snaplen
    }

    fn install_filter(&mut self, expr: &str) -> Result<()> {
        self.set_filter(expr)
    }
}

/// An estimate of the kernel ring's slot count in immediate mode on Linux, where libpcap
/// uses TPACKET_V2 with one fixed-size slot per packet: `buffer_size / slot`, with a slot
/// of about min(snaplen, MTU + link header) plus the TPACKET header, 16-byte aligned.
/// `mtu` is `None` when unknown (the snaplen alone then sizes the slot).
pub fn immediate_ring_slots(snaplen: u32, buffer_size: u32, mtu: Option<u32>) -> u64 {
    const HEADER: u64 = 32 + 20 + 16; // tpacket2_hdr + sockaddr_ll + link-header reserve
    let frame = match mtu {
        Some(m) => (snaplen as u64).min(m as u64 + 18),
        None => snaplen as u64,
    };
    let slot = (frame + HEADER).div_ceil(16) * 16;
    buffer_size as u64 / slot
}

/// Slots an immediate-mode ring should have at least; fewer draw a warning.
pub const MIN_IMMEDIATE_SLOTS: u64 = 1024;
/// Slots paclo aims for when it sizes an immediate-mode ring itself.
pub const TARGET_IMMEDIATE_SLOTS: u64 = 4096;
/// The largest ring paclo sizes by itself (64 MiB).
pub const MAX_AUTO_BUFFER: u32 = 64 << 20;
/// libpcap's own default ring (2 MiB), the smallest paclo sizes.
pub const MIN_AUTO_BUFFER: u32 = 2 << 20;

/// The buffer size for an immediate-mode capture and its estimated slot count: `buffer_size`
/// when given, else enough for [`TARGET_IMMEDIATE_SLOTS`] slots within
/// [`MIN_AUTO_BUFFER`]..=[`MAX_AUTO_BUFFER`].
pub fn immediate_buffer_plan(
    snaplen: u32,
    buffer_size: Option<u32>,
    mtu: Option<u32>,
) -> (u32, u64) {
    let size = buffer_size.unwrap_or_else(|| {
        let per_slot = (16 << 20) / immediate_ring_slots(snaplen, 16 << 20, mtu).max(1);
        (per_slot * TARGET_IMMEDIATE_SLOTS).clamp(MIN_AUTO_BUFFER as u64, MAX_AUTO_BUFFER as u64)
            as u32
    });
    (size, immediate_ring_slots(snaplen, size, mtu))
}

/// The ring an immediate-mode capture on `device` gets: `(buffer_size, estimated slots)`
/// as [`immediate_buffer_plan`] sizes it. Only Linux has the fixed-slot ring (TPACKET_V2);
/// elsewhere (BPF on macOS and the BSDs) immediate mode changes no buffer and this is `None`.
pub fn immediate_ring_plan(
    device: &str,
    snaplen: u32,
    buffer_size: Option<u32>,
) -> Option<(u32, u64)> {
    if cfg!(target_os = "linux") {
        Some(immediate_buffer_plan(
            snaplen,
            buffer_size,
            device_mtu(device),
        ))
    } else {
        None
    }
}

/// The MTU of `device` (Linux sysfs), `None` when unknown.
pub fn device_mtu(device: &str) -> Option<u32> {
    if device.contains('/') || device.contains("..") {
        return None;
    }
    std::fs::read_to_string(format!("/sys/class/net/{device}/mtu"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_the_loopback_trap() {
        // snaplen 65535 on lo (MTU 65536) with 16 MiB: about 256 slots.
        let slots = immediate_ring_slots(65535, 16 << 20, Some(65536));
        assert!((250..=256).contains(&slots), "{slots}");
        // Ethernet MTU caps the slot whatever the snaplen.
        assert!(immediate_ring_slots(65535, 16 << 20, Some(1500)) > 10_000);
    }

    #[test]
    fn immediate_plan_sizes_within_bounds() {
        let (size, slots) = immediate_buffer_plan(65535, None, Some(65536));
        assert_eq!(size, MAX_AUTO_BUFFER);
        assert!(slots < MIN_IMMEDIATE_SLOTS, "{slots}");
        let (size, slots) = immediate_buffer_plan(2048, None, Some(65536));
        assert!(
            size <= MAX_AUTO_BUFFER && slots >= TARGET_IMMEDIATE_SLOTS,
            "{size} {slots}"
        );
        assert_eq!(immediate_buffer_plan(1500, Some(1 << 20), None).0, 1 << 20);
    }

    #[test]
    fn option_validation_names_the_option() {
        let bad = LiveOptions {
            snaplen: 0,
            ..LiveOptions::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("snaplen"));
        let bad = LiveOptions {
            timeout_ms: 0,
            ..LiveOptions::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("timeout_ms"));
        let bad = LiveOptions {
            buffer_size: Some(0),
            ..LiveOptions::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("buffer_size"));
        assert!(LiveOptions::default().validate().is_ok());
        assert!(!LiveOptions::default().uses_create_path());
    }
}
