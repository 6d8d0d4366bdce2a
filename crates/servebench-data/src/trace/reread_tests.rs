//! Prompts built from rows read again from the trace file ([`reread`](super::reread)) are those
//! of the rows as parsed in one pass, whatever the order they are built in, the lines' endings,
//! the empty lines, the filtered rows and the lines' lengths; a file changed under the run is
//! reported.

use super::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn blocks() -> BlockTokens {
    BlockTokens::new((100..1100u32).collect::<Vec<_>>().into(), 4, 7)
}

fn line(t: u64, input: u32, output: u32, hash_ids: &[u64]) -> String {
    let ids: Vec<String> = hash_ids.iter().map(u64::to_string).collect();
    format!(
        "{{\"timestamp\": {t}, \"input_length\": {input}, \"output_length\": {output}, \"hash_ids\": [{}]}}",
        ids.join(", ")
    )
}

/// 2,000 rows: a byte-order mark, CRLF and LF endings, empty lines, rows over a 60-token
/// model length, a row of 20,000 hash ids (a line longer than a read), no newline at the end.
fn trace_text() -> String {
    let mut text = String::from("\u{feff}");
    for i in 0..2_000u64 {
        let input = 1 + (i * 7 % 50) as u32;
        let hash_ids: Vec<u64> = match i {
            700 => (0..20_000).collect(),
            _ => (0..i % 9).map(|k| i / 3 + k * 1_000_003).collect(),
        };
        let output = if i % 97 == 5 { 40 } else { 3 };
        text.push_str(&line(i * 10, input, output, &hash_ids));
        text.push_str(match i % 3 {
            0 => "\r\n",
            1 => "\n\n",
            _ => "\n",
        });
    }
    text.truncate(text.trim_end().len());
    text
}

fn config(path: &std::path::Path, num_prompts: usize) -> TraceConfig {
    TraceConfig {
        path: path.to_path_buf(),
        labels: TraceLabels::default(),
        chunk_size: 4,
        sec_multiplier: 1.0,
        num_prompts,
        seed: 7,
        max_model_len: Some(60),
        self_timed: true,
        replay_end_ms: None,
    }
}

fn source(cfg: &TraceConfig) -> TraceSource {
    let read = read_trace(cfg).unwrap();
    TraceSource { rows: read.rows, blocks: blocks(), file: read.file }
}

/// The rows `cfg` keeps, parsed in one pass.
fn kept_rows(text: &str, cfg: &TraceConfig) -> Vec<TraceRow> {
    let text = text.trim_start_matches('\u{feff}');
    let rows = parse_trace(text, &cfg.labels).unwrap();
    rows.into_iter()
        .take(cfg.num_prompts)
        .filter(|r| r.input_length + r.output_length <= cfg.max_model_len.unwrap())
        .collect()
}

#[test]
fn prompts_of_rows_read_back_are_those_of_the_parsed_rows_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let text = trace_text();
    std::fs::write(&path, &text).unwrap();
    let cfg = config(&path, 1_990);
    let want = kept_rows(&text, &cfg);
    let src = source(&cfg);
    assert_eq!(src.len(), want.len());
    assert!(want.len() > 1_900 && want.len() < 1_990, "{}", want.len());
    assert_eq!(src.file.marks().len(), want.len().div_ceil(reread::MARK_EVERY));
    let expected = |i: usize| Prompt::TokenIds(blocks().prompt(&want[i], i as u64).into());

    let mut order: Vec<usize> = (0..want.len()).collect();
    for pass in 0..3 {
        match pass {
            1 => order.reverse(),
            2 => order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(3)),
            _ => {}
        }
        for &i in &order {
            let spec = src.build(i);
            assert_eq!(spec.prompt, expected(i), "row {i}, pass {pass}");
            assert_eq!(src.lengths(i), (want[i].input_length, want[i].output_length));
        }
    }
    // Built from several threads at once, each in order.
    std::thread::scope(|s| {
        for t in 0..3 {
            let (src, expected, n) = (&src, &expected, want.len());
            s.spawn(move || (t..n).step_by(3).for_each(|i| assert_eq!(src.build(i).prompt, expected(i))));
        }
    });
    assert_eq!(src.failure(), None);
}

#[test]
fn a_trace_rewritten_during_the_run_is_reported_and_keeps_the_checked_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    // Over 64 KiB (a cursor's read), the same bytes per line for both lengths.
    let rows = |input: u32| (0..2_000u64).map(|i| line(i, input, 2, &[i])).collect::<Vec<_>>().join("\n");
    std::fs::write(&path, rows(8)).unwrap();
    assert!(rows(8).len() > 100_000 && rows(8).len() == rows(9).len());
    let src = source(&config(&path, 2_000));
    assert_eq!(src.build(3).prompt_tokens, 8);
    assert_eq!(src.failure(), None);
    // Rewritten in place (the same file, open in the run): other lengths, read past the
    // cursor's earlier read.
    std::fs::write(&path, rows(9)).unwrap();
    let spec = src.build(1_500);
    assert_eq!(spec.prompt_tokens, 8);
    let Prompt::TokenIds(ids) = &spec.prompt else { panic!("token ids") };
    assert_eq!(ids.len(), 8);
    let failure = src.failure().unwrap();
    assert!(failure.contains("row 1501 reads back with lengths 9 / 2 (checked as 8 / 2)"), "{failure}");
    // Cut short: the row is not there; the prompt is built from the lengths alone.
    std::fs::write(&path, "").unwrap();
    assert_eq!(src.build(1_900).prompt_tokens, 8);
}
