//! A program's own buffer as a memory region, without copies: the server
//! registers a `BytesMut`, the client RDMA-Writes into it over the
//! in-memory link, and the server takes the very same `BytesMut` back at
//! deregistration. Then it times that hand-back against the copy a
//! program needs when the bytes stay with the region (`to_vec`).
//!
//! `cargo run --release -p iwarp-verbs --example zero_copy`

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, ProtectionDomain, QpInit, STag,
};

const PORT: u16 = 7175;
const TIMEOUT: Duration = Duration::from_secs(10);
const LEN: usize = 1 << 20;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 1) as u8).collect()
}

fn server(device: Device) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(16);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let buffer = BytesMut::zeroed(LEN);
    let at = buffer.as_ptr();
    let target = pd.register_buffer(buffer, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let inbox = pd.register(16, Access::LOCAL_WRITE)?;
    qp.post_recv(wr::recv(1, vec![inbox.sge_all()]))?;

    let listener = device.listen(PORT, ListenOptions::default())?;
    let request = listener.request(TIMEOUT).ok_or("no connect request")?;
    let mut advert = target.rkey().0.to_be_bytes().to_vec();
    advert.extend_from_slice(&target.addr().to_be_bytes());
    request.accept(&qp, AcceptParams::default().private_data(advert))?;
    qp.wait_established(TIMEOUT)?;

    // The client's Send follows its Write: once it is here, so is the data.
    let wc = cq.wait_one(TIMEOUT)?.ok_or("no Send arrived")?;
    assert!(wc.is_success(), "{wc:?}");
    let back: BytesMut = target
        .deregister_into()
        .map_err(|_| "the buffer is still shared")?;
    println!(
        "server: got its BytesMut back: same allocation {}, {} bytes, as written {}",
        back.as_ptr() == at,
        back.len(),
        back[..] == pattern(LEN)[..]
    );
    qp.disconnect();
    measure(&pd)
}

fn client(device: Device, remote: SocketAddr) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(16);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let source = pd.register_vec(pattern(LEN), Access::NONE)?;
    let info = (0..50)
        .find_map(|_| {
            let r = qp.connect_blocking(remote, ConnectParams::default(), TIMEOUT);
            r.map_err(|_| thread::sleep(Duration::from_millis(10))).ok()
        })
        .ok_or("could not connect")?;
    let rkey = STag(u32::from_be_bytes(info.private_data[..4].try_into()?));
    let raddr = u64::from_be_bytes(info.private_data[4..12].try_into()?);
    qp.post_send(wr::write(1, vec![source.sge_all()], rkey, raddr))?;
    qp.post_send(wr::send(2, vec![]))?;
    for _ in 0..2 {
        let wc = cq.wait_one(TIMEOUT)?.ok_or("no completion")?;
        assert!(wc.is_success(), "{wc:?}");
    }
    qp.wait_event(TIMEOUT).ok_or("the server did not hang up")?;
    Ok(())
}

/// Hands `len` received bytes to the program as an owned buffer `rounds`
/// times, both ways; prints the cost of each.
fn measure(pd: &ProtectionDomain) -> Result<(), Error> {
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    println!("hand-back of a region's bytes as an owned buffer, per message:");
    println!(
        "{:>10} {:>16} {:>16}",
        "bytes", "copy (to_vec)", "zero-copy"
    );
    for len in [4 << 10, 64 << 10, 1 << 20, 16 << 20] {
        let rounds = (256 << 20) / len;
        let mr = pd.register_buffer(BytesMut::zeroed(len), access)?;
        let start = Instant::now();
        let mut sum = 0usize;
        for _ in 0..rounds {
            let owned = mr.to_vec();
            sum = sum.wrapping_add(owned[len - 1] as usize);
        }
        let copy = start.elapsed() / rounds as u32;

        let mut mr = Some(mr);
        let start = Instant::now();
        for _ in 0..rounds {
            let region = mr.take().ok_or("no region")?;
            let owned: BytesMut = region.deregister_into().map_err(|_| "shared")?;
            sum = sum.wrapping_add(owned[len - 1] as usize);
            // The next message lands in the same memory.
            mr = Some(pd.register_buffer(owned, access)?);
        }
        let zero = start.elapsed() / rounds as u32;
        println!("{len:>10} {copy:>16.2?} {zero:>16.2?}");
        std::hint::black_box(sum);
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client_dev, server_dev) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let s = thread::spawn(move || server(server_dev));
    let c = thread::spawn(move || client(client_dev, cfg.endpoint_b(PORT)));
    c.join().map_err(|_| "client panicked")??;
    s.join().map_err(|_| "server panicked")??;
    Ok(())
}
