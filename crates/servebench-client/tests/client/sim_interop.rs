//! Interop smoke test against the in-tree simulator: many concurrent streams over pooled
//! connections, both dialects, `usage` matched against what was asked for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::{Outcome, Prompt, RequestRecord, RequestSpec, RunClock};
use servebench_testkit::tokenizers::byte_tokenizer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_streams_against_the_simulator() {
    let cfg =
        servebench_sim::SimConfig::new("sim-model", byte_tokenizer()).with_fixed_timing_ms(5.0, 1.0).unwrap();
    let sim = servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client =
        HttpClient::new(ClientOptions { base_url: sim.base_url(), ..ClientOptions::default() }).unwrap();
    let clock = RunClock::start();
    for backend in [BackendKind::Completions, BackendKind::Chat] {
        let target_cfg =
            TargetConfig { backend, model: "sim-model".into(), ignore_eos: true, ..TargetConfig::default() };
        let target = RequestTarget::new(&client, &target_cfg).unwrap();
        let tasks = (0..16u64).map(|i| {
            let (client, target) = (client.clone(), target.clone());
            tokio::spawn(async move {
                let spec = RequestSpec::new(i, Prompt::Text(Arc::from(format!("prompt number {i}"))), 0, 8);
                let rec = RequestRecord::scheduled(i, format!("b-{i}"), 0, 0, 8);
                execute(&client, &target, &spec, rec, &clock, &ExecOptions::default()).await
            })
        });
        for t in futures::future::join_all(tasks).await {
            let r = t.unwrap();
            assert_eq!(r.outcome, Outcome::Completed, "{backend}: {:?}", r.error);
            assert_eq!(r.completion_tokens, Some(8), "{backend}");
            assert_eq!(r.token_event_count, 8, "{backend}");
            assert_eq!(r.token_events.gaps_us.len(), 7);
            assert!(r.first_token_us.is_some() && r.done_us >= r.last_token_us);
        }
    }
    assert!(client.stats().reused > 0);
    sim.shutdown().await;
}

/// Non-streamed chat (`"stream": false` in the extra body) against a reasoning simulator, in
/// either reasoning field: the one JSON answer is one token event carrying reasoning and
/// content, `usage.completion_tokens` (reasoning included, as vLLM counts it) is the output
/// count, and the text is the streamed text (reasoning first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streamed_chat_with_reasoning_matches_the_stream() {
    use servebench_sim::ReasoningField;
    // The text the client read, per field: one text whichever field(s) carry it.
    let mut texts = Vec::new();
    for field in [ReasoningField::Both, ReasoningField::Reasoning, ReasoningField::ReasoningContent] {
        let mut cfg = servebench_sim::SimConfig::new("sim-model", byte_tokenizer())
            .with_fixed_timing_ms(2.0, 1.0)
            .unwrap()
            .with_reasoning_tokens(3);
        cfg.reasoning_field = field;
        let sim = servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client =
            HttpClient::new(ClientOptions { base_url: sim.base_url(), ..ClientOptions::default() }).unwrap();
        let clock = RunClock::start();
        let opts = ExecOptions { keep_text: true, ..ExecOptions::default() };
        let run = |stream: bool, tokens: u32| {
            let mut target_cfg = TargetConfig {
                backend: BackendKind::Chat,
                model: "sim-model".into(),
                ignore_eos: true,
                ..TargetConfig::default()
            };
            if !stream {
                target_cfg.extra_body.insert("stream".into(), false.into());
            }
            let target = RequestTarget::new(&client, &target_cfg).unwrap();
            let spec = RequestSpec {
                index: 0,
                prompt: Prompt::Text(Arc::from("think first")),
                prompt_tokens: 0,
                expected_output_tokens: tokens,
                multimodal: None,
                messages: None,
                audio: None,
                overrides: None,
                rerank: None,
            };
            let rec = RequestRecord::scheduled(0, format!("r-{stream}-{tokens}"), 0, 0, tokens);
            let (client, opts) = (client.clone(), opts.clone());
            async move { execute(&client, &target, &spec, rec, &clock, &opts).await }
        };
        let streamed = run(true, 8).await;
        let whole = run(false, 8).await;
        assert_eq!(whole.outcome, Outcome::Completed, "{field:?}: {:?}", whole.error);
        assert_eq!(whole.completion_tokens, Some(8), "{field:?}: reasoning tokens are completion tokens");
        assert_eq!((whole.token_event_count, whole.reasoning_events, whole.content_events), (1, 1, 1));
        assert_eq!(whole.first_content_us, whole.first_token_us, "{field:?}");
        assert_eq!(whole.finish_reason.as_deref(), Some("length"));
        assert_eq!((streamed.reasoning_events, streamed.content_events), (3, 5), "{field:?}");
        assert_eq!(whole.completion_tokens, streamed.completion_tokens);
        assert_eq!(whole.output_chars, streamed.output_chars, "{field:?}");
        assert!(whole.generated_text.is_some());
        assert_eq!(whole.generated_text, streamed.generated_text, "{field:?}: reasoning first, then content");
        // An output within the reasoning budget: reasoning only, no visible output.
        let only = run(false, 2).await;
        assert_eq!(only.outcome, Outcome::Completed, "{field:?}: {:?}", only.error);
        assert_eq!(only.completion_tokens, Some(2));
        assert_eq!((only.reasoning_events, only.content_events), (1, 0));
        assert!(only.first_content_us.is_none(), "no TTFO without visible output");
        texts.push((streamed.generated_text, streamed.output_chars));
        sim.shutdown().await;
    }
    // Pins current vLLM's reasoning sent under both names (`both`, the simulator's default):
    // read once, as from either name alone (it was doubled).
    assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:?}");
}
