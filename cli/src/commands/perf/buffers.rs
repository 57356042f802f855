//! The registered memory of one perf connection and the work requests it
//! posts.
//!
//! Work request ids say what a completion belongs to: the top byte is the
//! kind, the rest a sequence number or receive slot.

use verbs::{
    wr, Access, CompletionQueue, Device, MemoryRegion, QpInit, QueuePair, STag, VerbsError,
};

use super::wire::{Buf, Ctrl, CTRL_LEN};

/// What a work request id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrKind {
    /// A data operation (WRITE, READ or SEND) with its sequence number.
    Data(u64),
    /// A control SEND from send slot `n`.
    CtrlSend(usize),
    /// A receive into slot `n`.
    Recv(usize),
}

const KIND_SHIFT: u32 = 56;
const SEQ_MASK: u64 = (1 << KIND_SHIFT) - 1;

impl WrKind {
    pub fn id(self) -> u64 {
        match self {
            WrKind::Data(n) => n & SEQ_MASK,
            WrKind::CtrlSend(n) => (1 << KIND_SHIFT) | (n as u64 & SEQ_MASK),
            WrKind::Recv(n) => (2 << KIND_SHIFT) | (n as u64 & SEQ_MASK),
        }
    }

    pub fn of(id: u64) -> Option<WrKind> {
        let n = id & SEQ_MASK;
        match id >> KIND_SHIFT {
            0 => Some(WrKind::Data(n)),
            1 => usize::try_from(n).ok().map(WrKind::CtrlSend),
            2 => usize::try_from(n).ok().map(WrKind::Recv),
            _ => None,
        }
    }
}

/// How a connection's receives are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvLayout {
    /// Every receive lands at the start of one buffer (bandwidth SENDs:
    /// only their count matters, and memory stays one message).
    Shared,
    /// Each receive has its own slot, so its bytes stay put until it is
    /// posted again (control messages, ping-pong echoes).
    Slots,
}

/// Sizes of one connection's objects.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Message size.
    pub size: usize,
    /// Receives kept posted.
    pub recvs: usize,
    pub recv_layout: RecvLayout,
    /// Bytes per receive slot.
    pub slot_len: usize,
    /// Control SENDs that may be in flight at once.
    pub ctrl_slots: usize,
    /// Data work requests that may be in flight at once.
    pub depth: usize,
}

/// One connection: queue pair and memory.
#[derive(Debug)]
pub struct Conn {
    pub qp: QueuePair,
    /// Remote-accessible buffer: WRITE target, READ source or sink, the
    /// write_lat landing buffer.
    pub buf: MemoryRegion,
    /// Local source of data WRITEs and SENDs.
    pub tx: MemoryRegion,
    pub recv: MemoryRegion,
    pub ctrl: MemoryRegion,
    free_ctrl: Vec<usize>,
    pub layout: Layout,
}

impl Conn {
    /// Registers the memory (the remote-accessible buffer holding `buf`,
    /// the source holding `tx`, both `layout.size` bytes) and creates the
    /// queue pair on `cq`.
    pub fn new(
        device: &Device,
        cq: &CompletionQueue,
        layout: Layout,
        buf: Vec<u8>,
        tx: Vec<u8>,
    ) -> Result<Conn, VerbsError> {
        let pd = device.alloc_pd();
        let mut init = QpInit::new(cq);
        init.sq_depth = layout.depth + layout.ctrl_slots;
        init.rq_depth = layout.recvs;
        init.max_send_sge = 1;
        init.max_recv_sge = 1;
        let qp = device.create_qp(&pd, init)?;
        let buf = pd.register_vec(buf, Access::ALL)?;
        let tx = pd.register_vec(tx, Access::LOCAL_WRITE)?;
        let recv_len = match layout.recv_layout {
            RecvLayout::Shared => layout.slot_len,
            RecvLayout::Slots => layout.slot_len * layout.recvs,
        };
        let recv = pd.register(recv_len, Access::LOCAL_WRITE)?;
        let ctrl = pd.register(CTRL_LEN * layout.ctrl_slots, Access::LOCAL_WRITE)?;
        Ok(Conn {
            qp,
            buf,
            tx,
            recv,
            ctrl,
            free_ctrl: (0..layout.ctrl_slots).rev().collect(),
            layout,
        })
    }

    /// The buffer as the peer should know it.
    pub fn advert(&self) -> Buf {
        Buf {
            addr: self.buf.addr(),
            rkey: self.buf.rkey().0,
            len: self.buf.len() as u32,
        }
    }

    fn slot_offset(&self, slot: usize) -> usize {
        match self.layout.recv_layout {
            RecvLayout::Shared => 0,
            RecvLayout::Slots => slot * self.layout.slot_len,
        }
    }

