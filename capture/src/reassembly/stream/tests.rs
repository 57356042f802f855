use super::*;
use proptest::prelude::*;

/// Everything the reassembler emitted, flattened.
#[derive(Debug, Default, PartialEq, Eq)]
struct Log {
    data: Vec<u8>,
    gaps: Vec<(u64, u64)>,
    fin: Option<u64>,
    /// Offsets of Data events, to check they are contiguous.
    next_offset: u64,
}

impl Log {
    fn take(&mut self, ev: StreamEvent<'_>) {
        match ev {
            StreamEvent::Data { offset, bytes } => {
                assert_eq!(offset, self.next_offset, "data not contiguous");
                self.data.extend_from_slice(bytes);
                self.next_offset += bytes.len() as u64;
            }
            StreamEvent::Gap { offset, len } => {
                assert_eq!(offset, self.next_offset, "gap not contiguous");
                self.gaps.push((offset, len));
                self.data.extend(std::iter::repeat_n(0xee, len as usize));
                self.next_offset += len;
            }
            StreamEvent::Fin { offset } => {
                assert!(self.fin.is_none(), "two FINs");
                assert_eq!(offset, self.next_offset);
                self.fin = Some(offset);
            }
        }
    }
}

struct Harness {
    r: Reassembler,
    log: Log,
}

impl Harness {
    fn new() -> Self {
        Harness {
            r: Reassembler::new(),
            log: Log::default(),
        }
    }
    fn seg(&mut self, seq: u32, flags: &str, data: &[u8]) -> &mut Self {
        self.seg_cut(seq, flags, data, data.len())
    }
    fn seg_cut(&mut self, seq: u32, flags: &str, data: &[u8], len: usize) -> &mut Self {
        let log = &mut self.log;
        self.r.segment(
            SeqNumber(seq),
            flags.contains('S'),
            flags.contains('F'),
            data,
            len,
            &mut |ev| log.take(ev),
        );
        self
    }
    fn finish(&mut self) -> &mut Self {
        let log = &mut self.log;
        self.r.finish(&mut |ev| log.take(ev));
        self
    }
}

#[test]
fn in_order_after_syn() {
    let mut h = Harness::new();
    h.seg(1000, "S", b"")
        .seg(1001, "", b"hello ")
        .seg(1007, "", b"world");
    assert_eq!(h.log.data, b"hello world");
    assert_eq!(h.r.isn(), Some(SeqNumber(1000)));
    assert_eq!(h.r.offset(), 11);
    assert!(!h.r.stats().started_mid_stream);
    assert_eq!(h.r.stats().bytes, 11);
    assert_eq!(h.r.stats().segments, 3);
}

#[test]
fn missing_syn_starts_at_first_data() {
    let mut h = Harness::new();
    h.seg(500, "", b"")
        .seg(7777, "", b"abc")
        .seg(7780, "", b"def");
    assert_eq!(h.log.data, b"abcdef");
    assert!(h.r.stats().started_mid_stream);
    assert_eq!(h.r.isn(), None);
}

#[test]
fn retransmissions_and_overlaps_are_dropped() {
    let mut h = Harness::new();
    h.seg(0, "S", b"")
        .seg(1, "", b"abcd")
        .seg(1, "", b"abcd") // full retransmission
        .seg(3, "", b"cdef") // overlaps 2 bytes
        .seg(2, "", b"b"); // old byte
    assert_eq!(h.log.data, b"abcdef");
    assert_eq!(h.r.stats().retransmitted, 2);
    assert_eq!(h.r.stats().overlap_bytes, 2);
}

#[test]
fn out_of_order_segments_are_held_then_delivered() {
    let mut h = Harness::new();
    h.seg(0, "S", b"").seg(7, "", b"ghi").seg(4, "", b"def");
    assert!(h.log.data.is_empty());
    assert_eq!(h.r.held_bytes(), 6);
    h.seg(1, "", b"abc");
    assert_eq!(h.log.data, b"abcdefghi");
    assert_eq!(h.r.held_bytes(), 0);
    assert_eq!(h.r.stats().out_of_order, 2);
    assert!(h.log.gaps.is_empty());
}

#[test]
fn held_duplicates_and_longer_replacements() {
    let mut h = Harness::new();
    h.seg(0, "S", b"")
        .seg(5, "", b"ef")
        .seg(5, "", b"ef")
        .seg(5, "", b"efgh")
        .seg(6, "", b"f"); // inside a held segment: trimmed when drained
    h.seg(1, "", b"abcd");
    assert_eq!(h.log.data, b"abcdefgh");
    assert_eq!(h.r.held_bytes(), 0);
}

#[test]
fn fin_after_all_data() {
    let mut h = Harness::new();
    h.seg(0, "S", b"").seg(4, "F", b"def");
    assert_eq!(h.log.fin, None);
    h.seg(1, "", b"abc");
    assert_eq!(h.log.fin, Some(6));
    assert!(h.r.finished());
    h.seg(7, "", b"late");
    assert_eq!(h.r.stats().after_fin, 1);
}

