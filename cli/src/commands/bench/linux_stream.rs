//! One bulk stream of Linux kernel TCP between two network namespaces,
//! its congestion controller pinned on both sockets: the Linux side of
//! the router baseline ([`super::linux_tcp`]), the modelled wire
//! ([`super::wire_linux`]) and shared bottlenecks ([`super::share`]).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use verbs::transport::tap::netns::in_netns;

/// Bytes per write and per read.
const CHUNK: usize = 256 * 1024;

/// One bulk stream from `sender_ns` to `server` in `receiver_ns`, with
/// controller `cc` on both sockets; goodput over `duration` after
/// `warm_up`, in Gbit/s.
pub(crate) fn stream(
    sender_ns: &str,
    receiver_ns: &str,
    cc: &str,
    server: SocketAddr,
    warm_up: Duration,
    duration: Duration,
) -> Result<f64, String> {
    let listener = in_netns(receiver_ns, || TcpListener::bind(server))
        .and_then(|r| r)
        .map_err(|e| format!("Linux TCP listen in {receiver_ns}: {e}"))?;
    // Pinned before the connection exists, so the handshake's initial
    // window is already the controller's.
    let client = in_netns(sender_ns, || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        s.set_tcp_congestion(cc.as_bytes())?;
        s.connect_timeout(&server.into(), Duration::from_secs(5))?;
        Ok::<TcpStream, std::io::Error>(s.into())
    })
    .and_then(|r| r)
    .map_err(|e| format!("Linux TCP connect from {sender_ns} with {cc}: {e}"))?;
    let (accepted, _) = listener
        .accept()
        .map_err(|e| format!("Linux TCP accept: {e}"))?;
    for s in [&client, &accepted] {
        pin_congestion_control(s, cc)?;
    }
    let received = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let stopper = client
        .try_clone()
        .map_err(|e| format!("Linux TCP socket: {e}"))?;
    std::thread::scope(|s| {
        s.spawn(|| drain(accepted, &received, &stop));
        s.spawn(|| fill(client, &stop));
        std::thread::sleep(warm_up);
        let (start, first) = (Instant::now(), received.load(Ordering::Relaxed));
        std::thread::sleep(duration);
        let bytes = received.load(Ordering::Relaxed) - first;
        let secs = start.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        // Reset on close, so the unsent rest of the send buffer is not
        // sent (and counted) after the measurement.
        let _ = socket2::SockRef::from(&stopper).set_linger(Some(Duration::ZERO));
        let _ = stopper.shutdown(std::net::Shutdown::Both);
        Ok(bytes as f64 * 8.0 / secs / 1e9)
    })
}

/// Sets `cc` on `socket` (`TCP_CONGESTION`) and reads it back, so the
/// figure is named after the controller that ran (`modprobe tcp_CC` when
/// the kernel lacks it).
pub(crate) fn pin_congestion_control(socket: &TcpStream, cc: &str) -> Result<(), String> {
    let s = socket2::SockRef::from(socket);
    if s.set_tcp_congestion(cc.as_bytes()).is_err() {
        let _ = Command::new("modprobe").arg(format!("tcp_{cc}")).output();
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| format!("TCP_CONGESTION {cc}: {e}"))?;
    }
    let got = s
        .tcp_congestion()
        .map_err(|e| format!("TCP_CONGESTION: {e}"))?;
    let got = String::from_utf8_lossy(&got);
    if got.trim_end_matches('\0') == cc {
        Ok(())
    } else {
        Err(format!("asked for {cc}, the socket runs {got}"))
    }
}

fn fill(mut socket: TcpStream, stop: &AtomicBool) {
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8).collect();
    while !stop.load(Ordering::Relaxed) {
        if socket.write_all(&data).is_err() {
            break;
        }
    }
}

fn drain(mut socket: TcpStream, received: &AtomicU64, stop: &AtomicBool) {
    // Reads time out now and then, so the end of the measurement ends this
    // even while the stream's last segments wait for retransmission.
    let _ = socket.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; CHUNK];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
}
