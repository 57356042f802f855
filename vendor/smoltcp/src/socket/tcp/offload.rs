//! Segmentation offload that keeps segment boundaries where a sender
//! without it would put them.
//!
//! With segmentation offload the socket hands the device one super-segment
//! of up to 64 KiB and the device cuts it every effective MSS. When the
//! window, the congestion window or the device limit ends the super-segment
//! short of the data waiting, the device's last piece is a runt, and every
//! segment after it starts at an offset no MSS-sized record boundary falls
//! on. A socket with sender-side silly window avoidance (the setting that
//! asks for full segments) therefore sends only whole segments in a
//! super-segment that does not carry the end of the data; the remainder
//! leaves in the next one, exactly as it would without offload.

use super::Socket;

impl Socket<'_> {
    /// How much of `sendable` octets goes into this (super-)segment.
    pub(super) fn offload_aligned(&self, sendable: usize, effective_mss: usize) -> usize {
        if !self.sws_avoidance || effective_mss == 0 || sendable <= effective_mss {
            return sendable;
        }
        let offset = self.flight_size();
        let unsent = self.tx_buffer.len().saturating_sub(offset);
        // The ring's end cuts a super-segment as surely as a window does
        // (a ring whose size is a multiple of the MSS wraps on the grid).
        let contiguous = self.tx_buffer.get_allocated(offset, sendable).len();
        if contiguous >= unsent || contiguous <= effective_mss {
            // The end of the data: a short last piece is what any sender
            // would send here. Or a piece too short to trim.
            return sendable;
        }
        contiguous - contiguous % effective_mss
    }
}

#[cfg(all(
    test,
    feature = "segmentation-offload",
    feature = "medium-ip",
    feature = "proto-ipv4"
))]
mod tests {
    use std::vec::Vec;

    use super::super::{Socket, SocketBuffer, State};
    use crate::iface::Context;
    use crate::phy::{Medium, PacketMeta};
    use crate::socket::PollAt;
    use crate::time::{Duration, Instant};
    use crate::wire::{IpAddress, IpCidr, IpProtocol, IpRepr, Ipv4Address, Ipv4Repr, TcpRepr};

    const A_ADDR: Ipv4Address = Ipv4Address::new(192, 168, 1, 1);
    const B_ADDR: Ipv4Address = Ipv4Address::new(192, 168, 1, 2);
    /// Records the size of the segments the test device's MTU allows.
    const RECORD: usize = 1460;
    const TOTAL: usize = 600 * RECORD;

    /// A wire segment: the piece of a super-segment the device cut off.
    struct Wire {
        to_b: bool,
        tcp: TcpRepr<'static>,
        payload: Vec<u8>,
    }

