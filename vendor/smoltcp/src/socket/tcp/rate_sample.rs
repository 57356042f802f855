//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation,
//! as carried into draft-ietf-ccwg-bbr-06 section 4.1): each transmission
//! snapshots how much had been delivered and when; when it is (S)ACKed
//! the difference is a rate sample over the interval that data took, so
//! the rate is measured however the ACKs are spaced.
//!
//! The per-packet state lives in a ring of at most `RECORDS` transmission
//! records. Segments sent back to back share a record once a flight holds
//! more segments than half that (as the draft recommends for offload
//! aggregates, section 4.1.3.1): memory stays bounded, and a record is
//! delivered when all of it is.
//!
//! With `alloc` the ring is on the heap and grows only as far as the
//! flights need, so a connection that sends little (an idle one among
//! thousands) holds a few records, not all of them;
//! `Socket::release_idle_memory` gives an empty ring's memory back.
//! Without `alloc` the records are held inline.

use crate::time::{Duration, Instant};
use crate::wire::TcpSeqNumber;

use super::{Scoreboard, Socket};

/// Transmission records per socket, at most.
const RECORDS: usize = 64;

#[cfg(feature = "alloc")]
type Ring = alloc::collections::VecDeque<TxRecord>;
#[cfg(not(feature = "alloc"))]
type Ring = inline::Ring;

/// What one sent range snapshots (the draft's per-packet "P" state).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct TxRecord {
    start: TcpSeqNumber,
    end: TcpSeqNumber,
    /// When the last octet of the range was (re)sent.
    send_time: Instant,
    first_send_time: Instant,
    delivered_time: Instant,
    delivered: u64,
    lost: u64,
    /// Data in flight just after the range was sent.
    tx_in_flight: usize,
    app_limited: bool,
    /// Sent more than once: no RTT sample from it (Karn).
    retransmitted: bool,
    /// Reported held by SACK, so already counted as delivered.
    sacked: bool,
}

/// One ACK's rate sample (the draft's "RS").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct RateSample {
    /// Octets per second; 0 when this ACK gives no reliable sample.
    pub delivery_rate: u64,
    /// Octets delivered over the sampling interval.
    pub delivered: u64,
    pub interval: Duration,
    /// C.delivered when the newest delivered range was sent.
    pub prior_delivered: u64,
    /// Octets this ACK newly reported delivered (cumulatively or by SACK).
    pub newly_acked: usize,
    /// The newest delivered range was sent while the sender ran dry.
    pub is_app_limited: bool,
    /// Octets marked lost since the newest delivered range was sent.
    pub lost: u64,
    /// Data in flight just after the newest delivered range was sent.
    pub tx_in_flight: usize,
    /// Round trip of the newest delivered range, unless it was resent.
    pub rtt: Option<Duration>,
}

/// The connection's delivery state (the draft's "C" state) and the ring
/// of records.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(super) struct RateEstimator {
    /// In sequence order, oldest first; at most `RECORDS`.
    records: Ring,
    /// C.delivered: octets (S)ACKed over the connection's life.
    delivered: u64,
    delivered_time: Instant,
    first_send_time: Instant,
    /// C.app_limited: the `delivered` count that ends the current
    /// application-limited bubble, 0 when none.
    app_limited: u64,
    /// C.lost: octets marked lost (each retransmission counts its range).
    lost: u64,
    /// The last sample that measured a rate.
    last: Option<RateSample>,
}

impl Default for RateEstimator {
    fn default() -> Self {
        RateEstimator {
            records: Ring::new(),
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_send_time: Instant::ZERO,
            app_limited: 0,
            lost: 0,
            last: None,
        }
    }
}

impl RateEstimator {
    /// Gives back the memory of the records when none is outstanding
    /// (every byte sent was acknowledged): a connection gone idle keeps
    /// its delivery state but no ring.
    pub(super) fn release_idle(&mut self) {
        if self.records.is_empty() {
            self.records = Ring::new();
        }
    }

    /// C.delivered.
    pub(super) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// C.lost.
    pub(super) fn lost(&self) -> u64 {
        self.lost
    }

    /// The last sample that measured a rate.
    pub(super) fn last(&self) -> Option<RateSample> {
        self.last
    }

