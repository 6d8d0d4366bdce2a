//! Kernel receive timestamps on real sockets (127.0.0.1): a response that sat in the kernel
//! before the client read it is timed before the read started with kernel stamps, after it
//! with user-space times; the client's report says which.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::StampSource;
use crate::transport::{ClientOptions, HttpClient};

/// A server that answers one request per connection, for as many connections as come, and
/// tells the test each time it has written an answer.
fn answering() -> (String, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let mut s = s.unwrap();
            let mut buf = [0u8; 4096];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello").unwrap();
            if tx.send(()).is_err() {
                return;
            }
            // Kept open until the next connection: the client reads after a wait.
            std::mem::forget(s);
        }
    });
    (url, rx)
}

/// Sends a GET on a new connection and waits until the answer was written (plus a margin for
/// loopback delivery) before reading it: the time of its first byte and the instant just
/// before the read.
async fn read_late(client: &HttpClient, written: &std::sync::mpsc::Receiver<()>) -> (Instant, Instant) {
    let mut conn = client.connect().await.unwrap();
    let req = http::Request::get(format!("{}/x", client.origin())).body(bytes::Bytes::new()).unwrap();
    conn.write_request(&req, None).await.unwrap();
    tokio::task::block_in_place(|| written.recv().unwrap());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let before_read = Instant::now();
    let (_, _, first_byte) = conn.read_head(false, None).await.unwrap();
    (first_byte, before_read)
}

/// A late read by a new client. With stamps on, the kernel turns packet stamping on for the
/// first stamping socket through a work queue: reads repeat (bounded) until one carries a
/// stamp, then the counters restart and the read that counts is made.
async fn late_read(kernel_timestamps: bool) -> (Instant, Instant, HttpClient) {
    let (url, written) = answering();
    let client =
        HttpClient::new(ClientOptions { base_url: url, kernel_timestamps, ..ClientOptions::default() })
            .unwrap();
    if client.receive_timestamps().source == StampSource::Kernel {
        for _ in 0..500 {
            read_late(&client, &written).await;
            if client.receive_timestamps().lag.kernel_reads > 0 {
                break;
            }
        }
        client.reset_receive_stats();
    }
    let (first_byte, before_read) = read_late(&client, &written).await;
    (first_byte, before_read, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_stamped_bytes_are_timed_before_the_read_that_took_them() {
    let (first_byte, before_read, client) = late_read(true).await;
    let report = client.receive_timestamps();
    if cfg!(all(target_os = "linux", target_pointer_width = "64")) {
        assert_eq!(report.source, StampSource::Kernel);
        // The bytes were in the kernel before the read began: only a kernel time can say so.
        assert!(first_byte < before_read, "kernel time after the read started");
        assert_eq!((report.lag.kernel_reads, report.lag.user_only_reads), (1, 0));
        // The read lag is user time − kernel time: at least the wait before the read.
        let lag_us = report.lag.max_us.unwrap();
        assert!(lag_us >= (before_read - first_byte).as_micros() as f64 - 1.0);
    } else {
        assert!(matches!(report.source, StampSource::UserSpace(_)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kernel_stamps_bytes_are_timed_by_the_read_and_the_report_says_why() {
    let (first_byte, before_read, client) = late_read(false).await;
    assert!(first_byte >= before_read, "a user-space time is taken after the read");
    let report = client.receive_timestamps();
    assert_eq!(report.source, StampSource::UserSpace("--no-kernel-timestamps".into()));
    assert_eq!(report.lag, super::ReadLag::default());
    assert_eq!(report.source.describe(), "user-space read times (--no-kernel-timestamps)");
}

/// Short reads clear the socket's readiness (no `recvmsg` that can only say `EAGAIN`): each of
/// many small writes, sent only after the previous one was read, must still wake the reader
/// and arrive whole and in order — a readiness cleared wrongly would hang here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stamped_short_reads_each_wake_the_reader_for_the_next_bytes() {
    use tokio::io::AsyncReadExt;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        for i in 0..200u32 {
            s.write_all(format!("chunk {i};").as_bytes()).unwrap();
            if go_rx.recv().is_err() {
                return;
            }
        }
    });
    let stamping = super::Stamping::new(true);
    let mut tcp = stamping.wrap(tokio::net::TcpStream::connect(addr).await.unwrap());
    let mut buf = [0u8; 4096];
    for i in 0..200u32 {
        let want = format!("chunk {i};");
        let mut got = Vec::new();
        while got.len() < want.len() {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "end of stream after {} bytes of {want:?}", got.len());
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(String::from_utf8(got).unwrap(), want);
        let _ = go_tx.send(());
    }
    server.join().unwrap();
}
