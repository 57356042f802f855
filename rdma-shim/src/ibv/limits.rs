//! What the device allows, as `ibv_query_device` reports it and the verbs
//! objects enforce it.

use libc::c_int;

/// Outstanding RDMA Reads per queue pair, as siw clamps IRD/ORD.
pub const MAX_RD_ATOM: c_int = 128;
/// Work requests per queue, at most.
pub const MAX_QP_WR: c_int = 16 * 1024;
/// Scatter/gather entries per work request, at most (siw's figure).
pub const MAX_SGE: c_int = 6;
/// Completions per completion queue, at most.
pub const MAX_CQE: c_int = 1 << 20;