    /// The header of `repr` without its payload.
    fn own(repr: &TcpRepr) -> TcpRepr<'static> {
        TcpRepr {
            src_port: repr.src_port,
            dst_port: repr.dst_port,
            control: repr.control,
            seq_number: repr.seq_number,
            ack_number: repr.ack_number,
            window_len: repr.window_len,
            window_scale: repr.window_scale,
            max_seg_size: repr.max_seg_size,
            sack_permitted: repr.sack_permitted,
            sack_ranges: repr.sack_ranges,
            timestamp: repr.timestamp,
            payload: &[],
        }
    }

    fn context() -> Context {
        let (mut iface, _, _) =
            crate::tests::segmentation_offload::setup_segmenting(Medium::Ip);
        iface.update_ip_addrs(|addrs| {
            addrs.clear();
            addrs.push(IpCidr::new(A_ADDR.into(), 24)).unwrap();
            addrs.push(IpCidr::new(B_ADDR.into(), 24)).unwrap();
        });
        iface.inner
    }

    fn socket(aligned: bool) -> Socket<'static> {
        // A receive window that is no multiple of the MSS, so windows
        // often end mid-segment; a send ring that is one, so its wrap
        // falls between records.
        let mut s = Socket::new(
            SocketBuffer::new(vec![0; 150_000]),
            SocketBuffer::new(vec![0; 100 * RECORD]),
        );
        s.set_ack_delay(None);
        s.set_nagle_enabled(false);
        s.set_sws_avoidance(aligned);
        s.set_rto_min(Duration::from_millis(5));
        s.set_rto_initial(Duration::from_millis(20));
        s
    }

    /// Dispatches everything `s` has and cuts super-segments as the device
    /// would: pieces of `segmentation_offload_size`, the flags of the
    /// whole on the last piece.
    fn flush(cx: &mut Context, s: &mut Socket<'static>, out: &mut Vec<Wire>, to_b: bool) {
        for _ in 0..10_000 {
            let mut sent = false;
            let _ = s.dispatch(cx, |_, meta: PacketMeta, (_, repr)| {
                sent = true;
                let cut = meta
                    .segmentation_offload_size
                    .map_or(usize::MAX, |n| usize::from(n.get()));
                let chunks: Vec<&[u8]> = if repr.payload.is_empty() {
                    vec![&[][..]]
                } else {
                    repr.payload.chunks(cut).collect()
                };
                let mut seq = repr.seq_number;
                for (i, chunk) in chunks.iter().enumerate() {
                    let last = i + 1 == chunks.len();
                    let mut tcp = own(&repr);
                    tcp.seq_number = seq;
                    if !last {
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

    /// Moves `TOTAL` bytes from A to B in records of one MSS, dropping the
    /// A-to-B wire segments `drop` picks (by count); returns the offsets
    /// (from the first data octet) of every data segment on the wire and
    /// the largest piece size the device was asked to cut.
    fn run(aligned: bool, drop: impl Fn(usize) -> bool) -> (Vec<(usize, usize)>, usize) {
        let mut cx = context();
        let (mut a, mut b) = (socket(aligned), socket(aligned));
        b.listen(80).unwrap();
        a.connect(&mut cx, (IpAddress::from(B_ADDR), 80), 49500)
            .unwrap();
        let data: Vec<u8> = (0..TOTAL).map(|i| (i * 7 + i / 251) as u8).collect();
        let (mut written, mut read) = (0, Vec::with_capacity(TOTAL));
        let mut segments = Vec::new();
        let mut mss = 0;
        let mut first_seq = None;
        let mut count = 0;
        let mut now = Instant::ZERO;
        let mut in_flight: Vec<Wire> = Vec::new();
        while read.len() < TOTAL {
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
            if a.state() == State::Established && written < TOTAL {
                // Whole records only, as an iWARP sender queues FPDUs.
                let room = a.send_capacity() - a.send_queue();
                let n = (room / RECORD * RECORD).min(TOTAL - written);
                written += a.send_slice(&data[written..written + n]).unwrap();
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
        assert_eq!(mss, RECORD);
        (segments, mss)
    }

    fn misaligned(segments: &[(usize, usize)], mss: usize) -> Vec<(usize, usize)> {
        segments
            .iter()
            .copied()
            .filter(|&(offset, _)| offset % mss != 0)
            .collect()
    }

    #[test]
    fn super_segments_keep_segment_boundaries() {
        let (segments, mss) = run(true, |_| false);
        assert!(segments.len() >= TOTAL / mss);
        let bad = misaligned(&segments, mss);
        assert!(bad.is_empty(), "segments off the MSS grid: {bad:?}");
    }

    #[test]
    fn resends_keep_segment_boundaries() {
        // Drops early and late in the transfer, single and back to back.
        let (segments, mss) = run(true, |n| matches!(n % 97, 5 | 40 | 41));
        let bad = misaligned(&segments, mss);
        assert!(bad.is_empty(), "segments off the MSS grid: {bad:?}");
    }

    #[test]
    fn without_alignment_super_segments_end_anywhere() {
        // The yardstick: the windows above do cut super-segments mid-MSS.
        let (segments, mss) = run(false, |_| false);
        assert!(!misaligned(&segments, mss).is_empty());
    }
}
