//! Bad dataset files give SB204 errors naming the file, the line or record, and the fix;
//! shared sampling behaviour (oversampling, shuffling).

use super::custom::{generate_custom, CustomConfig};
use super::file::{line_of, parse_json_array, DataFile};
use super::hf::{generate_hf, HfConfig, HfSource};
use super::sharegpt::{generate_sharegpt, ShareGptConfig};
use super::*;
use crate::tokenizer::HubEnv;
use servebench_core::{ErrorCode, TextTokenizer};
use std::path::Path;

fn tok() -> Arc<dyn TextTokenizer> {
    crate::load_tokenizer("cl100k_base").unwrap()
}

fn sampling() -> Sampling {
    Sampling { num_prompts: 5, ..Sampling::default() }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    ShareGpt,
    Custom,
    CustomPerLine,
    Hf,
}

fn build(kind: Kind, path: &Path) -> servebench_core::Result<Workload> {
    let t = tok();
    let env = HubEnv { offline: true, ..HubEnv::default() };
    match kind {
        Kind::ShareGpt => generate_sharegpt(
            &ShareGptConfig { path: Some(path.to_path_buf()), output_len: None },
            &sampling(),
            t.as_ref(),
            &env,
        ),
        Kind::Custom | Kind::CustomPerLine => generate_custom(
            &CustomConfig {
                path: path.to_path_buf(),
                output_len: matches!(kind, Kind::Custom).then_some(10),
                template: Default::default(),
            },
            &sampling(),
            t.as_ref(),
        ),
        Kind::Hf => generate_hf(
            &HfConfig {
                source: HfSource::File(path.to_path_buf()),
                text_column: None,
                output_len: None,
                dataset_ids: vec![],
                chat: Default::default(),
                bfcl_categories: vec![],
                asr: Default::default(),
            },
            &sampling(),
            t.as_ref(),
            &env,
        ),
    }
}

const GOOD_CONV: &str = r#"{"conversations": [{"from": "human", "value": "Tell me about the moon please"}, {"from": "gpt", "value": "It orbits the Earth every month."}]}"#;

#[test]
fn bad_files_are_coded_errors_naming_file_location_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    // (dataset, file name, content, words the message must contain)
    let good2 = format!("[\n{GOOD_CONV},\n{GOOD_CONV}\n]");
    let truncated = &good2[..good2.len() - 30];
    let cases: Vec<(Kind, &str, Vec<u8>, Vec<&str>)> = vec![
        (Kind::ShareGpt, "trunc.json", truncated.as_bytes().to_vec(), vec!["line 3", "truncated"]),
        (Kind::ShareGpt, "empty.json", b"  \n".to_vec(), vec!["empty"]),
        (
            Kind::ShareGpt,
            "missing.json",
            format!("[\n{GOOD_CONV},\n{{\"id\": \"x\", \"turns\": []}}\n]").into_bytes(),
            vec!["record 1 (line 3)", "conversations"],
        ),
        (
            Kind::ShareGpt,
            "wrongtype.json",
            b"[\n{\"conversations\": [{\"from\": \"human\", \"value\": 42}]}\n]".to_vec(),
            vec!["record 0 (line 2)", "invalid type"],
        ),
        (
            Kind::ShareGpt,
            "latin1.json",
            format!("[\n{GOOD_CONV},\n\"caf\u{e9}\"]")
                .replace('\u{e9}', "\u{1}")
                .into_bytes()
                .into_iter()
                .map(|b| if b == 1 { 0xE9 } else { b })
                .collect(),
            vec!["line 3", "UTF-8"],
        ),
        (
            Kind::Custom,
            "trunc.jsonl",
            b"{\"prompt\": \"hello there friend\"}\n{\"prompt\": \"cut of".to_vec(),
            vec!["line 2", "truncated"],
        ),
        (
            Kind::Custom,
            "noprompt.jsonl",
            b"{\"prompt\": \"hello there friend\"}\n\n{\"text\": \"x\"}\n".to_vec(),
            vec!["line 3", "prompt"],
        ),
        (
            Kind::Custom,
            "badbytes.jsonl",
            b"{\"prompt\": \"ok ok ok\"}\n{\"prompt\": \"\xff\xfe\"}\n".to_vec(),
            vec!["line 2", "UTF-8"],
        ),
        (Kind::Custom, "empty.jsonl", Vec::new(), vec!["empty"]),
        (
            Kind::CustomPerLine,
            "noout.jsonl",
            b"{\"prompt\": \"a b c d\", \"output_tokens\": 3}\n{\"prompt\": \"e f g h\"}\n".to_vec(),
            vec!["line 2", "output_tokens"],
        ),
        (
            Kind::CustomPerLine,
            "negout.jsonl",
            b"{\"prompt\": \"a b c d\", \"output_tokens\": -3}\n".to_vec(),
            vec!["line 1", "positive"],
        ),
        (
            Kind::Hf,
            "nocol.jsonl",
            b"{\"foo\": \"bar baz qux quux\"}\n".to_vec(),
            vec!["line 1", "--hf-text-column", "foo"],
        ),
        (
            Kind::Hf,
            "laterow.jsonl",
            b"{\"question\": \"what is this thing here\"}\n{\"question\": 7}\n".to_vec(),
            vec!["line 2", "question"],
        ),
        (Kind::Hf, "junk.parquet", b"PAR1 this is not parquet".to_vec(), vec!["whole file", "Parquet"]),
    ];
    for (kind, name, content, words) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, &content).unwrap();
        let err = build(kind, &p).expect_err(name);
        assert_eq!(err.code(), ErrorCode::DatasetFile, "{name}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&p.display().to_string()), "{name}: no path in {msg}");
        assert!(msg.contains("fix:"), "{name}: no fix in {msg}");
        for w in words {
            assert!(msg.contains(w), "{name}: '{w}' not in {msg}");
        }
    }
}

