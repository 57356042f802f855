//! Segments cut at record boundaries.
//!
//! A protocol that frames records on the stream (iWARP's MPA FPDUs) wants
//! each record carried whole in one segment where it fits (RFC 5044
//! section 4: an MPA-aware sender aligns FPDUs with TCP segments), so a
//! receiver or a dissector that reads segments one by one finds a record
//! start at the start of every segment. The user marks where records end
//! ([`Socket::mark_record_end`]); the socket then cuts segments only there:
//!
//! - a segment carries one or more whole records, as many as the MSS and
//!   the windows allow;
//! - a record longer than the MSS is cut every MSS from its start, so its
//!   last piece ends on its end;
//! - with segmentation offload a super-segment is cut by the device every
//!   MSS, so it only reaches past one MSS while those cuts fall on record
//!   cuts too;
//! - with sender-side silly window avoidance on, a record the window does
//!   not yet fit waits while data is in flight (an ACK will open the
//!   window), except up to data the receiver already holds (a resend that
//!   stops at SACKed data ends where an earlier segment started) and for
//!   the tail loss probe; otherwise, or with nothing in flight, the
//!   window-limited piece leaves cut;
//! - a segment the send ring's end would cut is copied whole into a
//!   scratch buffer first.
//!
//! Octets queued before the first mark or after the last one are not
//! records: they are cut as a socket without marks would cut them.
//!
//! The storage is the caller's ([`Socket::set_record_buffers`]). Ends
//! below SND.UNA are let go as new ones are marked. When the ring of
//! record ends is full, further marks are ignored until acknowledgements
//! free room: the unmarked records are cut as plain octets, which costs
//! alignment, never data.

use managed::ManagedSlice;

use super::{Socket, SocketBuffer};
use crate::wire::TcpSeqNumber;

/// Record ends above SND.UNA and a scratch for a segment across the ring's
/// end; both empty (so the mechanism off) unless the user provides them.
#[derive(Debug)]
pub(super) struct Records<'a> {
    /// Sorted record ends, a ring of `len` from `head`. The oldest may lie
    /// at or below SND.UNA: it is the start of the record SND.UNA falls in.
    /// (Indexed by hand: a lookup per segment is a binary search, and
    /// `RingBuffer`'s index takes a division.)
    ends: ManagedSlice<'a, TcpSeqNumber>,
    head: usize,
    len: usize,
    scratch: ManagedSlice<'a, u8>,
    /// Several whole records may share a segment.
    packed: bool,
}

impl<'a> Records<'a> {
    pub(super) fn new() -> Self {
        Records {
            ends: ManagedSlice::Borrowed(&mut []),
            head: 0,
            len: 0,
            scratch: ManagedSlice::Borrowed(&mut []),
            packed: true,
        }
    }

    /// The payload [`Socket::linearize`] copied (a method of the field, so
    /// the segment borrows no more of the socket than the ring would).
    pub(super) fn scratch(&self, len: usize) -> &[u8] {
        &self.scratch[..len]
    }

