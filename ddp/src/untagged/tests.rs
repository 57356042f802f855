use super::*;
use crate::error::{TaggedError, TermCode, UntaggedError};
use crate::memory::{Access, PdId, RegionTable, STag};
use crate::wire::UntaggedRepr;
use proptest::prelude::*;

const PD: PdId = PdId(3);
const A: STag = STag(0x0a00);
const B: STag = STag(0x0b00);
const SEND: u8 = 0x43;

fn mem() -> RegionTable {
    let mut t = RegionTable::new();
    t.register(A, PD, 0x1000, Access::LOCAL_WRITE, vec![0; 64], true);
    t.register(B, PD, 0x2000, Access::LOCAL_WRITE, vec![0; 64], true);
    t
}

fn sge(stag: STag, to: u64, len: u32) -> Sge {
    Sge { stag, to, len }
}

fn seg(msn: u32, mo: u32, last: bool) -> UntaggedRepr {
    UntaggedRepr::new(last, SEND, 0, QN_SEND, msn, mo)
}

fn queues() -> UntaggedQueues {
    UntaggedQueues::rdmap(4, 4)
}

#[test]
fn rping_send_completes_into_a_16_byte_buffer() {
    // rping-default.pcap frame 8: MSN 1, 16-byte payload.
    let payload = [
        0x00, 0x00, 0x55, 0x80, 0x8d, 0xd2, 0x83, 0x70, 0xbd, 0x94, 0xaf, 0x00, 0, 0, 0, 0x40,
    ];
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 77, &[sge(A, 0x1000, 16)]).unwrap();
    let r = q.place(&mut m, PD, &seg(1, 0, true), &payload).unwrap();
    assert_eq!(
        r,
        Placed::Complete(Completion {
            qn: 0,
            msn: 1,
            id: 77,
            len: 16,
            rsvd_ulp: SEND,
            rsvd_ulp2: 0
        })
    );
    assert_eq!(&m.bytes(A).unwrap()[..16], &payload);
    assert_eq!(q.queue(QN_SEND).unwrap().expected_msn(), 2);
}

#[test]
fn msns_advance_one_per_message() {
    let mut m = mem();
    let mut q = queues();
    for id in 0..3 {
        q.post(QN_SEND, id, &[sge(A, 0x1000, 8)]).unwrap();
    }
    for msn in 1..=3 {
        let r = q.place(&mut m, PD, &seg(msn, 0, true), b"x").unwrap();
        assert!(matches!(r, Placed::Complete(c) if c.msn == msn && c.id == u64::from(msn - 1)));
    }
}

#[test]
fn msn_gap_is_out_of_range_and_changes_nothing() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    let before = (q.clone(), m.clone());
    let e = q.place(&mut m, PD, &seg(2, 0, true), b"x").unwrap_err();
    assert_eq!(
        e,
        UntaggedError::MsnRange {
            qn: 0,
            msn: 2,
            expected: 1
        }
    );
    assert_eq!(e.terminate(), TermCode::DDP_UT_MSN_RANGE);
    assert_eq!((q, m.bytes(A)), (before.0, before.1.bytes(A)));
}

#[test]
fn replayed_msn_is_out_of_range() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    q.post(QN_SEND, 2, &[sge(A, 0x1000, 8)]).unwrap();
    q.place(&mut m, PD, &seg(1, 0, true), b"x").unwrap();
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 0, true), b"x"),
        Err(UntaggedError::MsnRange { expected: 2, .. })
    ));
}

#[test]
fn multi_segment_message_reassembles() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 9, &[sge(A, 0x1000, 64)]).unwrap();
    assert_eq!(
        q.place(&mut m, PD, &seg(1, 0, false), b"hello "),
        Ok(Placed::Partial {
            qn: 0,
            msn: 1,
            id: 9,
            placed: 6
        })
    );
    assert!(q.queue(QN_SEND).unwrap().in_progress());
    assert_eq!(q.queue(QN_SEND).unwrap().placed(), 6);
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 6, false), b"big "),
        Ok(Placed::Partial { placed: 10, .. })
    ));
    let done = q.place(&mut m, PD, &seg(1, 10, true), b"world").unwrap();
    assert!(matches!(done, Placed::Complete(c) if c.len == 15 && c.id == 9));
    assert_eq!(&m.bytes(A).unwrap()[..15], b"hello big world");
    assert!(!q.queue(QN_SEND).unwrap().in_progress());
}

