//! Tagged placement: validate a segment against the region its STag names,
//! then write it there (RFC 5041 section 3, "Tagged Buffer Model").
//!
//! Checks run in siw's order (siw_check_mem): the STag names a valid
//! region, the region is in the stream's protection domain, it grants the
//! access, the offset does not wrap, and `[to, to + len)` lies inside
//! `[base, base + len)`. All arithmetic is checked; nothing is written
//! unless every check passed.
//!
//! Zero-length segments are not validated at all and place nothing: RFC
//! 5040 section 5.3 forbids validating the STag of a zero-length Read, and
//! the RFC 6581 ready-to-receive message is a zero-length Write (or Read)
//! to an STag nobody registered — siw sends STag 1, TO 0, and siw_proc_write
//! returns before looking the STag up. Refusing it would break every
//! peer-to-peer connection setup.

use crate::error::TaggedError;
use crate::memory::{Access, Memory, PdId, STag};
pub use crate::rights::check;
use crate::wire::TaggedRepr;

/// Checks a tagged segment and places its payload. On error nothing was
/// written.
///
/// `need` is [`Access::REMOTE_WRITE`] for an RDMA Write and
/// [`Access::LOCAL_WRITE`] for the sink of a Read Response.
pub fn place_tagged<M: Memory + ?Sized>(
    mem: &mut M,
    qp_pd: PdId,
    repr: &TaggedRepr,
    payload: &[u8],
    need: Access,
) -> Result<(), TaggedError> {
    if payload.is_empty() {
        return Ok(());
    }
    mem.place_checked(repr.stag, qp_pd, repr.to, payload, need)
}

/// Where the next segment of an incomplete tagged message must go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expect {
    stag: STag,
    to: u64,
}

/// Continuity of the tagged messages of one stream, siw's strictness
/// (siw_write_check_ntoh): once a message has started, each further
/// segment must name the same STag (else "invalid STag") and continue at
/// the TO right after the bytes already received (else "base or bounds").
/// One message at a time; O(1) state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaggedSequence {
    expect: Option<Expect>,
    received: u64,
}

impl TaggedSequence {
    /// A sequence before its first segment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a message has started and not yet seen its last segment.
    pub fn in_progress(&self) -> bool {
        self.expect.is_some()
    }

