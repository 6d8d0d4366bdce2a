//! Responses and pooling backends against a scripted HTTP server on 127.0.0.1: the
//! non-streaming latency runs to the last body byte (a server that delays its body after the
//! headers shows the difference from vLLM's headers-time latency), and a Responses stream's
//! reasoning/text deltas drive TTFT, ITL and TTFO on arrival.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::metrics::{ttfo_us, RequestTimes};
use servebench_core::{ErrorKind, Outcome, Prompt, RequestRecord, RequestSpec, RunClock};
use servebench_testkit::script::{self, w, ScriptedServer, Step};

/// Serves one connection (the shared kit's scripted server): reads one request, plays `steps`,
/// closes.
async fn serve(mut steps: Vec<Step>) -> ScriptedServer {
    steps.insert(0, Step::Read);
    steps.push(Step::Close);
    script::serve(vec![steps]).await
}

async fn run_one(server: &ScriptedServer, backend: BackendKind) -> RequestRecord {
    run_with(server, backend, &ExecOptions::default()).await
}

async fn run_with(server: &ScriptedServer, backend: BackendKind, opts: &ExecOptions) -> RequestRecord {
    let client =
        HttpClient::new(ClientOptions { base_url: server.base_url(), ..ClientOptions::default() }).unwrap();
    let cfg = TargetConfig { backend, model: "m".into(), ..TargetConfig::default() };
    let target = RequestTarget::new(&client, &cfg).unwrap();
    let spec = RequestSpec::new(0, Prompt::Text(Arc::from("hello")), 5, 4);
    let rec = RequestRecord::scheduled(0, "bench-0".into(), 0, 5, 4);
    execute(&client, &target, &spec, rec, &RunClock::start(), opts).await
}

#[tokio::test]
async fn non_streaming_latency_ends_at_the_last_body_byte() {
    let body = r#"{"id":"embd-1","object":"list","data":[{"index":0,"object":"embedding","embedding":[0.5,0.5]}],"usage":{"prompt_tokens":5,"total_tokens":5}}"#;
    let (head_part, tail_part) = body.split_at(40);
    let steps = vec![
        w(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )),
        Step::Sleep(150),
        w(head_part),
        Step::Sleep(150),
        w(tail_part),
    ];
    let server = serve(steps).await;
    let r = run_one(&server, BackendKind::Embeddings).await;
    let request = server.requests()[0].clone();
    assert!(request.starts_with("POST /v1/embeddings HTTP/1.1"), "{request}");
    assert!(request.ends_with(r#"{"model":"m","input":"hello"}"#), "{request}");
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let (dispatched, headers, done) = (r.dispatched_us.unwrap(), r.headers_us.unwrap(), r.done_us.unwrap());
    // The body took ≥ 300 ms after the headers: vLLM's latency (headers − dispatch) misses it.
    assert!(done - headers >= 300_000, "headers {headers} done {done}");
    let t = RequestTimes::of(&r);
    assert_eq!(t.e2el_us, Some(done - dispatched));
    assert_eq!(t.ttft_us, t.e2el_us, "TTFT = E2EL = last body byte for non-streaming");
    assert!(t.e2el_us.unwrap() >= (headers - dispatched) + 300_000);
    assert_eq!((r.server_prompt_tokens, r.completion_tokens), (Some(5), Some(0)));
}

/// An embeddings answer of `dims` floats written as vLLM writes them (about 20 bytes each).
fn embedding_body(dims: usize) -> String {
    let vector = vec!["-0.012345678901234567"; dims].join(",");
    format!(
        r#"{{"id":"embd-1","object":"list","data":[{{"index":0,"object":"embedding","embedding":[{vector}]}}],"usage":{{"prompt_tokens":5,"total_tokens":5}}}}"#
    )
}

/// A 1.3 MB embeddings answer (a 4,096-dimension model, a batch of 16) failed as
/// `event_too_large`: whole bodies were bound by the 1 MiB SSE event limit. They are bound by
/// `--max-response-bytes` (256 MiB by default), which still fails a larger body.
#[tokio::test]
async fn an_embeddings_answer_over_one_mebibyte_completes_below_the_response_bound() {
    let body = embedding_body(64 * 1024);
    assert!(body.len() > 1 << 20);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let server = serve(vec![w(head.clone()), w(body.clone())]).await;
    let r = run_one(&server, BackendKind::Embeddings).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.server_prompt_tokens, Some(5));

    let server = serve(vec![w(head), w(body)]).await;
    let bound = ExecOptions { max_body_bytes: 1 << 20, ..ExecOptions::default() };
    let r = run_with(&server, BackendKind::Embeddings, &bound).await;
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::EventTooLarge), "{:?}", r.error);
    assert!(r.error.unwrap().message.contains("--max-response-bytes"));
}

