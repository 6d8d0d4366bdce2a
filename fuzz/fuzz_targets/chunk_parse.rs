//! Chunk parsing: any event data must parse or fail cleanly, and every accessor the client
//! uses on a parsed chunk must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_client::chunk::{error_message, Chunk};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(chunk) = Chunk::parse(text) {
        let g = chunk.generated();
        let _ = (g.any(), g.output_chars());
        let _ = chunk.finish_reason();
        if let Some(m) = chunk.error_message() {
            assert!(m.len() <= 4 * 1024, "error message unbounded");
        }
        let mut out = String::new();
        for c in &chunk.choices {
            let _ = c.generated();
            c.append_text(&mut out);
        }
    }
    let m = error_message(text);
    assert!(m.len() <= 4 * 1024, "error message unbounded");
});
