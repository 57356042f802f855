//! Seeded, deterministic impairments for frames crossing the memory link.

use std::time::{Duration, Instant};

use smoltcp::wire::{EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Packet, TcpPacket};

use crate::link_model::{
    Drop, GilbertElliott, LinkCounters, LinkModel, LinkModelConfig, Reorder, Verdict,
};
use crate::rng::SplitMix64;

/// What the link does to frames, the same in both directions.
///
/// Everything but corruption is the shared [`LinkModel`]'s
/// (see [`FaultConfig::link_model`]), so the memory link and the TAP
/// forwarder impair frames with the same code.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct FaultConfig {
    /// Probability a frame is dropped, independently of the others.
    pub loss: f64,
    /// Probability a frame has one bit flipped.
    pub corrupt: f64,
    /// Corrupt only TCP payload bytes and then recompute the TCP checksum,
    /// so the damage reaches the byte stream and only the MPA CRC can catch
    /// it. Frames without payload are then left intact.
    pub fix_tcp_checksum: bool,
    /// One-way delay added to every frame.
    pub latency: Duration,
    /// Extra delay, uniform in `0..=jitter`, per frame; frames overtake each
    /// other when it exceeds their spacing.
    pub jitter: Duration,
    /// Bursty (Gilbert-Elliott) loss on top of `loss`.
    pub burst: Option<GilbertElliott>,
    /// Bottleneck rate in bits per second. A long path needs one: without
    /// it a whole window is delivered at one instant and acknowledged by
    /// one ACK, and a sender that grows its window by at most one segment
    /// per ACK then grows it by one segment per round trip.
    pub rate_bps: Option<u64>,
    /// Bytes the bottleneck queue holds before dropping (drop-tail);
    /// `None` never drops.
    pub queue_bytes: Option<usize>,
    /// Occasional reordering on top of jitter.
    pub reorder: Option<Reorder>,
}

crate::setters::setters!(FaultConfig {
    loss: f64,
    corrupt: f64,
    fix_tcp_checksum: bool,
    latency: Duration,
    jitter: Duration,
    burst: Option<GilbertElliott>,
    rate_bps: Option<u64>,
    queue_bytes: Option<usize>,
    reorder: Option<Reorder>,
});

impl FaultConfig {
    /// No impairment at all.
    pub fn is_clean(&self) -> bool {
        self.corrupt <= 0.0 && self.link_model().is_clean()
    }

    /// The path model of one direction.
    pub fn link_model(&self) -> LinkModelConfig {
        LinkModelConfig {
            delay: self.latency,
            jitter: self.jitter,
            loss: self.loss,
            burst: self.burst,
            rate_bps: self.rate_bps,
            queue_bytes: self.queue_bytes,
            reorder: self.reorder,
        }
    }

    /// The impairments of `model`, with no corruption.
    pub fn from_link_model(model: &LinkModelConfig) -> Self {
        FaultConfig {
            loss: model.loss,
            latency: model.delay,
            jitter: model.jitter,
            burst: model.burst,
            rate_bps: model.rate_bps,
            queue_bytes: model.queue_bytes,
            reorder: model.reorder,
            ..FaultConfig::default()
        }
    }
}

/// The verdict on one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Random or bursty loss.
    Lost,
    /// The bottleneck queue was full.
    Overflowed,
    /// Deliver at this instant; `corrupted` says whether bits were flipped.
    Deliver { at: Instant, corrupted: bool },
}

/// Applies a [`FaultConfig`]: the link model decides loss, queueing and
/// delay; corruption draws from a stream of its own, so turning it on does
/// not change which frames the model drops.
#[derive(Debug, Clone)]
pub(crate) struct Impairment {
    model: LinkModel,
    corrupt: f64,
    fix_tcp_checksum: bool,
    rng: SplitMix64,
}

impl Impairment {
    pub(crate) fn new(cfg: FaultConfig, seed: u64) -> Self {
        Impairment {
            model: LinkModel::new(cfg.link_model(), seed),
            corrupt: cfg.corrupt,
            fix_tcp_checksum: cfg.fix_tcp_checksum,
            rng: SplitMix64::new(seed ^ 0xc0ff_ee00_dead_beef),
        }
    }

    /// What the model has done so far.
    pub(crate) fn counters(&self) -> LinkCounters {
        self.model.counters()
    }

    /// Decides what happens to `frame` offered at `now`, corrupting it in
    /// place if so drawn. A seed replays the same fates for the same frames
    /// offered at the same instants.
    pub(crate) fn apply(&mut self, now: Instant, frame: &mut [u8]) -> Fate {
        let at = match self.model.offer(now, frame.len()) {
            Verdict::Deliver(at) => at,
            Verdict::Dropped(Drop::QueueFull) => return Fate::Overflowed,
            Verdict::Dropped(Drop::Random | Drop::Burst) => return Fate::Lost,
        };
        let mut corrupted = false;
        if self.rng.chance(self.corrupt) {
            let pick = self.rng.next_u64();
            corrupted = if self.fix_tcp_checksum {
                corrupt_tcp_payload(frame, pick)
            } else {
                corrupt_past_ethernet(frame, pick)
            };
        }
        Fate::Deliver { at, corrupted }
    }
}

