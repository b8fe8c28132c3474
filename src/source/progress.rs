//! A progress bar on stderr for a long read: bytes read of the file size.

use std::time::Instant;

/// Redraws at most every 200 ms, and looks at the clock once per [`Progress::CHECK_EVERY`]
/// packets, so the read loop pays a counter decrement per packet.
#[derive(Debug)]
pub struct Progress {
    total: u64,
    countdown: u32,
    last: Instant,
    drawn: bool,
}

impl Progress {
    /// Packets between two looks at the clock.
    pub const CHECK_EVERY: u32 = 8192;

    /// A bar for `total` bytes when stderr is a terminal, else `None`.
    pub fn on_tty(total: u64) -> Option<Progress> {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        tty.then(|| Progress {
            total,
            countdown: Self::CHECK_EVERY,
            last: Instant::now(),
            drawn: false,
        })
    }

    /// One packet read; `position` is the byte offset reached.
    #[inline]
    pub fn tick(&mut self, position: u64) {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = Self::CHECK_EVERY;
            if self.last.elapsed().as_millis() >= 200 {
                self.draw(position);
            }
        }
    }

    #[cold]
    fn draw(&mut self, position: u64) {
        self.last = Instant::now();
        self.drawn = true;
        let frac = if self.total == 0 {
            1.0
        } else {
            position as f64 / self.total as f64
        };
        let width = 30;
        let filled = ((frac * width as f64) as usize).min(width);
        eprint!(
            "\r[{}{}] {:5.1}% {:.1}/{:.1} MB",
            "#".repeat(filled),
            "-".repeat(width - filled),
            frac * 100.0,
            position as f64 / 1e6,
            self.total as f64 / 1e6
        );
    }

    /// The read ended: draw the final state and end the line, if a bar was shown.
    pub fn done(&mut self, position: u64) {
        if self.drawn {
            self.draw(position);
            eprintln!();
        }
    }
}
