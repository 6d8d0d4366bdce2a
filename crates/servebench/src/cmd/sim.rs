//! The simulator: `servebench sim` (standalone) and the embedded server behind `--sim`.

use crate::cli::values::SimMode;
use crate::cli::{SimArgs, SimOptions};
use servebench_core::BenchError;
use servebench_sim::{EngineConfig, FaultConfig, SimConfig, SimHandle};
use std::net::SocketAddr;
use std::time::Duration;

/// The simulator's model when `--sim-model` is not given.
pub const DEFAULT_SIM_MODEL: &str = "servebench-sim";

/// The model the simulator serves: `--sim-model`, else `servebench-sim`.
pub fn served_model(opts: &SimOptions) -> &str {
    opts.sim_model.as_deref().unwrap_or(DEFAULT_SIM_MODEL)
}

/// Builds the simulator configuration from its flags.
pub fn sim_config(opts: &SimOptions) -> anyhow::Result<SimConfig> {
    let tokenizer = servebench_data::tokenizer::load_tokenizer(&opts.sim_tokenizer)?;
    let mut cfg = SimConfig::new(served_model(opts).to_owned(), tokenizer);
    cfg.lora_modules = opts.sim_lora_modules.clone();
    let cfg = cfg
        .with_fixed_timing_ms(opts.sim_ttft_ms, opts.sim_itl_ms)?
        .with_seed(opts.sim_seed)
        .with_max_model_len(opts.sim_max_model_len);
    let mut cfg = cfg.with_faults(fault_config(opts)?).with_reasoning_tokens(opts.sim_reasoning_tokens);
    cfg.reasoning_field = opts.sim_reasoning_field;
    cfg.embedding_dim = opts.sim_embedding_dim;
    cfg.personality = opts.sim_personality;
    cfg.path_prefix = opts.sim_path_prefix.clone();
    if let Some(gpus) = gpu_power(opts)? {
        cfg = cfg.with_gpus(gpus);
    }
    Ok(match engine_config(opts)? {
        Some(engine) => cfg.with_engine(engine),
        None => cfg,
    })
}

/// The simulated GPUs of `--sim-gpus` and their watts (SB151 when the watts make no power
/// curve: negative, not finite, or a cap below idle); `None` without GPUs.
pub fn gpu_power(
    opts: &SimOptions,
) -> servebench_core::Result<Option<servebench_sim::power::GpuPowerConfig>> {
    if opts.sim_gpus == 0 {
        return Ok(None);
    }
    let (idle, per, max) = (opts.sim_gpu_idle_watts, opts.sim_gpu_request_watts, opts.sim_gpu_max_watts);
    if ![idle, per, max].iter().all(|w| w.is_finite() && *w >= 0.0) || max < idle {
        return Err(BenchError::SimGpuPowerInvalid {
            idle: idle.to_string(),
            per_request: per.to_string(),
            max: max.to_string(),
        });
    }
    Ok(Some(servebench_sim::power::GpuPowerConfig {
        gpus: opts.sim_gpus,
        idle_w: idle,
        per_request_w: per,
        max_w: max,
    }))
}

/// The injected faults from `--sim-fault KIND=RATE`, `--sim-fault-seed` and
/// `--sim-fault-stall-ms` (none by default).
pub fn fault_config(opts: &SimOptions) -> anyhow::Result<FaultConfig> {
    let stall = opts.sim_fault_stall_ms;
    if !stall.is_finite() || !(0.0..=3_600_000.0).contains(&stall) {
        return Err(BenchError::config(
            "--sim-fault-stall-ms",
            format!("{stall} is out of range"),
            "pass 0..3600000 ms",
        )
        .into());
    }
    let mut faults = FaultConfig::default()
        .with_seed(opts.sim_fault_seed)
        .with_stall(Duration::from_secs_f64(stall / 1000.0));
    for fault in &opts.sim_fault {
        for kind in &fault.kinds {
            faults.set_rate(*kind, fault.rate)?;
        }
    }
    Ok(faults)
}

