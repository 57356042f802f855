//! Send ping-pong on tokio over the in-memory link: a server and a client
//! task on one single-threaded runtime, both devices driven by the runtime
//! (no progress thread). Runs without privileges and ends on its own.
//!
//! `cargo run -p verbs --features tokio --example async_pingpong [ROUNDS]`

use std::time::{Duration, Instant};

use verbs::tokio::{drive, AsyncCq, AsyncListener, AsyncQp};
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, QpInit, WcOpcode};

const PORT: u16 = 7000;
const SIZE: usize = 64;

type Error = Box<dyn std::error::Error>;

async fn server(device: Device, rounds: u64) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = AsyncCq::new(&device, 64)?;
    let qp = AsyncQp::new(device.create_qp(&pd, QpInit::new(cq.cq()))?)?;
    let buf = pd.register(SIZE, Access::LOCAL_WRITE)?;
    qp.post_recv(wr::recv(0, vec![buf.sge_all()]))?;

    let listener = AsyncListener::listen(&device, PORT, ListenOptions::default())?;
    let request = listener.request().await?;
    println!("server: request from {:?}", request.peer_addr);
    request.accept(&qp, AcceptParams::default())?;
    qp.established().await?;
    for _ in 0..rounds {
        let wc = cq.next().await?;
        assert!(wc.is_success() && wc.opcode == WcOpcode::Recv, "{wc:?}");
        // Echo what came, then re-post the buffer for the next ping. The
        // Send completes before the buffer is posted again, so the echo
        // is not overwritten under it.
        qp.post_send(wr::send(1, vec![buf.sge(0, wc.byte_len as usize)?]))?;
        let sent = cq.next().await?;
        assert!(sent.is_success(), "{sent:?}");
        qp.post_recv(wr::recv(0, vec![buf.sge_all()]))?;
    }
    Ok(())
}

async fn client(device: Device, remote: std::net::SocketAddr, rounds: u64) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = AsyncCq::new(&device, 64)?;
    let qp = AsyncQp::new(device.create_qp(&pd, QpInit::new(cq.cq()))?)?;
    let ping = pd.register(SIZE, Access::LOCAL_WRITE)?;
    let pong = pd.register(SIZE, Access::LOCAL_WRITE)?;
    // The server's first receive may not be posted before we connect:
    // retry the connect a few times while the listener comes up.
    let mut tries = 0;
    let info = loop {
        match qp.connect(remote, ConnectParams::default()).await {
            Ok(info) => break info,
            Err(e) if tries < 20 => {
                tries += 1;
                println!("client: connect failed ({e}), retrying");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => return Err(e.into()),
        }
    };
    println!(
        "client: connected to {:?} (MPA rev {})",
        info.peer_addr, info.revision
    );
    let start = Instant::now();
    for i in 0..rounds {
        ping.write(0, &i.to_le_bytes())?;
        qp.post_recv(wr::recv(2, vec![pong.sge_all()]))?;
        qp.post_send(wr::send(1, vec![ping.sge_all()]))?;
        // The Send's completion and the echo's, in either order.
        let mut echoed = None;
        for _ in 0..2 {
            let wc = cq.next().await?;
            assert!(wc.is_success(), "{wc:?}");
            if wc.opcode == WcOpcode::Recv {
                echoed = Some(wc.byte_len);
            }
        }
        assert_eq!(echoed, Some(SIZE as u32));
        let mut back = [0; 8];
        pong.read(0, &mut back)?;
        assert_eq!(u64::from_le_bytes(back), i, "the echo carries the ping");
    }
    let took = start.elapsed();
    println!(
        "client: {rounds} round trips of {SIZE} bytes in {took:?} ({:.1} us each)",
        took.as_secs_f64() * 1e6 / rounds.max(1) as f64
    );
    qp.disconnect();
    Ok(())
}

fn main() -> Result<(), Error> {
    let rounds: u64 = std::env::args().nth(1).map_or(Ok(1000), |a| a.parse())?;
    let cfg = MemoryLinkConfig::default();
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client_dev, server_dev) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let _drivers = (drive(&client_dev)?, drive(&server_dev)?);
        let server =
            tokio::spawn(
                async move { server(server_dev, rounds).await.map_err(|e| e.to_string()) },
            );
        client(client_dev, cfg.endpoint_b(PORT), rounds).await?;
        server.await?.map_err(Error::from)?;
        println!("done");
        Ok(())
    })
}
