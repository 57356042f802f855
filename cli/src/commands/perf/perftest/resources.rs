//! The test connection of a perftest run: its queue pair, its memory and
//! what this side tells the peer about them.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use verbs::{
    wr, AcceptParams, Access, CmEvent, CompletionQueue, ConnectParams, ConnectRequest, Device,
    MemoryRegion, ProtectionDomain, QpInit, QueuePair, STag,
};

use super::super::error::PerfError;
use super::wire::PingpongDest;

/// perftest's `DEF_PAGE_SIZE`: the cycle buffer both sides agree on.
pub const PAGE_SIZE: u32 = 4096;
/// perftest's `DEF_CACHE_LINE_SIZE`.
pub const CACHE_LINE: u32 = 64;
/// RDMA READs this side lets the peer have outstanding, and asks for.
pub const OUT_READS: u16 = 16;

/// One test connection and its memory.
pub struct TestQp {
    pub qp: QueuePair,
    pub cq: CompletionQueue,
    /// What the peer may WRITE into or READ from (perftest's receive half
    /// of `buf`); write_lat polls its byte `size - 1`.
    pub remote: MemoryRegion,
    /// Source of WRITEs and SENDs, sink of READs.
    pub local: MemoryRegion,
    /// Where SENDs land.
    pub recv: MemoryRegion,
    /// SEND bandwidth: the counter the receiver's credit WRITEs land in
    /// (sender), or the value the credit WRITEs carry (receiver).
    pub credit: MemoryRegion,
    pub recv_slots: usize,
    pub max_size: usize,
}

/// Sizes of the objects a run needs.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// The largest message of the run.
    pub max_size: usize,
    pub sq_depth: usize,
    /// Receives kept posted (SEND tests).
    pub recv_slots: usize,
}

impl TestQp {
    pub fn new(device: &Device, shape: Shape) -> Result<TestQp, PerfError> {
        let pd: ProtectionDomain = device.alloc_pd();
        let cq = device.create_cq(shape.sq_depth + shape.recv_slots + 16);
        let mut init = QpInit::new(&cq);
        init.sq_depth = shape.sq_depth + 4;
        init.rq_depth = shape.recv_slots.max(1);
        init.max_send_sge = 1;
        init.max_recv_sge = 1;
        let qp = device.create_qp(&pd, init)?;
        // A peer cycles its target address through one page when messages
        // are at most half a page, so twice the larger of the two holds
        // every access (perftest's BUFF_SIZE).
        let span = 2 * shape.max_size.max(PAGE_SIZE as usize);
        let remote = pd.register(span, Access::ALL)?;
        let local = pd.register(shape.max_size.max(1), Access::LOCAL_WRITE)?;
        let recv = pd.register(shape.max_size.max(1), Access::LOCAL_WRITE)?;
        let credit = pd.register(8, Access::ALL)?;
        Ok(TestQp {
            qp,
            cq,
            remote,
            local,
            recv,
            credit,
            recv_slots: shape.recv_slots,
            max_size: shape.max_size,
        })
    }

    /// This side's description as `set_up_connection` fills it in: the
    /// remote-accessible buffer, or for SEND bandwidth the credit counter
    /// (`ctx_alloc_credit` overwrites the key and address).
    pub fn dest(&self, credit: bool) -> PingpongDest {
        let (rkey, vaddr) = if credit {
            (self.credit.rkey().0, self.credit.addr())
        } else {
            (self.remote.rkey().0, self.remote.addr())
        };
        PingpongDest {
            lid: 0,
            out_reads: u32::from(OUT_READS),
            qpn: self.qp.num(),
            psn: self.qp.num().wrapping_mul(0x9e37_79b9) & 0xff_ffff,
            rkey,
            vaddr,
            gid: [0; 16],
        }
    }

