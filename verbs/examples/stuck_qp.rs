//! Debugging a stuck queue pair with `QueuePair::stats`.
//!
//! A client RDMA-Writes 8 MiB to a server over kernel TCP on loopback; the
//! server stops driving its device (as a peer whose program hangs would),
//! so nothing reads its socket. The client's completions stop coming. Its
//! stats say why: Writes outstanding, a Read whose response never came
//! (ORD in use), octets queued in TCP that the peer does not take, no
//! TERMINATE and no timeouts: the peer is alive (it acknowledges) but not
//! reading. The server's stats show the same backlog from its side:
//! octets received and unread. Then the server resumes and the figures
//! drain.
//!
//! `cargo run -p iwarp-verbs --example stuck_qp`

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::thread;
use std::time::Duration;

use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::{wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, QpInit};

const TIMEOUT: Duration = Duration::from_secs(10);
const WRITE: usize = 256 * 1024;
const WRITES: u64 = 32;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn kernel_device() -> Device {
    let cfg = KernelConfig::default()
        .bind_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .socket_buffers(Some(64 * 1024));
    Device::new(Box::new(KernelTransport::new(cfg)))
}

fn main() -> Result<(), Error> {
    let (client, server) = (kernel_device(), kernel_device());
    let _client_thread = client.spawn_progress_thread();
    let server_thread = server.spawn_progress_thread();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(256), server.create_cq(16));
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq))?;
    let sqp = server.create_qp(&spd, QpInit::new(&scq))?;
    let listener = server.listen(0, ListenOptions::default())?;
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listener.port());
    cqp.connect(addr, ConnectParams::default())?;
    listener
        .request(TIMEOUT)
        .ok_or("no connect request")?
        .accept(&sqp, AcceptParams::default())?;
    cqp.wait_established(TIMEOUT)?;
    sqp.wait_established(TIMEOUT)?;

    let target = spd.register(WRITE, Access::ALL)?;
    let source = cpd.register(WRITE, Access::LOCAL_WRITE)?;
    println!("server stops reading");
    drop(server_thread);
    cqp.post_send(wr::read(0, source.sge(0, 8)?, target.rkey(), target.addr()))?;
    for id in 1..=WRITES {
        cqp.post_send(wr::write(
            id,
            vec![source.sge_all()],
            target.rkey(),
            target.addr(),
        ))?;
    }
    let mut done = 0;
    while let Some(wc) = ccq.wait_one(Duration::from_millis(500))? {
        done += u64::from(wc.is_success());
    }
    println!(
        "client: {done} of {} work requests completed, then nothing for 500 ms",
        WRITES + 1
    );
    println!("\nclient's queue pair:\n{}", cqp.stats());
    println!("\nserver's queue pair:\n{}", sqp.stats());

    println!("\nserver reads again");
    let _server_thread = server.spawn_progress_thread();
    while done < WRITES + 1 {
        let wc = ccq.wait_one(TIMEOUT)?.ok_or("no completion")?;
        done += u64::from(wc.is_success());
    }
    thread::sleep(Duration::from_millis(50));
    println!("\nclient's queue pair:\n{}", cqp.stats());
    Ok(())
}
