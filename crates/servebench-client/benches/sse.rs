//! SSE framing + chunk parsing throughput on a realistic vLLM chat stream.
//!
//! `cargo bench -p servebench-client --bench sse -- --quick`
//! Reports events/s for: framing only; framing + reading the events into the request's record
//! (the client's hot path: the chat family's parser and the neutral stream state); and, for
//! reference, framing + a `serde_json::Value` tree (what the hot path must not do).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use servebench_client::stream::ResponseReader;
use servebench_client::{BackendKind, SseFramer};
use servebench_core::RequestRecord;
use std::hint::black_box;

const EVENTS: usize = 1000;

fn chat_stream() -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-b5f6a1c0e4d34f0f9a1f2e3d4c5b6a79","object":"chat.completion.chunk","created":1732900000,"model":"meta-llama/Llama-3.1-8B-Instruct","#;
    let mut s = String::new();
    s.push_str(&format!(
        "data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    ));
    let words = [" the", " model", " is", " fast", ",", " and", "\\n", " \\\"quoted\\\"", " ü", " tokens"];
    for i in 0..EVENTS - 3 {
        let w = words[i % words.len()];
        s.push_str(&format!(
            "data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{w}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str(&format!(
        "data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}}]}}\n\n"
    ));
    s.push_str(&format!(
        "data: {head}\"choices\":[],\"usage\":{{\"prompt_tokens\":1024,\"total_tokens\":2021,\"completion_tokens\":997,\"prompt_tokens_details\":{{\"cached_tokens\":512}}}}}}\n\n"
    ));
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

/// Splits the stream into frames: one event per frame (typical server writes), or fixed sizes.
fn frames(stream: &[u8], size: Option<usize>) -> Vec<&[u8]> {
    match size {
        Some(n) => stream.chunks(n).collect(),
        None => {
            let mut out = Vec::new();
            let mut start = 0;
            let mut i = 0;
            while i + 1 < stream.len() {
                if stream[i] == b'\n' && stream[i + 1] == b'\n' {
                    out.push(&stream[start..i + 2]);
                    start = i + 2;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            out
        }
    }
}

fn run(frames: &[&[u8]], mode: u8) -> u64 {
    let mut f = SseFramer::new();
    let mut acc = 0u64;
    let mut rec = RequestRecord::scheduled(0, "r0".into(), 0, 1024, EVENTS as u32);
    let mut reader = ResponseReader::new(BackendKind::Chat, false);
    for (t, fr) in frames.iter().enumerate() {
        f.push(fr);
        while let Ok(Some(ev)) = f.next_event() {
            match mode {
                0 => acc += ev.data.len() as u64,
                1 => {
                    reader.on_event(&mut rec, ev, t as u64);
                }
                _ => {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(ev.data) {
                        acc += v["choices"][0]["delta"]["content"].as_str().map_or(0, str::len) as u64;
                    }
                }
            }
        }
    }
    acc + rec.output_chars + u64::from(rec.token_event_count)
}

fn bench(c: &mut Criterion) {
    let stream = chat_stream();
    let mut g = c.benchmark_group("chat_stream");
    g.throughput(Throughput::Elements(EVENTS as u64));
    for (name, size) in [("per_event", None), ("4k_frames", Some(4096)), ("7b_frames", Some(7))] {
        let fr = frames(&stream, size);
        g.bench_with_input(BenchmarkId::new("frame_only", name), &fr, |b, fr| {
            b.iter(|| run(black_box(fr), 0))
        });
        g.bench_with_input(BenchmarkId::new("frame_parse", name), &fr, |b, fr| {
            b.iter(|| run(black_box(fr), 1))
        });
    }
    let fr = frames(&stream, None);
    g.bench_with_input(BenchmarkId::new("frame_value_tree", "per_event"), &fr, |b, fr| {
        b.iter(|| run(black_box(fr), 2))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
