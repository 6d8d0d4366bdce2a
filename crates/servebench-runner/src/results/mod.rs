//! What a run's records become: its results assembled once (`assemble`: description, metrics,
//! steady state, probes, groups, and the exit policy), its description (`info`), its
//! steady-state window (`steady`), its console text and result document (`document`), the
//! group sections' view of its load (`groups`), where its files go (`paths`) and how its result
//! is written (`save`), the `--dry-run` block (`dry_run`), results and records read back for
//! `report` and `compare` (`inputs`) and a merged sharded run's description and result
//! (`merged`). The experiment engine (`crate::experiment`) assembles and writes each point's
//! result with the same functions.

pub mod assemble;
pub mod document;
pub mod dry_run;
pub mod groups;
pub mod info;
pub mod inputs;
pub mod merged;
pub mod paths;
mod prefix_cache;
pub mod save;
pub mod steady;
mod validity;

pub use assemble::{assemble, Assembly, RunEnd, RunResults};
pub use dry_run::dry_run_block;
pub use groups::group_info;
pub use info::{result_num_prompts, run_info};
pub use steady::{steady_state_of, Steady, SteadyOptions};