    /// Connects to the peer's test listener, as perftest's
    /// `rdma_cm_client_connection` does: up to ten tries 100 ms apart,
    /// since the peer may not be listening yet.
    pub fn connect(
        device: &Device,
        shape: Shape,
        remote: SocketAddr,
        params: &dyn Fn() -> ConnectParams,
        timeout: Duration,
    ) -> Result<TestQp, PerfError> {
        let mut last = String::new();
        for attempt in 0..10 {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            let t = TestQp::new(device, shape)?;
            t.post_recvs(shape.max_size)?;
            t.qp.connect(remote, params())?;
            match t.qp.wait_event(timeout) {
                Some(CmEvent::Established(_)) => return Ok(t),
                Some(CmEvent::Rejected { .. }) => last = "rejected".into(),
                Some(CmEvent::ConnectFailed(why)) => last = why.to_string(),
                Some(CmEvent::Disconnected { reason }) => last = format!("{reason:?}"),
                Some(other) => last = format!("unexpected {other:?}"),
                None => last = "timed out".into(),
            }
        }
        Err(PerfError::Connect(format!("test connection: {last}")))
    }

    /// Accepts the peer's test connection.
    pub fn accept(
        device: &Device,
        shape: Shape,
        req: ConnectRequest,
        params: AcceptParams,
        timeout: Duration,
    ) -> Result<TestQp, PerfError> {
        let t = TestQp::new(device, shape)?;
        t.post_recvs(shape.max_size)?;
        req.accept(&t.qp, params)?;
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            match t.qp.wait_event(Duration::from_millis(100)) {
                Some(CmEvent::Established(_)) => return Ok(t),
                Some(CmEvent::Disconnected { reason }) => {
                    return Err(PerfError::Disconnected(reason))
                }
                Some(other) => return Err(PerfError::Connect(format!("{other:?}"))),
                None => {}
            }
        }
        Err(PerfError::Connect(
            "test connection: not established".into(),
        ))
    }

    /// Posts every receive, each `size` bytes at the start of the receive
    /// buffer (SEND data is counted, not kept).
    pub fn post_recvs(&self, size: usize) -> Result<(), PerfError> {
        for i in 0..self.recv_slots {
            self.post_recv(i as u64, size)?;
        }
        Ok(())
    }

    pub fn post_recv(&self, id: u64, size: usize) -> Result<(), PerfError> {
        let sge = self.recv.sge(0, size.clamp(1, self.max_size.max(1)))?;
        self.qp.post_recv(wr::recv(id, vec![sge]))?;
        Ok(())
    }

    pub fn post_write(&self, id: u64, size: usize, peer: &PingpongDest) -> Result<(), PerfError> {
        let sge = self.local.sge(0, size)?;
        self.qp
            .post_send(wr::write(id, vec![sge], STag(peer.rkey), peer.vaddr))?;
        Ok(())
    }

    pub fn post_read(&self, id: u64, size: usize, peer: &PingpongDest) -> Result<(), PerfError> {
        let sge = self.local.sge(0, size)?;
        self.qp
            .post_send(wr::read(id, sge, STag(peer.rkey), peer.vaddr))?;
        Ok(())
    }

    pub fn post_send(&self, id: u64, size: usize) -> Result<(), PerfError> {
        let sge = self.local.sge(0, size)?;
        self.qp.post_send(wr::send(id, vec![sge]))?;
        Ok(())
    }

    /// RDMA WRITEs this side's receive count into the sender's credit
    /// counter.
    pub fn post_credit(
        &self,
        id: u64,
        received: u64,
        peer: &PingpongDest,
    ) -> Result<(), PerfError> {
        self.credit.write(0, &super::wire::credit_bytes(received))?;
        let sge = self.credit.sge(0, 4)?;
        self.qp
            .post_send(wr::write(id, vec![sge], STag(peer.rkey), peer.vaddr))?;
        Ok(())
    }

    /// The receiver's latest credit, as written into our counter.
    pub fn credit_value(&self) -> u32 {
        self.credit.with_bytes(super::wire::parse_credit)
    }

    /// write_lat: the byte the peer's WRITE of `size` bytes ends with.
    pub fn polled_byte(&self, size: usize) -> u8 {
        let mut last = [0u8];
        self.remote
            .read(size.saturating_sub(1), &mut last)
            .map_or(0, |()| last[0])
    }

    /// write_lat: sets the last byte of the next WRITE of `size` bytes.
    pub fn set_post_byte(&self, size: usize, v: u8) {
        let _ = self.local.write(size.saturating_sub(1), &[v]);
    }
}
