//! What happens to a record once its request ends: counting output text again (`retokenize`),
//! the records file (`sink`), the in-memory store that spills past a bound (`collector`) and a
//! sharded run's records files, for `merge` (`shard_files`).

pub mod collector;
pub mod retokenize;
pub mod shard_files;
pub mod sink;
