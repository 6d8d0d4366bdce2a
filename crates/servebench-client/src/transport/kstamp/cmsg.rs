//! Reading the software receive timestamp out of a `recvmsg` control buffer, in safe code over
//! the bytes the kernel wrote (so it is tested on hand-made buffers).
//!
//! Layout (Linux, 64-bit): each control message is a `cmsghdr` — `cmsg_len` (a native `usize`:
//! header + data, unpadded), `cmsg_level` (i32), `cmsg_type` (i32) — then its data at offset
//! 16; the next message starts at `cmsg_len` rounded up to 8. `SCM_TIMESTAMPING` (type
//! `SO_TIMESTAMPING_OLD` = 37, or `SO_TIMESTAMPING_NEW` = 65; level `SOL_SOCKET` = 1) carries
//! `struct scm_timestamping { struct timespec ts[3]; }`: `ts[0]` is the software timestamp
//! (CLOCK_REALTIME), `ts[1]` unused, `ts[2]` the hardware one. On 64-bit targets both the old
//! and the new struct are three `{i64 tv_sec, i64 tv_nsec}`. A zero `ts[0]` means "no software
//! timestamp" (the kernel reports the message when only a hardware one exists).

/// `SOL_SOCKET`.
const SOL_SOCKET: i32 = 1;
/// `SO_TIMESTAMPING_OLD` / `SCM_TIMESTAMPING` on the generic Linux ABI.
const SCM_TIMESTAMPING_OLD: i32 = 37;
/// `SO_TIMESTAMPING_NEW` (the y2038-safe variant; same layout on 64-bit).
const SCM_TIMESTAMPING_NEW: i32 = 65;
const USIZE: usize = std::mem::size_of::<usize>();
/// Size of a `cmsghdr` and the alignment of control messages.
const HDR: usize = USIZE + 8;
const ALIGN: usize = USIZE;
/// One `timespec` of 64-bit fields.
const TIMESPEC: usize = 16;

/// The software receive timestamp in a control buffer: CLOCK_REALTIME nanoseconds since the
/// Unix epoch, `None` when the buffer holds no `SCM_TIMESTAMPING` message with a non-zero
/// `ts[0]` (or is malformed: truncated messages are ignored, never read past).
pub(crate) fn software_rx_ns(control: &[u8]) -> Option<i128> {
    let mut at = 0usize;
    while at + HDR <= control.len() {
        let len = usize::from_ne_bytes(control[at..at + USIZE].try_into().ok()?);
        let level = i32::from_ne_bytes(control[at + USIZE..at + USIZE + 4].try_into().ok()?);
        let kind = i32::from_ne_bytes(control[at + USIZE + 4..at + HDR].try_into().ok()?);
        if len < HDR || at.checked_add(len)? > control.len() {
            return None;
        }
        let data = &control[at + HDR..at + len];
        if level == SOL_SOCKET && (kind == SCM_TIMESTAMPING_OLD || kind == SCM_TIMESTAMPING_NEW) {
            return timespec_ns(data);
        }
        at += len.div_ceil(ALIGN) * ALIGN;
    }
    None
}

/// `ts[0]` of a `scm_timestamping` as nanoseconds; `None` when zero or short.
fn timespec_ns(data: &[u8]) -> Option<i128> {
    if data.len() < TIMESPEC {
        return None;
    }
    let sec = i64::from_ne_bytes(data[0..8].try_into().ok()?);
    let nsec = i64::from_ne_bytes(data[8..16].try_into().ok()?);
    if (sec == 0 && nsec == 0) || !(0..1_000_000_000).contains(&nsec) {
        return None;
    }
    Some(i128::from(sec) * 1_000_000_000 + i128::from(nsec))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A control message as the kernel lays it out, padded to the alignment.
    pub(crate) fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let len = HDR + data.len();
        let mut v = Vec::new();
        v.extend_from_slice(&len.to_ne_bytes());
        v.extend_from_slice(&level.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(data);
        v.resize(len.div_ceil(ALIGN) * ALIGN, 0);
        v
    }

    /// `scm_timestamping` with `ts[0]` = (sec, nsec) and a hardware stamp in `ts[2]`.
    pub(crate) fn stamps(sec: i64, nsec: i64) -> Vec<u8> {
        let mut d = Vec::new();
        for (s, n) in [(sec, nsec), (0, 0), (7, 7)] {
            d.extend_from_slice(&s.to_ne_bytes());
            d.extend_from_slice(&n.to_ne_bytes());
        }
        d
    }

    #[test]
    fn software_stamp_is_ts0_in_nanoseconds() {
        let buf = cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(1_700_000_000, 123_456_789));
        assert_eq!(software_rx_ns(&buf), Some(1_700_000_000_123_456_789));
        let new = cmsg(SOL_SOCKET, SCM_TIMESTAMPING_NEW, &stamps(2, 5));
        assert_eq!(software_rx_ns(&new), Some(2_000_000_005));
    }

    #[test]
    fn other_messages_are_skipped_to_the_timestamp() {
        // TCP_CM_INQ (level IPPROTO_TCP = 6, type 36) with a 4-byte int: padded to 24 bytes.
        let mut buf = cmsg(6, 36, &5i32.to_ne_bytes());
        assert_eq!(buf.len(), 24);
        buf.extend(cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(10, 1)));
        assert_eq!(software_rx_ns(&buf), Some(10_000_000_001));
    }

    #[test]
    fn no_zero_short_or_truncated_stamp_is_read() {
        assert_eq!(software_rx_ns(&[]), None);
        // Only a hardware stamp: ts[0] zero.
        assert_eq!(software_rx_ns(&cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(0, 0))), None);
        // Data shorter than one timespec.
        assert_eq!(software_rx_ns(&cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &[1; 8])), None);
        // cmsg_len claims more than the buffer holds.
        let mut cut = cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(1, 1));
        cut.truncate(40);
        assert_eq!(software_rx_ns(&cut), None);
        // A nonsense nanosecond field.
        assert_eq!(software_rx_ns(&cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(1, 2_000_000_000))), None);
        // Another level with the same type number.
        assert_eq!(software_rx_ns(&cmsg(6, SCM_TIMESTAMPING_OLD, &stamps(1, 1))), None);
        // A header whose length is below the header size.
        let mut bad = cmsg(SOL_SOCKET, SCM_TIMESTAMPING_OLD, &stamps(1, 1));
        bad[..USIZE].copy_from_slice(&4usize.to_ne_bytes());
        assert_eq!(software_rx_ns(&bad), None);
    }
}
