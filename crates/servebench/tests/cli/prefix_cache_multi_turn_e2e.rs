//! A controlled prefix-cache hit rate on multi-turn conversations built on token ids, end to end
//! against the engine simulator: every turn re-sends the conversation so far, the first turns
//! share a primed prefix sized for the target, and the simulator's cache finds exactly what was
//! built in (usage and /metrics); a small cache misses and warns; bust gives 0; an unreachable
//! target is SB211 naming the range; chat conversations stay SB210 and name the token-id path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

use crate::prefix_cache_e2e::{rate, refusal, run};

/// `--num-prompts` conversations of `turns` turns: first turn `first` tokens, later turns
/// `later` new tokens, replies of 4 tokens (the shared runner asks for 4).
fn conversations(n: u32, turns: u32, first: u32, later: u32, extra: &[&str]) -> (String, String, Value) {
    let (n, turns, first, later) = (n.to_string(), turns.to_string(), first.to_string(), later.to_string());
    let mut args = vec![
        "--multi-turn",
        "--num-prompts",
        &n,
        "--multi-turn-num-turns",
        &turns,
        "--random-input-len",
        &first,
        "--per-turn-input-len",
        &later,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Built in, from each response's usage and from the server's counters: all the same.
fn assert_observed_is_built_in(pc: &Value) {
    let built = rate(pc, "constructed_hit_rate");
    assert!(close(rate(pc, "expected_hit_rate"), built), "{pc}");
    assert!(close(rate(pc, "observed_hit_rate"), built), "{pc}");
    assert!(close(rate(pc, "server_hit_rate"), built), "{pc}");
}

#[test]
fn targets_are_built_in_and_observed_exactly() {
    // 2 turns of 256 then 516 + 256 tokens: the history alone reuses 256 of 1028 per
    // conversation (0.2490); the first turns can share up to 240 more (0.4825).
    let (stdout, stderr, json) =
        conversations(10, 2, 256, 512, &["--prefix-cache-hit-rate", "0.3", "--max-concurrency", "4"]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "hit_rate");
    assert_eq!(rate(pc, "target_hit_rate"), 0.3);
    assert!(close(rate(pc, "history_hit_rate"), 256.0 / 1028.0), "{pc}");
    assert!(close(rate(pc, "max_hit_rate"), 496.0 / 1028.0), "{pc}");
    // round((0.3 · 10280 − 2560) / 16) = 33 shared blocks: (2560 + 528) / 10280.
    assert!(close(rate(pc, "constructed_hit_rate"), 3088.0 / 10280.0), "{pc}");
    assert_observed_is_built_in(pc);
    assert_eq!(json["completed"], 20);
    assert_eq!(pc["observed_requests"], 20);
    assert_eq!((pc["warmup_requests"].as_u64(), pc["warmup_completed"].as_u64()), (Some(1), Some(1)));
    assert_eq!(json["total_input_tokens"], 10280);
    assert!(stdout.contains("History-only hit rate (multi-turn):"), "{stdout}");
    assert!(!stderr.contains("prefix cache: hit rate"), "{stderr}");

    // 2 turns of 512 then 512 + 4 + 64: history 512 of 1092 (0.4689), at most 0.9231.
    for (target, built) in [("0.5", 5456.0 / 10920.0), ("0.7", 7648.0 / 10920.0)] {
        let (_, stderr, json) = conversations(10, 2, 512, 64, &["--prefix-cache-hit-rate", target]);
        let pc = &json["prefix_cache"];
        assert!(close(rate(pc, "constructed_hit_rate"), built), "{target}: {pc}");
        assert_observed_is_built_in(pc);
        assert!(!stderr.contains("prefix cache: hit rate"), "{stderr}");
    }
}

#[test]
fn longer_conversations_reuse_their_whole_history() {
    // 3 turns of 1024, then 1024 + 4 + 32, then 1060 + 4 + 32: history 1024 + 1056 of 3180.
    let (_, _, json) = conversations(6, 3, 1024, 32, &["--prefix-cache-hit-rate", "0.7"]);
    let pc = &json["prefix_cache"];
    assert!(close(rate(pc, "history_hit_rate"), 2080.0 / 3180.0), "{pc}");
    // round((0.7 · 19080 − 12480) / 16) = 55 blocks: (12480 + 880) / 19080.
    assert!(close(rate(pc, "constructed_hit_rate"), 13360.0 / 19080.0), "{pc}");
    assert_observed_is_built_in(pc);
    // Every later turn found its previous turn's whole prompt.
    assert_eq!(json["cached_input_tokens"], 13360);
}

#[test]
fn a_small_cache_evicts_the_history_and_warns() {
    // 10 conversations at once: their first turns (32 blocks each) overflow 40 cached blocks, so
    // the second turns find their history evicted.
    let (_, stderr, json) =
        conversations(10, 2, 512, 64, &["--prefix-cache-hit-rate", "0.5", "--sim-prefix-cache-blocks", "40"]);
    let pc = &json["prefix_cache"];
    assert!(rate(pc, "observed_hit_rate") < rate(pc, "constructed_hit_rate") - 0.02, "{pc}");
    assert!(stderr.contains("prefix cache: hit rate"), "{stderr}");
    assert!(stderr.contains("evicted"), "{stderr}");
}

#[test]
fn bust_gives_exactly_zero_with_the_whole_history_sent() {
    let (_, _, json) = conversations(6, 3, 256, 64, &["--prefix-cache-bust"]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "bust");
    assert_eq!(rate(pc, "target_hit_rate"), 0.0);
    assert_eq!(rate(pc, "constructed_hit_rate"), 0.0);
    assert_eq!(rate(pc, "observed_hit_rate"), 0.0, "{pc}");
    assert_eq!(rate(pc, "server_hit_rate"), 0.0, "{pc}");
    assert_eq!(pc["warmup_requests"], 0);
    // Same prompts as a cached run: 256, 324, 392 tokens per conversation.
    assert_eq!(json["total_input_tokens"], 6 * (256 + 324 + 392));
}

#[test]
fn bimodal_warms_a_share_of_the_conversations() {
    let (_, _, json) =
        conversations(10, 2, 512, 64, &["--random-cache-hit-fraction", "0.5", "--random-cache-ratio", "0.5"]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "bimodal");
    // 5 warm conversations share 256 tokens: (5120 + 1280) / 10920, as the rule asks.
    assert!(close(rate(pc, "constructed_hit_rate"), 6400.0 / 10920.0), "{pc}");
    assert!(close(rate(pc, "target_hit_rate"), 6400.0 / 10920.0), "{pc}");
    assert_observed_is_built_in(pc);
}

#[test]
fn unreachable_targets_name_the_range_and_chat_names_the_token_id_path() {
    let base = [
        "--sim-mode",
        "engine",
        "--backend",
        "openai",
        "--prompt-token-ids",
        "--multi-turn",
        "--num-prompts",
        "4",
        "--multi-turn-num-turns",
        "2",
        "--random-input-len",
        "512",
        "--per-turn-input-len",
        "64",
        "--random-output-len",
        "4",
    ];
    for target in ["0.3", "0.95"] {
        let stderr = refusal(&[&base[..], &["--prefix-cache-hit-rate", target]].concat());
        assert!(stderr.contains("SB211"), "{target}: {stderr}");
        assert!(stderr.contains("from 0.4689 (their history alone) to 0.9231"), "{stderr}");
    }
    let stderr = refusal(&["--backend", "openai-chat", "--multi-turn", "--prefix-cache-hit-rate", "0.5"]);
    assert!(stderr.contains("SB210"), "{stderr}");
    assert!(
        stderr.contains("--backend openai --dataset-name random --prompt-token-ids --multi-turn"),
        "{stderr}"
    );
    let stderr = refusal(&["--backend", "openai", "--multi-turn"]);
    assert!(stderr.contains("--prompt-token-ids"), "{stderr}");
}
