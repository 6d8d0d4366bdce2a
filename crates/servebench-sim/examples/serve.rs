//! Runs the simulator standalone until Ctrl-C (until the CLI's `servebench sim` exists).
//!
//! ```text
//! cargo run -p servebench-sim --example serve -- 127.0.0.1:8000 [TOKENIZER] [TTFT_MS] [ITL_MS]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use servebench_sim::SimConfig;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8000".into()).parse().unwrap();
    let tokenizer = args.next().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/tokenizers/smollm2-135m/tokenizer.json").into()
    });
    let ttft: f64 = args.next().map(|v| v.parse().unwrap()).unwrap_or(50.0);
    let itl: f64 = args.next().map(|v| v.parse().unwrap()).unwrap_or(10.0);
    let tok = servebench_data::load_tokenizer(&tokenizer).unwrap();
    let config = SimConfig::new("sim-model", tok).with_fixed_timing_ms(ttft, itl).unwrap();
    let sim = servebench_sim::start(config, addr).await.unwrap();
    println!("servebench-sim listening on {} (model sim-model)", sim.base_url());
    tokio::signal::ctrl_c().await.unwrap();
    sim.shutdown().await;
}
