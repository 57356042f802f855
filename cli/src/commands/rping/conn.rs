//! One rping connection's verbs objects, set up the way rping.c's
//! `rping_setup_qp` and `rping_setup_buffers` do, and the work requests it
//! posts.
//!
//! Registrations (same access rights as rping, so a peer sees the same
//! STag behaviour):
//! * receive buffer: 16 bytes, local write;
//! * send buffer: 16 bytes, no remote access;
//! * rdma buffer: `size` bytes, local write + remote read + remote write
//!   (the server's READ sink and WRITE source; the client's sink);
//! * start buffer (client only): `size` bytes, same rights (the source the
//!   server READs).

use verbs::{
    wr, Access, CompletionQueue, Device, MemoryRegion, ProtectionDomain, QpInit, QueuePair, STag,
    Sge,
};

use super::error::RpingError;
use super::pattern::echo_len;
use hostile::rping::{RdmaInfo, INFO_LEN};

/// Send queue depth (`RPING_SQ_DEPTH`).
pub const SQ_DEPTH: usize = 16;
/// Receive queue depth (rping's `max_recv_wr`; it keeps one posted).
pub const RQ_DEPTH: usize = 2;

/// Work request ids, one per kind of request rping posts.
pub mod wr_id {
    pub const RECV: u64 = 1;
    pub const SEND: u64 = 2;
    pub const READ: u64 = 3;
    pub const WRITE: u64 = 4;
}

const REMOTE_RW: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// The queue pair and buffers of one rping connection.
#[derive(Debug)]
pub struct Conn {
    // Field order is drop order: the queue pair goes before its buffers.
    pub qp: QueuePair,
    pub recv: MemoryRegion,
    pub send: MemoryRegion,
    pub rdma: MemoryRegion,
    pub start: Option<MemoryRegion>,
    pub pd: ProtectionDomain,
    pub size: usize,
}

impl Conn {
    /// A connection's objects: its own protection domain, a queue pair
    /// reporting into `cq`, and the buffers (the start buffer only for a
    /// client).
    pub fn new(
        device: &Device,
        cq: &CompletionQueue,
        size: usize,
        client: bool,
    ) -> Result<Conn, RpingError> {
        let pd = device.alloc_pd();
        let mut init = QpInit::new(cq);
        init.sq_depth = SQ_DEPTH;
        init.rq_depth = RQ_DEPTH;
        init.max_send_sge = 1;
        init.max_recv_sge = 1;
        let qp = device.create_qp(&pd, init)?;
        let recv = pd.register(INFO_LEN, Access::LOCAL_WRITE)?;
        let send = pd.register(INFO_LEN, Access::NONE)?;
        let rdma = pd.register(size, REMOTE_RW)?;
        let start = if client {
            Some(pd.register(size, REMOTE_RW)?)
        } else {
            None
        };
        Ok(Conn {
            qp,
            recv,
            send,
            rdma,
            start,
            pd,
            size,
        })
    }

    /// The advertisement of `mr` (rping's `rping_format_send`).
    pub fn info_of(&self, mr: &MemoryRegion) -> RdmaInfo {
        RdmaInfo {
            addr: mr.addr(),
            rkey: mr.rkey().0,
            size: self.size as u32,
        }
    }

    /// Posts the one receive rping keeps outstanding.
    pub fn post_recv(&self) -> Result<(), RpingError> {
        self.qp
            .post_recv(wr::recv(wr_id::RECV, vec![self.recv.sge_all()]))?;
        Ok(())
    }

    /// The received message (the first `byte_len` bytes of the receive
    /// buffer).
    pub fn received(&self, byte_len: u32) -> Vec<u8> {
        let mut all = self.recv.to_vec();
        all.truncate(byte_len as usize);
        all
    }

    /// Writes `info` into the send buffer and SENDs it.
    pub fn send_info(&self, info: RdmaInfo) -> Result<(), RpingError> {
        self.send.write(0, &info.to_bytes())?;
        self.qp
            .post_send(wr::send(wr_id::SEND, vec![self.send.sge_all()]))?;
        Ok(())
    }

    /// SENDs the go-ahead: the server's send buffer, never filled in.
    pub fn send_go_ahead(&self) -> Result<(), RpingError> {
        self.send_info(RdmaInfo::GO_AHEAD)
    }

    /// RDMA READs `remote.size` bytes into the rdma buffer. The sink is
    /// not cut to the buffer's size, as rping does not cut it: a client
    /// advertising more than the server holds gets its READ response
    /// refused and the connection terminated.
    pub fn post_read(&self, remote: RdmaInfo) -> Result<(), RpingError> {
        let sink = Sge {
            stag: self.rdma.lkey(),
            to: self.rdma.addr(),
            len: remote.size,
        };
        self.qp
            .post_send(wr::read(wr_id::READ, sink, STag(remote.rkey), remote.addr))?;
        Ok(())
    }

    /// RDMA WRITEs the rdma buffer's string (`strlen + 1` bytes) to
    /// `remote`; returns the length written.
    pub fn post_write(&self, remote: RdmaInfo) -> Result<u32, RpingError> {
        let len = self.rdma.with_bytes(echo_len);
        let sge = self.rdma.sge(0, len)?;
        self.qp.post_send(wr::write(
            wr_id::WRITE,
            vec![sge],
            STag(remote.rkey),
            remote.addr,
        ))?;
        Ok(sge.len)
    }
}

/// Prints the queue pair's figures (`-v`), one line per subject, before
/// the connection is closed: traffic, outstanding work, the last
/// TERMINATE and TCP's state.
pub fn print_stats(qp: &verbs::QueuePair, log: &super::log::Log) {
    for line in qp.stats().to_string().lines() {
        log.out(&format!("qp stats: {line}"));
    }
}
