//! Regression tests of the data crate's inputs (an eighth adversarial pass): each pins a bug
//! that was fixed and is named after the behaviour it pins; its doc comment says what used to go
//! wrong. The synthetic tokenizers are committed under `fixtures/tokenizers/synthetic-*`.

use servebench_core::{ErrorCode, TextTokenizer, Workload};
use servebench_data::dataset::prefix_repetition::{generate_prefix_repetition, PrefixRepetitionConfig};
use servebench_data::dataset::Sampling;
use servebench_data::HfTokenizer;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A committed synthetic tokenizer (`synthetic-metaspace`, `synthetic-wordlevel`).
fn synthetic(name: &str) -> Arc<dyn TextTokenizer> {
    let path = servebench_testkit::fixtures::fixture(&format!("tokenizers/{name}/tokenizer.json"));
    Arc::new(HfTokenizer::from_file(&path, name).unwrap())
}

fn sampling(n: usize) -> Sampling {
    Sampling { num_prompts: n, seed: 3, shuffle: true, oversample: true }
}

/// Every prompt of `w` is exactly `prefix + suffix` tokens without special tokens (plus the BOS
/// in `prompt_tokens`), and the prompts come in `groups` groups of `per_group` that share their
/// first `prefix` tokens and the text those tokens decode to.
fn assert_shared_exact_prefixes(
    w: &Workload,
    t: &dyn TextTokenizer,
    (prefix, suffix): (usize, usize),
    groups: usize,
    per_group: usize,
) {
    let mut by_prefix = BTreeMap::new();
    for r in &w.requests {
        let text = r.prompt.text().unwrap();
        let ids = t.encode(text, false).unwrap();
        assert_eq!(ids.len(), prefix + suffix, "{}: {text:?}", t.name());
        assert_eq!(r.prompt_tokens as usize, prefix + suffix + 1, "{}: {text:?}", t.name());
        assert_eq!(t.encode(text, true).unwrap().len(), prefix + suffix + 1);
        let head = t.decode(&ids[..prefix], true).unwrap();
        assert!(text.starts_with(&head), "{}: {text:?} does not start with {head:?}", t.name());
        by_prefix.entry(ids[..prefix].to_vec()).or_insert_with(Vec::new).push(head);
    }
    assert_eq!(by_prefix.len(), groups, "{}", t.name());
    for heads in by_prefix.values() {
        assert_eq!(heads.len(), per_group, "{}", t.name());
        assert!(heads.iter().all(|h| h == &heads[0]), "{}: the prefix text is shared", t.name());
    }
}

/// Pins exact prefix_repetition prompts with any tokenizer. The prefix and suffix texts were
/// built apart and joined as strings: with a SentencePiece-style (Metaspace) tokenizer the
/// suffix text starts without a space, so the prefix's last word and the suffix's first fused
/// into one token (`w98w118`) and every prompt was a token short (20 tokens asked, 19 sent); with
/// a whole-word tokenizer `1 + 1` tokens gave one unknown word `w41w67` counted as 2. Now every
/// prompt encodes to exactly `prefix + suffix` tokens that start with its group's prefix tokens.
#[test]
fn prefix_repetition_prompts_are_exact_and_share_prefix_tokens_with_metaspace_and_word_tokenizers() {
    for name in ["synthetic-metaspace", "synthetic-wordlevel"] {
        let t = synthetic(name);
        for (prefix, suffix) in [(10, 10), (1, 1), (7, 3)] {
            let cfg = PrefixRepetitionConfig {
                prefix_len: prefix,
                suffix_len: suffix,
                num_prefixes: 2,
                output_len: 4,
            };
            let w = generate_prefix_repetition(&cfg, &sampling(7), t.as_ref()).unwrap();
            assert_eq!(w.len(), 6, "7 / 2 prefixes = 3 each, the remainder dropped");
            assert_shared_exact_prefixes(&w, t.as_ref(), (prefix, suffix), 2, 3);
        }
    }
}

