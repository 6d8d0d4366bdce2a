//! The two system calls: `setsockopt(SO_TIMESTAMPING)` and `recvmsg` with a control buffer
//! (Linux, 64-bit). The only unsafe code of the crate: each call gets a valid descriptor
//! borrowed from its socket and buffers that outlive it.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Software receive timestamps, reported in `SCM_TIMESTAMPING` (`ts[0]`).
const FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;

/// Room for one `SCM_TIMESTAMPING` message (16 + 48 bytes) and a little more, 8-aligned.
pub(super) type Control = [u64; 16];

/// Asks the kernel to stamp every packet received on `fd` and report it with `recvmsg`.
pub(super) fn enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = FLAGS;
    // SAFETY: `fd` is a live socket; the option value is a `c_uint` read by the kernel only
    // during the call, with its exact size.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&flags as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether this kernel takes the option: tried on a fresh unconnected TCP socket, returned
/// open. While any socket has receive stamps on, the kernel keeps stamping packets; turning
/// that on from none is deferred to a work queue, so the client keeps this socket for its life
/// and packets of its first connections are stamped too.
pub(super) fn probe() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned below and closed on drop.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor we just opened and own.
    let owned = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    use std::os::fd::AsFd;
    enable(owned.as_fd())?;
    Ok(owned)
}

/// One non-blocking `recvmsg` into `buf`: the bytes read and the control buffer's used length.
pub(super) fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], control: &mut Control) -> io::Result<(usize, usize)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of::<Control>() as _;
    // SAFETY: `iov` points into `buf` and `msg_control` into `control`, both borrowed mutably
    // for the call and sized as declared; the kernel writes at most those lengths.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let used = (msg.msg_controllen as usize).min(std::mem::size_of::<Control>());
    Ok((n as usize, used))
}
