//! servebench-report