    fn active(&self) -> bool {
        !self.ends.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// The `i`th end, `i < len`.
    fn get(&self, i: usize) -> TcpSeqNumber {
        let at = self.head + i;
        let at = if at >= self.ends.len() {
            at - self.ends.len()
        } else {
            at
        };
        self.ends[at]
    }

    /// Forgets ends no longer needed: all but the last one at or below
    /// `una`.
    fn prune(&mut self, una: TcpSeqNumber) {
        while self.len >= 2 && self.get(1) <= una {
            self.head = if self.head + 1 == self.ends.len() {
                0
            } else {
                self.head + 1
            };
            self.len -= 1;
        }
    }

    fn push(&mut self, end: TcpSeqNumber, una: TcpSeqNumber) -> bool {
        self.prune(una);
        let len = self.len;
        if len > 0 && self.get(len - 1) >= end {
            // Already marked, or out of order: nothing new.
            return self.get(len - 1) == end;
        }
        if len == self.ends.len() {
            return false;
        }
        let at = (self.head + len) % self.ends.len();
        self.ends[at] = end;
        self.len += 1;
        true
    }

    /// The index of the first end above `p`.
    fn above(&self, p: TcpSeqNumber) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid) <= p {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The record around octet position `p`: its start and end, when `p`
    /// lies strictly inside a marked record.
    fn around(&self, p: TcpSeqNumber) -> Option<(TcpSeqNumber, TcpSeqNumber)> {
        let i = self.above(p);
        if i == 0 || i == self.len {
            return None;
        }
        let start = self.get(i - 1);
        (start != p).then(|| (start, self.get(i)))
    }

    /// Whether a segment may end (and the next start) at `p`.
    fn is_cut(&self, p: TcpSeqNumber, mss: usize) -> bool {
        match self.around(p) {
            None => true,
            Some((start, end)) => end - start > mss && (p - start) % mss == 0,
        }
    }

    /// The first cut after `from`, unless only unmarked octets follow.
    fn next_cut(&self, from: TcpSeqNumber, mss: usize) -> Option<TcpSeqNumber> {
        let i = self.above(from);
        if i == self.len {
            return None;
        }
        let next = self.get(i);
        if i == 0 {
            return Some(next);
        }
        let start = self.get(i - 1);
        if next - start > mss {
            let grid = start + ((from - start) / mss + 1) * mss;
            return Some(if grid < next { grid } else { next });
        }
        Some(next)
    }

    /// Whether a piece of a full `mss` from `pos` (a cut) ends on a cut.
    fn full_piece(&self, pos: TcpSeqNumber, mss: usize) -> bool {
        if self.packed {
            self.is_cut(pos + mss, mss)
        } else {
            self.next_cut(pos, mss).is_none_or(|c| c == pos + mss)
        }
    }

    /// The last cut in `(from, to]`; without packing, the first, if no
    /// later than `to`.
    fn last_cut(&self, from: TcpSeqNumber, to: TcpSeqNumber, mss: usize) -> Option<TcpSeqNumber> {
        if to <= from {
            return None;
        }
        if !self.packed {
            return match self.next_cut(from, mss) {
                Some(cut) => (cut <= to).then_some(cut),
                None => Some(to),
            };
        }
        let cut = match self.around(to) {
            None => to,
            Some((start, end)) if end - start > mss => start + (to - start) / mss * mss,
            Some((start, _)) => start,
        };
        (cut > from).then_some(cut)
    }

    /// The first cut at or after `p`.
    fn first_cut(&self, p: TcpSeqNumber, mss: usize) -> TcpSeqNumber {
        match self.around(p) {
            None => p,
            Some((start, end)) if end - start > mss => {
                let grid = start + (p - start).div_ceil(mss) * mss;
                if grid < end { grid } else { end }
            }
            Some((_, end)) => end,
        }
    }

    /// How many of `limit` octets from `start` one (super-)segment carries
    /// so that it, and each piece a device cuts from it every `mss`, ends
    /// on a cut; 0 if even the first cut lies beyond `limit`.
    fn aligned_len(&self, start: TcpSeqNumber, limit: usize, mss: usize) -> usize {
        let end = start + limit;
        let mut pos = start;
        while end - pos > mss && self.full_piece(pos, mss) {
            pos = pos + mss;
        }
        let piece_end = if end - pos > mss { pos + mss } else { end };
        if let Some(cut) = self.last_cut(pos, piece_end, mss) {
            pos = cut;
        }
        pos - start
    }
}

impl<'a> Socket<'a> {
    /// Gives the socket room to remember where records end, which turns on
    /// cutting segments there (see [`Socket::mark_record_end`]). `ends`
    /// holds one entry per record not yet acknowledged (at most one per
    /// queued octet; a record of at least `n` octets needs no more than
    /// `send_capacity() / n + 2`); `scratch` at least one MSS, for a
    /// segment the send ring's end would otherwise cut. Empty slices turn
    /// it off.
    pub fn set_record_buffers<E, S>(&mut self, ends: E, scratch: S)
    where
        E: Into<ManagedSlice<'a, TcpSeqNumber>>,
        S: Into<ManagedSlice<'a, u8>>,
    {
        self.records = Records {
            ends: ends.into(),
            head: 0,
            len: 0,
            scratch: scratch.into(),
            packed: self.records.packed,
        };
    }

