//! A scripted source for the tests of the loops: packets, idle reads, errors, an end.

use std::collections::VecDeque;
use std::time::Duration;

use super::{Fetch, PacketSource, PcapCounters, RawPacket, SourceInfo, Waker};
use crate::error::{Error, Result};

/// One step of a [`Script`].
#[derive(Clone, Copy, Debug)]
pub enum Scripted {
    /// A 4-byte packet of this byte (its timestamp is the byte too).
    Packet(u8),
    /// Nothing ready.
    Idle,
    /// The end of the source.
    End,
    /// A device read error.
    Fail,
    /// A cut last record.
    Truncated,
}

/// A fake source: a script of steps, then one step repeated forever.
pub struct Script {
    pub steps: VecDeque<Scripted>,
    pub buf: Vec<u8>,
    pub then: Scripted,
    pub stats: Option<PcapCounters>,
    pub live: bool,
    /// Waits taken, and the filter installed.
    pub waits: u32,
    pub filter: Option<String>,
    /// Wait as a device does: the whole timeout, unless the waker is woken.
    pub poll_waker: bool,
}

impl Script {
    /// A device-like script.
    pub fn new(steps: impl IntoIterator<Item = Scripted>, then: Scripted) -> Box<Self> {
        Box::new(Script {
            steps: steps.into_iter().collect(),
            buf: vec![0; 4],
            then,
            stats: None,
            live: true,
            waits: 0,
            filter: None,
            poll_waker: false,
        })
    }

    /// A file-like script (its info is a path).
    pub fn file(steps: impl IntoIterator<Item = Scripted>, then: Scripted) -> Box<Self> {
        let mut s = Script::new(steps, then);
        s.live = false;
        s
    }
}

impl PacketSource for Script {
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        match self.steps.pop_front().unwrap_or(self.then) {
            Scripted::Packet(b) => {
                self.buf.iter_mut().for_each(|x| *x = b);
                Ok(Fetch::Packet(RawPacket {
                    ts_ns: b as i64,
                    caplen: self.buf.len() as u32,
                    wirelen: self.buf.len() as u32,
                    linktype: 1,
                    data: &self.buf,
                }))
            }
            Scripted::Idle => Ok(Fetch::Idle),
            Scripted::End => Ok(Fetch::End),
            Scripted::Fail => Err(Error::Capture("libpcap read error: boom".into())),
            Scripted::Truncated => Err(Error::Truncated {
                path: "/x.pcap".into(),
                index: 3,
                offset: 100,
                need: 80,
                have: 10,
            }),
        }
    }

    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        self.waits += 1;
        if !self.poll_waker {
            std::thread::sleep(timeout.min(Duration::from_millis(2)));
            return Ok(());
        }
        let mut p = libc::pollfd {
            fd: waker.map_or(-1, |w| w.fd()),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd (a negative fd is ignored).
        unsafe { libc::poll(&mut p, 1, ms) };
        Ok(())
    }

    fn counters(&mut self) -> Option<PcapCounters> {
        self.stats
    }

    fn info(&self) -> SourceInfo {
        if self.live {
            SourceInfo::Device("script0".into())
        } else {
            SourceInfo::Path("/x.pcap".into())
        }
    }

    fn linktype(&self) -> Option<u32> {
        Some(1)
    }

    fn snaplen(&self) -> u32 {
        65535
    }

    fn install_filter(&mut self, expr: &str) -> Result<()> {
        self.filter = Some(expr.to_string());
        Ok(())
    }
}
