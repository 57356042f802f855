//! The crate against real siw traffic: every TCP connection in the reference
//! captures (shared/captures beside the repository) goes through the frame
//! parser, the start-up state machines and the deframer, and is framed
//! again byte for byte.

mod support;

use std::ops::ControlFlow;
use std::time::Instant;

use mpa::wire::FrameRepr;
use mpa::{
    CrcPolicy, Deframer, Framer, InitiatorConfig, ReplyParams, ResponderConfig, RtrSet, Startup,
    StartupEvent,
};
use support::{capture_files, connections, Connection};

/// One direction of FPDUs after the Request/Reply.
struct Direction<'a> {
    what: String,
    fpdus: &'a [u8],
    crc: bool,
    markers: bool,
}

/// The MPA connections of a capture, with both frames parsed.
struct MpaConnection {
    what: String,
    conn: Connection,
    request_len: usize,
    reply_len: usize,
}

impl MpaConnection {
    fn request(&self) -> FrameRepr<'_> {
        FrameRepr::parse_bytes(&self.conn.client_stream)
            .expect("request")
            .0
    }

    fn reply(&self) -> FrameRepr<'_> {
        FrameRepr::parse_bytes(&self.conn.server_stream)
            .expect("reply")
            .0
    }

    fn directions(&self) -> [Direction<'_>; 2] {
        let (req, rep) = (self.request(), self.reply());
        [
            Direction {
                what: format!("{} client->server", self.what),
                fpdus: &self.conn.client_stream[self.request_len..],
                crc: rep.crc,
                // The Responder's M asks the Initiator for markers.
                markers: rep.markers,
            },
            Direction {
                what: format!("{} server->client", self.what),
                fpdus: &self.conn.server_stream[self.reply_len..],
                crc: rep.crc,
                markers: req.markers,
            },
        ]
    }
}

fn mpa_connections() -> Vec<MpaConnection> {
    let mut out = Vec::new();
    for (name, file) in capture_files() {
        for (k, conn) in connections(&file).into_iter().enumerate() {
            if conn.client_stream.is_empty() {
                continue;
            }
            let (req, request_len) = FrameRepr::parse_bytes(&conn.client_stream)
                .unwrap_or_else(|e| panic!("{name} #{k}: request: {e}"));
            assert_eq!(req.kind, mpa::wire::FrameKind::Request);
            let (rep, reply_len) = FrameRepr::parse_bytes(&conn.server_stream)
                .unwrap_or_else(|e| panic!("{name} #{k}: reply: {e}"));
            assert_eq!(rep.kind, mpa::wire::FrameKind::Reply);
            out.push(MpaConnection {
                what: format!("{name} #{k}"),
                conn,
                request_len,
                reply_len,
            });
        }
    }
    out
}

