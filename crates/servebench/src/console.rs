//! Standard output and standard error for everything the binary prints.
//!
//! `println!` and `eprintln!` panic when the stream fails: a pipe whose reader quit
//! (`servebench … | head -1`), a full disk behind `> /dev/full`, a terminal that went away with
//! its ssh session. A run would then stop before its result file is written. Here a failed
//! write marks the stream gone and later writes to it are dropped: the run goes on, its files
//! are written, and its exit code is its own. (A stream closed before the start, `>&-`, is
//! already ignored by the standard library.)

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `args` (and a line end when `line`) to `w`, unless `gone`; a failure sets `gone`.
fn write_or_give_up(mut w: impl Write, gone: &AtomicBool, args: fmt::Arguments<'_>, line: bool) {
    if gone.load(Ordering::Relaxed) {
        return;
    }
    let written = w.write_fmt(args).and_then(|()| if line { w.write_all(b"\n") } else { Ok(()) });
    if written.is_err() {
        gone.store(true, Ordering::Relaxed);
    }
}

/// Standard output, `print!`'s way (line-buffered).
pub fn out(args: fmt::Arguments<'_>, line: bool) {
    write_or_give_up(io::stdout().lock(), &STDOUT_GONE, args, line);
}

/// Standard error, `eprint!`'s way (unbuffered).
pub fn err(args: fmt::Arguments<'_>, line: bool) {
    write_or_give_up(io::stderr().lock(), &STDERR_GONE, args, line);
}

/// `println!` that never panics (see the module).
macro_rules! outln {
    () => { $crate::console::out(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::console::out(format_args!($($arg)*), true) };
}

/// `print!` that never panics (see the module).
macro_rules! out {
    ($($arg:tt)*) => { $crate::console::out(format_args!($($arg)*), false) };
}

/// `eprintln!` that never panics (see the module).
macro_rules! errln {
    () => { $crate::console::err(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::console::err(format_args!($($arg)*), true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails every write, as a pipe whose reader quit.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_marks_the_stream_gone_and_later_writes_are_dropped() {
        let gone = AtomicBool::new(false);
        let mut buf = Vec::new();
        write_or_give_up(&mut buf, &gone, format_args!("a {}", 1), true);
        assert_eq!(buf, b"a 1\n");
        write_or_give_up(Broken, &gone, format_args!("lost"), true);
        assert!(gone.load(Ordering::Relaxed));
        write_or_give_up(&mut buf, &gone, format_args!("after"), false);
        assert_eq!(buf, b"a 1\n", "nothing is written once the stream is gone");
    }
}
