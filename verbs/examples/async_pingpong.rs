//! Send ping-pong on tokio: a server and a client task on one
//! single-threaded runtime, both devices driven by the runtime (no progress
//! thread). Runs without privileges and ends on its own.
//!
//! `cargo run -p iwarp-verbs --features tokio --example async_pingpong [ROUNDS] [TRANSPORT]`
//!
//! TRANSPORT: `memory` (the in-memory link, the default), `kernel` (kernel
//! TCP on 127.0.0.1, the runtime watching its epoll readiness descriptor)
//! or `kernel-thread` (kernel TCP with a progress thread per device
//! instead, for comparison).

use std::time::{Duration, Instant};

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use verbs::tokio::{drive, AsyncCq, AsyncListener, AsyncQp};

use verbs::transport::kernel::{KernelConfig, KernelTransport};
use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{wr, AcceptParams, Access, ConnectParams, Device, ListenOptions, QpInit, WcOpcode};

const PORT: u16 = 7000;
const SIZE: usize = 64;

type Error = Box<dyn std::error::Error>;

async fn server(device: Device, listener: AsyncListener, rounds: u64) -> Result<(), Error> {
    let pd = device.alloc_pd();
    let cq = AsyncCq::new(&device, 64)?;
    let qp = AsyncQp::new(device.create_qp(&pd, QpInit::new(cq.cq()))?)?;
    // Two receive buffers, both posted before the client can send: the
    // next ping may arrive before the Send echoing this one completed (a
    // progress thread can finish the exchange in any order), and a ping
    // that finds no receive posted ends the connection (RFC 5041: no
    // buffer is a TERMINATE, not a retry). A buffer is posted again only
    // once its echo's Send completed, so no echo is overwritten under it.
    let bufs = [
        pd.register(SIZE, Access::LOCAL_WRITE)?,
        pd.register(SIZE, Access::LOCAL_WRITE)?,
    ];
    for (k, buf) in bufs.iter().enumerate() {
        qp.post_recv(wr::recv(k as u64, vec![buf.sge_all()]))?;
    }

    let request = listener.request().await?;
    println!("server: request from {:?}", request.peer_addr);
    request.accept(&qp, AcceptParams::default())?;
    qp.established().await?;
    // Receives carry wr_id 0 or 1 (the buffer); echoes 10 + the buffer.
    let (mut pinged, mut echoed) = (0, 0);
    while echoed < rounds {
        let wc = cq.next().await?;
        assert!(wc.is_success(), "{wc:?}");
        match wc.opcode {
            WcOpcode::Recv => {
                let k = wc.wr_id as usize;
                let echo = bufs[k].sge(0, wc.byte_len as usize)?;
                qp.post_send(wr::send(10 + wc.wr_id, vec![echo]))?;
                pinged += 1;
            }
            _ => {
                let k = (wc.wr_id - 10) as usize;
                echoed += 1;
                if pinged < rounds {
                    qp.post_recv(wr::recv(k as u64, vec![bufs[k].sge_all()]))?;
                }
            }
        }
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
    let transport = std::env::args().nth(2).unwrap_or_else(|| "memory".into());
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    // The devices, the port to listen on (0: any free one) and where the
    // client finds the listener once it is bound.
    let (client_dev, server_dev, port, remote): (_, _, _, Box<dyn Fn(u16) -> SocketAddr>) =
        match transport.as_str() {
            "memory" => {
                let cfg = MemoryLinkConfig::default();
                let (a, b) = MemoryLink::pair(&cfg)?;
                let (a, b) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
                (a, b, PORT, Box::new(move |p| cfg.endpoint_b(p)))
            }
            "kernel" | "kernel-thread" => {
                let cfg = KernelConfig::default().bind_ip(localhost);
                let kernel = || Device::new(Box::new(KernelTransport::new(cfg.clone())));
                (
                    kernel(),
                    kernel(),
                    0,
                    Box::new(move |p| SocketAddr::new(localhost, p)),
                )
            }
            other => return Err(format!("unknown transport {other:?}").into()),
        };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let _drivers = if transport == "kernel-thread" {
            (
                None,
                Some((
                    client_dev.spawn_progress_thread(),
                    server_dev.spawn_progress_thread(),
                )),
            )
        } else {
            (Some((drive(&client_dev)?, drive(&server_dev)?)), None)
        };
        let listener = AsyncListener::listen(&server_dev, port, ListenOptions::default())?;
        let addr = remote(listener.listener().port());
        let server = tokio::spawn(async move {
            server(server_dev, listener, rounds)
                .await
                .map_err(|e| e.to_string())
        });
        client(client_dev, addr, rounds).await?;
        server.await?.map_err(Error::from)?;
        println!("done");
        Ok(())
    })
}
