//! Times building the `sharegpt` workload from the synthetic 100,000-conversation file of the
//! `sharegpt_load` bench (the whole-file case is too slow for criterion's ten samples).
//!
//! `cargo run -p servebench-data --release --example sharegpt_load [-- NUM_PROMPTS [RUNS [OUTPUT_LEN]]]`
//!
//! NUM_PROMPTS defaults to 100000 (every conversation tokenized), RUNS to 1; OUTPUT_LEN is
//! `--sharegpt-output-len`. `SHAREGPT_FILE=path` reuses a file written earlier (it is written
//! there when missing) instead of a fresh temporary one. The allocator is mimalloc, as in the
//! `servebench` binary. Each run prints its wall time and the process CPU time (user + system)
//! it used, which is what to compare on a loaded machine.

use std::path::PathBuf;
use std::time::Instant;

use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::Sampling;
use servebench_data::{HfTokenizer, HubEnv};
use servebench_testkit::fixtures::smollm2_tokenizer;
use servebench_testkit::sharegpt_synthetic;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let num_prompts: usize = args.get(1).map_or(Ok(sharegpt_synthetic::CONVERSATIONS), |s| s.parse())?;
    let runs: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let output_len: Option<usize> = args.get(3).map(|s| s.parse()).transpose()?;

    let dir = tempfile::tempdir()?;
    let path = match std::env::var_os("SHAREGPT_FILE") {
        Some(p) => PathBuf::from(p),
        None => dir.path().join("sharegpt_100k.json"),
    };
    if !path.exists() {
        let t = Instant::now();
        sharegpt_synthetic::write_file(&path)?;
        println!("wrote {} in {:.1} s", path.display(), t.elapsed().as_secs_f64());
    }
    let size = std::fs::metadata(&path)?.len();
    let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2")?;
    let cfg = ShareGptConfig { path: Some(path.clone()), output_len };
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let sampling = Sampling { num_prompts, ..Sampling::default() };
    println!(
        "{:.1} MB file, --num-prompts {num_prompts}, output len {output_len:?}, {} rayon threads",
        size as f64 / 1e6,
        rayon::current_num_threads()
    );
    for run in 1..=runs {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let w = generate_sharegpt(&cfg, &sampling, &tok, &env)?;
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        let prompt_tokens = w.total_prompt_tokens();
        let output_tokens: u64 = w.requests.iter().map(|r| u64::from(r.expected_output_tokens)).sum();
        println!(
            "run {run}: {} requests, {prompt_tokens} prompt + {output_tokens} output tokens, \
             selection digest {:016x}, {secs:.2} s wall, {cpu:.2} s CPU",
            w.len(),
            selection_digest(&w)
        );
    }
    Ok(())
}

/// User + system CPU time of this process so far (Linux `/proc/self/stat`, 100 ticks per
/// second; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    (ticks(11) + ticks(12)) / 100.0
}

/// FNV-1a over every request's prompt text and lengths, in order: equal digests = the same
/// selection (to compare loader versions on the big file).
fn selection_digest(w: &servebench_core::Workload) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for r in &w.requests {
        eat(r.prompt.text().unwrap_or("").as_bytes());
        eat(&r.prompt_tokens.to_le_bytes());
        eat(&r.expected_output_tokens.to_le_bytes());
    }
    h
}
