//! The plain data of registered memory: STags, protection domains, access
//! rights, what a region is, and the two ways an access to one fails.
//! Values only, so every other module of the crate may use them.

/// A steering tag: 24-bit index in the high bits, 8-bit consumer key in the low.
///
/// The default, STag 0, is never valid on the wire (Chelsio refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct STag(pub u32);

impl STag {
    /// An STag from its 24-bit region index and the 8-bit key a consumer chooses (RFC 5040
    /// section 2.1).
    pub const fn new(index: u32, key: u8) -> Self {
        STag((index << 8) | key as u32)
    }
    /// The region index: which registration the STag names.
    pub const fn index(self) -> u32 {
        self.0 >> 8
    }
    /// The consumer key: changes when a slot is reused, so a stale STag is refused.
    pub const fn key(self) -> u8 {
        self.0 as u8
    }
}

/// A protection domain identifier: a region is reachable only from queue
/// pairs of the same domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PdId(pub u32);

/// Access rights of a registered region. Local read is always allowed.
///
/// The bits are libibverbs' `IBV_ACCESS_*` where it has the right, so a
/// program's flags carry over unchanged; [`Access::REMOTE_INVALIDATE`] is
/// this stack's own (libibverbs has none, see there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(u32);

impl Access {
    /// No rights: a region only the local side reads.
    pub const NONE: Access = Access(0);
    /// The local side may place into it (receive buffers, Read sinks).
    pub const LOCAL_WRITE: Access = Access(1);
    /// The peer may RDMA Write into it.
    pub const REMOTE_WRITE: Access = Access(2);
    /// The peer may RDMA Read from it.
    pub const REMOTE_READ: Access = Access(4);
    /// RFC 5040's three rights (RFC 7306 atomics are granted apart).
    pub const ALL: Access = Access(7);
    /// The target of RFC 7306 atomic operations (`IBV_ACCESS_REMOTE_ATOMIC`).
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// The peer may invalidate the region's STag with a Send with
    /// Invalidate (RFC 5040 section 6.10.2).
    ///
    /// Without it a peer's invalidation is refused with a TERMINATE: a
    /// region shared by several connections must not be taken away by one
    /// of them. libibverbs has no such flag because it lets a peer
    /// invalidate only type-2 memory windows (and kernel fast-registered
    /// regions); this bit, unused by `IBV_ACCESS_*` (its flags stop at bit
    /// 9, its optional range starts at bit 20), lets a program opt a
    /// region in instead.
    pub const REMOTE_INVALIDATE: Access = Access(1 << 16);

    /// Every bit that names a right.
    const KNOWN: u32 = 15 | Self::REMOTE_INVALIDATE.0;

    /// The rights as the bit set `IBV_ACCESS_*` uses.
    pub const fn bits(self) -> u32 {
        self.0
    }
    /// Rights from bits; bits that name no right are dropped.
    pub const fn from_bits_truncate(bits: u32) -> Self {
        Access(bits & Self::KNOWN)
    }
    /// Whether every right of `other` is granted.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
    /// The rights of both.
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }
}

impl core::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        self.union(rhs)
    }
}

/// What placement needs to know about a valid region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// The protection domain the region belongs to: only streams of the same one may use it.
    pub pd: PdId,
    /// Tagged offset (the registered virtual address) of the region's first byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// What the peer (and the local side) may do with it.
    pub access: Access,
}

/// An access that the caller should have bounds-checked first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("access to STag {stag:#x} at offset {offset} length {len} is outside the region or the STag is invalid")]
pub struct OutOfRange {
    /// The STag asked for.
    pub stag: u32,
    /// The offset into the region.
    pub offset: u64,
    /// The length asked for.
    pub len: usize,
}

/// Why an STag could not be invalidated (RFC 5040 section 6.10.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidateError {
    /// No region has this STag (never registered, or already invalidated).
    #[error("STag is not valid")]
    Invalid,
    /// The region belongs to another protection domain than the stream's.
    #[error("STag belongs to another protection domain")]
    WrongPd,
    /// The region was registered without the right to be invalidated remotely.
    #[error("STag cannot be invalidated")]
    NotAllowed,
}