    /// Whether several whole records may share a segment (the default), or
    /// each record goes in segments of its own: for a receiver that reads
    /// one record per segment (Wireshark's MPA dissector does when markers
    /// are on).
    pub fn set_record_packing(&mut self, packed: bool) {
        self.records.packed = packed;
    }

    /// See [`Socket::set_record_packing`].
    pub fn record_packing(&self) -> bool {
        self.records.packed
    }

    /// Whether segments are cut at record boundaries: record buffers were
    /// given.
    pub fn record_boundaries(&self) -> bool {
        self.records.active()
    }

    /// Marks a record end `queued` octets into the send queue (as
    /// [`Socket::send_queue`] counts them: from the oldest unacknowledged
    /// octet), usually `send_queue()` right after queuing a whole record.
    /// Returns whether the mark is kept: false when record buffers are not
    /// set or full, when `queued` lies beyond the queue, or when it lies
    /// below the last mark.
    pub fn mark_record_end(&mut self, queued: usize) -> bool {
        if !self.records.active() || queued > self.tx_buffer.len() {
            return false;
        }
        self.records
            .push(self.local_seq_no + queued, self.local_seq_no)
    }

    /// Octets for the next new-data (super-)segment out of `sendable`, cut
    /// at record boundaries; `None` without record buffers, `Some(0)` to
    /// wait for the window.
    pub(super) fn record_len(&self, sendable: usize, effective_mss: usize) -> Option<usize> {
        if !self.records.active() || sendable == 0 {
            return None;
        }
        let start = self.remote_last_seq;
        let offset = self.flight_size();
        // The ring's end cuts a super-segment; a segment of one MSS or less
        // is copied across it instead.
        let contiguous = self.tx_buffer.get_allocated(offset, sendable).len();
        if sendable > effective_mss && contiguous < sendable {
            let n = self.records.aligned_len(start, contiguous, effective_mss);
            if n > 0 {
                return Some(n);
            }
        }
        let limit = if contiguous < sendable {
            sendable.min(effective_mss)
        } else {
            sendable
        };
        let n = self.records.aligned_len(start, limit, effective_mss);
        // Waiting for the window is silly window avoidance's call (see
        // `sws_hold`); without it the window-limited piece goes, cut.
        let hold = self.sws_avoidance
            && self.flight_size() > 0
            && !self.sack_bounded(sendable)
            && !self.tlp_probe;
        if n > 0 || hold {
            return Some(n);
        }
        // Nothing in flight brings an ACK to open the window; a resend
        // that stops where SACKed data starts ends on an earlier segment's
        // start; the tail loss probe must go now.
        Some(limit.min(effective_mss))
    }

    /// Whether new data waits for the window to fit a record: whether
    /// [`Socket::record_len`] would send nothing. Only the first segment
    /// matters, so the search stops at one MSS, however wide the window.
    pub(super) fn record_hold(&self, sendable: usize, effective_mss: usize) -> bool {
        self.record_len(sendable.min(effective_mss), effective_mss) == Some(0)
    }

    /// Whether the resend from the send cursor is limited to `sendable`
    /// octets by data the receiver holds (a SACKed block above a hole).
    pub(super) fn sack_bounded(&self, sendable: usize) -> bool {
        match self.scoreboard.next_start(self.remote_last_seq) {
            Some(sacked) if sacked < self.snd_max() => sacked - self.remote_last_seq <= sendable,
            _ => false,
        }
    }

    /// A resend of up to `size` octets at `seq`, cut at record boundaries.
    pub(super) fn record_resend_len(
        &self,
        seq: TcpSeqNumber,
        size: usize,
        effective_mss: usize,
    ) -> usize {
        if !self.records.active() {
            return size;
        }
        match self.records.aligned_len(seq, size, effective_mss) {
            // A resend always goes, cut if it must be.
            0 => size,
            n => n,
        }
    }

