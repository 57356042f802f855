//! A client and a server over the in-memory link, each on its own thread
//! with its own device: the server advertises a region in its accept
//! private data (as rping does), the client Writes into it, Reads it back
//! and Sends a message, and both print their completions. Needs no
//! privileges and ends on its own.
//!
//! `cargo run -p iwarp-verbs --example memory_pair`

use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, QpInit, STag, WorkCompletion,
};

const PORT: u16 = 7174;
const TIMEOUT: Duration = Duration::from_secs(10);

type Error = Box<dyn std::error::Error + Send + Sync>;

fn show(who: &str, wc: &WorkCompletion) {
    println!(
        "{who}: completion wr_id={} {:?} {:?} {} bytes",
        wc.wr_id, wc.opcode, wc.status, wc.byte_len
    );
}

fn server(device: Device) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(16);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let target = pd.register(
        64,
        Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
    )?;
    let inbox = pd.register(64, Access::LOCAL_WRITE)?;
    qp.post_recv(wr::recv(100, vec![inbox.sge_all()]))?;

    let listener = device.listen(PORT, ListenOptions::default())?;
    let request = listener.request(TIMEOUT).ok_or("no connect request")?;
    println!("server: connect request from {:?}", request.peer_addr);
    // The region's key and address go to the client in the MPA reply.
    let mut advert = target.rkey().0.to_be_bytes().to_vec();
    advert.extend_from_slice(&target.addr().to_be_bytes());
    let params = AcceptParams::default().private_data(advert);
    request.accept(&qp, params)?;
    qp.wait_established(TIMEOUT)?;

    let wc = cq.wait_one(TIMEOUT)?.ok_or("no Send arrived")?;
    show("server", &wc);
    let mut msg = vec![0; wc.byte_len as usize];
    inbox.read(0, &mut msg)?;
    println!("server: received {:?}", String::from_utf8_lossy(&msg));
    println!(
        "server: its region now holds {:?}",
        String::from_utf8_lossy(&target.to_vec()[..12])
    );
    qp.disconnect();
    Ok(())
}

fn client(device: Device, remote: SocketAddr) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(16);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let local = pd.register(64, Access::LOCAL_WRITE)?;

    let info = (0..50)
        .find_map(|_| {
            // The server thread may not be listening yet: retry briefly.
            let r = qp.connect_blocking(remote, ConnectParams::default(), TIMEOUT);
            r.map_err(|_| thread::sleep(Duration::from_millis(10))).ok()
        })
        .ok_or("could not connect")?;
    let advert: [u8; 12] = info.private_data[..12].try_into()?;
    let rkey = STag(u32::from_be_bytes(advert[..4].try_into()?));
    let raddr = u64::from_be_bytes(advert[4..].try_into()?);
    println!("client: connected; server region {rkey:?} at {raddr:#x}");

    local.write(0, b"hello, iWARP")?;
    qp.post_send(wr::write(1, vec![local.sge(0, 12)?], rkey, raddr))?;
    show(
        "client",
        &cq.wait_one(TIMEOUT)?.ok_or("no Write completion")?,
    );

    qp.post_send(wr::read(2, local.sge(32, 12)?, rkey, raddr))?;
    show(
        "client",
        &cq.wait_one(TIMEOUT)?.ok_or("no Read completion")?,
    );
    let mut back = [0; 12];
    local.read(32, &mut back)?;
    println!("client: read back {:?}", String::from_utf8_lossy(&back));

    local.write(0, b"bye")?;
    qp.post_send(wr::send(3, vec![local.sge(0, 3)?]))?;
    show(
        "client",
        &cq.wait_one(TIMEOUT)?.ok_or("no Send completion")?,
    );
    // Keep driving this side until the server hangs up: a completed Send
    // is on its way, not necessarily received yet.
    let ev = qp.wait_event(TIMEOUT).ok_or("the server did not hang up")?;
    println!("client: {ev:?}");
    Ok(())
}

fn main() -> Result<(), Error> {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client_dev, server_dev) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    // Each side's blocking calls drive its own device (caller-driven
    // progress); the server keeps going while the client's thread waits.
    let s = thread::spawn(move || server(server_dev));
    let c = thread::spawn(move || client(client_dev, cfg.endpoint_b(PORT)));
    c.join().map_err(|_| "client panicked")??;
    s.join().map_err(|_| "server panicked")??;
    println!("done");
    Ok(())
}
