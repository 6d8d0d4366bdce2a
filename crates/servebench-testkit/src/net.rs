//! Ports on 127.0.0.1 for tests of servers that cannot be reached.

use std::net::TcpListener;
use std::thread::JoinHandle;

/// A port on 127.0.0.1 that nothing listens on: an ephemeral port is bound, then closed, so a
/// connect to it is refused.
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local address").port()
}

/// A port whose server accepts one connection, closes it and goes away: the first connect
/// succeeds (a client's reachability probe), every later one is refused. Join the handle to
/// know the connection was taken.
pub fn accept_once() -> (u16, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local address").port();
    (port, std::thread::spawn(move || drop(l.accept())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_port_refuses_and_accept_once_takes_one_connection() {
        let e = std::net::TcpStream::connect(("127.0.0.1", closed_port())).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
        let (port, gone) = accept_once();
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
        gone.join().unwrap();
        let e = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
