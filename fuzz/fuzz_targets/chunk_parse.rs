//! Response events of every API family: any event data (and any whole body) must be read into
//! the record or fail it cleanly — never panic — and failure messages stay bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_client::chunk::{error_message, Chunk};
use servebench_client::stream::ResponseReader;
use servebench_client::{BackendKind, Dialect, SseEvent};
use servebench_core::RequestRecord;

const BACKENDS: [BackendKind; 8] = [
    BackendKind::Completions,
    BackendKind::Chat,
    BackendKind::Responses,
    BackendKind::Embeddings,
    BackendKind::Native(Dialect::Tgi),
    BackendKind::Native(Dialect::Sglang),
    BackendKind::Native(Dialect::LlamaCpp),
    BackendKind::Native(Dialect::Anthropic),
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(chunk) = Chunk::parse(text) {
        if let Some(m) = chunk.error_message() {
            assert!(m.len() <= 4 * 1024, "error message unbounded");
        }
    }
    for backend in BACKENDS {
        let mut rec = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        let mut reader = ResponseReader::new(backend, true);
        // The same data twice (cumulative dialects compare events), then the end of the body.
        for t in [1, 2] {
            reader.on_event(&mut rec, SseEvent { event: None, data: text }, t);
        }
        reader.end_of_body(&mut rec, 3);
        let mut whole = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        ResponseReader::new(backend, true).on_body(&mut whole, data, 4);
        for r in [&rec, &whole] {
            if let Some(e) = &r.error {
                assert!(e.message.len() <= 8 * 1024, "failure message unbounded");
            }
        }
    }
    let m = error_message(text);
    assert!(m.len() <= 4 * 1024, "error message unbounded");
});
