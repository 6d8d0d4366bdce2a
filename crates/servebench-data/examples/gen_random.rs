//! Times one generation of a random workload (default 10,000 prompts × 8,192 tokens with the
//! SmolLM2 tokenizer), then re-encodes every prompt to check exactness (timed separately).
//!
//! `cargo run -p servebench-data --release --example gen_random [-- N LEN TOKENIZER]`
//! (`VERIFY_ALL=0` skips the full re-encoding.)

use std::time::Instant;

use rayon::prelude::*;
use servebench_data::load_tokenizer;
use servebench_data::random::{generate_random_detailed, RandomDatasetConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(Ok(10_000), |s| s.parse())?;
    let len: usize = args.get(2).map_or(Ok(8_192), |s| s.parse())?;
    let default_tok = servebench_testkit::fixtures::smollm2_tokenizer_arg();
    let spec = args.get(3).cloned().unwrap_or(default_tok);
    let t = Instant::now();
    let tok = load_tokenizer(&spec)?;
    println!("tokenizer {} loaded in {:.3} s", tok.name(), t.elapsed().as_secs_f64());

    let cfg = RandomDatasetConfig { num_prompts: n, input_len: len, output_len: 128, ..Default::default() };
    let t = Instant::now();
    let out = generate_random_detailed(&cfg, tok.as_ref())?;
    let gen = t.elapsed().as_secs_f64();
    let bytes: usize = out.workload.requests.iter().map(|r| r.prompt.text().map_or(0, str::len)).sum();
    println!(
        "generated {n} x {len} tokens in {gen:.3} s via {:?} ({} threads, {:.1} MB of text)",
        out.path,
        rayon::current_num_threads(),
        bytes as f64 / 1e6
    );

    for (phase, d) in &out.phases {
        println!("  {phase:>8}: {:.3} s", d.as_secs_f64());
    }
    let verify_all = std::env::var("VERIFY_ALL").map_or(true, |v| v != "0");
    if !verify_all {
        return Ok(());
    }
    let t = Instant::now();
    let special = tok.num_special_tokens() as usize;
    let wrong = out
        .workload
        .requests
        .par_iter()
        .filter(|r| {
            let count = r.prompt.text().map_or(Ok(0), |text| tok.count(text));
            count.map_or(true, |c| c + special != r.prompt_tokens as usize)
        })
        .count();
    println!("re-encoded all {n} prompts in {:.3} s: {wrong} not exact", t.elapsed().as_secs_f64());
    if wrong > 0 {
        return Err(format!("{wrong} prompts have the wrong length").into());
    }
    Ok(())
}
