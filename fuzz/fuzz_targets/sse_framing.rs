//! SSE framing: any byte stream, cut into chunks at arbitrary points, must frame without
//! panicking, and exactly as the same bytes delivered in one piece (chunk boundaries are a
//! property of the network, never of the result).
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_client::sse::{OwnedSseEvent, SseError, SseFramer};

/// Pushes `parts` then finishes, pulling events after each push as the client does
/// (`push` + `next_event`); events up to the first error, and that error.
fn frame(parts: &[&[u8]], max_event: usize) -> (Vec<OwnedSseEvent>, Option<SseError>) {
    let mut f = SseFramer::with_max_event_bytes(max_event);
    let mut events = Vec::new();
    let pull = |f: &mut SseFramer, events: &mut Vec<OwnedSseEvent>| loop {
        match f.next_event() {
            Ok(Some(e)) => events.push(e.into()),
            Ok(None) => return None,
            Err(e) => return Some(e),
        }
    };
    for p in parts {
        f.push(p);
        if let Some(e) = pull(&mut f, &mut events) {
            return (events, Some(e));
        }
    }
    f.finish();
    let err = pull(&mut f, &mut events);
    (events, err)
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, body)) = data.split_first() else { return };
    // The control byte picks the event bound (small bounds exercise EventTooLarge) and the
    // chunk sizes (a cycle of 1..=16 bytes).
    let max_event = if ctl & 0x80 != 0 { usize::from(ctl & 0x3f) + 1 } else { 1 << 20 };
    let mut parts = Vec::new();
    let mut rest = body;
    let mut step = usize::from(ctl % 16) + 1;
    while !rest.is_empty() {
        let n = step.min(rest.len());
        parts.push(&rest[..n]);
        rest = &rest[n..];
        step = step % 16 + 1;
    }
    let whole = frame(&[body], max_event);
    let chunked = frame(&parts, max_event);
    assert_eq!(whole, chunked, "framing depends on chunk boundaries");
});
