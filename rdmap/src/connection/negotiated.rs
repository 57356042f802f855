//! Stand-in for `mpa::Negotiated` until MPA start-up lands; same fields.

/// Which side of MPA start-up this end was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Initiator,
    Responder,
}

/// The outcome of MPA start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub rev: u8,
    pub crc: bool,
    pub markers_tx: bool,
    pub markers_rx: bool,
    pub ird: u16,
    pub ord: u16,
    pub rtr: Option<mpa::Rtr>,
    pub peer_private_data: Vec<u8>,
    pub role: Role,
}
