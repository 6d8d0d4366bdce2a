//! `--random-mm-bucket-config` and `--random-mm-limit-mm-per-prompt` parsers: any text must
//! parse or give an error; parsed buckets go through the same check the dataset applies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_data::dataset::random_mm::{check_buckets, parse_bucket_config, parse_limits};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    if which & 1 == 0 {
        if let Ok(buckets) = parse_bucket_config(text) {
            let _ = check_buckets(&buckets);
        }
    } else {
        let _ = parse_limits(text);
    }
});