#[test]
fn mo_must_equal_bytes_already_placed() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 64)]).unwrap();
    // First segment not at MO 0.
    let e = q.place(&mut m, PD, &seg(1, 4, true), b"x").unwrap_err();
    assert_eq!(
        e,
        UntaggedError::InvalidMo {
            qn: 0,
            msn: 1,
            mo: 4,
            expected: 0
        }
    );
    assert_eq!(e.terminate(), TermCode::DDP_UT_INVALID_MO);
    q.place(&mut m, PD, &seg(1, 0, false), b"abcd").unwrap();
    // A gap, a repeat and an overlap are all refused.
    for mo in [5, 0, 2] {
        assert!(matches!(
            q.place(&mut m, PD, &seg(1, mo, true), b"e"),
            Err(UntaggedError::InvalidMo { expected: 4, .. })
        ));
    }
    assert!(q.place(&mut m, PD, &seg(1, 4, true), b"e").is_ok());
}

#[test]
fn interleaving_two_messages_is_refused() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 32)]).unwrap();
    q.post(QN_SEND, 2, &[sge(B, 0x2000, 32)]).unwrap();
    q.place(&mut m, PD, &seg(1, 0, false), b"first").unwrap();
    let before_b = m.bytes(B).unwrap().to_vec();
    let e = q
        .place(&mut m, PD, &seg(2, 0, true), b"second")
        .unwrap_err();
    assert_eq!(
        e,
        UntaggedError::Interleaved {
            qn: 0,
            msn: 2,
            active: 1
        }
    );
    assert_eq!(e.terminate(), TermCode::DDP_UT_MSN_RANGE);
    assert_eq!(m.bytes(B).unwrap(), &before_b[..]);
    // The first message can still finish.
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 5, true), b"!"),
        Ok(Placed::Complete(c)) if c.id == 1 && c.len == 6
    ));
}

#[test]
fn message_longer_than_the_buffer_is_too_long() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    let e = q
        .place(&mut m, PD, &seg(1, 0, true), b"123456789")
        .unwrap_err();
    assert_eq!(
        e,
        UntaggedError::TooLong {
            qn: 0,
            msn: 1,
            needed: 9,
            capacity: 8
        }
    );
    assert_eq!(e.terminate(), TermCode::DDP_UT_TOO_LONG);
    assert_eq!(m.bytes(A).unwrap()[..9], [0; 9]);
    // Exactly the capacity fits.
    assert!(q.place(&mut m, PD, &seg(1, 0, true), b"12345678").is_ok());
}

#[test]
fn message_outgrowing_the_buffer_mid_way_is_too_long() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    q.place(&mut m, PD, &seg(1, 0, false), b"12345").unwrap();
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 5, true), b"6789"),
        Err(UntaggedError::TooLong {
            needed: 9,
            capacity: 8,
            ..
        })
    ));
    assert_eq!(m.bytes(A).unwrap()[5..9], [0; 4]);
}

#[test]
fn no_posted_buffer_is_no_buffer_available() {
    let mut m = mem();
    let mut q = queues();
    let e = q.place(&mut m, PD, &seg(1, 0, true), b"x").unwrap_err();
    assert_eq!(e, UntaggedError::NoBuffer { qn: 0, msn: 1 });
    assert_eq!(e.terminate(), TermCode::DDP_UT_NO_BUFFER);
    // Nothing was consumed: the same segment lands once a buffer is posted.
    q.post(QN_SEND, 5, &[sge(A, 0x1000, 8)]).unwrap();
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 0, true), b"x"),
        Ok(Placed::Complete(c)) if c.id == 5
    ));
}

#[test]
fn unknown_queue_numbers_are_invalid() {
    let mut m = mem();
    let mut q = queues();
    for qn in [3, 15, 16, 1000, u32::MAX] {
        let r = UntaggedRepr::new(true, SEND, 0, qn, 1, 0);
        let e = q.place(&mut m, PD, &r, b"").unwrap_err();
        assert_eq!(e, UntaggedError::InvalidQn { qn });
        assert_eq!(e.terminate(), TermCode::DDP_UT_INVALID_QN);
    }
}