#[test]
fn missing_file_is_a_coded_error() {
    let err = build(Kind::Custom, Path::new("/nonexistent/servebench/x.jsonl")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatasetFile);
    assert!(err.to_string().contains("/nonexistent/servebench/x.jsonl"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any prefix of a valid file, and any single corrupted byte, loads or fails with a coded
    /// dataset error: never a panic, never another kind of error.
    #[test]
    fn truncated_or_corrupted_files_never_panic(cut in 0usize..400, flip in 0usize..400, byte in 0u8..=255) {
        let dir = tempfile::tempdir().unwrap();
        let full = format!("[\n{GOOD_CONV},\n{GOOD_CONV}\n]\n");
        let mut bytes = full.as_bytes()[..cut.min(full.len())].to_vec();
        if let Some(b) = bytes.get_mut(flip) {
            *b = byte;
        }
        let p = dir.path().join("f.json");
        std::fs::write(&p, &bytes).unwrap();
        if let Err(e) = build(Kind::ShareGpt, &p) {
            proptest::prop_assert_eq!(e.code(), ErrorCode::DatasetFile, "{}", e);
        }
    }
}

#[test]
fn record_lines_are_reported() {
    let text = "[\n {\"a\": 1},\n\n {\"a\": \"x\"}\n]";
    #[derive(serde::Deserialize, Debug)]
    struct R {
        #[allow(dead_code)]
        a: u32,
    }
    let err = parse_json_array::<R>(&DataFile::new("t.json"), text).unwrap_err();
    assert!(err.to_string().contains("record 1 (line 4)"), "{err}");
    assert_eq!(line_of(b"a\nb\nc", 4), 3);
}

#[test]
fn oversampling_is_seeded_and_optional() {
    let samples: Vec<Sample> = (0..3).map(|i| Sample::text(format!("p{i}"), i + 1, 1)).collect();
    let s = Sampling { num_prompts: 10, seed: 7, shuffle: true, oversample: true };
    let a = finish(samples.clone(), &s);
    assert_eq!(a.len(), 10);
    assert_eq!(a, finish(samples.clone(), &s));
    assert_eq!(a.requests[..3].iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(), vec![1, 2, 3]);
    let b = finish(samples.clone(), &Sampling { oversample: false, ..s });
    assert_eq!(b.len(), 3);
    let c = finish(samples, &Sampling { num_prompts: 2, ..s });
    assert_eq!(c.len(), 2);
}

#[test]
fn collect_samples_stops_early_and_keeps_order() {
    let entries: Vec<usize> = (0..10_000).collect();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let out = collect_samples(&entries, 5, |&i| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok((i % 2 == 1).then(|| Sample::text(i.to_string(), i, 1)))
    })
    .unwrap();
    assert_eq!(out.iter().map(|s| s.prompt_len).collect::<Vec<_>>(), vec![1, 3, 5, 7, 9]);
    assert!(calls.into_inner() < 10_000, "stopped before tokenizing everything");
}

#[test]
fn collect_samples_looks_at_few_entries_past_the_last_one_kept() {
    // 1 in 4 entries kept: the chunk sizes follow the acceptance rate.
    let entries: Vec<usize> = (0..100_000).collect();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let out = collect_samples(&entries, 1_000, |&i| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok((i % 4 == 0).then(|| Sample::text(i.to_string(), i, 1)))
    })
    .unwrap();
    assert_eq!(out.len(), 1_000);
    assert_eq!(out[999].prompt_len, 3_996);
    let calls = calls.into_inner();
    assert!(calls < 4_800, "{calls} entries looked at for 4,000 needed");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the chunking, the samples are those of a plain sequential filter-and-take.
    #[test]
    fn collect_samples_equals_sequential_filter(
        n in 0usize..3_000,
        needed in 0usize..3_500,
        keep_one_in in 1usize..40,
        salt in 0u64..1_000,
    ) {
        let entries: Vec<usize> = (0..n).collect();
        let keep = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(salt) % keep_one_in as u64 == 0;
        let got = collect_samples(&entries, needed, |&i| Ok(keep(i).then(|| Sample::text(i.to_string(), i, 1))))
            .unwrap();
        let want: Vec<u32> = entries.iter().copied().filter(|&i| keep(i)).take(needed).map(|i| i as u32).collect();
        proptest::prop_assert_eq!(got.iter().map(|s| s.prompt_len).collect::<Vec<_>>(), want);
    }
}

