//! The `shards` key of a merged result (`servebench merge`; docs/scale-out.md): one entry per
//! shard, written by [`crate::sections::shards`] and read back here.

use serde::{Deserialize, Serialize};
use servebench_core::shard::ShardSummary;

use super::lenient::{lenient, object};

/// One entry of `shards`: a merged shard, or a missing one (`--allow-missing-shards`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShardEntry {
    Missing(MissingShard),
    Merged(Box<MergedShard>),
}

/// A shard whose records file was not given: `{shard_index, missing: true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingShard {
    pub shard_index: u32,
    pub missing: bool,
}

/// A merged shard: where its records came from, how its clock lined up, its client health.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    #[serde(default, deserialize_with = "lenient")]
    pub shard_index: Option<u32>,
    #[serde(default, deserialize_with = "lenient")]
    pub records_file: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub records: Option<u64>,
    /// This shard's anchor − the merged origin, µs.
    #[serde(default, deserialize_with = "lenient")]
    pub origin_offset_us: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub anchor_minus_start_at_us: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    pub waited_for_start_us: Option<i64>,
    /// The shard's summary line (`null` when the shard did not finish).
    #[serde(default, deserialize_with = "object")]
    pub client_health: Option<ShardSummary>,
}