fn cl100k() -> Arc<dyn TextTokenizer> {
    servebench_data::load_tokenizer("cl100k_base").unwrap()
}

/// Pins per-line `output_tokens` above `u32::MAX` (custom, custom_image and custom_audio with
/// `--custom-output-len -1`) as an SB204 error naming the line: 4294967297 and
/// 9223372036854775807 used to be lowered silently to 4294967295.
#[test]
fn custom_output_tokens_above_u32_max_are_an_error_naming_the_line() {
    use servebench_data::dataset::custom::{generate_custom, CustomConfig};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    // A value beyond i64 (1e30, 23 digits) is read saturated: the message says "or more" rather
    // than show 9223372036854775807 as if the file held it.
    for big in ["4294967297", "9223372036854775807", "1e30", "99999999999999999999999"] {
        let body = format!("{{\"prompt\": \"hi\", \"output_tokens\": 4294967295}}\n{{\"prompt\": \"ho\", \"output_tokens\": {big}}}\n");
        std::fs::write(&path, body).unwrap();
        let cfg = CustomConfig { path: path.clone(), output_len: None, template: Default::default() };
        let e = generate_custom(&cfg, &sampling(2), cl100k().as_ref()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::DatasetFile, "{e}");
        let line = e.to_string();
        let shown = if big.len() > 19 || big.contains('e') { "9223372036854775807 or more" } else { big };
        assert!(line.contains("line 2") && line.contains(shown) && line.contains("4294967295"), "{line}");
    }
    // u32::MAX itself is a length.
    std::fs::write(&path, "{\"prompt\": \"hi\", \"output_tokens\": 4294967295}\n").unwrap();
    let cfg = CustomConfig { path, output_len: None, template: Default::default() };
    let w = generate_custom(&cfg, &sampling(1), cl100k().as_ref()).unwrap();
    assert_eq!(w.requests[0].expected_output_tokens, u32::MAX);
}

/// Pins custom `output_tokens` read as Python's `int()` reads them, as vLLM's loader does: `5.0`
/// (pandas writes an integer column with gaps as floats) and `"5"` were refused; a fraction is
/// still an error naming the value (vLLM would cut it).
#[test]
fn custom_output_tokens_as_whole_floats_or_integer_strings_are_counts() {
    use servebench_data::dataset::custom::{generate_custom, CustomConfig};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let body = "{\"prompt\": \"a\", \"output_tokens\": 5.0}\n{\"prompt\": \"b\", \"output_tokens\": \"7\"}\n{\"prompt\": \"c\", \"output_tokens\": 9}\n";
    std::fs::write(&path, body).unwrap();
    let cfg = CustomConfig { path: path.clone(), output_len: None, template: Default::default() };
    let w = generate_custom(&cfg, &sampling(3), cl100k().as_ref()).unwrap();
    let mut outs: Vec<u32> = w.requests.iter().map(|r| r.expected_output_tokens).collect();
    outs.sort();
    assert_eq!(outs, vec![5, 7, 9]);
    std::fs::write(&path, "{\"prompt\": \"a\", \"output_tokens\": 5.5}\n").unwrap();
    let e = generate_custom(&cfg, &sampling(1), cl100k().as_ref()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::DatasetFile, "{e}");
    assert!(e.to_string().contains("5.5"), "{e}");
}

/// Pins trace rows of 0 tokens as errors naming the line: `"output_length": 0` used to be sent
/// as `max_tokens` 1 and `"input_length": 0` as an empty prompt, both silently; lengths above
/// `u32::MAX` were lowered to it.
#[test]
fn trace_rows_of_zero_or_oversized_lengths_are_errors_naming_the_line() {
    use servebench_data::trace::{parse_trace, TraceLabels};
    let l = TraceLabels::default();
    let ok = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2}\n";
    for (bad, field) in [
        ("{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 0}", "'output_length' is 0"),
        ("{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 2}", "'input_length' is 0"),
        (
            "{\"timestamp\": 1, \"input_length\": 4294967296, \"output_length\": 2}",
            "'input_length' is 4294967296",
        ),
    ] {
        let e = parse_trace(&format!("{ok}{bad}\n"), &l).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Dataset, "{e}");
        let line = e.to_string();
        assert!(line.contains("trace line 2") && line.contains(field) && line.contains("fix:"), "{line}");
    }
    assert_eq!(parse_trace(ok, &l).unwrap()[0].output_length, 2);
}