/// Flips bit `pick % 8` of a byte chosen by `pick` among the bytes after the
/// Ethernet header (IP header, TCP header or payload: some checksum will
/// notice). False if the frame has no such byte.
fn corrupt_past_ethernet(frame: &mut [u8], pick: u64) -> bool {
    let start = EthernetFrame::<&[u8]>::header_len();
    let Some(span) = frame.len().checked_sub(start).filter(|&s| s > 0) else {
        return false;
    };
    let at = start + ((pick >> 3) % span as u64) as usize;
    frame[at] ^= 1 << (pick & 7);
    true
}

/// Flips one bit of the TCP payload of an Ethernet/IPv4/TCP frame and
/// recomputes the TCP checksum. False (frame untouched) for anything else
/// or a segment without payload.
pub(crate) fn corrupt_tcp_payload(frame: &mut [u8], pick: u64) -> bool {
    let Ok(mut eth) = EthernetFrame::new_checked(&mut *frame) else {
        return false;
    };
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return false;
    }
    let Ok(mut ip) = Ipv4Packet::new_checked(eth.payload_mut()) else {
        return false;
    };
    if ip.next_header() != IpProtocol::Tcp || ip.more_frags() || ip.frag_offset() != 0 {
        return false;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let Ok(mut tcp) = TcpPacket::new_checked(ip.payload_mut()) else {
        return false;
    };
    let payload = tcp.payload_mut();
    if payload.is_empty() {
        return false;
    }
    let at = ((pick >> 3) % payload.len() as u64) as usize;
    payload[at] ^= 1 << (pick & 7);
    tcp.fill_checksum(&src.into(), &dst.into());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{
        EthernetAddress, EthernetRepr, IpAddress, Ipv4Address, Ipv4Repr, TcpControl, TcpRepr,
        TcpSeqNumber,
    };

    const SRC: Ipv4Address = Ipv4Address::new(10, 77, 0, 1);
    const DST: Ipv4Address = Ipv4Address::new(10, 77, 0, 2);

    /// A well-formed Ethernet/IPv4/TCP frame carrying `payload`.
    pub(crate) fn tcp_frame(payload: &[u8]) -> Vec<u8> {
        let tcp = TcpRepr {
            src_port: 49152,
            dst_port: 7174,
            control: TcpControl::Psh,
            seq_number: TcpSeqNumber(1000),
            ack_number: Some(TcpSeqNumber(2000)),
            window_len: 1024,
            window_scale: None,
            max_seg_size: None,
            sack_permitted: false,
            sack_ranges: [None, None, None],
            timestamp: None,
            payload,
        };
        let ip = Ipv4Repr {
            src_addr: SRC,
            dst_addr: DST,
            next_header: IpProtocol::Tcp,
            payload_len: tcp.buffer_len(),
            hop_limit: 64,
        };
        let eth = EthernetRepr {
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
            ethertype: EthernetProtocol::Ipv4,
        };
        let mut buf = vec![0xa5; eth.buffer_len() + ip.buffer_len() + tcp.buffer_len()];
        let mut f = EthernetFrame::new_unchecked(&mut buf[..]);
        eth.emit(&mut f);
        let mut p = Ipv4Packet::new_unchecked(f.payload_mut());
        ip.emit(&mut p, &ChecksumCapabilities::default());
        let mut t = TcpPacket::new_unchecked(p.payload_mut());
        tcp.emit(
            &mut t,
            &IpAddress::Ipv4(SRC),
            &IpAddress::Ipv4(DST),
            &ChecksumCapabilities::default(),
        );
        buf
    }

    fn checks(frame: &[u8]) -> (bool, bool) {
        let eth = EthernetFrame::new_checked(frame).unwrap();
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        (
            ip.verify_checksum(),
            tcp.verify_checksum(&IpAddress::Ipv4(SRC), &IpAddress::Ipv4(DST)),
        )
    }

    #[test]
    fn fixture_frame_is_valid() {
        assert_eq!(checks(&tcp_frame(b"hello")), (true, true));
    }

    #[test]
    fn payload_corruption_keeps_checksums_valid_and_changes_one_bit() {
        for pick in [0u64, 7, 8, 12345, u64::MAX] {
            let orig = tcp_frame(b"0123456789abcdef");
            let mut f = orig.clone();
            assert!(corrupt_tcp_payload(&mut f, pick));
            assert_eq!(checks(&f), (true, true));
            let flipped: u32 = orig.iter().zip(&f).map(|(a, b)| (a ^ b).count_ones()).sum();
            // One payload bit plus the checksum bits that compensate for it.
            let payload_start = orig.len() - 16;
            let payload_bits: u32 = orig[payload_start..]
                .iter()
                .zip(&f[payload_start..])
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            assert_eq!(payload_bits, 1);
            assert!(flipped > 1);
        }
    }

    #[test]
    fn payload_corruption_skips_pure_acks_and_non_tcp() {
        let mut ack = tcp_frame(b"");
        let copy = ack.clone();
        assert!(!corrupt_tcp_payload(&mut ack, 3));
        assert_eq!(ack, copy);
        let mut junk = vec![0u8; 10];
        assert!(!corrupt_tcp_payload(&mut junk, 3));
        let mut arp = tcp_frame(b"x");
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(!corrupt_tcp_payload(&mut arp, 3));
    }

    #[test]
    fn raw_corruption_breaks_a_checksum() {
        for pick in 0..2000u64 {
            let mut f = tcp_frame(b"payload bytes");
            assert!(corrupt_past_ethernet(
                &mut f,
                pick.wrapping_mul(0x9e37_79b9)
            ));
            let (ip_ok, tcp_ok) = match EthernetFrame::new_checked(&f[..])
                .ok()
                .and_then(|e| Ipv4Packet::new_checked(e.payload().to_vec()).ok())
            {
                Some(ip) => {
                    let ip = Ipv4Packet::new_unchecked(ip.as_ref());
                    let tcp_ok = TcpPacket::new_checked(ip.payload())
                        .map(|t| {
                            t.verify_checksum(
                                &IpAddress::Ipv4(ip.src_addr()),
                                &IpAddress::Ipv4(ip.dst_addr()),
                            )
                        })
                        .unwrap_or(false);
                    (ip.verify_checksum(), tcp_ok)
                }
                None => (false, false),
            };
            // Either the IP header checksum or the TCP checksum fails, or
            // the flip hit an address, which the TCP pseudo-header covers.
            assert!(!(ip_ok && tcp_ok), "pick {pick} went unnoticed");
        }
    }

    #[test]
    fn tiny_frames_are_not_corrupted() {
        let mut f = vec![0u8; 14];
        assert!(!corrupt_past_ethernet(&mut f, 1));
        assert_eq!(f, vec![0u8; 14]);
    }

    #[test]
    fn clean_config_delivers_everything_at_once() {
        let mut imp = Impairment::new(FaultConfig::default(), 1);
        let mut f = tcp_frame(b"abc");
        let copy = f.clone();
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(
                imp.apply(now, &mut f),
                Fate::Deliver {
                    at: now,
                    corrupted: false
                }
            );
        }
        assert_eq!(f, copy);
        assert!(FaultConfig::default().is_clean());
    }

    #[test]
    fn loss_rate_and_determinism() {
        let cfg = FaultConfig {
            loss: 0.05,
            ..Default::default()
        };
        let run = |seed| {
            let mut imp = Impairment::new(cfg.clone(), seed);
            let mut f = tcp_frame(b"abc");
            let now = Instant::now();
            (0..20_000)
                .map(|_| imp.apply(now, &mut f) == Fate::Lost)
                .collect::<Vec<_>>()
        };
        let a = run(11);
        assert_eq!(a, run(11));
        assert_ne!(a, run(12));
        let lost = a.iter().filter(|&&l| l).count();
        assert!((800..1200).contains(&lost), "{lost}");
    }

    #[test]
    fn latency_and_jitter_bound_the_delay() {
        let cfg = FaultConfig {
            latency: Duration::from_millis(2),
            jitter: Duration::from_micros(500),
            ..Default::default()
        };
        let mut imp = Impairment::new(cfg, 5);
        let mut f = tcp_frame(b"abc");
        let mut distinct = std::collections::BTreeSet::new();
        let now = Instant::now();
        for _ in 0..1000 {
            match imp.apply(now, &mut f) {
                Fate::Deliver { at, corrupted } => {
                    let delay = at - now;
                    assert!(!corrupted);
                    assert!(delay >= Duration::from_millis(2));
                    assert!(delay <= Duration::from_micros(2500));
                    distinct.insert(delay);
                }
                Fate::Lost | Fate::Overflowed => panic!("no loss configured"),
            }
        }
        assert!(distinct.len() > 100);
    }

    #[test]
    fn corruption_rate_with_fixup() {
        let cfg = FaultConfig {
            corrupt: 0.1,
            fix_tcp_checksum: true,
            ..Default::default()
        };
        let mut imp = Impairment::new(cfg, 77);
        let mut hits = 0;
        for _ in 0..10_000 {
            let mut f = tcp_frame(b"some payload");
            if let Fate::Deliver {
                corrupted: true, ..
            } = imp.apply(Instant::now(), &mut f)
            {
                hits += 1;
                assert_eq!(checks(&f), (true, true));
            }
        }
        assert!((850..1150).contains(&hits), "{hits}");
    }
}