#[test]
fn the_ulp_decides_which_queues_exist() {
    let mut m = mem();
    let mut q = UntaggedQueues::new();
    let r = UntaggedRepr::new(true, 0, 0, 5, 1, 0);
    assert!(matches!(
        q.place(&mut m, PD, &r, b""),
        Err(UntaggedError::InvalidQn { qn: 5 })
    ));
    assert!(q.enable(5, QueueMode::Inline { max_message: 4 }));
    assert!(q.place(&mut m, PD, &r, b"").is_ok());
    assert!(q.disable(5).is_some());
    assert!(q.place(&mut m, PD, &r, b"").is_err());
    assert!(!q.enable(MAX_QUEUES, QueueMode::Inline { max_message: 4 }));
}

#[test]
fn payload_scatters_across_sges_in_two_regions() {
    let mut m = mem();
    let mut q = queues();
    let sgl = [
        sge(A, 0x1010, 3),
        sge(B, 0x2000, 0),
        sge(B, 0x2020, 5),
        sge(A, 0x1000, 4),
    ];
    q.post(QN_SEND, 1, &sgl).unwrap();
    q.place(&mut m, PD, &seg(1, 0, false), b"abcd").unwrap();
    q.place(&mut m, PD, &seg(1, 4, false), b"efgh").unwrap();
    let done = q.place(&mut m, PD, &seg(1, 8, true), b"ijkl").unwrap();
    assert!(matches!(done, Placed::Complete(c) if c.len == 12));
    let a = m.bytes(A).unwrap();
    let b = m.bytes(B).unwrap();
    assert_eq!(&a[0x10..0x13], b"abc");
    assert_eq!(&b[0x20..0x25], b"defgh");
    assert_eq!(&a[..4], b"ijkl");
    // Nothing else moved.
    assert_eq!(a.iter().filter(|&&x| x != 0).count(), 7);
    assert_eq!(b.iter().filter(|&&x| x != 0).count(), 5);
}

#[test]
fn posted_queue_is_bounded() {
    let mut q = UntaggedQueues::rdmap(2, 1);
    q.post(QN_SEND, 1, &[]).unwrap();
    q.post(QN_SEND, 2, &[]).unwrap();
    assert_eq!(
        q.post(QN_SEND, 3, &[]),
        Err(PostError::QueueFull { qn: 0, max: 2 })
    );
    assert_eq!(q.queue(QN_SEND).unwrap().posted(), 2);
}

#[test]
fn posting_checks_the_sgl_shape() {
    let mut q = UntaggedQueues::rdmap(4, 2);
    assert_eq!(
        q.post(QN_SEND, 1, &[sge(A, 0, 1); 3]),
        Err(PostError::TooManySges { n: 3, max: 2 })
    );
    assert_eq!(
        q.post(QN_SEND, 1, &[sge(A, 0, 1), sge(A, u64::MAX, 2)]),
        Err(PostError::SgeWraps { index: 1 })
    );
    assert_eq!(
        q.post(QN_READ_REQUEST, 1, &[]),
        Err(PostError::NotPostable { qn: 1 })
    );
    assert_eq!(q.post(7, 1, &[]), Err(PostError::NoSuchQueue { qn: 7 }));
    assert_eq!(q.queue(QN_SEND).unwrap().posted(), 0);
}

#[test]
fn buffers_fill_in_posting_order() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 10, &[sge(A, 0x1000, 4)]).unwrap();
    q.post(QN_SEND, 11, &[sge(B, 0x2000, 4)]).unwrap();
    let ids: Vec<u64> = (1..=2)
        .map(
            |msn| match q.place(&mut m, PD, &seg(msn, 0, true), b"zz").unwrap() {
                Placed::Complete(c) => c.id,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(ids, vec![10, 11]);
}

#[test]
fn zero_length_send_completes() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 4, &[]).unwrap();
    assert_eq!(
        q.place(&mut m, PD, &seg(1, 0, true), b""),
        Ok(Placed::Complete(Completion {
            qn: 0,
            msn: 1,
            id: 4,
            len: 0,
            rsvd_ulp: SEND,
            rsvd_ulp2: 0
        }))
    );
}