/// Pins the longest trace replay (7 days, `MAX_TRACE_SPAN_MS`): timestamps that jump to absurd
/// values (18446744073709551615, 1e300) used to be accepted and the run waited forever. The
/// bound is on the replay, so a slower `--timed-trace-sec-multiplier` counts.
#[test]
fn trace_timestamps_spanning_more_than_a_week_are_refused_naming_the_row() {
    use servebench_data::trace::{
        build_trace_workload, parse_trace, TraceConfig, TraceLabels, MAX_TRACE_SPAN_MS,
    };
    let l = TraceLabels::default();
    let row = |ts: &str| format!("{{\"timestamp\": {ts}, \"input_length\": 4, \"output_length\": 2}}\n");
    for absurd in ["18446744073709551615", "1e300"] {
        let text = format!("{}{}{}", row("0"), row("10"), row(absurd));
        let e = parse_trace(&text, &l).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Dataset, "{e}");
        assert!(e.to_string().contains("trace line 3") && e.to_string().contains("7 days"), "{e}");
    }
    // Exactly a week is a replay; a millisecond more is not.
    let week = MAX_TRACE_SPAN_MS;
    assert_eq!(parse_trace(&format!("{}{}", row("5"), row(&(week + 5.0).to_string())), &l).unwrap().len(), 2);
    assert!(parse_trace(&format!("{}{}", row("5"), row(&(week + 6.0).to_string())), &l).is_err());
    // Four days of trace, replayed at half speed, is eight days of replay.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, format!("{}{}", row("0"), row(&(4.0 * 86_400_000.0).to_string()))).unwrap();
    let cfg = |sec_multiplier| TraceConfig {
        path: path.clone(),
        labels: TraceLabels::default(),
        chunk_size: 16,
        sec_multiplier,
        num_prompts: 10,
        seed: 0,
        max_model_len: None,
        self_timed: true,
        replay_end_ms: None,
    };
    assert!(build_trace_workload(&cfg(1.0), cl100k().as_ref()).is_ok());
    let e = build_trace_workload(&cfg(2.0), cl100k().as_ref()).unwrap_err();
    assert!(
        e.to_string().contains("trace line 2") && e.to_string().contains("--timed-trace-sec-multiplier 2"),
        "{e}"
    );
    // Without --self-timed the timestamps are not replayed (the --request-rate schedule is):
    // a trace of any span is a workload.
    std::fs::write(&path, format!("{}{}", row("0"), row("1e300"))).unwrap();
    let rate_driven = TraceConfig { self_timed: false, ..cfg(1.0) };
    assert_eq!(build_trace_workload(&rate_driven, cl100k().as_ref()).unwrap().workload.requests.len(), 2);
    // Pins the rules of a sent row applying to sent rows only: the first N rows of a trace
    // longer than a week (or with a 0-token row further on) were refused, and so were rows due
    // after a --duration's end, which are never sent.
    let tail = "{\"timestamp\": 900000000, \"input_length\": 4, \"output_length\": 0}\n";
    std::fs::write(&path, format!("{}{}{tail}", row("0"), row("100"))).unwrap();
    let first_two = TraceConfig { num_prompts: 2, ..cfg(1.0) };
    assert_eq!(build_trace_workload(&first_two, cl100k().as_ref()).unwrap().workload.requests.len(), 2);
    std::fs::write(&path, format!("{}{}{}", row("0"), row("100"), row("900000000"))).unwrap();
    let within_a_second = TraceConfig { num_prompts: 3, replay_end_ms: Some(1000.0), ..cfg(1.0) };
    assert!(build_trace_workload(&within_a_second, cl100k().as_ref()).is_ok());
    assert!(build_trace_workload(&TraceConfig { num_prompts: 3, ..cfg(1.0) }, cl100k().as_ref()).is_err());
}

