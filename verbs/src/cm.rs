//! The connection manager, shaped like rdma_cm: listen, connect with private
//! data, accept or reject a connect request, and the events of a queue
//! pair's connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::channel::EventChannel;
use crate::device::{Device, DeviceShared, Watched};
use crate::engine::PendingRequest;
use crate::qp::QueuePair;
use crate::types::VerbsError;

pub use crate::types::{
    AcceptParams, CmEvent, ConnectParams, ConnectionInfo, CrcPolicy, DisconnectReason,
    ListenOptions, MpaOptions, Rtr, RtrSet,
};

/// A connect request waiting for [`accept`](ConnectRequest::accept) or
/// [`reject`](ConnectRequest::reject). Dropping it rejects it.
#[derive(Debug)]
pub struct ConnectRequest {
    pub(crate) id: u64,
    pub(crate) device: Arc<DeviceShared>,
    pub(crate) answered: bool,
    /// Where the request came from, if the transport knows.
    pub peer_addr: Option<SocketAddr>,
    /// The initiator's private data (without any IRD/ORD block).
    pub private_data: Vec<u8>,
    /// The MPA revision of the request.
    pub revision: u8,
    /// The initiator asked for CRC.
    pub crc: bool,
    /// The initiator wants markers.
    pub markers: bool,
    /// The initiator's IRD and ORD (revision 2), if sent.
    pub ird: Option<u16>,
    /// (See `ird`.)
    pub ord: Option<u16>,
    /// The initiator asked for peer-to-peer mode with these RTR kinds.
    pub p2p: Vec<Rtr>,
}

impl ConnectRequest {
    /// The application's view of a request the engine queued.
    fn new(pending: PendingRequest, device: Arc<DeviceShared>) -> Self {
        let info = pending.info;
        ConnectRequest {
            id: pending.id,
            device,
            answered: false,
            peer_addr: pending.peer_addr,
            private_data: info.private_data,
            revision: info.revision,
            crc: info.crc,
            markers: info.markers,
            ird: info.ird,
            ord: info.ord,
            p2p: info.p2p,
        }
    }

    /// Accepts on `qp`, which must not be connected yet. The queue pair
    /// reports [`CmEvent::Established`] once the initiator's first FPDU may
    /// flow.
    ///
    /// If accepting fails (the queue pair is connected already, the
    /// parameters are invalid) the request is rejected.
    pub fn accept(mut self, qp: &QueuePair, params: AcceptParams) -> Result<(), VerbsError> {
        let r = self
            .device
            .with_transport_engine(|e| e.accept(self.id, qp.num, params));
        self.answered = r.is_ok();
        r
    }

    /// Rejects with `private_data` in an MPA reply with the R bit.
    pub fn reject(mut self, private_data: &[u8]) -> Result<(), VerbsError> {
        self.answered = true;
        self.device.with_engine(|e| e.reject(self.id, private_data))
    }
}

impl Drop for ConnectRequest {
    fn drop(&mut self) {
        if !self.answered {
            let id = self.id;
            let _ = self.device.with_engine(|e| e.reject(id, &[]));
        }
    }
}

impl Device {
    /// Listens for connect requests on `port`.
    pub fn listen(&self, port: u16, opts: ListenOptions) -> Result<Listener, VerbsError> {
        let (id, port) = self
            .shared
            .with_transport_engine(|e| e.listen(port, opts))?;
        Ok(Listener {
            id,
            port,
            device: self.shared.clone(),
        })
    }
}

/// A listening endpoint.
#[derive(Debug)]
pub struct Listener {
    pub(crate) id: u32,
    pub(crate) port: u16,
    pub(crate) device: Arc<DeviceShared>,
}

impl Listener {
    /// The port listened on (the one picked, for port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The next connect request, if one has arrived (drives progress once
    /// when no progress thread runs).
    pub fn try_request(&self) -> Option<ConnectRequest> {
        self.device.progress_if_caller_driven();
        self.device
            .with_transport_engine(|e| e.take_request(self.id))
            .map(|r| ConnectRequest::new(r, self.device.clone()))
    }

    /// Makes `channel` readable whenever a connect request waits for
    /// [`Listener::try_request`] (see [`EventChannel`] for who drives
    /// progress). Fires at once if one waits already.
    pub fn watch_requests(&self, channel: &EventChannel) {
        self.device.watch(Watched::Listener(self.id), &channel.fd);
    }

    /// Blocks for the next connect request; `None` on timeout.
    pub fn request(&self, timeout: Duration) -> Option<ConnectRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = self
                .device
                .with_transport_engine(|e| e.take_request(self.id))
            {
                return Some(ConnectRequest::new(r, self.device.clone()));
            }
            if Instant::now() >= deadline {
                return None;
            }
            let id = self.id;
            self.device
                .block_until_engine(deadline, &|e| e.has_request(id));
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let id = self.id;
        self.device.unwatch(Watched::Listener(id));
        self.device.with_transport_engine(|e| e.unlisten(id));
    }
}
