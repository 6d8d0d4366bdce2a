//! servebench-client
