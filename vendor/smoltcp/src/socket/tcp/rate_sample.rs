//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation,
//! as carried into draft-ietf-ccwg-bbr-06 section 4.1): each transmission
//! snapshots how much had been delivered and when; when it is (S)ACKed
//! the difference is a rate sample over the interval that data took, so
//! the rate is measured however the ACKs are spaced.
//!
//! The per-packet state lives in a fixed ring of transmission records.
//! Segments sent back to back share a record once a flight holds more
//! segments than half the ring (as the draft recommends for offload
//! aggregates, section 4.1.3.1): memory stays bounded, and a record is
//! delivered when all of it is.

use crate::time::{Duration, Instant};
use crate::wire::TcpSeqNumber;

use super::Scoreboard;

/// Transmission records per socket.
const RECORDS: usize = 64;

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
    records: [Option<TxRecord>; RECORDS],
    /// Index of the oldest record; records are in sequence order.
    head: usize,
    len: usize,
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
            records: [None; RECORDS],
            head: 0,
            len: 0,
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
    fn slot(&self, i: usize) -> usize {
        (self.head + i) % RECORDS
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
            for i in 0..self.len {
                let slot = self.slot(i);
                let Some(mut r) = self.records[slot] else {
                    continue;
                };
                if r.start < end && start < r.end && !r.sacked {
                    snapshot(&mut r, self);
                    r.retransmitted = true;
                    self.records[slot] = Some(r);
                }
            }
            return;
        }
        // New data: extend the newest record while records would run out
        // before the flight does, else start one.
        let coalesce_below = tx_in_flight / (RECORDS / 2);
        if self.len > 0 {
            let slot = self.slot(self.len - 1);
            if let Some(mut r) = self.records[slot]
                && r.end == start
                && !r.sacked
                && !r.retransmitted
                && (self.len == RECORDS || r.end - r.start < coalesce_below)
            {
                r.end = end;
                r.send_time = now;
                r.tx_in_flight = tx_in_flight;
                self.records[slot] = Some(r);
                return;
            }
        }
        if self.len == RECORDS {
            // Not contiguous with the newest (a gap the scoreboard skipped):
            // forget the oldest rather than grow.
            self.records[self.head] = None;
            self.head = (self.head + 1) % RECORDS;
            self.len -= 1;
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
        let slot = self.slot(self.len);
        self.records[slot] = Some(r);
        self.len += 1;
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
        while self.len > 0 {
            let Some(mut r) = self.records[self.head] else {
                break;
            };
            if r.start >= ack {
                break;
            }
            let covered = r.end.min(ack) - r.start;
            if !r.sacked {
                deliver(self, &r, covered, r.end <= ack);
            }
            if r.end <= ack {
                self.records[self.head] = None;
                self.head = (self.head + 1) % RECORDS;
                self.len -= 1;
            } else {
                r.start = ack;
                self.records[self.head] = Some(r);
                break;
            }
        }
        if let Some(scoreboard) = scoreboard {
            for i in 0..self.len {
                let slot = self.slot(i);
                let Some(mut r) = self.records[slot] else {
                    continue;
                };
                if !r.sacked && scoreboard.sacked_between(r.start, r.end) == r.end - r.start {
                    r.sacked = true;
                    self.records[slot] = Some(r);
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
        assert!(e.len <= RECORDS);
        let rs = e.on_ack(Instant::from_micros(10_000), seq(n * MSS), None, None);
        assert_eq!(rs.newly_acked, n * MSS);
        assert_eq!(e.len, 0);
    }
}
