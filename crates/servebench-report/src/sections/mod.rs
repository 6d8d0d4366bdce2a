//! The sections of a result, each owning its console rows and its JSON keys: pooling results
//! (embeddings, scoring, classification), token accounting, the output-length split, groups
//! (stages, LoRA adapters, shards), probe requests, the server side (`--scrape-metrics`,
//! `--profile`), the steady-state window, experiment summaries (sweep table, multi-run
//! aggregate), a merged run's shards and the comparison of two runs (`compare`). `console.rs`
//! and `json.rs` assemble them; shared formatting is in `fmt.rs`.

pub mod additions;
pub mod compare;
pub mod experiment;
pub mod groups;
pub mod http_phases;
pub mod output_split;
pub mod pooling;
pub mod probe;
pub mod server;
pub mod server_endpoints;
pub mod session_trees;
pub mod shards;
pub mod steady_state;
pub mod token_accounting;