#[test]
fn last_segment_carries_opcode_and_invalidate_stag() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    q.place(&mut m, PD, &seg(1, 0, false), b"ab").unwrap();
    // Send with Invalidate (opcode 4) of STag 0x1234500.
    let last = UntaggedRepr::new(true, 0x44, 0x0123_4500, QN_SEND, 1, 2);
    let done = q.place(&mut m, PD, &last, b"cd").unwrap();
    assert!(matches!(
        done,
        Placed::Complete(Completion {
            rsvd_ulp: 0x44,
            rsvd_ulp2: 0x0123_4500,
            len: 4,
            ..
        })
    ));
}

#[test]
fn deregistered_buffer_is_a_local_error() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    let bytes = m.deregister(A).unwrap();
    let before = q.clone();
    let e = q.place(&mut m, PD, &seg(1, 0, true), b"x").unwrap_err();
    assert_eq!(
        e,
        UntaggedError::LocalBuffer {
            qn: 0,
            id: 1,
            source: TaggedError::InvalidStag(A.0)
        }
    );
    assert_eq!(e.terminate(), TermCode::DDP_CATASTROPHIC);
    assert_eq!(q, before);
    // Registered again, the same segment lands.
    m.register(A, PD, 0x1000, Access::LOCAL_WRITE, bytes, true);
    assert!(q.place(&mut m, PD, &seg(1, 0, true), b"x").is_ok());
}

#[test]
fn buffer_without_local_write_is_a_local_error() {
    let mut m = mem();
    m.register(STag(0xc00), PD, 0, Access::REMOTE_WRITE, vec![0; 8], true);
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(STag(0xc00), 0, 8)]).unwrap();
    assert!(matches!(
        q.place(&mut m, PD, &seg(1, 0, true), b"x"),
        Err(UntaggedError::LocalBuffer {
            source: TaggedError::AccessRights(0xc00),
            ..
        })
    ));
    assert_eq!(
        check_sgl(&m, PD, &[sge(STag(0xc00), 0, 8)]),
        Err(TaggedError::AccessRights(0xc00))
    );
}

#[test]
fn read_requests_are_inline_and_sequenced() {
    let mut m = mem();
    let mut q = queues();
    let before = m.clone();
    for msn in 1..=3 {
        let r = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, msn, 0);
        assert_eq!(
            q.place(&mut m, PD, &r, &[0; 28]),
            Ok(Placed::Inline {
                qn: 1,
                msn,
                mo: 0,
                last: true
            })
        );
    }
    assert_eq!(m.bytes(A), before.bytes(A));
    let r = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, 4, 0);
    assert!(matches!(
        q.place(&mut m, PD, &r, &[0; 29]),
        Err(UntaggedError::TooLong {
            needed: 29,
            capacity: 28,
            ..
        })
    ));
    let r = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, 5, 0);
    assert!(matches!(
        q.place(&mut m, PD, &r, &[0; 28]),
        Err(UntaggedError::MsnRange { expected: 4, .. })
    ));
}

#[test]
fn inline_messages_may_span_segments() {
    let mut m = mem();
    let mut q = queues();
    let first = UntaggedRepr::new(false, 0x47, 0, QN_TERMINATE, 1, 0);
    let last = UntaggedRepr::new(true, 0x47, 0, QN_TERMINATE, 1, 4);
    assert_eq!(
        q.place(&mut m, PD, &first, &[1; 4]),
        Ok(Placed::Inline {
            qn: 2,
            msn: 1,
            mo: 0,
            last: false
        })
    );
    assert!(matches!(
        q.place(&mut m, PD, &first, &[1; 4]),
        Err(UntaggedError::InvalidMo { .. })
    ));
    assert!(matches!(
        q.place(&mut m, PD, &last, &[2; 8]),
        Ok(Placed::Inline {
            mo: 4,
            last: true,
            ..
        })
    ));
    assert_eq!(q.queue(QN_TERMINATE).unwrap().expected_msn(), 2);
}

