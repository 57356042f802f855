//! Sender meets receiver: whatever the MULPDU, a message segmented by
//! `segment`, carried as bytes and received by `tagged`/`untagged` lands
//! intact, completes exactly once, and touches nothing else.

use ddp::memory::{Access, PdId, RegionTable, STag};
use ddp::segment::{Segmenter, TaggedSegments, UntaggedSegments};
use ddp::tagged::{place_tagged, TaggedSequence};
use ddp::untagged::{Placed, Sge, UntaggedQueues, QN_SEND};
use ddp::{parse_segment, SegmentRepr};
use proptest::prelude::*;

const PD: PdId = PdId(4);

/// Emits a header and payload into one ULPDU, as MPA would carry it.
fn ulpdu(repr: SegmentRepr, payload: &[u8]) -> Vec<u8> {
    let mut u = vec![0xa5; repr.buffer_len() + payload.len()];
    let n = repr.emit(&mut u).unwrap();
    u[n..].copy_from_slice(payload);
    u
}

proptest! {
    #[test]
    fn tagged_message_arrives_intact(
        msg in proptest::collection::vec(any::<u8>(), 0..3000),
        mulpdu in 15usize..700,
        lead in 0usize..32,
        trail in 0usize..32,
    ) {
        let stag = STag::new(0x42, 7);
        let base = 0x7fff_0000_0000u64;
        let to = base + lead as u64;
        let mut mem = RegionTable::new();
        mem.register(stag, PD, base, Access::REMOTE_WRITE, vec![0xee; lead + msg.len() + trail], true);
        let mut seq = TaggedSequence::new();
        let segs = TaggedSegments::new(Segmenter::tagged(msg.len() as u32, mulpdu).unwrap(), 0x40, stag, to);
        let n = segs.len();
        let mut completed = 0;
        for (i, (repr, range)) in segs.enumerate() {
            let wire = ulpdu(repr.into(), &msg[range]);
            prop_assert!(wire.len() <= mulpdu);
            let (SegmentRepr::Tagged(r), p) = parse_segment(&wire).unwrap() else {
                return Err(TestCaseError::fail("model changed on the wire"));
            };
            let done = seq.accept(&r, p.len()).unwrap();
            prop_assert_eq!(done, i == n - 1);
            completed += usize::from(done);
            place_tagged(&mut mem, PD, &r, p, Access::REMOTE_WRITE).unwrap();
        }
        prop_assert_eq!(completed, 1);
        let bytes = mem.bytes(stag).unwrap();
        prop_assert_eq!(&bytes[lead..lead + msg.len()], &msg[..]);
        prop_assert!(bytes[..lead].iter().chain(&bytes[lead + msg.len()..]).all(|&b| b == 0xee));
    }

    #[test]
    fn untagged_messages_arrive_intact_across_sges(
        msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..600), 1..6),
        mulpdu in 19usize..300,
        cuts in proptest::collection::vec(1u32..200, 0..4),
    ) {
        // Each buffer is one region cut into SGEs at `cuts`; the regions are
        // 32 bytes longer than the SGL so a stray write would show.
        let mut mem = RegionTable::new();
        let mut queues = UntaggedQueues::rdmap(8, 8);
        for (id, m) in msgs.iter().enumerate() {
            let stag = STag::new(id as u32 + 1, 0);
            let len = m.len() as u32;
            mem.register(stag, PD, 0, Access::LOCAL_WRITE, vec![0xee; m.len() + 32], true);
            let mut points: Vec<u32> = cuts.iter().map(|c| c % (len + 1)).collect();
            points.extend([0, len]);
            points.sort_unstable();
            let sgl: Vec<Sge> = points
                .windows(2)
                .map(|w| Sge { stag, to: u64::from(w[0]), len: w[1] - w[0] })
                .collect();
            queues.post(QN_SEND, id as u64, &sgl).unwrap();
        }
        for (i, m) in msgs.iter().enumerate() {
            let msn = i as u32 + 1;
            let segs = UntaggedSegments::new(Segmenter::untagged(m.len() as u32, mulpdu).unwrap(), 0x43, 0, QN_SEND, msn);
            let n = segs.len();
            for (k, (repr, range)) in segs.enumerate() {
                let wire = ulpdu(repr.into(), &m[range]);
                prop_assert!(wire.len() <= mulpdu);
                let (SegmentRepr::Untagged(r), p) = parse_segment(&wire).unwrap() else {
                    return Err(TestCaseError::fail("model changed on the wire"));
                };
                match queues.place(&mut mem, PD, &r, p).unwrap() {
                    Placed::Complete(c) => {
                        prop_assert_eq!(k, n - 1);
                        prop_assert_eq!((c.id, c.msn, c.len as usize), (i as u64, msn, m.len()));
                    }
                    Placed::Partial { .. } => prop_assert!(k < n - 1),
                    Placed::Inline { .. } => return Err(TestCaseError::fail("Send went inline")),
                }
            }
            let bytes = mem.bytes(STag::new(i as u32 + 1, 0)).unwrap();
            prop_assert_eq!(&bytes[..m.len()], &m[..]);
            prop_assert!(bytes[m.len()..].iter().all(|&b| b == 0xee));
        }
        prop_assert_eq!(queues.queue(QN_SEND).unwrap().posted(), 0);
    }
}