fn deframe(dir: &Direction<'_>) -> (Vec<Vec<u8>>, Deframer) {
    let mut d = Deframer::new(dir.crc, dir.markers, 65535);
    let mut got = Vec::new();
    let n = d
        .feed(dir.fpdus, |u| {
            got.push(u.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", dir.what));
    assert_eq!(n, dir.fpdus.len());
    (got, d)
}

#[test]
fn captures_hold_the_expected_connections() {
    let conns = mpa_connections();
    if support::captures_dir().is_none() {
        return;
    }
    // Ten files; perftest adds a second connection (control QP) per run.
    assert!(conns.len() >= 10, "found {}", conns.len());
    for c in &conns {
        assert!(!c.directions()[0].fpdus.is_empty(), "{}: no FPDUs", c.what);
    }
}

#[test]
fn request_and_reply_frames_reemit_byte_for_byte() {
    for c in mpa_connections() {
        for (stream, len) in [
            (&c.conn.client_stream, c.request_len),
            (&c.conn.server_stream, c.reply_len),
        ] {
            let (repr, _) = FrameRepr::parse_bytes(stream).expect("parses");
            let mut out = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut mpa::wire::Frame::new_unchecked(&mut out[..]))
                .expect("emits");
            assert_eq!(out, stream[..len], "{}", c.what);
        }
    }
}

#[test]
fn frames_match_the_build_that_made_each_capture() {
    for c in mpa_connections() {
        let (req, rep) = (c.request(), c.reply());
        let file = c.what.split(' ').next().unwrap_or_default();
        assert!(!req.markers && !rep.markers, "siw never does markers");
        assert!(!rep.reject, "{}", c.what);
        if file.contains("mpav1") {
            assert_eq!((req.rev, rep.rev), (1, 1));
            assert!(req.enhanced.is_none());
        } else {
            assert_eq!((req.rev, rep.rev), (2, 2), "{}", c.what);
            assert!(req.enhanced.is_some() && rep.enhanced.is_some());
        }
        let crc_build = file.contains("crc") || file.contains("cxgb") || file.contains("mpav1");
        assert_eq!(rep.crc, crc_build, "{}", c.what);
        let p2p = rep.enhanced.is_some_and(|b| b.peer_to_peer);
        assert_eq!(p2p, file.contains("cxgb"), "{}", c.what);
    }
}

#[test]
fn every_fpdu_stream_deframes_cleanly() {
    let mut crc_directions = 0;
    let mut fpdus = 0;
    for c in mpa_connections() {
        for dir in c.directions() {
            let (ulpdus, d) = deframe(&dir);
            assert!(d.is_idle(), "{}: ends mid-FPDU", dir.what);
            for u in &ulpdus {
                // DDP version 1 in byte 0, RDMAP version 1 in byte 1: the
                // framing lined up with every header.
                assert!(u.len() >= 14, "{}", dir.what);
                assert_eq!(u[0] & 0x03, 1, "{}: DDP version", dir.what);
                assert_eq!(u[1] >> 6, 1, "{}: RDMAP version", dir.what);
            }
            fpdus += ulpdus.len();
            if dir.crc && !ulpdus.is_empty() {
                crc_directions += 1;
            }
        }
    }
    if support::captures_dir().is_some() {
        assert!(
            crc_directions >= 8,
            "CRC checked on {crc_directions} directions"
        );
        assert!(fpdus > 100, "{fpdus} FPDUs");
    }
}

/// siw does not always zero the pad: on the wire its pad octets can carry
/// stale bytes (seen with CRC off in perftest-read.pcap). RFC 5044 has the
/// receiver ignore them; the CRC, when on, covers them. Our framer always
/// sends zeros, so FPDUs with a dirty pad are compared without it.
#[test]
fn every_captured_fpdu_is_reproduced_by_the_framer() {
    let mut dirty_pads = 0;
    let mut exact = 0;
    for c in mpa_connections() {
        for dir in c.directions() {
            let (ulpdus, _) = deframe(&dir);
            let mut framer = Framer::new(dir.crc, dir.markers);
            let mut at = 0;
            for (k, u) in ulpdus.iter().enumerate() {
                let mut out = vec![0xa5u8; framer.fpdu_len(u.len()) + 3];
                let n = framer
                    .frame(&u[..14], &u[14..], &mut out)
                    .unwrap_or_else(|e| panic!("{}: {e}", dir.what));
                assert_eq!(&out[n..], &[0xa5; 3]);
                let captured = &dir.fpdus[at..at + n];
                let pad = mpa::framing::markers::pad_len(u.len());
                let pad_range = 2 + u.len()..2 + u.len() + pad;
                if captured[pad_range.clone()].iter().all(|&b| b == 0) {
                    assert!(out[..n] == *captured, "{}: FPDU {k} differs", dir.what);
                    exact += 1;
                } else {
                    dirty_pads += 1;
                    assert_eq!(
                        out[..pad_range.start],
                        captured[..pad_range.start],
                        "{}: FPDU {k}",
                        dir.what
                    );
                    assert!(out[pad_range.clone()].iter().all(|&b| b == 0));
                    if !dir.crc {
                        assert_eq!(
                            out[pad_range.end..n],
                            captured[pad_range.end..],
                            "{}: FPDU {k}",
                            dir.what
                        );
                    }
                }
                at += n;
            }
            assert_eq!(at, dir.fpdus.len());
        }
    }
    println!("{exact} FPDUs reproduced byte for byte, {dirty_pads} with a non-zero pad from siw");
    if support::captures_dir().is_some() {
        assert!(exact > 100);
    }
}

#[test]
fn fpdus_fit_the_mss_of_the_receiver() {
    for c in mpa_connections() {
        for (dir, mss) in c
            .directions()
            .into_iter()
            .zip([c.conn.server_mss, c.conn.client_mss])
        {
            let Some(mss) = mss else { continue };
            let (ulpdus, _) = deframe(&dir);
            let framer = Framer::new(dir.crc, dir.markers);
            for u in &ulpdus {
                assert!(
                    framer.fpdu_len(u.len()) <= usize::from(mss),
                    "{}: {} > MSS {mss}",
                    dir.what,
                    u.len()
                );
            }
            assert!(ulpdus
                .iter()
                .all(|u| u.len() <= framer.max_ulpdu(usize::from(mss)) + 8));
        }
    }
}

#[test]
fn multi_segment_stream_split_at_every_offset() {
    let conns = mpa_connections();
    let Some(c) = conns.iter().find(|c| c.what.starts_with("rping-crc-8k")) else {
        return;
    };
    let dir = &c.directions()[1];
    let (expected, _) = deframe(dir);
    // The first few kilobytes hold FPDUs of every size seen.
    let stream = &dir.fpdus[..dir.fpdus.len().min(12_000)];
    let mut whole = Deframer::new(dir.crc, false, 65535);
    let mut count = 0;
    whole
        .feed(stream, |_| {
            count += 1;
            ControlFlow::Continue(())
        })
        .expect("ok");
    println!("{}: {count} FPDUs in {} bytes", dir.what, stream.len());
    for cut in (0..=stream.len()).step_by(7).chain([stream.len()]) {
        let mut d = Deframer::new(dir.crc, false, 65535);
        let mut got: Vec<Vec<u8>> = Vec::new();
        for part in [&stream[..cut], &stream[cut..]] {
            d.feed(part, |u| {
                got.push(u.to_vec());
                ControlFlow::Continue(())
            })
            .expect("ok");
        }
        assert_eq!(got.len(), count);
        assert_eq!(&got[..], &expected[..count], "cut at {cut}");
    }
}

#[test]
fn every_bit_flip_in_a_captured_fpdu_is_caught() {
    let conns = mpa_connections();
    let Some(c) = conns.iter().find(|c| c.what.starts_with("rping-crc.pcap")) else {
        return;
    };
    let dir = &c.directions()[0];
    // First two FPDUs: a SEND and a READ response.
    let stream = &dir.fpdus[..40 + 84];
    for bit in 0..stream.len() * 8 {
        let mut bad = stream.to_vec();
        bad[bit / 8] ^= 1 << (bit % 8);
        let mut d = Deframer::new(true, false, 65535);
        let mut got = Vec::new();
        let r = d.feed(&bad, |u| {
            got.push(u.to_vec());
            ControlFlow::Continue(())
        });
        let first_fpdu_hit = bit / 8 < 40;
        // The undamaged FPDU before the flip still comes out; the damaged
        // one never does.
        assert_eq!(got.len(), usize::from(!first_fpdu_hit), "bit {bit}");
        assert!(r.is_err() || !d.is_idle(), "bit {bit}");
    }
}

#[test]
fn terminate_in_the_mismatch_capture() {
    let conns = mpa_connections();
    let Some(c) = conns
        .iter()
        .find(|c| c.what.starts_with("rping-mismatch-crc"))
    else {
        return;
    };
    let terminates: usize = c
        .directions()
        .iter()
        .map(|dir| deframe(dir).0.iter().filter(|u| u[1] & 0x0f == 7).count())
        .sum();
    assert!(terminates >= 1, "a TERMINATE is on the wire");
}

/// Our Responder, set up like the siw build that made the capture, answers
/// the captured Request with the captured Reply; our Initiator sends the
/// captured Request and accepts the captured Reply, leaving the FPDUs that
/// follow it untouched.
#[test]
fn start_up_replays_against_every_capture() {
    let now = Instant::now();
    for c in mpa_connections() {
        let (req, rep) = (c.request(), c.reply());
        let crc = |asks: bool| {
            if asks {
                CrcPolicy::Required
            } else {
                CrcPolicy::Off
            }
        };

        let rcfg = ResponderConfig {
            max_rev: 2,
            crc: crc(rep.crc && !req.crc),
            ..ResponderConfig::default()
        };
        let mut resp = Startup::responder(rcfg, now).expect("config");
        let consumed = resp
            .handle_bytes(&c.conn.client_stream[..c.request_len], now)
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        assert_eq!(consumed, c.request_len);
        let block = rep.enhanced.unwrap_or_default();
        resp.accept(
            ReplyParams {
                ird: block.ird,
                ord: block.ord,
                private_data: rep.private_data.to_vec(),
            },
            now,
        )
        .expect("accept");
        let mut reply = Vec::new();
        resp.poll_transmit(&mut reply);
        assert_eq!(
            reply,
            c.conn.server_stream[..c.reply_len],
            "{}: our Reply",
            c.what
        );

        let block = req.enhanced.unwrap_or_default();
        let icfg = InitiatorConfig {
            rev: req.rev,
            crc: crc(req.crc),
            ird: block.ird,
            ord: block.ord,
            peer_to_peer: block
                .peer_to_peer
                .then_some(block.rtr)
                .filter(|s: &RtrSet| !s.is_empty()),
            private_data: req.private_data.to_vec(),
            ..InitiatorConfig::default()
        };
        let mut init = Startup::initiator(icfg, now).expect("config");
        let mut request = Vec::new();
        init.poll_transmit(&mut request);
        assert_eq!(
            request,
            c.conn.client_stream[..c.request_len],
            "{}: our Request",
            c.what
        );
        let consumed = init
            .handle_bytes(&c.conn.server_stream, now)
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
        assert_eq!(
            consumed, c.reply_len,
            "{}: FPDUs after the Reply are left alone",
            c.what
        );
        let Some(StartupEvent::Established(n)) = init.poll_event() else {
            panic!("{}: not established", c.what);
        };
        assert_eq!(n.crc, rep.crc);
    }
}