    /// Posts receive `slot` (again).
    pub fn post_recv(&self, slot: usize) -> Result<(), VerbsError> {
        let sge = self
            .recv
            .sge(self.slot_offset(slot), self.layout.slot_len)?;
        self.qp
            .post_recv(wr::recv(WrKind::Recv(slot).id(), vec![sge]))
    }

    /// Posts every receive.
    pub fn post_all_recvs(&self) -> Result<(), VerbsError> {
        (0..self.layout.recvs).try_for_each(|s| self.post_recv(s))
    }

    /// The bytes receive `slot` holds.
    pub fn slot_bytes(&self, slot: usize, len: usize) -> Result<Vec<u8>, VerbsError> {
        let mut out = vec![0; len.min(self.layout.slot_len)];
        self.recv.read(self.slot_offset(slot), &mut out)?;
        Ok(out)
    }

    /// Whether a control SEND slot is free.
    pub fn can_send_ctrl(&self) -> bool {
        !self.free_ctrl.is_empty()
    }

    /// SENDs a control message with the solicited flag; false if every
    /// control slot is in flight.
    pub fn send_ctrl(&mut self, msg: Ctrl) -> Result<bool, VerbsError> {
        let Some(slot) = self.free_ctrl.pop() else {
            return Ok(false);
        };
        self.ctrl.write(slot * CTRL_LEN, &msg.to_bytes())?;
        let sge = self.ctrl.sge(slot * CTRL_LEN, CTRL_LEN)?;
        if let Err(e) = self
            .qp
            .post_send(wr::send_solicited(WrKind::CtrlSend(slot).id(), vec![sge]))
        {
            self.free_ctrl.push(slot);
            return Err(e);
        }
        Ok(true)
    }

    /// A control SEND completed: its slot is free again.
    pub fn ctrl_sent(&mut self, slot: usize) {
        if slot < self.layout.ctrl_slots && !self.free_ctrl.contains(&slot) {
            self.free_ctrl.push(slot);
        }
    }

    /// RDMA WRITE of the source buffer to `remote`.
    pub fn post_write(&self, seq: u64, remote: Buf) -> Result<(), VerbsError> {
        let sge = self.tx.sge(0, self.layout.size)?;
        self.qp.post_send(wr::write(
            WrKind::Data(seq).id(),
            vec![sge],
            STag(remote.rkey),
            remote.addr,
        ))
    }

    /// RDMA READ of `remote` into the buffer.
    pub fn post_read(&self, seq: u64, remote: Buf) -> Result<(), VerbsError> {
        let sge = self.buf.sge(0, self.layout.size)?;
        self.qp.post_send(wr::read(
            WrKind::Data(seq).id(),
            sge,
            STag(remote.rkey),
            remote.addr,
        ))
    }

    /// SEND of the source buffer (no solicited flag: data).
    pub fn post_send(&self, seq: u64) -> Result<(), VerbsError> {
        let sge = self.tx.sge(0, self.layout.size)?;
        self.qp
            .post_send(wr::send(WrKind::Data(seq).id(), vec![sge]))
    }

    /// The last byte of the buffer (what write_lat polls).
    pub fn last_byte(&self) -> u8 {
        let mut last = [0u8];
        match self.buf.len().checked_sub(1) {
            Some(at) => self.buf.read(at, &mut last).map_or(0, |()| last[0]),
            None => 0,
        }
    }

    /// Sets the last byte of the source buffer.
    pub fn set_tx_last_byte(&self, v: u8) {
        if let Some(at) = self.tx.len().checked_sub(1) {
            let _ = self.tx.write(at, &[v]);
        }
    }
}

/// The value write_lat puts in the last byte in iteration `i`: never 0,
/// the buffer's initial value, and never the previous iteration's.
pub fn lat_value(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_request_ids_round_trip() {
        for k in [
            WrKind::Data(0),
            WrKind::Data(SEQ_MASK),
            WrKind::CtrlSend(7),
            WrKind::Recv(511),
        ] {
            assert_eq!(WrKind::of(k.id()), Some(k));
        }
        assert_eq!(WrKind::of(3 << KIND_SHIFT), None);
        assert_eq!(WrKind::Data(SEQ_MASK + 5).id(), 4, "sequence numbers wrap");
    }

    #[test]
    fn lat_values_skip_zero_and_change_every_iteration() {
        assert_eq!(lat_value(0), 1);
        assert_eq!(lat_value(254), 255);
        assert_eq!(lat_value(255), 1);
        for i in 0..1000 {
            assert_ne!(lat_value(i), 0);
            assert_ne!(lat_value(i), lat_value(i + 1));
        }
    }
}
