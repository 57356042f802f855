//! What a device and a queue pair report about themselves, as
//! `ibv_query_device` and `ibv_query_qp` do: the limits the stack enforces
//! and the current state.

use ddp::memory::PdId;

use crate::device::Device;
use crate::mr::MAX_REGIONS;
use crate::qp::QueuePair;
pub use crate::types::QpCap;
use crate::types::QpState;

/// A device's limits and current use (`struct ibv_device_attr`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceAttr {
    /// Memory regions that can be registered at once.
    pub max_mr: usize,
    /// Longest message (and scatter/gather entry) a work request can carry.
    pub max_msg_size: u64,
    /// Highest IRD or ORD a connection can negotiate (MPA's 14-bit field).
    pub max_ird_ord: u16,
    /// Most private data in a connect request or reply (MPA revision 1;
    /// 4 bytes fewer with revision 2's IRD/ORD block).
    pub max_private_data: usize,
    /// Queue pairs that exist now.
    pub qps: usize,
    /// Memory regions registered now.
    pub regions: usize,
    /// Work requests a queue pair's send or receive queue holds at most.
    pub max_qp_wr: usize,
    /// Scatter/gather entries per queue pair work request.
    pub max_sge: usize,
    /// Work requests a shared receive queue holds at most.
    pub max_srq_wr: usize,
    /// Scatter/gather entries per shared receive work request.
    pub max_srq_sge: usize,
    /// Whether the transport has a readiness descriptor, so an event loop
    /// can drive the device without a progress thread.
    pub has_readiness_fd: bool,
}

/// A queue pair's state and capabilities (`struct ibv_qp_attr`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QpAttr {
    /// The queue pair number.
    pub qp_num: u32,
    /// Where the queue pair stands.
    pub state: QpState,
    /// The protection domain it belongs to.
    pub pd: PdId,
    /// The sizes it was created with.
    pub cap: QpCap,
    /// The shared receive queue it receives from, by number.
    pub srq: Option<u32>,
}

impl Device {
    /// The device's limits and what it holds now.
    pub fn query(&self) -> DeviceAttr {
        DeviceAttr {
            max_mr: MAX_REGIONS,
            max_msg_size: u64::from(u32::MAX),
            max_ird_ord: 0x3fff,
            max_private_data: mpa::wire::MAX_PRIVATE_DATA,
            qps: self.shared.with_engine(|e| e.qp_count()),
            regions: self.region_count(),
            max_qp_wr: crate::qp::MAX_QP_WR,
            max_sge: crate::qp::MAX_QP_SGE,
            max_srq_wr: crate::srq::MAX_SRQ_WR,
            max_srq_sge: crate::srq::MAX_SRQ_SGE,
            has_readiness_fd: self.with_transport(|t| t.has_readiness_fd()),
        }
    }
}

impl QueuePair {
    /// The queue pair's state and capabilities.
    pub fn query(&self) -> QpAttr {
        QpAttr {
            qp_num: self.num,
            state: self.state(),
            pd: self.pd.id,
            cap: self.cap,
            srq: self.srq,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::transport::memory::{MemoryLink, MemoryLinkConfig};
    use crate::{Access, Device, QpInit, QpState};

    #[test]
    fn device_and_queue_pair_report_limits_and_state() {
        let (a, _b) = MemoryLink::pair(&MemoryLinkConfig::default()).unwrap();
        let device = Device::new(Box::new(a));
        let before = device.query();
        assert_eq!((before.qps, before.regions), (0, 0));
        assert!(before.has_readiness_fd);
        assert_eq!(before.max_ird_ord, 0x3fff);
        let pd = device.alloc_pd();
        let cq = device.create_cq(8);
        let qp = device
            .create_qp(&pd, QpInit::new(&cq).with_depths(7, 9).with_max_sge(2, 3))
            .unwrap();
        let mr = pd.register(64, Access::LOCAL_WRITE).unwrap();
        let now = device.query();
        assert_eq!((now.qps, now.regions), (1, 1));
        let attr = qp.query();
        assert_eq!(attr.qp_num, qp.num());
        assert_eq!(attr.state, QpState::Init);
        assert_eq!(attr.pd, pd.id());
        assert_eq!(
            (
                attr.cap.sq_depth,
                attr.cap.rq_depth,
                attr.cap.max_send_sge,
                attr.cap.max_recv_sge
            ),
            (7, 9, 2, 3)
        );
        drop((qp, mr));
        let after = device.query();
        assert_eq!(
            (after.qps, after.regions),
            (0, 0),
            "both went with their handles"
        );
    }
}