    pub(super) fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// MarkConnectionAppLimited: samples until what is in flight now is
    /// delivered are marked application-limited.
    pub(super) fn mark_app_limited(&mut self, in_flight: usize) {
        self.app_limited = (self.delivered + in_flight as u64).max(1);
    }

    /// OnPacketSent for `start..end`, sent at `now` with `in_flight_before`
    /// octets already in the network. `lost` says a retransmission
    /// repairs data deemed lost.
    pub(super) fn on_send(
        &mut self,
        now: Instant,
        (start, end): (TcpSeqNumber, TcpSeqNumber),
        in_flight_before: usize,
        retransmit: bool,
        lost: bool,
    ) {
        if in_flight_before == 0 {
            self.first_send_time = now;
            self.delivered_time = now;
        }
        let len = end - start;
        let tx_in_flight = in_flight_before + len;
        let snapshot = |r: &mut TxRecord, this: &Self| {
            r.send_time = now;
            r.first_send_time = this.first_send_time;
            r.delivered_time = this.delivered_time;
            r.delivered = this.delivered;
            r.lost = this.lost;
            r.tx_in_flight = tx_in_flight;
            r.app_limited = this.app_limited != 0;
        };
        if lost {
            self.lost += len as u64;
        }
        if retransmit {
            for i in 0..self.records.len() {
                let Some(&r) = self.records.get(i) else {
                    break;
                };
                if r.start < end && start < r.end && !r.sacked {
                    let mut r = r;
                    snapshot(&mut r, self);
                    r.retransmitted = true;
                    if let Some(slot) = self.records.get_mut(i) {
                        *slot = r;
                    }
                }
            }
            return;
        }
        // New data: extend the newest record while records would run out
        // before the flight does, else start one.
        let coalesce_below = tx_in_flight / (RECORDS / 2);
        let full = self.records.len() == RECORDS;
        if let Some(r) = self.records.back_mut()
            && r.end == start
            && !r.sacked
            && !r.retransmitted
            && (full || r.end - r.start < coalesce_below)
        {
            r.end = end;
            r.send_time = now;
            r.tx_in_flight = tx_in_flight;
            return;
        }
        if full {
            // Not contiguous with the newest (a gap the scoreboard skipped):
            // forget the oldest rather than grow.
            self.records.pop_front();
        }
        let mut r = TxRecord {
            start,
            end,
            send_time: now,
            first_send_time: now,
            delivered_time: now,
            delivered: 0,
            lost: 0,
            tx_in_flight,
            app_limited: false,
            retransmitted: false,
            sacked: false,
        };
        snapshot(&mut r, self);
        self.records.push_back(r);
    }

    /// Processes an ACK of everything below `ack`, with what `scoreboard`
    /// now says the receiver holds above it (when `sacked` is set: the ACK
    /// reported new SACKed data), and returns the rate sample
    /// (UpdateRateSample for each newly delivered range, then
    /// GenerateRateSample). `min_rtt` filters out samples over intervals
    /// too short to be trusted.
    pub(super) fn on_ack(
        &mut self,
        now: Instant,
        ack: TcpSeqNumber,
        scoreboard: Option<&Scoreboard>,
        min_rtt: Option<Duration>,
    ) -> RateSample {
        let mut rs = RateSample::default();
        let mut newest: Option<TxRecord> = None;
        // `whole`: the record's last octet is delivered, so its send time
        // (that of its last segment) is this data's.
        let mut deliver = |this: &mut Self, r: &TxRecord, octets: usize, whole: bool| {
            this.delivered += octets as u64;
            this.delivered_time = now;
            rs.newly_acked += octets;
            if !whole {
                return;
            }
            let is_newest = match newest {
                None => true,
                Some(n) => {
                    r.send_time > this.first_send_time
                        || (r.send_time == this.first_send_time && r.end > n.end)
                }
            };
            if is_newest {
                newest = Some(*r);
                this.first_send_time = r.send_time;
            }
        };
        // Cumulatively acknowledged records leave the ring; a record cut
        // by the ACK keeps its unacknowledged rest.
        while let Some(&r) = self.records.front() {
            if r.start >= ack {
                break;
            }
            let covered = r.end.min(ack) - r.start;
            if !r.sacked {
                deliver(self, &r, covered, r.end <= ack);
            }
            if r.end <= ack {
                self.records.pop_front();
            } else if let Some(front) = self.records.front_mut() {
                front.start = ack;
                break;
            }
        }
        if let Some(scoreboard) = scoreboard {
            for i in 0..self.records.len() {
                let Some(r) = self.records.get_mut(i) else {
                    break;
                };
                if !r.sacked && scoreboard.sacked_between(r.start, r.end) == r.end - r.start {
                    r.sacked = true;
                    let r = *r;
                    deliver(self, &r, r.end - r.start, true);
                }
            }
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let Some(p) = newest else {
            return rs;
        };
        rs.prior_delivered = p.delivered;
        rs.is_app_limited = p.app_limited;
        rs.lost = self.lost - p.lost;
        rs.tx_in_flight = p.tx_in_flight;
        rs.rtt = (!p.retransmitted).then(|| now - p.send_time);
        rs.delivered = self.delivered - p.delivered;
        let send_elapsed = p.send_time - p.first_send_time;
        let ack_elapsed = now - p.delivered_time;
        rs.interval = send_elapsed.max(ack_elapsed);
        let reliable = min_rtt.is_none_or(|min| rs.interval >= min);
        // Within one process a flight can be sent and acknowledged inside
        // the clock's microsecond: that is the shortest interval it tells.
        let micros = rs.interval.total_micros().max(1);
        if reliable && rs.delivered > 0 {
            rs.delivery_rate = rs.delivered.saturating_mul(1_000_000) / micros;
            self.last = Some(rs);
        }
        rs
    }
}

impl Socket<'_> {
    /// Gives back memory the connection holds only while data is in
    /// flight (the delivery-rate records), if none is. For an application
    /// that keeps many connections open and finds one idle; the socket
    /// takes it again when it next sends.
    pub fn release_idle_memory(&mut self) {
        self.rate.release_idle();
    }
}

