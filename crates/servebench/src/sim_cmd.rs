//! The simulator: `servebench sim` (standalone) and the embedded server behind `--sim`.

use crate::cli::{SimArgs, SimOptions};
use anyhow::Context;
use servebench_core::BenchError;
use servebench_sim::{SimConfig, SimHandle};
use std::net::SocketAddr;

/// Builds the simulator configuration from its flags.
pub fn sim_config(opts: &SimOptions) -> anyhow::Result<SimConfig> {
    let tokenizer = servebench_data::tokenizer::load_tokenizer(&opts.sim_tokenizer)?;
    let cfg = SimConfig::new(opts.sim_model.clone(), tokenizer)
        .with_fixed_timing_ms(opts.sim_ttft_ms, opts.sim_itl_ms)?
        .with_seed(opts.sim_seed)
        .with_max_model_len(opts.sim_max_model_len);
    Ok(cfg)
}

/// `servebench sim`: serves until Ctrl-C.
pub fn serve(args: &SimArgs) -> anyhow::Result<u8> {
    let cfg = sim_config(&args.sim)?;
    let addr: SocketAddr = format!("{}:{}", args.host, args.port).parse().map_err(|_| {
        BenchError::config(
            "--host/--port",
            format!("'{}:{}' is not an address to listen on", args.host, args.port),
            "pass an IP address such as 127.0.0.1 or 0.0.0.0",
        )
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("sb-sim")
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let handle = servebench_sim::start(cfg, addr).await?;
        eprintln!(
            "servebench sim: serving model '{}' on http://{} (Ctrl-C to stop)",
            args.sim.sim_model,
            handle.local_addr()
        );
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
        handle.shutdown().await;
        Ok::<u8, anyhow::Error>(0)
    })
}

/// The embedded simulator of `--sim`: its own runtime and threads (named `sb-sim`), so that the
/// client's CPU time can be told apart from the simulator's.
#[derive(Debug)]
pub struct EmbeddedSim {
    runtime: Option<tokio::runtime::Runtime>,
    handle: Option<SimHandle>,
    addr: SocketAddr,
}

impl EmbeddedSim {
    /// Starts the simulator on 127.0.0.1 with an ephemeral port.
    pub fn start(opts: &SimOptions) -> anyhow::Result<Self> {
        let cfg = sim_config(opts)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .thread_name("sb-sim")
            .build()
            .context("starting the simulator runtime")?;
        let handle = runtime.block_on(servebench_sim::start(cfg, ([127, 0, 0, 1], 0).into()))?;
        let addr = handle.local_addr();
        Ok(EmbeddedSim { runtime: Some(runtime), handle: Some(handle), addr })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
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