#[test]
fn queues_keep_separate_msns() {
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    let rr = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, 1, 0);
    q.place(&mut m, PD, &rr, &[0; 28]).unwrap();
    // QN 0 still expects 1 although QN 1 moved on.
    assert!(q.place(&mut m, PD, &seg(1, 0, true), b"x").is_ok());
    let rr2 = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, 2, 0);
    assert!(q.place(&mut m, PD, &rr2, &[0; 28]).is_ok());
}

#[test]
fn a_message_on_another_queue_may_interleave() {
    // Interleaving is refused within a queue only: a Read Request may
    // arrive between two segments of a Send.
    let mut m = mem();
    let mut q = queues();
    q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]).unwrap();
    q.place(&mut m, PD, &seg(1, 0, false), b"ab").unwrap();
    let rr = UntaggedRepr::new(true, 0x41, 0, QN_READ_REQUEST, 1, 0);
    assert!(q.place(&mut m, PD, &rr, &[0; 28]).is_ok());
    assert!(q.place(&mut m, PD, &seg(1, 2, true), b"cd").is_ok());
}

#[test]
fn flush_returns_in_progress_first() {
    let mut m = mem();
    let mut q = queues();
    for id in [1, 2, 3] {
        q.post(QN_SEND, id, &[sge(A, 0x1000, 8)]).unwrap();
    }
    q.place(&mut m, PD, &seg(1, 0, false), b"ab").unwrap();
    assert_eq!(q.flush(), vec![(0, 1), (0, 2), (0, 3)]);
    assert_eq!(q.queue(QN_SEND).unwrap().posted(), 0);
    assert!(!q.queue(QN_SEND).unwrap().in_progress());
    assert!(q.flush().is_empty());
}

#[test]
fn msn_wraps_modulo_two_to_the_32() {
    let mut m = mem();
    let mut q = queues();
    q.queue_mut(QN_SEND).unwrap().set_expected_msn(u32::MAX);
    q.post(QN_SEND, 1, &[]).unwrap();
    q.post(QN_SEND, 2, &[]).unwrap();
    assert!(q.place(&mut m, PD, &seg(u32::MAX, 0, true), b"").is_ok());
    assert_eq!(q.queue(QN_SEND).unwrap().expected_msn(), 0);
    assert!(q.place(&mut m, PD, &seg(0, 0, true), b"").is_ok());
    assert_eq!(q.queue(QN_SEND).unwrap().expected_msn(), 1);
}

#[test]
fn split_at_every_offset_reassembles() {
    let msg: Vec<u8> = (0..40u8).collect();
    for k in 0..=msg.len() {
        let mut m = mem();
        let mut q = queues();
        q.post(QN_SEND, 1, &[sge(A, 0x1000, 20), sge(B, 0x2000, 20)])
            .unwrap();
        let first = q.place(&mut m, PD, &seg(1, 0, false), &msg[..k]).unwrap();
        assert!(matches!(first, Placed::Partial { placed, .. } if placed as usize == k));
        let done = q
            .place(&mut m, PD, &seg(1, k as u32, true), &msg[k..])
            .unwrap();
        assert!(matches!(done, Placed::Complete(c) if c.len == 40));
        let mut got = m.bytes(A).unwrap()[..20].to_vec();
        got.extend_from_slice(&m.bytes(B).unwrap()[..20]);
        assert_eq!(got, msg, "split at {k}");
    }
}

/// One step a fuzzed peer takes.
#[derive(Debug, Clone)]
struct Step {
    qn: u32,
    msn_delta: i8,
    mo_delta: i8,
    len: usize,
    last: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop_oneof![8 => Just(0u32), 1 => 0u32..5],
        prop_oneof![8 => Just(0i8), 1 => -2i8..3],
        prop_oneof![8 => Just(0i8), 1 => -3i8..4],
        0usize..24,
        any::<bool>(),
    )
        .prop_map(|(qn, msn_delta, mo_delta, len, last)| Step {
            qn,
            msn_delta,
            mo_delta,
            len,
            last,
        })
}

