//! Opens a pair of devices on the in-memory link, connects a client to a
//! server, does one RDMA Write and checks that the bytes arrived in the
//! server's region (a Send after the Write tells the server to look: a
//! Write is silent at its target, and RDMAP places it before the Send
//! completes). Exits non-zero if anything fails.

use std::thread;
use std::time::Duration;

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, QpInit, STag};

const PORT: u16 = 7180;
const TIMEOUT: Duration = Duration::from_secs(10);
const MESSAGE: &[u8] = b"written by a downstream crate";

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Accepts one connection, advertises a region in the accept's private
/// data, and returns what the region holds once the client's Send arrived.
fn server(device: Device) -> Result<Vec<u8>, Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(4);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let target = pd.register(MESSAGE.len(), Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    let inbox = pd.register(16, Access::LOCAL_WRITE)?;
    qp.post_recv(wr::recv(1, vec![inbox.sge_all()]))?;
    let listener = device.listen(PORT, ListenOptions::default())?;
    let request = listener.request(TIMEOUT).ok_or("no connect request")?;
    let mut advert = target.rkey().0.to_be_bytes().to_vec();
    advert.extend_from_slice(&target.addr().to_be_bytes());
    request.accept(&qp, AcceptParams::default().private_data(advert))?;
    qp.wait_established(TIMEOUT)?;
    let wc = cq.wait_one(TIMEOUT)?.ok_or("no Send arrived")?;
    if !wc.is_success() {
        return Err(format!("the Send failed: {wc:?}").into());
    }
    let placed = target.to_vec();
    qp.disconnect();
    Ok(placed)
}

fn client(device: Device, cfg: &MemoryLinkConfig) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = device.create_cq(4);
    let qp = device.create_qp(&pd, QpInit::new(&cq))?;
    let local = pd.register(MESSAGE.len(), Access::LOCAL_WRITE)?;
    let info = (0..50)
        .find_map(|_| {
            // The server may not be listening yet: retry briefly.
            let r = qp.connect_blocking(cfg.endpoint_b(PORT), ConnectParams::default(), TIMEOUT);
            r.map_err(|_| thread::sleep(Duration::from_millis(10))).ok()
        })
        .ok_or("could not connect")?;
    let advert: [u8; 12] = info
        .private_data
        .get(..12)
        .ok_or("short advert")?
        .try_into()?;
    let rkey = STag(u32::from_be_bytes(advert[..4].try_into()?));
    let raddr = u64::from_be_bytes(advert[4..].try_into()?);

    local.write(0, MESSAGE)?;
    qp.post_send(wr::write(1, vec![local.sge_all()], rkey, raddr))?;
    qp.post_send(wr::send(2, Vec::new()))?;
    for _ in 0..2 {
        let wc = cq.wait_one(TIMEOUT)?.ok_or("no completion")?;
        if !wc.is_success() {
            return Err(format!("a request failed: {wc:?}").into());
        }
    }
    // Keep driving this side until the server hangs up, so that the Send
    // gets there.
    qp.wait_event(TIMEOUT).ok_or("the server did not hang up")?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client_dev, server_dev) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let server = thread::spawn(move || server(server_dev));
    let client_result = client(client_dev, &cfg);
    let placed = server.join().map_err(|_| "server panicked")??;
    client_result?;
    if placed != MESSAGE {
        return Err(format!("the server's region holds {placed:?}").into());
    }
    println!("RDMA Write of {} bytes placed intact", MESSAGE.len());
    Ok(())
}