    /// Bytes of the current message received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Accepts the next segment's header, given its payload length, before
    /// it is placed. Returns `true` when it completes a message. On error
    /// the state is unchanged.
    pub fn accept(&mut self, repr: &TaggedRepr, payload_len: usize) -> Result<bool, TaggedError> {
        let len = payload_len as u64;
        if let Some(e) = self.expect {
            if repr.stag != e.stag {
                return Err(TaggedError::InvalidStag(repr.stag.0));
            }
            if repr.to != e.to {
                return Err(TaggedError::BaseBounds {
                    stag: repr.stag.0,
                    to: repr.to,
                    len,
                });
            }
        }
        let received = self.received.saturating_add(len);
        if repr.last {
            self.expect = None;
            self.received = 0;
        } else {
            // A non-final segment ending at 2^64 leaves nowhere to continue.
            let to = repr.to.checked_add(len).ok_or(TaggedError::ToWrap {
                stag: repr.stag.0,
                to: repr.to,
                len,
            })?;
            self.expect = Some(Expect {
                stag: repr.stag,
                to,
            });
            self.received = received;
        }
        Ok(repr.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{RegionInfo, RegionTable};
    use proptest::prelude::*;

    const PD: PdId = PdId(7);
    const S: STag = STag(0x0000_0100);
    const BASE: u64 = 0x1000;

    fn region(len: u64, access: Access) -> Option<RegionInfo> {
        Some(RegionInfo {
            pd: PD,
            base: BASE,
            len,
            access,
        })
    }

    fn chk(to: u64, len: usize) -> Result<u64, TaggedError> {
        check(
            region(64, Access::ALL),
            PD,
            S,
            to,
            len,
            Access::REMOTE_WRITE,
        )
    }

    #[test]
    fn first_byte_of_region() {
        assert_eq!(chk(BASE, 1), Ok(0));
    }

    #[test]
    fn whole_region() {
        assert_eq!(chk(BASE, 64), Ok(0));
    }

    #[test]
    fn ends_exactly_at_region_end() {
        assert_eq!(chk(BASE + 60, 4), Ok(60));
        assert_eq!(chk(BASE + 63, 1), Ok(63));
    }

    #[test]
    fn one_past_the_end() {
        assert_eq!(
            chk(BASE + 61, 4),
            Err(TaggedError::BaseBounds {
                stag: S.0,
                to: BASE + 61,
                len: 4
            })
        );
        assert!(chk(BASE + 64, 1).is_err());
        assert!(chk(BASE, 65).is_err());
    }

    #[test]
    fn one_before_the_base() {
        assert_eq!(
            chk(BASE - 1, 1),
            Err(TaggedError::BaseBounds {
                stag: S.0,
                to: BASE - 1,
                len: 1
            })
        );
        assert!(chk(0, 4).is_err());
    }

    #[test]
    fn to_wrap() {
        assert_eq!(
            chk(u64::MAX, 2),
            Err(TaggedError::ToWrap {
                stag: S.0,
                to: u64::MAX,
                len: 2
            })
        );
        // Ending exactly at 2^64 - 1 + 1 would wrap too.
        assert!(matches!(
            chk(u64::MAX - 3, 5),
            Err(TaggedError::ToWrap { .. })
        ));
    }

    #[test]
    fn region_reaching_the_top_of_the_address_space() {
        let r = Some(RegionInfo {
            pd: PD,
            base: u64::MAX - 15,
            len: 16,
            access: Access::ALL,
        });
        assert_eq!(
            check(r, PD, S, u64::MAX - 15, 15, Access::REMOTE_WRITE),
            Ok(0)
        );
        assert_eq!(
            check(r, PD, S, u64::MAX - 1, 1, Access::REMOTE_WRITE),
            Ok(14)
        );
        // The very last byte: to + len = 2^64 wraps.
        assert!(matches!(
            check(r, PD, S, u64::MAX, 1, Access::REMOTE_WRITE),
            Err(TaggedError::ToWrap { .. })
        ));
    }

    #[test]
    fn region_whose_end_overflows_does_not_confuse_bounds() {
        // A bogus registration claiming more than the address space left.
        let r = Some(RegionInfo {
            pd: PD,
            base: u64::MAX - 3,
            len: u64::MAX,
            access: Access::ALL,
        });
        assert_eq!(
            check(r, PD, S, u64::MAX - 3, 2, Access::REMOTE_WRITE),
            Ok(0)
        );
        assert!(check(r, PD, S, 5, 2, Access::REMOTE_WRITE).is_err());
    }

    #[test]
    fn absent_stag_is_invalid() {
        assert_eq!(
            check(None, PD, S, BASE, 1, Access::REMOTE_WRITE),
            Err(TaggedError::InvalidStag(S.0))
        );
    }

    #[test]
    fn other_pd_is_not_associated() {
        assert_eq!(
            check(
                region(64, Access::ALL),
                PdId(8),
                S,
                BASE,
                1,
                Access::REMOTE_WRITE
            ),
            Err(TaggedError::StagNotAssociated(S.0))
        );
    }

    #[test]
    fn missing_right_is_an_access_violation() {
        let r = region(64, Access::LOCAL_WRITE | Access::REMOTE_READ);
        assert_eq!(
            check(r, PD, S, BASE, 1, Access::REMOTE_WRITE),
            Err(TaggedError::AccessRights(S.0))
        );
        assert_eq!(check(r, PD, S, BASE, 1, Access::REMOTE_READ), Ok(0));
        assert_eq!(check(r, PD, S, BASE, 1, Access::LOCAL_WRITE), Ok(0));
    }

    #[test]
    fn checks_run_in_siw_order() {
        // PD before access before bounds: a wrong-PD, read-only region with
        // an out-of-range TO reports the PD.
        let r = region(4, Access::REMOTE_READ);
        assert_eq!(
            check(r, PdId(1), S, 0, 100, Access::REMOTE_WRITE),
            Err(TaggedError::StagNotAssociated(S.0))
        );
        // Access before bounds.
        assert_eq!(
            check(r, PD, S, 0, 100, Access::REMOTE_WRITE),
            Err(TaggedError::AccessRights(S.0))
        );
        // Wrap before bounds.
        assert!(matches!(
            check(
                region(4, Access::ALL),
                PD,
                S,
                u64::MAX,
                9,
                Access::REMOTE_WRITE
            ),
            Err(TaggedError::ToWrap { .. })
        ));
    }

    #[test]
    fn zero_length_is_never_validated() {
        assert_eq!(check(None, PD, STag(1), 0, 0, Access::REMOTE_WRITE), Ok(0));
        assert_eq!(
            check(
                region(4, Access::NONE),
                PdId(9),
                S,
                u64::MAX,
                0,
                Access::REMOTE_WRITE
            ),
            Ok(0)
        );
    }

    fn table() -> RegionTable {
        let mut t = RegionTable::new();
        t.register(S, PD, BASE, Access::ALL, vec![0; 32], true);
        t.register(STag(0x200), PD, 0, Access::REMOTE_READ, vec![0; 32], true);
        t
    }

    #[test]
    fn place_writes_at_the_offset() {
        let mut t = table();
        place_tagged(
            &mut t,
            PD,
            &TaggedRepr::new(true, 0x40, S, BASE + 4),
            b"hello",
            Access::REMOTE_WRITE,
        )
        .unwrap();
        let b = t.bytes(S).unwrap();
        assert_eq!(&b[4..9], b"hello");
        assert!(b[..4].iter().chain(&b[9..]).all(|&x| x == 0));
    }

    #[test]
    fn refused_placement_writes_nothing() {
        let mut t = table();
        let before = t.clone();
        let e = place_tagged(
            &mut t,
            PD,
            &TaggedRepr::new(true, 0x40, S, BASE + 30),
            b"abc",
            Access::REMOTE_WRITE,
        );
        assert!(matches!(e, Err(TaggedError::BaseBounds { .. })));
        let e = place_tagged(
            &mut t,
            PD,
            &TaggedRepr::new(true, 0x40, STag(0x200), 0),
            b"abc",
            Access::REMOTE_WRITE,
        );
        assert_eq!(e, Err(TaggedError::AccessRights(0x200)));
        assert_eq!(t.bytes(S), before.bytes(S));
        assert_eq!(t.bytes(STag(0x200)), before.bytes(STag(0x200)));
    }

    #[test]
    fn siw_rtr_write_to_stag_one_is_accepted() {
        let mut t = table();
        place_tagged(
            &mut t,
            PD,
            &TaggedRepr::new(true, 0x40, STag(1), 0),
            &[],
            Access::REMOTE_WRITE,
        )
        .unwrap();
    }

    #[test]
    fn key_mismatch_is_an_invalid_stag() {
        let mut t = table();
        let other_key = STag::new(S.index(), S.key().wrapping_add(1));
        assert_eq!(
            place_tagged(
                &mut t,
                PD,
                &TaggedRepr::new(true, 0, other_key, BASE),
                b"x",
                Access::REMOTE_WRITE
            ),
            Err(TaggedError::InvalidStag(other_key.0))
        );
    }

    /// A memory that lies: claims a large region, refuses every write.
    struct Liar;
    impl Memory for Liar {
        fn region(&self, _: STag) -> Option<RegionInfo> {
            region(1 << 20, Access::ALL)
        }
        fn write(
            &mut self,
            stag: STag,
            offset: u64,
            data: &[u8],
        ) -> Result<(), crate::memory::OutOfRange> {
            Err(crate::memory::OutOfRange {
                stag: stag.0,
                offset,
                len: data.len(),
            })
        }
        fn read(&self, _: STag, _: u64, _: &mut [u8]) -> Result<(), crate::memory::OutOfRange> {
            Ok(())
        }
        fn invalidate(&mut self, _: STag, _: PdId) -> Result<(), crate::memory::InvalidateError> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_memory_is_a_local_catastrophe() {
        let e = place_tagged(
            &mut Liar,
            PD,
            &TaggedRepr::new(true, 0, S, BASE),
            b"x",
            Access::REMOTE_WRITE,
        )
        .unwrap_err();
        assert!(matches!(e, TaggedError::Memory(_)));
        assert_eq!(e.terminate(), crate::error::TermCode::DDP_CATASTROPHIC);
    }

    #[test]
    fn sequence_accepts_contiguous_segments() {
        let mut s = TaggedSequence::new();
        assert_eq!(
            s.accept(&TaggedRepr::new(false, 0x42, S, 100), 10),
            Ok(false)
        );
        assert!(s.in_progress());
        assert_eq!(
            s.accept(&TaggedRepr::new(false, 0x42, S, 110), 10),
            Ok(false)
        );
        assert_eq!(s.received(), 20);
        assert_eq!(s.accept(&TaggedRepr::new(true, 0x42, S, 120), 5), Ok(true));
        assert!(!s.in_progress());
        // A new message may go anywhere.
        assert_eq!(
            s.accept(&TaggedRepr::new(true, 0x40, STag(9), 0), 0),
            Ok(true)
        );
    }

    #[test]
    fn sequence_refuses_another_stag_mid_message() {
        let mut s = TaggedSequence::new();
        s.accept(&TaggedRepr::new(false, 0x40, S, 0), 8).unwrap();
        let before = s.clone();
        assert_eq!(
            s.accept(&TaggedRepr::new(true, 0x40, STag(0x300), 8), 8),
            Err(TaggedError::InvalidStag(0x300))
        );
        assert_eq!(s, before);
    }

    #[test]
    fn sequence_refuses_a_gap_or_overlap() {
        let mut s = TaggedSequence::new();
        s.accept(&TaggedRepr::new(false, 0x40, S, 0), 8).unwrap();
        for to in [7, 9, 0] {
            assert!(matches!(
                s.accept(&TaggedRepr::new(true, 0x40, S, to), 1),
                Err(TaggedError::BaseBounds { .. })
            ));
        }
        assert_eq!(s.accept(&TaggedRepr::new(true, 0x40, S, 8), 1), Ok(true));
    }

    #[test]
    fn sequence_refuses_a_middle_segment_ending_at_the_top() {
        let mut s = TaggedSequence::new();
        assert!(matches!(
            s.accept(&TaggedRepr::new(false, 0, S, u64::MAX - 1), 2),
            Err(TaggedError::ToWrap { .. })
        ));
        assert!(!s.in_progress());
    }

    proptest! {
        /// Whatever the header says, placement never touches a byte outside
        /// `[to - base, to - base + len)` of the named region, and an
        /// accepted placement writes exactly the payload there.
        #[test]
        fn placement_never_writes_outside(
            stag_pick in 0u8..4,
            to in prop_oneof![0xfc0u64..0x10a0, any::<u64>(), (u64::MAX - 80)..=u64::MAX],
            payload in proptest::collection::vec(any::<u8>(), 0..80),
            pd in 6u32..9,
            need in prop_oneof![Just(Access::REMOTE_WRITE), Just(Access::LOCAL_WRITE)],
        ) {
            let mut t = RegionTable::new();
            t.register(STag(0x100), PdId(7), 0x1000, Access::ALL, vec![0x11; 64], true);
            t.register(STag(0x200), PdId(7), 0x1040, Access::LOCAL_WRITE, vec![0x22; 64], true);
            t.register(STag(0x300), PdId(8), u64::MAX - 63, Access::ALL, vec![0x33; 64], true);
            let stag = [STag(0x100), STag(0x200), STag(0x300), STag(0x400)][stag_pick as usize];
            let before = t.clone();
            let repr = TaggedRepr::new(true, 0x40, stag, to);
            let result = place_tagged(&mut t, PdId(pd), &repr, &payload, need);
            for s in [STag(0x100), STag(0x200), STag(0x300)] {
                let (old, new) = (before.bytes(s).unwrap(), t.bytes(s).unwrap());
                if s == stag && result.is_ok() && !payload.is_empty() {
                    let info = before.region(s).unwrap();
                    let off = (to - info.base) as usize;
                    prop_assert_eq!(&new[off..off + payload.len()], &payload[..]);
                    prop_assert_eq!(&new[..off], &old[..off]);
                    prop_assert_eq!(&new[off + payload.len()..], &old[off + payload.len()..]);
                } else {
                    prop_assert_eq!(new, old);
                }
            }
        }

        /// `check` accepts exactly the in-range accesses.
        #[test]
        fn check_agrees_with_interval_arithmetic(
            base in prop_oneof![any::<u64>(), 0u64..4096, (u64::MAX - 4096)..=u64::MAX],
            rlen in 0u64..4096,
            delta in -64i128..4200,
            far in any::<u64>(),
            use_far in proptest::bool::weighted(0.2),
            len in 1usize..4096,
        ) {
            let near = (base as i128 + delta).clamp(0, u64::MAX as i128) as u64;
            let to = if use_far { far } else { near };
            let r = Some(RegionInfo { pd: PD, base, len: rlen, access: Access::ALL });
            let (t, l, b, rl) = (to as u128, len as u128, base as u128, rlen as u128);
            let ok = t + l <= u64::MAX as u128 && t >= b && t + l <= b + rl;
            let got = check(r, PD, S, to, len, Access::REMOTE_WRITE);
            prop_assert_eq!(got.is_ok(), ok);
            if let Ok(off) = got {
                prop_assert_eq!(off, to - base);
            }
        }
    }
}