/// The engine timing model from `--sim-mode engine` / `--sim-preset` and the override flags
/// (`None` in fixed mode).
pub fn engine_config(opts: &SimOptions) -> anyhow::Result<Option<EngineConfig>> {
    let mut e = match (&opts.sim_preset, opts.sim_mode) {
        (Some(p), _) => p.engine,
        (None, SimMode::Engine) => EngineConfig::h100_8b(),
        (None, SimMode::Fixed) => return Ok(None),
    };
    let ms = |flag: &str, v: f64| -> anyhow::Result<Duration> {
        if !v.is_finite() || !(0.0..=60_000.0).contains(&v) {
            return Err(BenchError::config(flag, format!("{v} is out of range"), "pass 0..60000 ms").into());
        }
        Ok(Duration::from_secs_f64(v / 1000.0))
    };
    if let Some(v) = opts.sim_max_num_seqs {
        e.max_num_seqs = v;
    }
    if let Some(v) = opts.sim_kv_capacity_tokens {
        e.kv_capacity_tokens = v;
    }
    if let Some(v) = opts.sim_prefill_tokens_per_s {
        e.prefill_tokens_per_s = v;
    }
    if let Some(v) = opts.sim_max_num_batched_tokens {
        e.max_num_batched_tokens = v;
    }
    if let Some(v) = opts.sim_decode_step_ms {
        e.decode_step_base = ms("--sim-decode-step-ms", v)?;
    }
    if let Some(v) = opts.sim_decode_per_seq_us {
        e.decode_per_seq = ms("--sim-decode-per-seq-us", v / 1000.0)?;
    }
    if let Some(v) = opts.sim_jitter {
        e.jitter = v;
    }
    if let Some(v) = opts.sim_spec_k {
        e.spec_k = v;
    }
    if let Some(v) = opts.sim_spec_acceptance {
        e.spec_acceptance = v;
    }
    if let Some(v) = opts.sim_prefix_caching {
        e.prefix_caching = v;
    }
    if let Some(v) = opts.sim_prefix_cache_blocks {
        e.prefix_cache_blocks = v;
    }
    e.validate()?;
    Ok(Some(e))
}

/// `servebench sim`: serves until Ctrl-C or SIGTERM; writes the ground-truth log if asked.
pub fn serve(args: &SimArgs) -> anyhow::Result<u8> {
    let cfg = sim_config(&args.sim)?.with_ground_truth(args.ground_truth.is_some());
    let prefix = api_prefix(&cfg);
    let clock = servebench_core::RunClock::start();
    let addr = SocketAddr::new(args.host, args.port);
    // Every connection served is an open file: the soft limit goes up to the hard one.
    let open_files = crate::os::raise_open_files_limit();
    let rt = crate::os::runtime::build(crate::os::runtime::SIM_THREAD_NAME, None)?;
    let tls = crate::cmd::sim_tls::SimTlsSetup::new(&args.sim.sim_tls)?;
    rt.block_on(async move {
        let handle = match &tls {
            Some(t) => servebench_sim::start_tls(cfg, addr, t.tls.clone()).await?,
            None => servebench_sim::start(cfg, addr).await?,
        };
        errln!(
            "servebench sim: serving model '{}' on {}{prefix} (Ctrl-C to stop)",
            served_model(&args.sim),
            handle.base_url()
        );
        if let Some(t) = &tls {
            errln!("servebench sim: {}", t.describe());
        }
        if let Some(limit) = open_files {
            errln!(
                "servebench sim: open-files limit {limit} (about {} concurrent connections; `ulimit -n` before starting raises it)",
                limit.saturating_sub(64)
            );
        }
        crate::os::signal::wait_for_stop_signal().await?;
        if let Some(path) = &args.ground_truth {
            let truth = handle.take_ground_truth();
            servebench_sim::write_ground_truth_jsonl(&truth, &clock, path)?;
            errln!("servebench sim: wrote {} ground-truth records to {}", truth.len(), path.display());
        }
        handle.abort();
        Ok::<u8, anyhow::Error>(0)
    })
}

/// The path prefix the API is served under (the gateway personality's), else empty.
fn api_prefix(cfg: &SimConfig) -> String {
    match cfg.personality.behaviour().prefixed {
        true => cfg.path_prefix.clone(),
        false => String::new(),
    }
}

