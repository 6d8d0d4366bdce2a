//! Reading and writing at an offset of a file without moving a cursor that others share
//! (`pread`/`pwrite` on Unix, `seek_read`/`seek_write` on Windows): the compact records' spill
//! file (`compact_records`) and a trace read again while its prompts are built
//! (`servebench-data`).

use std::fs::File;
use std::io;

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, bytes, at)
}

#[cfg(windows)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_write(file, bytes, at)
}

/// Reads into `buf` from byte `at` until it is full or the file ends; how many bytes it read.
pub fn read_up_to(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
        match read_at(file, rest, at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Fills `buf` from byte `at` (an error if the file ends first).
pub fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    match read_up_to(file, buf, at)? {
        n if n == buf.len() => Ok(()),
        _ => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}

/// Writes all of `bytes` at byte `at`.
pub fn write_all_at(file: &File, mut bytes: &[u8], mut at: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        match write_at(file, bytes, at) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = bytes.get(n..).unwrap_or_default();
                at += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_and_writes_at_offsets_and_stops_at_the_end() {
        let file = tempfile::tempfile().unwrap();
        write_all_at(&file, b"hello world", 0).unwrap();
        write_all_at(&file, b"W", 6).unwrap();
        let mut buf = [0u8; 5];
        read_exact_at(&file, &mut buf, 6).unwrap();
        assert_eq!(&buf, b"World");
        let mut long = [0u8; 8];
        assert_eq!(read_up_to(&file, &mut long, 6).unwrap(), 5);
        assert_eq!(read_exact_at(&file, &mut long, 6).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }
}