#[test]
fn bucket_config_parses_vllm_syntax() {
    use super::random_mm::{parse_bucket_config, parse_limits, DEFAULT_BUCKETS, DEFAULT_LIMITS};
    let b = parse_bucket_config(DEFAULT_BUCKETS).unwrap();
    assert_eq!(b.len(), 3);
    assert_eq!((b[1].height, b[1].width, b[1].frames, b[1].probability), (720, 1280, 1, 0.5));
    assert_eq!((b[2].frames, b[2].probability), (16, 0.0));
    let quoted = parse_bucket_config(r#"{"(64,32,1)": 1, "[8, 8, 1]": 2.5}"#).unwrap();
    assert_eq!((quoted[0].height, quoted[0].width), (64, 32));
    assert_eq!(quoted[1].probability, 2.5);
    for bad in [
        "",
        "{}",
        "{(1, 2): 1}",
        "{(1, 2, 3) 1}",
        "{(a, 2, 3): 1}",
        "{(1, 2, 3): -1}",
        "{(0, 2, 3): 1}",
        "[(1,2,3): 1]",
    ] {
        assert!(parse_bucket_config(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_limits(DEFAULT_LIMITS).unwrap(), (255, 1));
    assert_eq!(parse_limits(r#"{"image": 3}"#).unwrap(), (3, 1));
    assert!(parse_limits("{'audio': 1}").is_err());
    assert!(parse_limits("{'image': -1}").is_err());
}

#[test]
fn length_stats_use_nearest_rank() {
    let mut v: Vec<u32> = (1..=100).collect();
    let s = stats::LengthStats::of(&mut v);
    assert_eq!((s.min, s.p50, s.p99, s.max), (1, 50, 99, 100));
    assert!((s.mean - 50.5).abs() < 1e-12);
    assert_eq!(stats::LengthStats::of(&mut []), stats::LengthStats::default());
}