fn ev(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn delta(kind: &str, text: &str) -> String {
    ev(
        kind,
        &format!(r#"{{"type":"{kind}","item_id":"x","output_index":0,"content_index":0,"delta":"{text}"}}"#),
    )
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

/// A chat stream answered to an embeddings request (a wrong `--endpoint`) failed as `no_tokens`
/// ("the response carried no generated tokens"); it is a protocol failure that names the cause.
#[tokio::test]
async fn an_event_stream_answered_to_a_pooling_request_names_the_wrong_endpoint() {
    let chunk = r#"data: {"choices":[{"delta":{"content":"hi"}}]}"#;
    let server = serve(vec![w(SSE_HEAD), w(format!("{chunk}\n\ndata: [DONE]\n\n"))]).await;
    let r = run_one(&server, BackendKind::Embeddings).await;
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.kind, ErrorKind::Protocol, "{e:?}");
    assert!(e.message.contains("not a pooling endpoint"), "{}", e.message);
}

/// Frames 80 ms apart: created | reasoning | text | text + completed. Hand-computed lower
/// bounds: ITL gaps ≥ 80 ms each, TTFO − TTFT ≥ 80 ms, E2EL − TTFT ≥ 160 ms.
#[tokio::test]
async fn responses_stream_deltas_drive_ttft_itl_and_ttfo() {
    let created = r#"{"type":"response.created","response":{"id":"resp_9","status":"in_progress"}}"#;
    let completed = r#"{"type":"response.completed","response":{"id":"resp_9","status":"completed","usage":{"input_tokens":7,"output_tokens":3,"input_tokens_details":{"cached_tokens":1}}}}"#;
    let steps = vec![
        w(SSE_HEAD),
        w(ev("response.created", created)),
        Step::Sleep(80),
        w(delta("response.reasoning_text.delta", "hm")),
        Step::Sleep(80),
        w(delta("response.output_text.delta", "a")),
        Step::Sleep(80),
        w(delta("response.output_text.delta", "b") + &ev("response.completed", completed)),
    ];
    let server = serve(steps).await;
    let r = run_one(&server, BackendKind::Responses).await;
    let request = server.requests()[0].clone();
    assert!(request.starts_with("POST /v1/responses HTTP/1.1"), "{request}");
    assert!(
        request
            .ends_with(r#"{"model":"m","input":"hello","max_output_tokens":4,"stream":true,"store":false}"#),
        "{request}"
    );
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 3);
    assert_eq!(r.token_events.gaps_us.len(), 2);
    assert!(r.token_events.gaps_us.iter().all(|&g| g >= 80_000), "{:?}", r.token_events.gaps_us);
    let (first, content, last) =
        (r.first_token_us.unwrap(), r.first_content_us.unwrap(), r.last_token_us.unwrap());
    assert!(content - first >= 80_000);
    assert!(last <= r.done_us.unwrap());
    assert!(ttfo_us(&r).unwrap() >= RequestTimes::of(&r).ttft_us.unwrap() + 80_000);
    assert_eq!(
        (r.server_prompt_tokens, r.completion_tokens, r.cached_prompt_tokens),
        (Some(7), Some(3), Some(1))
    );
    assert_eq!((r.reasoning_events, r.content_events), (1, 2));
}

#[tokio::test]
async fn responses_failed_event_fails_with_partial_timings() {
    let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"overloaded"}}}"#;
    let steps = vec![
        w(SSE_HEAD),
        w(delta("response.output_text.delta", "a")),
        Step::Sleep(30),
        w(ev("response.failed", failed)),
    ];
    let server = serve(steps).await;
    let r = run_one(&server, BackendKind::Responses).await;
    assert_eq!(server.requests().len(), 1);
    let e = r.error.clone().unwrap();
    assert_eq!((r.outcome, e.kind), (Outcome::Failed, ErrorKind::ServerError));
    assert!(e.message.contains("overloaded"), "{}", e.message);
    assert!(r.first_token_us.is_some() && r.done_us.unwrap() >= r.first_token_us.unwrap() + 30_000);
}
