//! Flags for watching a run while it happens and bounding its memory: the live dashboard
//! (`--tui`), the live Prometheus endpoint (`--metrics-port`) and the in-memory records cap
//! (`--max-records-in-memory`).

use clap::Args;

/// Live-observation and memory flags of a run (flattened into `RunArgs`).
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    /// Show the live terminal dashboard during the measured phase (progress and ETA,
    /// throughput, latency percentiles, failures, client health, server series): keys q/Ctrl-C
    /// stop gracefully, p pauses the view, Tab or 1-4 switch panels. Needs a terminal on stdin
    /// and stdout; off by default (docs/dashboard.md).
    #[arg(long, overrides_with = "no_tui", help_heading = "Output")]
    pub tui: bool,
    /// No live dashboard, even if a config file asks for one (the plain progress line).
    #[arg(long, overrides_with = "tui", help_heading = "Output")]
    pub no_tui: bool,
    /// While the run is in progress, serve the client's own metrics (requests, latency
    /// histograms, dispatch lateness, tokens/s) in Prometheus text format at
    /// http://HOST:PORT/metrics (0 = any free port; the address is printed).
    #[arg(long, value_name = "PORT", help_heading = "Output")]
    pub metrics_port: Option<u16>,
    /// Address the --metrics-port endpoint binds (default 127.0.0.1: this host only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1", value_parser = crate::cli::values::metrics_host, help_heading = "Output")]
    pub metrics_host: std::net::IpAddr,
    /// Request records held in memory (at least 1,024); beyond this they are written, sorted,
    /// to an unlinked temporary file and walked from there at the end, so results stay exact
    /// and memory does not grow with the run.
    #[arg(long, value_name = "N", default_value_t = servebench_runner::DEFAULT_MAX_RECORDS_IN_MEMORY, help_heading = "Output")]
    pub max_records_in_memory: usize,
}