/// Pins vLLM's "Min num mm items is greater than max mm items" as SB101: random-mm used to lower
/// the image count to `--random-mm-limit-mm-per-prompt` silently (`{'image': 0}` sent no image,
/// 5 base items with a limit of 2 sent 2).
#[test]
fn random_mm_refuses_an_image_limit_below_the_smallest_item_count() {
    use servebench_data::dataset::random_mm::{
        generate_random_mm, item_range, parse_bucket_config, RandomMmConfig,
    };
    use servebench_data::random::RandomDatasetConfig;
    let cfg = |base_items, items_range_ratio, limit_image| RandomMmConfig {
        text: RandomDatasetConfig { num_prompts: 3, input_len: 8, output_len: 2, ..Default::default() },
        base_items,
        items_range_ratio,
        limit_image,
        limit_video: 1,
        buckets: parse_bucket_config("{(16, 16, 1): 1.0}").unwrap(),
    };
    for (base, r, limit, min, max) in [(1, 0.0, 0, 1, 0), (5, 0.0, 2, 5, 2), (4, 0.5, 1, 2, 1)] {
        let e = generate_random_mm(&cfg(base, r, limit), cl100k().as_ref()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
        let line = e.to_string();
        assert!(line.contains("--random-mm-limit-mm-per-prompt"), "{line}");
        assert!(line.contains(&format!("min num mm items ({min}")), "{line}");
        assert!(line.contains(&format!("max mm items ({max}")), "{line}");
    }
    // A limit inside the range caps it: [2, 6] with a limit of 3 is [2, 3], drawn uniformly.
    assert_eq!(item_range(&cfg(4, 0.5, 3)).unwrap(), (2, 3));
    let w = generate_random_mm(&cfg(4, 0.5, 3), cl100k().as_ref()).unwrap();
    assert!(w.requests.iter().all(|r| (2..=3).contains(&r.multimodal.as_ref().unwrap().len())));
    // No item asked for, none sent: not an error.
    let w = generate_random_mm(&cfg(0, 0.0, 0), cl100k().as_ref()).unwrap();
    assert!(w.requests.iter().all(|r| r.multimodal.is_none()));
}

/// A BurstGPT CSV in a temporary directory.
fn burstgpt(text: &str) -> (tempfile::TempDir, servebench_data::dataset::burstgpt::BurstGptConfig) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("burst.csv");
    std::fs::write(&path, text).unwrap();
    (dir, servebench_data::dataset::burstgpt::BurstGptConfig { path })
}

/// Pins RFC 4180 quoting in the BurstGPT CSV, as pandas reads it: a quoted field holding a comma
/// (`"Conversation, log"`) used to be "7 fields, the header has 6", a quoted `"GPT-4"` was not
/// matched (its row silently dropped) and a quoted header was refused.
#[test]
fn burstgpt_reads_quoted_fields_commas_and_headers_as_pandas_does() {
    use servebench_data::dataset::burstgpt::generate_burstgpt;
    let csv =
        "\"Timestamp\",\"Model\",\"Request tokens\",\"Response tokens\",\"Total tokens\",\"Log Type\"\r\n\
               6,GPT-4,12,7,19,\"Conversation, log\"\r\n\
               \r\n\
               7,\"GPT-4\",30,5,35,\"He said \"\"hi\"\"\nover two lines\"\r\n\
               8,ChatGPT,3,3,6,API log\r\n";
    let (_d, cfg) = burstgpt(csv);
    let s = Sampling { num_prompts: 2, shuffle: false, oversample: false, seed: 0 };
    let w = generate_burstgpt(&cfg, &s, cl100k().as_ref()).unwrap();
    let outputs: Vec<u32> = w.requests.iter().map(|r| r.expected_output_tokens).collect();
    assert_eq!(outputs, [7, 5], "both GPT-4 rows, the quoted one included");
    // A quote never closed names the line its record starts on.
    let (_d, cfg) = burstgpt(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,GPT-4,3,3,6,\"open\n",
    );
    let e = generate_burstgpt(&cfg, &s, cl100k().as_ref()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::DatasetFile);
    assert!(e.to_string().contains("line 2") && e.to_string().contains("never closed"), "{e}");
}