proptest! {
    /// Against a simple reference: whatever the peer sends, an accepted
    /// Send segment lands at the next bytes of the oldest buffer, a refused
    /// one changes neither queue nor memory, and no byte outside the posted
    /// SGEs ever changes.
    #[test]
    fn untagged_placement_matches_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        let mut m = RegionTable::new();
        // Three 32-byte buffers in one region; the rest of it is a guard.
        m.register(A, PD, 0, Access::LOCAL_WRITE, vec![0xee; 128], true);
        let mut q = UntaggedQueues::rdmap(3, 2);
        for id in 0..3u64 {
            let base = id * 32;
            q.post(QN_SEND, id, &[sge(A, base, 10), sge(A, base + 10, 22)]).unwrap();
        }
        // Reference state: expected MSN, bytes placed, completed count.
        let (mut msn, mut placed, mut done) = (1u32, 0u32, 0u64);
        let mut counter = 0u8;
        for s in steps {
            let repr = UntaggedRepr::new(
                s.last, SEND, 0, s.qn,
                msn.wrapping_add(s.msn_delta as u32),
                placed.wrapping_add(s.mo_delta as u32),
            );
            let payload: Vec<u8> = (0..s.len).map(|_| { counter = counter.wrapping_add(1); counter }).collect();
            let before = (q.clone(), m.clone());
            let res = q.place(&mut m, PD, &repr, &payload);
            let valid_qn = s.qn <= 2;
            let ok_expected = valid_qn
                && s.qn == 0
                && repr.msn == msn
                && repr.mo == placed
                && done < 3
                && placed as usize + s.len <= 32;
            if s.qn != 0 && valid_qn {
                // Inline queues: only check they never touch memory.
                prop_assert_eq!(m.bytes(A), before.1.bytes(A));
                continue;
            }
            prop_assert_eq!(res.is_ok(), ok_expected, "{:?} -> {:?}", repr, res);
            if let Ok(p) = res {
                let base = done as usize * 32 + placed as usize;
                let bytes = m.bytes(A).unwrap();
                prop_assert_eq!(&bytes[base..base + s.len], &payload[..]);
                let old = before.1.bytes(A).unwrap();
                prop_assert_eq!(&bytes[..base], &old[..base]);
                prop_assert_eq!(&bytes[base + s.len..], &old[base + s.len..]);
                placed += s.len as u32;
                if s.last {
                    prop_assert!(matches!(p, Placed::Complete(c) if c.id == done && c.len == placed));
                    done += 1;
                    placed = 0;
                    msn += 1;
                } else {
                    prop_assert!(matches!(p, Placed::Partial { .. }), "expected a partial placement");
                }
            } else {
                prop_assert_eq!(&q, &before.0);
                prop_assert_eq!(m.bytes(A), before.1.bytes(A));
            }
            // The guard after the three buffers never changes.
            prop_assert!(m.bytes(A).unwrap()[96..].iter().all(|&b| b == 0xee));
        }
    }
}

fn shared_queues() -> UntaggedQueues {
    let mut q = queues();
    q.enable(QN_SEND, QueueMode::Shared);
    q
}

#[test]
fn shared_queues_draw_buffers_from_one_pool_in_posting_order() {
    let mut m = mem();
    let (mut s1, mut s2) = (shared_queues(), shared_queues());
    let mut pool = SharedBuffers::new(PD, 4, 2);
    for id in 10..13 {
        pool.post(id, &[sge(A, 0x1000, 8)]).unwrap();
    }
    let first = s1
        .place_with(&mut m, PD, &seg(1, 0, true), b"one", Some(&mut pool))
        .unwrap();
    let second = s2
        .place_with(&mut m, PD, &seg(1, 0, true), b"two", Some(&mut pool))
        .unwrap();
    assert!(matches!(first, Placed::Complete(c) if c.id == 10 && c.len == 3));
    assert!(matches!(second, Placed::Complete(c) if c.id == 11 && c.msn == 1));
    assert_eq!(pool.posted(), 1);
    assert_eq!(s1.queue(QN_SEND).unwrap().expected_msn(), 2);
}