#[test]
fn hole_at_capture_end_is_a_gap() {
    let mut h = Harness::new();
    h.seg(0, "S", b"")
        .seg(1, "", b"ab")
        .seg(6, "", b"fg")
        .seg(11, "F", b"");
    h.finish();
    assert_eq!(h.log.gaps, vec![(2, 3), (7, 3)]);
    assert_eq!(h.log.fin, Some(10));
    assert_eq!(h.r.stats().gap_bytes, 6);
    assert_eq!(h.r.stats().gaps, 2);
}

#[test]
fn sequence_numbers_wrap() {
    let mut h = Harness::new();
    h.seg(u32::MAX - 2, "S", b"")
        .seg(u32::MAX - 1, "", b"ab")
        .seg(2, "", b"ef")
        .seg(0, "", b"cd");
    assert_eq!(h.log.data, b"abcdef");
}

#[test]
fn snaplen_cut_segments_leave_gaps() {
    let mut h = Harness::new();
    h.seg(0, "S", b"")
        .seg_cut(1, "", b"abc", 10)
        .seg(11, "", b"k");
    assert_eq!(h.log.gaps, vec![(3, 7)]);
    assert_eq!(h.log.data.len(), 11);
    // A retransmission cannot fill a gap already reported.
    h.seg(4, "", b"defghij");
    assert_eq!(h.r.stats().retransmitted, 1);
}

#[test]
fn too_many_held_segments_forces_a_gap() {
    let mut h = Harness::new();
    h.seg(0, "S", b"");
    // Byte 1 is missing; bytes 2.. arrive one segment each.
    for i in 0..=MAX_HELD_SEGMENTS as u32 {
        h.seg(2 + i, "", &[i as u8]);
    }
    assert_eq!(h.log.gaps, vec![(0, 1)]);
    assert_eq!(h.log.data.len(), MAX_HELD_SEGMENTS + 2);
    assert_eq!(h.r.held_bytes(), 0);
}

#[test]
fn too_many_held_bytes_forces_a_gap() {
    let mut h = Harness::new();
    h.seg(0, "S", b"");
    let chunk = vec![7u8; 64 * 1024];
    let mut seq = 101u32;
    while h.log.gaps.is_empty() {
        h.seg(seq, "", &chunk);
        seq += chunk.len() as u32;
        assert!(h.r.held_bytes() <= MAX_HELD_BYTES);
    }
    assert_eq!(h.log.gaps, vec![(0, 100)]);
}

#[test]
fn syn_retransmission_does_not_move_the_stream() {
    let mut h = Harness::new();
    h.seg(10, "S", b"").seg(10, "S", b"").seg(11, "", b"x");
    assert_eq!(h.log.data, b"x");
}

proptest! {
    /// Any split of a stream, delivered shuffled with duplicates and
    /// overlapping re-sends, comes out as the stream, with no gap.
    #[test]
    fn shuffled_duplicated_segments_reassemble(
        stream in proptest::collection::vec(any::<u8>(), 1..600),
        cuts in proptest::collection::vec(0usize..600, 0..30),
        isn in any::<u32>(),
        order in proptest::collection::vec(any::<u32>(), 60),
        dup in proptest::collection::vec((0usize..600, 1usize..50), 0..10),
    ) {
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c % stream.len()).collect();
        bounds.push(0);
        bounds.push(stream.len());
        bounds.sort_unstable();
        bounds.dedup();
        let mut segs: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        for (start, len) in dup {
            let start = start % stream.len();
            segs.push((start, (start + len).min(stream.len())));
        }
        let mut keyed: Vec<(u32, (usize, usize))> = segs.into_iter().enumerate()
            .map(|(i, s)| (order[i % order.len()].wrapping_add(i as u32), s)).collect();
        keyed.sort();
        let mut h = Harness::new();
        h.seg(isn, "S", b"");
        for (_, (a, b)) in keyed {
            h.seg(isn.wrapping_add(1 + a as u32), "", &stream[a..b]);
        }
        prop_assert_eq!(&h.log.data, &stream);
        prop_assert!(h.log.gaps.is_empty());
        h.finish();
        prop_assert_eq!(&h.log.data, &stream);
    }

    /// A dropped segment becomes exactly one gap of its size at the end.
    #[test]
    fn a_missing_segment_is_one_exact_gap(
        stream in proptest::collection::vec(any::<u8>(), 3..400),
        a in 1usize..400, b in 1usize..400,
    ) {
        let (a, b) = (a % (stream.len() - 1) + 1, b % (stream.len() - 1) + 1);
        let (a, b) = (a.min(b), a.max(b));
        prop_assume!(a < b);
        let mut h = Harness::new();
        h.seg(0, "S", b"");
        h.seg(1 + b as u32, "", &stream[b..]);
        h.seg(1, "", &stream[..a]);
        h.finish();
        prop_assert_eq!(&h.log.gaps, &vec![(a as u64, (b - a) as u64)]);
        prop_assert_eq!(&h.log.data[..a], &stream[..a]);
        prop_assert_eq!(&h.log.data[b..], &stream[b..]);
    }
}