    /// Where the tail loss probe starts so that it ends at `data_end`
    /// (an offset in the send queue) and starts on a cut, at most one MSS
    /// before it.
    pub(super) fn record_probe_offset(&self, data_end: usize, effective_mss: usize) -> usize {
        let naive = data_end.saturating_sub(effective_mss);
        if !self.records.active() {
            return naive;
        }
        let cut = self
            .records
            .first_cut(self.local_seq_no + naive, effective_mss)
            - self.local_seq_no;
        if cut < data_end { cut } else { naive }
    }

    /// Copies a segment of `size` octets at `offset` into the scratch if
    /// the send ring's end would cut it and record buffers are set;
    /// returns the octets the scratch then holds.
    pub(super) fn linearize(&mut self, offset: usize, size: usize) -> Option<usize> {
        let active = self.records.active();
        linearize(
            &mut self.records.scratch,
            &self.tx_buffer,
            offset,
            size,
            active,
        )
    }
}

fn linearize(
    scratch: &mut [u8],
    tx: &SocketBuffer<'_>,
    offset: usize,
    size: usize,
    active: bool,
) -> Option<usize> {
    let first = tx.get_allocated(offset, size);
    if !active || first.len() == size || first.is_empty() {
        return None;
    }
    let size = size.min(scratch.len());
    let head = first.len().min(size);
    scratch[..head].copy_from_slice(&first[..head]);
    let second = tx.get_allocated(offset + head, size - head);
    let tail = head + second.len();
    scratch[head..tail].copy_from_slice(second);
    (tail > first.len()).then_some(tail)
}

#[cfg(all(test, feature = "medium-ip", feature = "proto-ipv4"))]
mod tests {
    use std::vec::Vec;

    use super::super::{Socket, SocketBuffer, State};
    use crate::iface::Context;
    use crate::phy::{Medium, PacketMeta};
    use crate::socket::PollAt;
    use crate::time::{Duration, Instant};
    use crate::wire::{
        IpAddress, IpCidr, IpProtocol, IpRepr, Ipv4Address, Ipv4Repr, TcpRepr, TcpSeqNumber,
    };

    const A_ADDR: Ipv4Address = Ipv4Address::new(192, 168, 1, 1);
    const B_ADDR: Ipv4Address = Ipv4Address::new(192, 168, 1, 2);
    /// Record sizes, in turn: small ones several of which fit a segment,
    /// ones near the MSS, and ones longer than it.
    const SIZES: [usize; 7] = [88, 1460, 700, 3000, 1456, 44, 5000];
    const RECORDS: usize = 700;

    struct Wire {
        to_b: bool,
        tcp: TcpRepr<'static>,
        payload: Vec<u8>,
    }

    fn own(repr: &TcpRepr) -> TcpRepr<'static> {
        TcpRepr {
            payload: &[],
            sack_ranges: repr.sack_ranges,
            ..*repr
        }
    }

    fn context() -> Context {
        #[cfg(feature = "segmentation-offload")]
        let (mut iface, _, _) = crate::tests::segmentation_offload::setup_segmenting(Medium::Ip);
        #[cfg(not(feature = "segmentation-offload"))]
        let (mut iface, _, _) = crate::tests::setup(Medium::Ip);
        iface.update_ip_addrs(|addrs| {
            addrs.clear();
            addrs.push(IpCidr::new(A_ADDR.into(), 24)).unwrap();
            addrs.push(IpCidr::new(B_ADDR.into(), 24)).unwrap();
        });
        iface.inner
    }