/// The embedded simulator of `--sim`: its own runtime and threads (named `sb-sim`), so that the
/// client's CPU time can be told apart from the simulator's.
#[derive(Debug)]
pub struct EmbeddedSim {
    runtime: Option<tokio::runtime::Runtime>,
    handle: Option<SimHandle>,
    addr: SocketAddr,
    /// The gateway personality's path prefix (empty otherwise).
    prefix: String,
    /// With `--sim-tls`: the generated CA and where its certificate was written.
    tls: Option<crate::cmd::sim_tls::SimTlsSetup>,
}

impl EmbeddedSim {
    /// Starts the simulator on 127.0.0.1 with an ephemeral port.
    pub fn start(opts: &SimOptions) -> anyhow::Result<Self> {
        let cfg = sim_config(opts)?;
        let prefix = api_prefix(&cfg);
        let runtime = crate::os::runtime::build(crate::os::runtime::SIM_THREAD_NAME, Some(1))?;
        let tls = crate::cmd::sim_tls::SimTlsSetup::new(&opts.sim_tls)?;
        let addr = ([127, 0, 0, 1], 0).into();
        let handle = match &tls {
            Some(t) => runtime.block_on(servebench_sim::start_tls(cfg, addr, t.tls.clone()))?,
            None => runtime.block_on(servebench_sim::start(cfg, addr))?,
        };
        let addr = handle.local_addr();
        Ok(EmbeddedSim { runtime: Some(runtime), handle: Some(handle), addr, prefix, tls })
    }

    /// `http://127.0.0.1:PORT` (`https://` with `--sim-tls`), with the gateway personality's
    /// path prefix.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{}", self.addr, self.prefix)
    }

    /// With `--sim-tls`: the CA certificate file clients must trust.
    pub fn tls(&self) -> Option<&crate::cmd::sim_tls::SimTlsSetup> {
        self.tls.as_ref()
    }
}

impl Drop for EmbeddedSim {
    fn drop(&mut self) {
        if let (Some(rt), Some(h)) = (self.runtime.take(), self.handle.take()) {
            rt.block_on(h.shutdown());
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod fault_flag_tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use servebench_sim::FaultKind;

    fn sim_options(args: &[&str]) -> SimOptions {
        let argv = ["servebench", "sim"].iter().chain(args).copied();
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Some(Command::Sim(a))) => a.sim,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sim_fault_flags_map_to_the_fault_config() {
        let o = sim_options(&[
            "--sim-fault",
            "reset=0.1",
            "--sim-fault",
            "429=0.25",
            "--sim-fault-seed",
            "9",
            "--sim-fault-stall-ms",
            "150",
        ]);
        let f = fault_config(&o).unwrap();
        assert_eq!(f.rate(FaultKind::Reset), 0.1);
        assert_eq!(f.rate(FaultKind::Http429), 0.25);
        assert_eq!(f.rate(FaultKind::Trickle), 0.0);
        assert_eq!(f.seed, 9);
        assert_eq!(f.stall, Duration::from_millis(150));
        assert!(!fault_config(&sim_options(&[])).unwrap().is_active(), "no faults by default");
        for bad in ["reset=2", "nope=0.1", "reset"] {
            let e = crate::cli::values::sim_fault(bad).unwrap_err().user_line();
            assert!(e.starts_with("error[SB101]") && e.contains("--sim-fault"), "{bad}: {e}");
        }
    }

    #[test]
    fn sim_personality_flags_map_to_the_config() {
        let o = sim_options(&["--sim-tokenizer", "gpt2", "--sim-personality", "llama.cpp"]);
        assert_eq!(sim_config(&o).unwrap().personality, servebench_sim::Personality::LlamaCpp);
        let o = sim_options(&[
            "--sim-tokenizer",
            "gpt2",
            "--sim-personality",
            "gateway",
            "--sim-path-prefix",
            "/team-a",
        ]);
        let cfg = sim_config(&o).unwrap();
        assert_eq!(api_prefix(&cfg), "/team-a");
        let o = sim_options(&["--sim-tokenizer", "gpt2"]);
        assert_eq!(api_prefix(&sim_config(&o).unwrap()), "", "only the gateway has a prefix");
        let argv = ["servebench", "sim", "--sim-tokenizer", "gpt2", "--sim-personality", "nginx"];
        let e = Cli::try_parse_from(argv).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("--sim-personality") && e.contains("llamacpp"), "{e}");
    }
}