/// The records inline, for builds without a heap: the subset of
/// `VecDeque`'s interface the estimator uses, over a fixed array.
#[cfg(any(not(feature = "alloc"), test))]
mod inline {
    use super::{TxRecord, RECORDS};

    #[derive(Debug, Clone)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub(super) struct Ring {
        slots: [Option<TxRecord>; RECORDS],
        /// Index of the oldest record.
        head: usize,
        len: usize,
    }

    impl Ring {
        pub(super) fn new() -> Self {
            Ring {
                slots: [None; RECORDS],
                head: 0,
                len: 0,
            }
        }

        pub(super) fn len(&self) -> usize {
            self.len
        }

        pub(super) fn is_empty(&self) -> bool {
            self.len == 0
        }

        fn slot(&self, i: usize) -> usize {
            (self.head + i) % RECORDS
        }

        pub(super) fn get(&self, i: usize) -> Option<&TxRecord> {
            if i < self.len {
                self.slots[self.slot(i)].as_ref()
            } else {
                None
            }
        }

        pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut TxRecord> {
            if i < self.len {
                let slot = self.slot(i);
                self.slots[slot].as_mut()
            } else {
                None
            }
        }

        pub(super) fn front(&self) -> Option<&TxRecord> {
            self.get(0)
        }

        pub(super) fn front_mut(&mut self) -> Option<&mut TxRecord> {
            self.get_mut(0)
        }

        pub(super) fn back_mut(&mut self) -> Option<&mut TxRecord> {
            self.get_mut(self.len.checked_sub(1)?)
        }

        /// Drops the record when full (the estimator never lets it be).
        pub(super) fn push_back(&mut self, r: TxRecord) {
            if self.len < RECORDS {
                let slot = self.slot(self.len);
                self.slots[slot] = Some(r);
                self.len += 1;
            }
        }

        pub(super) fn pop_front(&mut self) -> Option<TxRecord> {
            if self.len == 0 {
                return None;
            }
            let r = self.slots[self.head].take();
            self.head = (self.head + 1) % RECORDS;
            self.len -= 1;
            r
        }
    }

    #[cfg(test)]
    mod test {
        use super::*;
        use crate::time::Instant;
        use crate::wire::TcpSeqNumber;
        use std::collections::VecDeque;

        fn record(n: i32) -> TxRecord {
            let at = Instant::from_micros(n as i64);
            TxRecord {
                start: TcpSeqNumber(n),
                end: TcpSeqNumber(n + 1),
                send_time: at,
                first_send_time: at,
                delivered_time: at,
                delivered: n as u64,
                lost: 0,
                tx_in_flight: 0,
                app_limited: false,
                retransmitted: false,
                sacked: false,
            }
        }

        fn starts(r: Option<&TxRecord>) -> Option<TcpSeqNumber> {
            r.map(|r| r.start)
        }

        /// The inline ring answers as `VecDeque` does over the estimator's
        /// operations, across the array's wraparound, while within bounds.
        #[test]
        fn behaves_as_a_vecdeque_within_its_bound() {
            let (mut ring, mut deque) = (Ring::new(), VecDeque::new());
            let mut x = 12345u32;
            for n in 0..5000 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                match (x >> 16) % 4 {
                    0 | 1 if deque.len() < RECORDS => {
                        ring.push_back(record(n));
                        deque.push_back(record(n));
                    }
                    2 => {
                        let (a, b) = (ring.pop_front(), deque.pop_front());
                        assert_eq!(starts(a.as_ref()), starts(b.as_ref()));
                    }
                    _ => {
                        if let (Some(a), Some(b)) = (ring.back_mut(), deque.back_mut()) {
                            a.end = TcpSeqNumber(n + 7);
                            b.end = TcpSeqNumber(n + 7);
                        }
                        if let (Some(a), Some(b)) = (ring.front_mut(), deque.front_mut()) {
                            a.sacked = true;
                            b.sacked = true;
                        }
                    }
                }
                assert_eq!((ring.len(), ring.is_empty()), (deque.len(), deque.is_empty()));
                assert_eq!(starts(ring.front()), starts(deque.front()));
                for i in 0..=deque.len() {
                    let (a, b) = (ring.get(i), deque.get(i));
                    let view = |r: Option<&TxRecord>| r.map(|r| (r.start, r.end, r.sacked));
                    assert_eq!(view(a), view(b));
                }
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const MSS: usize = 1000;

    fn seq(n: usize) -> TcpSeqNumber {
        TcpSeqNumber(n as i32)
    }

    /// A sender pacing one segment every 100 us, each ACKed 1 ms later:
    /// the samples measure 10 MB/s, the rate data left at.
    #[test]
    fn paced_flight_measures_its_send_rate() {
        let mut e = RateEstimator::default();
        let at = |us: u64| Instant::from_micros(us as i64);
        let mut in_flight = 0;
        let mut samples = std::vec::Vec::new();
        for i in 0..100 {
            let now = at(100 * i);
            // ACKs due by now, 1 ms after each segment was sent.
            let acked = (now.total_micros() as usize).saturating_sub(1000) / 100;
            if i >= 10 {
                let rs = e.on_ack(now, seq(acked * MSS), None, Some(Duration::from_millis(1)));
                in_flight -= rs.newly_acked;
                samples.push(rs.delivery_rate);
            }
            e.on_send(now, (seq(i as usize * MSS), seq((i as usize + 1) * MSS)), in_flight, false, false);
            in_flight += MSS;
        }
        let last = *samples.last().unwrap();
        assert!(
            (9_500_000..=10_500_000).contains(&last),
            "{last} B/s from {samples:?}"
        );
        assert_eq!(e.delivered(), 89 * MSS as u64);
    }

    /// An ACK that comes before the interval reaches the minimum RTT gives
    /// no rate (the draft's filter against compressed ACKs).
    #[test]
    fn interval_below_min_rtt_gives_no_rate() {
        let mut e = RateEstimator::default();
        e.on_send(Instant::from_micros(0), (seq(0), seq(MSS)), 0, false, false);
        let rs = e.on_ack(
            Instant::from_micros(50),
            seq(MSS),
            None,
            Some(Duration::from_micros(100)),
        );
        assert_eq!(rs.newly_acked, MSS);
        assert_eq!(rs.delivery_rate, 0);
        assert!(e.last().is_none());
    }

    /// Data sent while the sender had run dry is marked, and so are the
    /// samples it yields, until the bubble is delivered.
    #[test]
    fn app_limited_bubble_marks_samples_until_delivered() {
        let mut e = RateEstimator::default();
        e.mark_app_limited(0);
        e.on_send(Instant::from_micros(0), (seq(0), seq(MSS)), 0, false, false);
        let rs = e.on_ack(Instant::from_micros(1000), seq(MSS), None, None);
        assert!(rs.is_app_limited);
        assert!(!e.is_app_limited());
        e.on_send(Instant::from_micros(1000), (seq(MSS), seq(2 * MSS)), 0, false, false);
        let rs = e.on_ack(Instant::from_micros(2000), seq(2 * MSS), None, None);
        assert!(!rs.is_app_limited);
    }

    /// Resent data counts as lost once, and the sample of its delivery
    /// carries no RTT (Karn) and the losses since it was sent.
    #[test]
    fn retransmission_counts_loss_and_gives_no_rtt() {
        let mut e = RateEstimator::default();
        e.on_send(Instant::from_micros(0), (seq(0), seq(MSS)), 0, false, false);
        e.on_send(Instant::from_micros(10), (seq(MSS), seq(2 * MSS)), MSS, false, false);
        e.on_send(Instant::from_micros(2000), (seq(0), seq(MSS)), MSS, true, true);
        assert_eq!(e.lost(), MSS as u64);
        let rs = e.on_ack(Instant::from_micros(3000), seq(2 * MSS), None, None);
        assert_eq!(rs.newly_acked, 2 * MSS);
        assert_eq!(rs.rtt, None);
    }

    /// An ACK inside a record counts what it covers, but the record's
    /// send time is its last segment's: no RTT from it until it is whole.
    #[test]
    fn partial_ack_of_a_record_counts_octets_but_takes_no_rtt() {
        let mut e = RateEstimator::default();
        // Flight of 64 segments: later ones share records.
        for i in 0..RECORDS {
            let at = Instant::from_micros(i as i64);
            e.on_send(at, (seq(i * MSS), seq((i + 1) * MSS)), i * MSS, false, false);
        }
        let at = Instant::from_micros(20_000);
        let rs = e.on_ack(at, seq(RECORDS * MSS - MSS / 2), None, None);
        assert_eq!(rs.newly_acked, RECORDS * MSS - MSS / 2);
        let rtt = rs.rtt.unwrap();
        assert!(rtt >= Duration::from_micros(20_000 - RECORDS as u64), "{rtt}");
    }

    /// A full ring extends its newest record instead of growing: memory is
    /// bounded, and every octet is still counted once.
    #[test]
    fn ring_is_bounded_and_counts_every_octet() {
        let mut e = RateEstimator::default();
        let n = 4 * RECORDS;
        for i in 0..n {
            e.on_send(Instant::from_micros(i as i64), (seq(i * MSS), seq((i + 1) * MSS)), i * MSS, false, false);
        }
        assert_eq!(e.records.len(), RECORDS);
        #[cfg(feature = "alloc")]
        assert_eq!(e.records.capacity(), RECORDS);
        let rs = e.on_ack(Instant::from_micros(10_000), seq(n * MSS), None, None);
        assert_eq!(rs.newly_acked, n * MSS);
        assert!(e.records.is_empty());
    }

    /// A connection that sends a segment at a time holds a record or two,
    /// not the whole ring; once all is acknowledged it can give them back,
    /// and what it measured stays.
    #[cfg(feature = "alloc")]
    #[test]
    fn a_sparse_sender_holds_few_records_and_can_give_them_back() {
        let mut e = RateEstimator::default();
        assert_eq!(e.records.capacity(), 0);
        for i in 0..100 {
            let at = |us: usize| Instant::from_micros((1000 * i + us) as i64);
            e.on_send(at(0), (seq(i * MSS), seq((i + 1) * MSS)), 0, false, false);
            // Nothing outstanding yet: releasing must keep the record.
            e.release_idle();
            assert_eq!(e.records.len(), 1);
            let rs = e.on_ack(at(500), seq((i + 1) * MSS), None, None);
            assert_eq!(rs.newly_acked, MSS);
        }
        assert!(e.records.capacity() <= 4, "{}", e.records.capacity());
        let delivered = e.delivered();
        let last = e.last();
        e.release_idle();
        assert_eq!(e.records.capacity(), 0);
        assert_eq!((e.delivered(), e.last()), (delivered, last));
        // And it measures on from there.
        e.on_send(Instant::from_micros(200_000), (seq(100 * MSS), seq(101 * MSS)), 0, false, false);
        let rs = e.on_ack(Instant::from_micros(200_500), seq(101 * MSS), None, None);
        assert_eq!(rs.delivery_rate, 2_000_000);
    }
}