    fn socket(records: bool, packed: bool) -> Socket<'static> {
        // A receive window and a send ring that are no multiple of any
        // record size: windows end mid-record, and the ring wraps inside
        // records.
        let mut s = Socket::new(
            SocketBuffer::new(vec![0; 150_001]),
            SocketBuffer::new(vec![0; 100_003]),
        );
        s.set_ack_delay(None);
        s.set_nagle_enabled(false);
        s.set_rto_min(Duration::from_millis(5));
        s.set_rto_initial(Duration::from_millis(20));
        if records {
            // Waiting for the window to fit a record is silly window
            // avoidance's part.
            s.set_sws_avoidance(true);
            s.set_record_buffers(
                vec![TcpSeqNumber::default(); 100_003 / 16 + 2],
                vec![0; 65536],
            );
            s.set_record_packing(packed);
        }
        s
    }

    #[cfg(feature = "segmentation-offload")]
    fn device_cut(meta: &PacketMeta) -> usize {
        meta.segmentation_offload_size
            .map_or(usize::MAX, |n| usize::from(n.get()))
    }

    #[cfg(not(feature = "segmentation-offload"))]
    fn device_cut(_: &PacketMeta) -> usize {
        usize::MAX
    }

    /// Dispatches everything `s` has, cut as the device would cut it.
    fn flush(cx: &mut Context, s: &mut Socket<'static>, out: &mut Vec<Wire>, to_b: bool) {
        for _ in 0..10_000 {
            let mut sent = false;
            let _ = s.dispatch(cx, |_, meta: PacketMeta, (_, repr)| {
                sent = true;
                let cut = device_cut(&meta);
                let chunks: Vec<&[u8]> = if repr.payload.is_empty() {
                    vec![&[][..]]
                } else {
                    repr.payload.chunks(cut).collect()
                };
                let mut seq = repr.seq_number;
                for (i, chunk) in chunks.iter().enumerate() {
                    let mut tcp = own(&repr);
                    tcp.seq_number = seq;
                    if i + 1 != chunks.len() {
                        tcp.control = crate::wire::TcpControl::None;
                    }
                    out.push(Wire {
                        to_b,
                        tcp,
                        payload: chunk.to_vec(),
                    });
                    seq += chunk.len();
                }
                Ok::<(), ()>(())
            });
            if !sent {
                return;
            }
        }
        panic!("socket keeps sending");
    }

    fn deliver(cx: &mut Context, s: &mut Socket<'static>, w: &Wire, out: &mut Vec<Wire>) {
        let (src, dst) = if w.to_b {
            (A_ADDR, B_ADDR)
        } else {
            (B_ADDR, A_ADDR)
        };
        let tcp = TcpRepr {
            payload: &w.payload,
            ..w.tcp
        };
        let ip = IpRepr::Ipv4(Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::Tcp,
            payload_len: tcp.buffer_len(),
            hop_limit: 64,
        });
        if s.accepts(cx, &ip, &tcp)
            && let Some((_, reply)) = s.process(cx, &ip, &tcp)
        {
            out.push(Wire {
                to_b: !w.to_b,
                tcp: own(&reply),
                payload: reply.payload.to_vec(),
            });
        }
    }

    /// What crossed the wire from A to B: data segments as (offset from
    /// the first data octet, length), the record ends as offsets, and the
    /// largest segment (the MSS).
    struct Run {
        segments: Vec<(usize, usize)>,
        ends: Vec<usize>,
        mss: usize,
    }

    /// Moves `RECORDS` records from A to B on virtual time, queuing whole
    /// records only and marking each end, dropping the A-to-B data
    /// segments `drop` picks (by count).
    fn run(records: bool, packed: bool, drop: impl Fn(usize) -> bool) -> Run {
        let mut cx = context();
        let (mut a, mut b) = (socket(records, packed), socket(records, packed));
        b.listen(80).unwrap();
        a.connect(&mut cx, (IpAddress::from(B_ADDR), 80), 49500)
            .unwrap();
        let sizes: Vec<usize> = (0..RECORDS).map(|i| SIZES[i % SIZES.len()]).collect();
        let total: usize = sizes.iter().sum();
        let data: Vec<u8> = (0..total).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut ends = Vec::new();
        let (mut written, mut next_record, mut read) = (0, 0, Vec::with_capacity(total));
        let (mut segments, mut mss, mut count) = (Vec::new(), 0, 0);
        let mut first_seq = None;
        let mut now = Instant::ZERO;
        let mut in_flight: Vec<Wire> = Vec::new();
        while read.len() < total {
            assert!(now < Instant::from_secs(60), "stuck at {}", read.len());
            cx.set_now(now);
            for w in std::mem::take(&mut in_flight) {
                if w.to_b {
                    if !w.payload.is_empty() {
                        let start = *first_seq.get_or_insert(w.tcp.seq_number);
                        segments.push((w.tcp.seq_number - start, w.payload.len()));
                        mss = mss.max(w.payload.len());
                        count += 1;
                        if drop(count) {
                            continue;
                        }
                    }
                    deliver(&mut cx, &mut b, &w, &mut in_flight);
                } else {
                    deliver(&mut cx, &mut a, &w, &mut in_flight);
                }
            }
            while a.state() == State::Established && next_record < RECORDS {
                let n = sizes[next_record];
                if a.send_capacity() - a.send_queue() < n {
                    break;
                }
                assert_eq!(a.send_slice(&data[written..written + n]), Ok(n));
                written += n;
                next_record += 1;
                ends.push(written);
                if records {
                    assert!(a.mark_record_end(a.send_queue()));
                }
            }
            while b.can_recv() {
                let mut chunk = [0u8; 65536];
                let n = b.recv_slice(&mut chunk).unwrap();
                read.extend_from_slice(&chunk[..n]);
            }
            flush(&mut cx, &mut a, &mut in_flight, true);
            flush(&mut cx, &mut b, &mut in_flight, false);
            let mut next = (!in_flight.is_empty()).then(|| now + Duration::from_micros(100));
            for s in [&a, &b] {
                match s.poll_at(&mut cx) {
                    PollAt::Now => next = Some(now + Duration::from_micros(1)),
                    PollAt::Time(t) => next = Some(next.map_or(t, |n| n.min(t))),
                    PollAt::Ingress => {}
                }
            }
            now = next.map_or(now + Duration::from_millis(1), |t| t.max(now));
        }
        assert!(read == data[..], "data corrupted or reordered");
        Run {
            segments,
            ends,
            mss,
        }
    }

    impl Run {
        /// Whether a segment may start or end at `p`: a record end, or a
        /// multiple of the MSS into a record longer than it.
        fn is_cut(&self, p: usize) -> bool {
            let i = self.ends.partition_point(|&e| e < p);
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            p == 0
                || self.ends.get(i) == Some(&p)
                || (self.ends[i] - start > self.mss && (p - start) % self.mss == 0)
        }

        /// Segments that start or end anywhere else.
        fn misaligned(&self) -> Vec<(usize, usize)> {
            self.segments
                .iter()
                .copied()
                .filter(|&(o, n)| !self.is_cut(o) || !self.is_cut(o + n))
                .collect()
        }

        /// Segments that carry the end of one record and more after it.
        fn shared(&self) -> Vec<(usize, usize)> {
            self.segments
                .iter()
                .copied()
                .filter(|&(o, n)| self.ends.iter().any(|&e| e > o && e < o + n))
                .collect()
        }
    }

    #[test]
    fn segments_carry_whole_records() {
        let run = run(true, true, |_| false);
        let bad = run.misaligned();
        assert!(bad.is_empty(), "segments cutting records: {bad:?}");
        // Small records share segments.
        assert!(!run.shared().is_empty());
        assert!(run.segments.len() < RECORDS * 2);
    }

    #[test]
    fn resends_carry_whole_records() {
        // Drops early and late, single and back to back.
        let run = run(true, true, |n| matches!(n % 89, 5 | 40 | 41));
        let bad = run.misaligned();
        assert!(bad.is_empty(), "segments cutting records: {bad:?}");
    }

    #[test]
    fn unpacked_records_go_one_per_segment() {
        let run = run(true, false, |n| n % 61 == 7);
        assert!(run.misaligned().is_empty(), "{:?}", run.misaligned());
        assert!(run.shared().is_empty(), "{:?}", run.shared());
    }

    #[test]
    fn without_marks_segments_cut_records() {
        // The yardstick: the same traffic without marks cuts records.
        let run = run(false, true, |_| false);
        assert!(!run.misaligned().is_empty());
    }

    #[test]
    fn marks_beyond_the_queue_or_out_of_order_are_refused() {
        let mut s = socket(true, true);
        assert!(!s.mark_record_end(1));
        let mut off = socket(false, true);
        assert!(!off.mark_record_end(0));
        assert!(!off.record_boundaries());
        assert!(s.record_boundaries() && s.record_packing());
    }
}