/// Pins the bound on BurstGPT token counts (`MAX_ROW_TOKENS`, 2^20): `Request tokens` of
/// 999,999,999 (below the old 2^31 bound) ran the process out of memory building the prompt;
/// now a count above the bound is SB204 naming the row, for either column.
#[test]
fn burstgpt_token_counts_above_the_row_bound_are_refused_naming_the_row() {
    use servebench_data::dataset::burstgpt::{generate_burstgpt, MAX_ROW_TOKENS};
    let head = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,GPT-4,3,3,6,x\n";
    let s = Sampling { num_prompts: 1, shuffle: false, oversample: false, seed: 0 };
    for (row, column) in [
        ("2,GPT-4,999999999,3,0,x", "'Request tokens' is 999999999"),
        ("2,GPT-4,3,1048577,0,x", "'Response tokens' is 1048577"),
    ] {
        let (_d, cfg) = burstgpt(&format!("{head}{row}\n"));
        let e = generate_burstgpt(&cfg, &s, cl100k().as_ref()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::DatasetFile, "{e}");
        assert!(e.to_string().contains("line 3") && e.to_string().contains(column), "{e}");
    }
    assert_eq!(MAX_ROW_TOKENS, 1_048_576.0);
    let (_d, cfg) = burstgpt(&format!("{head}2,GPT-4,3,1048576,0,x\n"));
    assert!(generate_burstgpt(&cfg, &s, cl100k().as_ref()).is_ok(), "the bound itself is a count");
}

/// Pins the error of a file that is valid JSON but not a tokenizer.json (SB201): `{"hello": 1}`
/// and a tokenizer_config.json passed as `--tokenizer` used to say "expected `,` or `}` at line 1
/// column 9", a syntax error in a file that has none.
#[test]
fn valid_json_that_is_not_a_tokenizer_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let offline = servebench_data::HubEnv { offline: true, ..Default::default() };
    for (body, says) in [
        (r#"{"hello": 1}"#, "valid JSON, but not a tokenizer.json (it has no \"model\")"),
        (
            r#"{"bos_token": "<s>", "chat_template": "{{ x }}", "tokenizer_class": "T"}"#,
            "a tokenizer_config.json",
        ),
        ("[1, 2]", "not a JSON object"),
    ] {
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, body).unwrap();
        let e = servebench_data::load_tokenizer_with(path.to_str().unwrap(), &offline).unwrap_err();
        assert_eq!(e.code(), ErrorCode::TokenizerLoad, "{e}");
        assert!(e.to_string().contains(says), "{body}: {e}");
        assert!(!e.to_string().contains("expected `,`"), "{body}: {e}");
    }
    // Not JSON at all keeps the parser's error and position.
    std::fs::write(dir.path().join("tokenizer.json"), "{oops").unwrap();
    let e = servebench_data::load_tokenizer_with(dir.path().to_str().unwrap(), &offline).unwrap_err();
    assert!(e.to_string().contains("not a valid tokenizer.json"), "{e}");
}

/// Pins `--tokenizer /dev/null` (there, but neither a file nor a directory): it used to say "no
/// such file or directory".
#[cfg(unix)]
#[test]
fn a_tokenizer_path_that_is_a_device_says_it_is_not_a_file() {
    let offline = servebench_data::HubEnv { offline: true, ..Default::default() };
    let e = servebench_data::load_tokenizer_with("/dev/null", &offline).unwrap_err();
    assert_eq!(e.code(), ErrorCode::TokenizerLoad, "{e}");
    assert!(e.to_string().contains("neither a regular file nor a directory"), "{e}");
    // One fix, the error's own (the message once carried a second "fix:").
    assert_eq!(e.to_string().matches("fix:").count(), 1, "{e}");
    assert!(!e.to_string().contains("no such file"), "{e}");
}

