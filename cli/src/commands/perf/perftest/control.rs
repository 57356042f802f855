//! perftest's control connection: the first rdma_cm connection of a run,
//! over which the two sides trade versions, buffer keys and reports as
//! SENDs (perftest's `rdma_write_keys`/`rdma_read_keys` and
//! `ctx_xchg_data`).
//!
//! Each side keeps exactly one receive of [`DEST_LEN`] bytes posted. An
//! exchange is lock-step: the client SENDs and then waits for the answer,
//! the server waits, re-posts its receive and then answers. A receive is
//! re-posted before the answer goes out, so the next message always finds
//! one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::{
    wr, AcceptParams, Access, CmEvent, CompletionQueue, ConnectParams, ConnectRequest, Device,
    MemoryRegion, QpInit, QueuePair, WcOpcode,
};

use super::super::error::PerfError;
use super::wire::{PingpongDest, DEST_LEN};

/// Which end of the exchange this side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// perftest's `SYNC_SPEC_ID`: the work request id of control messages.
const SYNC_ID: u64 = 5;

pub struct Control {
    qp: QueuePair,
    cq: CompletionQueue,
    rx: MemoryRegion,
    tx: MemoryRegion,
    side: Side,
    timeout: Duration,
}

impl Control {
    fn new(device: &Device, side: Side, timeout: Duration) -> Result<Control, PerfError> {
        let pd = device.alloc_pd();
        let cq = device.create_cq(8);
        let mut init = QpInit::new(&cq);
        init.sq_depth = 2;
        init.rq_depth = 2;
        init.max_send_sge = 1;
        init.max_recv_sge = 1;
        let qp = device.create_qp(&pd, init)?;
        let rx = pd.register(DEST_LEN, Access::LOCAL_WRITE)?;
        let tx = pd.register(DEST_LEN, Access::LOCAL_WRITE)?;
        let c = Control {
            qp,
            cq,
            rx,
            tx,
            side,
            timeout,
        };
        c.post_recv()?;
        Ok(c)
    }

    /// Connects to a perftest server's control listener.
    pub fn connect(
        device: &Device,
        remote: SocketAddr,
        params: ConnectParams,
        timeout: Duration,
    ) -> Result<Control, PerfError> {
        let c = Control::new(device, Side::Client, timeout)?;
        c.qp.connect(remote, params)?;
        match c.qp.wait_event(timeout) {
            Some(CmEvent::Established(_)) => Ok(c),
            Some(CmEvent::Rejected { .. }) => Err(PerfError::Connect("rejected".into())),
            Some(CmEvent::ConnectFailed(why)) => Err(PerfError::Connect(why.to_string())),
            Some(CmEvent::Disconnected { reason }) => Err(PerfError::Disconnected(reason)),
            Some(other) => Err(PerfError::Connect(format!("unexpected {other:?}"))),
            None => Err(PerfError::Connect("timed out".into())),
        }
    }

    /// Accepts a client's control connection (IRD = ORD = 0, no private
    /// data, as perftest's `rdma_server_connect` does).
    pub fn accept(
        device: &Device,
        req: ConnectRequest,
        timeout: Duration,
    ) -> Result<Control, PerfError> {
        let c = Control::new(device, Side::Server, timeout)?;
        req.accept(
            &c.qp,
            AcceptParams::default()
                .private_data(Vec::new())
                .ird(0)
                .ord(0),
        )?;
        Ok(c)
    }

    fn post_recv(&self) -> Result<(), PerfError> {
        let sge = self.rx.sge(0, DEST_LEN)?;
        self.qp.post_recv(wr::recv(SYNC_ID, vec![sge]))?;
        Ok(())
    }

    fn send(&self, msg: &[u8]) -> Result<(), PerfError> {
        let len = msg.len().min(DEST_LEN);
        self.tx.write(0, &msg[..len])?;
        let sge = self.tx.sge(0, len)?;
        self.qp.post_send(wr::send(SYNC_ID, vec![sge]))?;
        self.wait(WcOpcode::Send).map(|_| ())
    }

    fn recv(&self) -> Result<Vec<u8>, PerfError> {
        let len = self.wait(WcOpcode::Recv)?;
        let mut out = vec![0; len.min(DEST_LEN)];
        self.rx.read(0, &mut out)?;
        self.post_recv()?;
        Ok(out)
    }

    /// Waits for the one completion of `want`; returns its byte count.
    fn wait(&self, want: WcOpcode) -> Result<usize, PerfError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PerfError::Stalled(self.timeout.as_secs_f64()));
            }
            if let Some(wc) = self.cq.wait_one(left.min(Duration::from_millis(100)))? {
                PerfError::check_completion(&wc)?;
                if wc.opcode != want {
                    return Err(PerfError::Protocol(format!(
                        "control connection: {:?} completed while waiting for {want:?}",
                        wc.opcode
                    )));
                }
                return Ok(wc.byte_len as usize);
            }
            if let Some(CmEvent::Disconnected { reason }) = self.qp.try_event() {
                return Err(PerfError::Disconnected(reason));
            }
        }
    }

    /// Trades `mine` for the peer's message of the same kind
    /// (`ctx_xchg_data`).
    pub fn exchange(&self, mine: &[u8]) -> Result<Vec<u8>, PerfError> {
        match self.side {
            Side::Client => {
                self.send(mine)?;
                self.recv()
            }
            Side::Server => {
                let theirs = self.recv()?;
                self.send(mine)?;
                Ok(theirs)
            }
        }
    }

    /// One `ctx_hand_shake`: trades queue pair descriptions.
    pub fn hand_shake(&self, mine: &PingpongDest) -> Result<PingpongDest, PerfError> {
        Ok(PingpongDest::parse(&self.exchange(&mine.to_bytes())?)?)
    }

    /// How long a receive may take from now on (longer while the peer
    /// runs a data phase).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Waits up to `max` for the peer to close either connection, keeping
    /// both moving: a peer whose last SEND or WRITE is still completing
    /// when our FIN arrives may see it flushed (siw does).
    pub fn wait_peer_close(&self, test: &QueuePair, test_cq: &CompletionQueue, max: Duration) {
        let deadline = Instant::now() + max;
        let mut wcs = [verbs::WorkCompletion::FILLER; 8];
        while Instant::now() < deadline {
            let _ = self.cq.poll(&mut wcs);
            let _ = test_cq.poll(&mut wcs);
            let closed = |ev: Option<CmEvent>| matches!(ev, Some(CmEvent::Disconnected { .. }));
            if closed(self.qp.try_event()) || closed(test.try_event()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn disconnect(&self) {
        self.qp.disconnect();
    }
}
