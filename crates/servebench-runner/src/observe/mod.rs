//! Watching the run: what the run tells its caller (`observer`), live metrics (`live`) and
//! our own `/metrics` endpoint for them (`endpoint`), the client's health (`health`), notes
//! about the network path (`network_notes`), and the server side: scraping its `/metrics`
//! (`scrape`, its latest key figures for the dashboard in `server_live`) and its profiler (`profiling`), both started and stopped with the measured phase
//! (`server_side`).

pub mod endpoint;
pub mod health;
pub mod live;
pub mod network_notes;
pub mod notice;
pub mod observer;
pub mod profiling;
pub mod scrape;
pub mod server_live;
pub mod server_side;
