//! A queue pair's state and the limits it was created with.

/// Where a queue pair stands (the ibv_qp_state a user would see).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QpState {
    /// Created, not connected: receives may be posted.
    Init,
    /// TCP or MPA start-up under way.
    Connecting,
    /// Connected: ready to send.
    Rts,
    /// Terminated or disconnected: every work request is flushed.
    Error,
}

/// What the engine keeps of a queue pair's creation parameters: queue
/// depths and gather limits. The completion queues are held as their shared
/// state alone, never as handles, which hold the device: a slot holding a
/// handle would keep the device alive from inside its own engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QpLimits {
    pub(crate) sq_depth: usize,
    pub(crate) rq_depth: usize,
    pub(crate) max_send_sge: usize,
    pub(crate) max_recv_sge: usize,
    pub(crate) max_inline_data: usize,
}

/// What a queue pair was created with (`struct ibv_qp_cap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct QpCap {
    /// Outstanding send work requests.
    pub sq_depth: usize,
    /// Posted receive work requests (0 with a shared receive queue).
    pub rq_depth: usize,
    /// Scatter/gather entries per send work request.
    pub max_send_sge: usize,
    /// Scatter/gather entries per receive work request.
    pub max_recv_sge: usize,
    /// Bytes of inline data per send work request.
    pub max_inline_data: usize,
}