#[test]
fn a_shared_queue_takes_no_posts_and_needs_its_pool() {
    let mut m = mem();
    let mut q = shared_queues();
    assert_eq!(
        q.post(QN_SEND, 1, &[sge(A, 0x1000, 8)]),
        Err(PostError::NotPostable { qn: 0 })
    );
    let mut empty = SharedBuffers::new(PD, 4, 2);
    for pool in [None, Some(&mut empty)] {
        let e = q
            .place_with(&mut m, PD, &seg(1, 0, true), b"x", pool)
            .unwrap_err();
        assert_eq!(e, UntaggedError::NoBuffer { qn: 0, msn: 1 });
        assert_eq!(e.terminate(), TermCode::DDP_UT_NO_BUFFER);
    }
}

#[test]
fn a_message_in_progress_keeps_its_shared_buffer_and_flushes_only_it() {
    let mut m = mem();
    let mut q = shared_queues();
    let mut pool = SharedBuffers::new(PD, 4, 2);
    pool.post(1, &[sge(A, 0x1000, 8)]).unwrap();
    pool.post(2, &[sge(B, 0x2000, 8)]).unwrap();
    let r = q
        .place_with(&mut m, PD, &seg(1, 0, false), b"ab", Some(&mut pool))
        .unwrap();
    assert!(matches!(
        r,
        Placed::Partial {
            id: 1,
            placed: 2,
            ..
        }
    ));
    // The next segment needs no pool: the buffer is the stream's now.
    let r = q
        .place_with(&mut m, PD, &seg(1, 2, false), b"cd", None)
        .unwrap();
    assert!(matches!(
        r,
        Placed::Partial {
            id: 1,
            placed: 4,
            ..
        }
    ));
    assert_eq!(q.flush(), vec![(QN_SEND, 1)]);
    assert_eq!(pool.drain(), vec![2]);
}

#[test]
fn a_too_long_message_claims_the_shared_buffer_it_failed_in() {
    let mut m = mem();
    let mut q = shared_queues();
    let mut pool = SharedBuffers::new(PD, 4, 2);
    pool.post(5, &[sge(A, 0x1000, 2)]).unwrap();
    pool.post(6, &[sge(A, 0x1000, 2)]).unwrap();
    let e = q
        .place_with(&mut m, PD, &seg(1, 0, true), b"long", Some(&mut pool))
        .unwrap_err();
    assert!(matches!(e, UntaggedError::TooLong { .. }));
    assert_eq!(pool.posted(), 1, "buffer 5 is reported with the failure");
    assert_eq!(q.flush(), vec![(QN_SEND, 5)]);
}

#[test]
fn shared_buffers_are_scattered_into_as_the_pools_domain() {
    let mut m = mem();
    let mut q = shared_queues();
    // The stream is in another domain than the pool and the regions.
    let other = PdId(9);
    let mut pool = SharedBuffers::new(PD, 4, 2);
    pool.post(1, &[sge(A, 0x1000, 8)]).unwrap();
    let r = q
        .place_with(&mut m, other, &seg(1, 0, true), b"pd", Some(&mut pool))
        .unwrap();
    assert!(matches!(r, Placed::Complete(c) if c.id == 1));
    let mut foreign = SharedBuffers::new(other, 4, 2);
    foreign.post(2, &[sge(A, 0x1000, 8)]).unwrap();
    let e = q
        .place_with(&mut m, PD, &seg(2, 0, true), b"pd", Some(&mut foreign))
        .unwrap_err();
    assert!(matches!(e, UntaggedError::LocalBuffer { id: 2, .. }));
}

#[test]
fn shared_pool_is_bounded_and_checks_the_sgl() {
    let mut pool = SharedBuffers::new(PD, 2, 1);
    pool.post(1, &[sge(A, 0x1000, 8)]).unwrap();
    assert_eq!(
        pool.post(2, &[sge(A, 0x1000, 8), sge(B, 0x2000, 8)]),
        Err(PostError::TooManySges { n: 2, max: 1 })
    );
    assert_eq!(
        pool.post(3, &[sge(A, u64::MAX, 8)]),
        Err(PostError::SgeWraps { index: 0 })
    );
    pool.post(4, &[]).unwrap();
    assert_eq!(
        pool.post(5, &[]),
        Err(PostError::QueueFull { qn: 0, max: 2 })
    );
    assert_eq!(pool.drain(), vec![1, 4]);
    assert_eq!(pool.posted(), 0);
}
