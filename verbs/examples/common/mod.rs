//! What the examples that measure many queue pairs share: a device pair on
//! one memory link with `qps` queue pairs connected between them, all
//! driven by the calling thread.

use std::time::{Duration, Instant};

use verbs::transport::memory::{MemoryLink, MemoryLinkConfig};
use verbs::{
    AcceptParams, CmEvent, CompletionQueue, ConnectParams, Device, ListenOptions, ProtectionDomain,
    QpInit, QueuePair,
};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Two devices on one memory link and their connected queue pairs.
pub struct LinkedPairs {
    pub client: Device,
    pub server: Device,
    pub client_pd: ProtectionDomain,
    pub server_pd: ProtectionDomain,
    /// The client's completion queue: room for `qps * depth` completions.
    pub client_cq: CompletionQueue,
    pub server_cq: CompletionQueue,
    /// (client, server) queue pairs, connected.
    pub pairs: Vec<(QueuePair, QueuePair)>,
}

/// Connects `qps` queue pairs between two devices on a new memory link,
/// failing if they are not all up within `stall`.
pub fn connect_pairs(
    qps: usize,
    depth: usize,
    port: u16,
    stall: Duration,
) -> Result<LinkedPairs, Error> {
    let mut cfg = MemoryLinkConfig::default();
    // smoltcp has no accept queue: keep a socket armed for every SYN.
    cfg.tuning.backlog = qps;
    let (a, b) = MemoryLink::pair(&cfg)?;
    let (client, server) = (Device::new(Box::new(a)), Device::new(Box::new(b)));
    let (client_pd, server_pd) = (client.alloc_pd(), server.alloc_pd());
    let (client_cq, server_cq) = (client.create_cq(qps * depth), server.create_cq(qps));
    let listener = server.listen(port, ListenOptions::default().with_backlog(qps))?;
    let mut pairs = Vec::with_capacity(qps);
    for _ in 0..qps {
        let c = client.create_qp(&client_pd, QpInit::new(&client_cq))?;
        c.connect(cfg.endpoint_b(port), ConnectParams::default())?;
        pairs.push((c, server.create_qp(&server_pd, QpInit::new(&server_cq))?));
    }
    let (mut accepted, mut up, start) = (0, 0, Instant::now());
    while up < 2 * qps {
        if start.elapsed() > stall {
            return Err("queue pairs did not connect".into());
        }
        client.progress();
        server.progress();
        while let Some(req) = listener.try_request() {
            req.accept(&pairs[accepted].1, AcceptParams::default())?;
            accepted += 1;
        }
        for (c, s) in &pairs {
            for qp in [c, s] {
                match qp.try_event() {
                    Some(CmEvent::Established(_)) => up += 1,
                    Some(other) => return Err(format!("connecting: {other:?}").into()),
                    None => {}
                }
            }
        }
    }
    Ok(LinkedPairs {
        client,
        server,
        client_pd,
        server_pd,
        client_cq,
        server_cq,
        pairs,
    })
}
