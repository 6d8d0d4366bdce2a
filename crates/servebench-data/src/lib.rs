//! servebench-data
