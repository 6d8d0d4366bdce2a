//! What happens to a record once its request ends: counting output text again (`retokenize`),
//! the records file (`sink`) and the in-memory store that spills past a bound (`collector`).

pub mod collector;
pub mod retokenize;
pub mod sink;