/// Pins an invalid `chat_template` in tokenizer_config.json (`42`) as SB201 saying it is not a
/// template: it used to read as "has no chat template" (SB206 at first use).
#[test]
fn a_chat_template_that_is_not_a_template_is_an_invalid_config() {
    let dir = tempfile::tempdir().unwrap();
    let src = servebench_testkit::fixtures::fixture("tokenizers/synthetic-wordlevel/tokenizer.json");
    std::fs::copy(src, dir.path().join("tokenizer.json")).unwrap();
    let offline = servebench_data::HubEnv { offline: true, ..Default::default() };
    for (template, says) in [
        ("42", "chat_template is 42, not a template"),
        ("[{\"name\": \"tool_use\", \"template\": \"x\"}]", "without one named \"default\""),
    ] {
        std::fs::write(
            dir.path().join("tokenizer_config.json"),
            format!("{{\"chat_template\": {template}}}"),
        )
        .unwrap();
        // The tokenizer loads (a run that renders no template is not refused, as transformers
        // loads it); rendering says what is wrong.
        let t = servebench_data::load_tokenizer_with(dir.path().to_str().unwrap(), &offline).unwrap();
        let template = t.chat_template().expect("a template that fails when rendered");
        let messages = serde_json::json!([{"role": "user", "content": "hi"}]);
        let e = template.render(&messages, &servebench_core::ChatRender::default()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ChatTemplateRender, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    std::fs::write(dir.path().join("tokenizer_config.json"), "{\"chat_template\": null}").unwrap();
    let t = servebench_data::load_tokenizer_with(dir.path().to_str().unwrap(), &offline).unwrap();
    assert!(t.chat_template().is_none(), "null is no template");
}

/// Pins chat-column messages whose content is a list of OpenAI content parts: the text parts
/// are joined (with a line break); a content without text says so. It used to say "has no
/// user/human message".
#[test]
fn hf_chat_content_parts_are_joined_and_non_text_content_is_named() {
    use servebench_data::dataset::hf::{extract, Columns};
    let cols = Columns::Chat("messages".into());
    let row = serde_json::json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Describe"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "briefly."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]}
    ]});
    assert_eq!(extract(&row, &cols).unwrap(), ("Describe\nbriefly.".to_string(), Some("A cat.".to_string())));
    let images_only = serde_json::json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]});
    let e = extract(&images_only, &cols).unwrap_err();
    assert!(e.contains("the user message") && e.contains("no text part"), "{e}");
    let number = serde_json::json!({"messages": [{"role": "user", "content": 7}]});
    let e = extract(&number, &cols).unwrap_err();
    assert!(e.contains("a number, not text"), "{e}");
    let plain = serde_json::json!({"messages": [{"from": "human", "value": "hi"}]});
    assert_eq!(extract(&plain, &cols).unwrap(), ("hi".to_string(), None));
    // Pins messages without text being passed over, not fatal: an assistant's tool call
    // (`content: null`) before its text reply, and a user message of image parts before a text
    // one, failed the whole dataset.
    let tool_call = serde_json::json!({"messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "user", "content": "What is the weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."}
    ]});
    let (prompt, reply) = extract(&tool_call, &cols).unwrap();
    assert_eq!((prompt.as_str(), reply.as_deref()), ("What is the weather?", Some("It is sunny.")));
    let only_tool_calls = serde_json::json!({"messages": [
        {"role": "user", "content": "Weather?"}, {"role": "assistant", "content": null}
    ]});
    assert_eq!(extract(&only_tool_calls, &cols).unwrap(), ("Weather?".to_string(), None));
}
