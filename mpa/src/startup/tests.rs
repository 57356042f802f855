//! Start-up conversations between the two roles, and against captured siw
//! frames.

use super::*;
use crate::negotiate::CrcPolicy;
use crate::test_util::hex;
use crate::wire::RtrSet;
use std::time::Duration;

fn t0() -> Instant {
    Instant::now()
}

fn events(s: &mut Startup) -> Vec<StartupEvent> {
    core::iter::from_fn(|| s.poll_event()).collect()
}

fn take_tx(s: &mut Startup) -> Vec<u8> {
    let mut v = Vec::new();
    s.poll_transmit(&mut v);
    v
}

/// How a conversation ended, for each side.
#[derive(Debug)]
struct Outcome {
    initiator: Vec<StartupEvent>,
    responder: Vec<StartupEvent>,
    init: Startup,
    resp: Startup,
}

impl Outcome {
    fn established(&self) -> (&Negotiated, &Negotiated) {
        match (&self.initiator[..], &self.responder[..]) {
            (
                [StartupEvent::Established(a)],
                [StartupEvent::RequestReceived { .. }, StartupEvent::Established(b)],
            ) => (a, b),
            _ => panic!("not established: {self:?}"),
        }
    }
}

/// Runs a whole exchange; the responder's application accepts with
/// `params` (or rejects with `reject`).
fn converse(
    icfg: InitiatorConfig,
    rcfg: ResponderConfig,
    params: ReplyParams,
    reject: Option<&[u8]>,
) -> Outcome {
    let now = t0();
    let mut init = Startup::initiator(icfg, now).expect("initiator config");
    let mut resp = Startup::responder(rcfg, now).expect("responder config");
    let request = take_tx(&mut init);
    let _ = resp.handle_bytes(&request, now);
    let mut responder = events(&mut resp);
    if resp.is_awaiting_decision() {
        match reject {
            Some(pd) => resp.reject(pd, now).expect("reject"),
            None => resp.accept(params, now).expect("accept"),
        }
        responder.extend(events(&mut resp));
    }
    let reply = take_tx(&mut resp);
    if !reply.is_empty() {
        let _ = init.handle_bytes(&reply, now);
    }
    Outcome {
        initiator: events(&mut init),
        responder,
        init,
        resp,
    }
}

fn params(ird: u16, ord: u16) -> ReplyParams {
    ReplyParams {
        ird,
        ord,
        private_data: Vec::new(),
    }
}

#[test]
fn defaults_establish() {
    let o = converse(
        InitiatorConfig::default(),
        ResponderConfig::default(),
        params(16, 16),
        None,
    );
    let (i, r) = o.established();
    assert_eq!(i.role, Role::Initiator);
    assert_eq!(r.role, Role::Responder);
    assert!(i.crc && r.crc);
    assert_eq!((i.rev, r.rev), (2, 2));
    assert!(!i.markers_tx && !i.markers_rx && !r.markers_tx && !r.markers_rx);
    assert_eq!(i.rtr, None);
    assert!(o.init.is_established() && o.resp.is_established());
    assert_eq!(o.init.poll_timeout(), None);
}

#[test]
fn private_data_travels_both_ways() {
    let icfg = InitiatorConfig {
        private_data: b"from the initiator".to_vec(),
        ..InitiatorConfig::default()
    };
    let o = converse(
        icfg,
        ResponderConfig::default(),
        ReplyParams {
            ird: 1,
            ord: 1,
            private_data: b"from the responder".to_vec(),
        },
        None,
    );
    match &o.responder[0] {
        StartupEvent::RequestReceived {
            private_data,
            ird_ord,
            ..
        } => {
            assert_eq!(private_data, b"from the initiator");
            assert_eq!(ird_ord.map(|b| (b.ird, b.ord)), Some((16, 16)));
        }
        e => panic!("{e:?}"),
    }
    let (i, r) = o.established();
    assert_eq!(i.peer_private_data, b"from the responder");
    assert_eq!(r.peer_private_data, b"from the initiator");
}

#[test]
fn ird_ord_each_ord_limited_by_the_other_ird() {
    let icfg = InitiatorConfig {
        ird: 4,
        ord: 8,
        ..InitiatorConfig::default()
    };
    let o = converse(icfg, ResponderConfig::default(), params(2, 16), None);
    let (i, r) = o.established();
    assert_eq!((i.ird, i.ord), (4, 2));
    assert_eq!((r.ird, r.ord), (2, 4));
    assert_eq!(i.peer_ird_ord.map(|b| (b.ird, b.ord)), Some((2, 4)));
}

#[test]
fn zero_ird_ord_like_perftest() {
    let icfg = InitiatorConfig {
        ird: 0,
        ord: 0,
        ..InitiatorConfig::default()
    };
    let o = converse(icfg, ResponderConfig::default(), params(0, 0), None);
    let (i, r) = o.established();
    assert_eq!((i.ird, i.ord, r.ird, r.ord), (0, 0, 0, 0));
}

#[test]
fn every_revision_combination() {
    for irev in [1u8, 2] {
        for rmax in [1u8, 2] {
            for fallback in [false, true] {
                let icfg = InitiatorConfig {
                    rev: irev,
                    accept_rev1_reply: fallback,
                    ..InitiatorConfig::default()
                };
                let rcfg = ResponderConfig {
                    max_rev: rmax,
                    ..ResponderConfig::default()
                };
                let o = converse(icfg, rcfg, params(3, 3), None);
                let agreed = irev.min(rmax);
                if irev == 2 && rmax == 1 && !fallback {
                    // As siw: a rev-1 Reply to a rev-2 Request fails.
                    assert_eq!(
                        o.initiator,
                        vec![StartupEvent::Failed(StartupError::BadRev { rev: 1 })]
                    );
                    continue;
                }
                let (i, r) = o.established();
                assert_eq!((i.rev, r.rev), (agreed, agreed), "{irev} {rmax}");
                assert_eq!(i.peer_ird_ord.is_some(), agreed == 2);
                if agreed == 1 {
                    // No IRD/ORD exchange: each keeps its own.
                    assert_eq!((i.ird, i.ord), (16, 16));
                    assert_eq!((r.ird, r.ord), (3, 3));
                }
            }
        }
    }
}

#[test]
fn rev2_request_to_rev1_responder_keeps_the_block_as_private_data() {
    let icfg = InitiatorConfig {
        ird: 1,
        ord: 2,
        private_data: b"pd".to_vec(),
        accept_rev1_reply: true,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        max_rev: 1,
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    let (_, r) = o.established();
    assert_eq!(r.peer_private_data, vec![0, 1, 0, 2, b'p', b'd']);
}

/// Expected CRC outcome of an initiator/responder policy pair:
/// Some(crc) when established, None when refused.
fn crc_expectation(i: CrcPolicy, r: CrcPolicy) -> Option<bool> {
    let i_asks = i.asks();
    let r_asks = r.asks();
    if (i_asks && r == CrcPolicy::Never) || (r_asks && i == CrcPolicy::Never) {
        return None;
    }
    Some(i_asks || r_asks)
}

#[test]
fn every_crc_policy_combination() {
    use CrcPolicy::*;
    for ip in [Off, Preferred, Required, Never] {
        for rp in [Off, Preferred, Required, Never] {
            let icfg = InitiatorConfig {
                crc: ip,
                ..InitiatorConfig::default()
            };
            let rcfg = ResponderConfig {
                crc: rp,
                ..ResponderConfig::default()
            };
            let o = converse(icfg, rcfg, params(1, 1), None);
            match crc_expectation(ip, rp) {
                Some(crc) => {
                    let (i, r) = o.established();
                    assert_eq!((i.crc, r.crc), (crc, crc), "{ip:?} {rp:?}");
                }
                None if ip.asks() => {
                    // The responder refuses with a Reject reply.
                    assert_eq!(
                        o.responder,
                        vec![StartupEvent::Failed(StartupError::CrcRefused)]
                    );
                    assert!(
                        matches!(o.initiator[..], [StartupEvent::Rejected { .. }]),
                        "{ip:?} {rp:?}"
                    );
                }
                None => {
                    // The initiator refuses the Reply's C.
                    assert_eq!(
                        o.initiator,
                        vec![StartupEvent::Failed(StartupError::CrcRefused)]
                    );
                }
            }
        }
    }
}

#[test]
fn crc_required_initiator_refuses_a_reply_without_c() {
    // A non-compliant responder answering C=0: build its Reply by hand.
    let now = t0();
    let mut init = Startup::initiator(
        InitiatorConfig {
            crc: CrcPolicy::Required,
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    let reply = hex("4d504120494420526570204672616d65 10 02 0004 00100010");
    assert_eq!(
        init.handle_bytes(&reply, now),
        Err(StartupError::CrcRequired)
    );
    // Preferred goes on without CRC.
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    assert_eq!(init.handle_bytes(&reply, now), Ok(24));
    assert!(matches!(
        events(&mut init)[..],
        [StartupEvent::Established(Negotiated { crc: false, .. })]
    ));
}

#[test]
fn markers_in_each_direction() {
    for (imark, rmark) in [(false, false), (true, false), (false, true), (true, true)] {
        let icfg = InitiatorConfig {
            markers_rx: imark,
            ..InitiatorConfig::default()
        };
        let rcfg = ResponderConfig {
            markers_rx: rmark,
            ..ResponderConfig::default()
        };
        let o = converse(icfg, rcfg, params(1, 1), None);
        let (i, r) = o.established();
        assert_eq!((i.markers_rx, i.markers_tx), (imark, rmark));
        assert_eq!((r.markers_rx, r.markers_tx), (rmark, imark));
        // Each side's framer feeds the other's deframer.
        assert_eq!(i.framer().markers(), r.deframer(100).markers());
        assert_eq!(r.framer().markers(), i.deframer(100).markers());
    }
}

#[test]
fn responder_that_does_not_send_markers_rejects_like_siw() {
    let icfg = InitiatorConfig {
        markers_rx: true,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        markers_tx: false,
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    assert_eq!(
        o.responder,
        vec![StartupEvent::Failed(StartupError::MarkersRefused)]
    );
    assert_eq!(
        o.initiator,
        vec![StartupEvent::Rejected {
            private_data: vec![]
        }]
    );
}

#[test]
fn initiator_that_does_not_send_markers_refuses() {
    let icfg = InitiatorConfig {
        markers_tx: false,
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        markers_rx: true,
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    assert_eq!(
        o.initiator,
        vec![StartupEvent::Failed(StartupError::MarkersRefused)]
    );
}

#[test]
fn peer_to_peer_with_each_rtr_kind() {
    for rtr in [Rtr::Send, Rtr::Write, Rtr::Read] {
        let icfg = InitiatorConfig {
            peer_to_peer: Some(RtrSet::only(rtr)),
            ..InitiatorConfig::default()
        };
        let o = converse(icfg, ResponderConfig::default(), params(1, 1), None);
        let (i, r) = o.established();
        assert_eq!((i.rtr, r.rtr), (Some(rtr), Some(rtr)));
        let block = r.peer_ird_ord.expect("block");
        assert!(block.peer_to_peer);
        let reply_block = i.peer_ird_ord.expect("block");
        assert!(reply_block.peer_to_peer);
        assert_eq!(reply_block.rtr, RtrSet::only(rtr));
    }
}

#[test]
fn responder_prefers_write_then_read_then_send() {
    let cases = [
        (RtrSet::ALL, Rtr::Write),
        (RtrSet::only(Rtr::Read).intersection(RtrSet::ALL), Rtr::Read),
        (
            RtrSet {
                send: true,
                write: false,
                read: true,
            },
            Rtr::Read,
        ),
    ];
    for (offered, chosen) in cases {
        let icfg = InitiatorConfig {
            peer_to_peer: Some(offered),
            ..InitiatorConfig::default()
        };
        let o = converse(icfg, ResponderConfig::default(), params(1, 1), None);
        assert_eq!(o.established().0.rtr, Some(chosen));
    }
}

#[test]
fn responder_restricts_rtr_kinds() {
    let icfg = InitiatorConfig {
        peer_to_peer: Some(RtrSet::ALL),
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        rtr: RtrSet::only(Rtr::Send),
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    assert_eq!(o.established().1.rtr, Some(Rtr::Send));
}

#[test]
fn no_matching_rtr_is_rejected() {
    let icfg = InitiatorConfig {
        peer_to_peer: Some(RtrSet::only(Rtr::Send)),
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        rtr: RtrSet::only(Rtr::Write),
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    assert_eq!(
        o.responder,
        vec![StartupEvent::Failed(StartupError::NoMatchingRtr)]
    );
    assert!(matches!(o.initiator[..], [StartupEvent::Rejected { .. }]));
}

#[test]
fn responder_refusing_peer_to_peer() {
    let icfg = InitiatorConfig {
        peer_to_peer: Some(RtrSet::ALL),
        ..InitiatorConfig::default()
    };
    let rcfg = ResponderConfig {
        rtr: RtrSet::EMPTY,
        ..ResponderConfig::default()
    };
    let o = converse(icfg, rcfg, params(1, 1), None);
    assert_eq!(
        o.responder,
        vec![StartupEvent::Failed(StartupError::NoMatchingRtr)]
    );
}

#[test]
fn initiator_refuses_a_reply_without_its_rtr() {
    // siw issue: a Reply granting READ when only WRITE was offered, and a
    // Reply without the peer-to-peer bit (client/server model).
    let now = t0();
    for block in ["00010001", "80014001"] {
        let mut init = Startup::initiator(
            InitiatorConfig {
                peer_to_peer: Some(RtrSet::only(Rtr::Write)),
                ird: 1,
                ord: 1,
                ..InitiatorConfig::default()
            },
            now,
        )
        .expect("config");
        let reply = hex(&format!(
            "4d504120494420526570204672616d65 50 02 0004 {block}"
        ));
        assert_eq!(
            init.handle_bytes(&reply, now),
            Err(StartupError::NoMatchingRtr)
        );
        assert_eq!(StartupError::NoMatchingRtr.terminate_code(), Some((0, 7)));
        // Enough is known to frame the TERMINATE.
        assert!(init.negotiated().is_some_and(|n| n.crc));
    }
}

#[test]
fn insufficient_ird() {
    let now = t0();
    let mut init = Startup::initiator(
        InitiatorConfig {
            ird: 2,
            ord: 2,
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    // The Reply's ORD of 3 exceeds our IRD of 2.
    let reply = hex("4d504120494420526570204672616d65 50 02 0004 00020003");
    let e = init.handle_bytes(&reply, now).expect_err("refused");
    assert_eq!(
        e,
        StartupError::InsufficientIrd {
            our_ird: 2,
            peer_ord: 3
        }
    );
    assert_eq!(e.terminate_code(), Some((0, 6)));
    assert!(init.negotiated().is_some());
    assert_eq!(events(&mut init), vec![StartupEvent::Failed(e)]);
}

#[test]
fn rev2_reply_without_its_block() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let reply = hex("4d504120494420526570204672616d65 40 02 0000");
    assert_eq!(
        init.handle_bytes(&reply, now),
        Err(StartupError::MissingIrdOrd)
    );
}

#[test]
fn enhanced_flag_without_room_for_the_block() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0002 0001");
    assert_eq!(
        resp.handle_bytes(&request, now),
        Err(StartupError::MissingIrdOrd)
    );
    assert!(!resp.has_transmit(), "a malformed Request gets no Reply");
}

#[test]
fn application_rejects_with_private_data() {
    let o = converse(
        InitiatorConfig::default(),
        ResponderConfig::default(),
        params(1, 1),
        Some(b"go away"),
    );
    assert_eq!(
        o.initiator,
        vec![StartupEvent::Rejected {
            private_data: b"go away".to_vec()
        }]
    );
    assert!(o.resp.is_finished() && !o.resp.is_established());
    assert!(o.init.is_finished() && !o.init.is_established());
}

#[test]
fn reject_reply_shape() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0004 00010001");
    resp.handle_bytes(&request, now).expect("request");
    resp.reject(b"no", now).expect("reject");
    // R and C (our policy asks), rev 2, a zero IRD/ORD block, "no".
    assert_eq!(
        take_tx(&mut resp),
        hex("4d504120494420526570204672616d65 70 02 0006 00000000 6e6f")
    );
}

#[test]
fn oversized_private_data_is_a_config_error() {
    let now = t0();
    let cfg = InitiatorConfig {
        private_data: vec![0; 509],
        ..InitiatorConfig::default()
    };
    assert_eq!(
        Startup::initiator(cfg, now).err(),
        Some(ConfigError::PrivateDataTooLong { len: 509, max: 508 })
    );
    let cfg = InitiatorConfig {
        rev: 1,
        private_data: vec![0; 512],
        ..InitiatorConfig::default()
    };
    assert!(Startup::initiator(cfg, now).is_ok());
}

#[test]
fn peer_announcing_oversized_private_data() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0201");
    assert_eq!(
        resp.handle_bytes(&request, now),
        Err(StartupError::PrivateDataTooLong { pd_length: 513 })
    );
    assert_eq!(resp.error().and_then(|e| e.terminate_code()), Some((0, 4)));
}

#[test]
fn config_errors() {
    let now = t0();
    let bad = |cfg: InitiatorConfig| Startup::initiator(cfg, now).err();
    assert_eq!(
        bad(InitiatorConfig {
            rev: 3,
            ..InitiatorConfig::default()
        }),
        Some(ConfigError::BadRev(3))
    );
    assert_eq!(
        bad(InitiatorConfig {
            ird: 0x4000,
            ..InitiatorConfig::default()
        }),
        Some(ConfigError::IrdOrdOutOfRange(0x4000))
    );
    assert_eq!(
        bad(InitiatorConfig {
            peer_to_peer: Some(RtrSet::EMPTY),
            ..InitiatorConfig::default()
        }),
        Some(ConfigError::NoRtrKind)
    );
    assert_eq!(
        bad(InitiatorConfig {
            rev: 1,
            peer_to_peer: Some(RtrSet::ALL),
            ..InitiatorConfig::default()
        }),
        Some(ConfigError::PeerToPeerNeedsRev2)
    );
    assert_eq!(
        Startup::responder(
            ResponderConfig {
                max_rev: 0,
                ..ResponderConfig::default()
            },
            now
        )
        .err(),
        Some(ConfigError::BadRev(0))
    );
}

#[test]
fn accept_with_bad_params_changes_nothing() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0004 00010001");
    resp.handle_bytes(&request, now).expect("request");
    let _ = events(&mut resp);
    let too_long = ReplyParams {
        ird: 1,
        ord: 1,
        private_data: vec![0; 509],
    };
    assert!(matches!(
        resp.accept(too_long, now),
        Err(ConfigError::PrivateDataTooLong { .. })
    ));
    assert_eq!(
        resp.accept(params(0x4000, 1), now),
        Err(ConfigError::IrdOrdOutOfRange(0x4000))
    );
    assert!(resp.is_awaiting_decision() && !resp.has_transmit());
    resp.accept(params(1, 1), now).expect("now fine");
    assert!(resp.is_established());
    assert_eq!(resp.accept(params(1, 1), now), Err(ConfigError::WrongState));
    assert_eq!(resp.reject(&[], now), Err(ConfigError::WrongState));
}

#[test]
fn accept_on_an_initiator_is_misuse() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    assert_eq!(init.accept(params(1, 1), now), Err(ConfigError::WrongState));
}

#[test]
fn reply_timeout_is_ten_seconds_by_default() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    assert_eq!(init.poll_timeout(), Some(now + Duration::from_secs(10)));
    init.handle_timeout(now + Duration::from_millis(9999));
    assert!(events(&mut init).is_empty());
    init.handle_timeout(now + Duration::from_secs(10));
    assert_eq!(
        events(&mut init),
        vec![StartupEvent::Failed(StartupError::Timeout)]
    );
    assert_eq!(init.poll_timeout(), None);
    assert_eq!(init.error(), Some(StartupError::Timeout));
    assert_eq!(StartupError::Timeout.terminate_code(), None);
}

#[test]
fn request_timeout_is_five_seconds_by_default() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    assert_eq!(resp.poll_timeout(), Some(now + Duration::from_secs(5)));
    resp.handle_timeout(now + Duration::from_secs(6));
    assert_eq!(resp.error(), Some(StartupError::Timeout));
    // Later bytes repeat the error.
    assert_eq!(resp.handle_bytes(b"MPA", now), Err(StartupError::Timeout));
}

#[test]
fn no_timer_while_the_application_decides() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0004 00010001");
    resp.handle_bytes(&request, now).expect("request");
    assert_eq!(resp.poll_timeout(), None);
    resp.handle_timeout(now + Duration::from_secs(60));
    assert!(resp.is_awaiting_decision());
}

#[test]
fn custom_timeouts() {
    let now = t0();
    let init = Startup::initiator(
        InitiatorConfig {
            reply_timeout: Duration::from_millis(250),
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    assert_eq!(init.poll_timeout(), Some(now + Duration::from_millis(250)));
}

#[test]
fn bytes_after_the_reply_are_not_consumed() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let mut stream = hex("4d504120494420526570204672616d65 50 02 0004 00100010");
    // rping-crc.pcap frame 9: the server's first FPDU follows right behind.
    stream.extend(hex("002e414100000000000000010000000100000000bdb50f000000559028549f300000004056fcbf00000055c3f9fc437013d76a08"));
    assert_eq!(init.handle_bytes(&stream, now), Ok(24));
    assert!(init.is_established());
    assert_eq!(init.handle_bytes(&stream[24..], now), Ok(0));
}

#[test]
fn frames_split_at_every_offset() {
    let now = t0();
    let icfg = InitiatorConfig {
        private_data: b"0123456789".to_vec(),
        peer_to_peer: Some(RtrSet::ALL),
        ..InitiatorConfig::default()
    };
    let mut init = Startup::initiator(icfg.clone(), now).expect("config");
    let request = take_tx(&mut init);
    for cut in 0..=request.len() {
        let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
        let a = resp.handle_bytes(&request[..cut], now).expect("first part");
        let b = resp
            .handle_bytes(&request[cut..], now)
            .expect("second part");
        assert_eq!(a + b, request.len());
        assert!(resp.is_awaiting_decision(), "cut {cut}");
        resp.accept(params(1, 1), now).expect("accept");
        let mut reply = take_tx(&mut resp);
        let reply_len = reply.len();
        reply.extend_from_slice(&[0, 14, 0xc0]); // the start of an FPDU
        for cut2 in [0, 1, 17, 20, reply_len - 1, reply_len, reply_len + 2] {
            let mut init = Startup::initiator(icfg.clone(), now).expect("config");
            let _ = take_tx(&mut init);
            let a = init.handle_bytes(&reply[..cut2], now).expect("first part");
            let b = init.handle_bytes(&reply[a..], now).expect("second part");
            assert_eq!(a + b, reply_len);
            assert!(init.is_established());
        }
    }
}

#[test]
fn data_before_the_reply_is_a_protocol_error() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let mut stream = hex("4d504120494420526571204672616d65 10 02 0004 00010001");
    stream.extend_from_slice(&[0, 0x22]);
    assert_eq!(resp.handle_bytes(&stream, now), Ok(24));
    assert_eq!(
        resp.handle_bytes(&stream[24..], now),
        Err(StartupError::UnexpectedData)
    );
    assert_eq!(
        resp.handle_bytes(&[], now),
        Err(StartupError::UnexpectedData)
    );
}

#[test]
fn a_request_to_an_initiator_is_unexpected() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 10 02 0004 00010001");
    assert_eq!(
        init.handle_bytes(&request, now),
        Err(StartupError::UnexpectedFrame {
            expected: FrameKind::Reply,
            received: FrameKind::Request
        })
    );
}

#[test]
fn not_mpa_at_all() {
    let now = t0();
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    assert_eq!(
        resp.handle_bytes(b"SSH-2.0-OpenSSH", now),
        Err(StartupError::BadKey)
    );
    assert_eq!(
        events(&mut resp),
        vec![StartupEvent::Failed(StartupError::BadKey)]
    );
}

#[test]
fn request_revisions() {
    let now = t0();
    // Rev 0 is malformed: closed without a reply.
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    let request = hex("4d504120494420526571204672616d65 00 00 0000");
    assert_eq!(
        resp.handle_bytes(&request, now),
        Err(StartupError::BadRev { rev: 0 })
    );
    assert!(!resp.has_transmit());
}

#[test]
fn unknown_request_revision_is_rejected_and_closed() {
    // RFC 5044 section 7.1: a Responder that cannot interoperate at the
    // Request's revision closes; the Reject reply (at our revision) says why.
    let now = t0();
    for (max_rev, rev) in [(2u8, 3u8), (2, 0xff), (1, 3)] {
        let rcfg = ResponderConfig {
            max_rev,
            ..ResponderConfig::default()
        };
        let mut resp = Startup::responder(rcfg, now).expect("config");
        let request = hex(&format!(
            "4d504120494420526571204672616d65 10 {rev:02x} 0004 00010001"
        ));
        assert_eq!(
            resp.handle_bytes(&request, now),
            Err(StartupError::BadRev { rev })
        );
        assert_eq!(
            events(&mut resp),
            vec![StartupEvent::Failed(StartupError::BadRev { rev })]
        );
        assert!(!resp.is_awaiting_decision() && resp.is_finished());
        let reply = take_tx(&mut resp);
        let (repr, _) = FrameRepr::parse_bytes(&reply).expect("a Reply");
        assert_eq!(repr.kind, FrameKind::Reply);
        assert!(repr.reject);
        assert_eq!(repr.rev, max_rev);
        // The Reply carries the refusal: no TERMINATE after it.
        assert_eq!(resp.terminate(), None);
        // An initiator of ours reads it as a reject.
        let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
        let _ = take_tx(&mut init);
        let _ = init.handle_bytes(&reply, now);
        assert!(matches!(
            events(&mut init)[..],
            [StartupEvent::Rejected { .. }]
        ));
    }
}

#[test]
fn failures_with_an_rfc6581_code_ask_for_a_terminate() {
    let now = t0();
    // Insufficient IRD: framed as the Reply settled (CRC on).
    let mut init = Startup::initiator(
        InitiatorConfig {
            ird: 2,
            ord: 2,
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    let reply = hex("4d504120494420526570204672616d65 50 02 0004 00020003");
    assert!(init.handle_bytes(&reply, now).is_err());
    assert_eq!(
        init.terminate(),
        Some(StartupTerminate {
            etype: 0,
            code: 6,
            crc: true,
            markers: false
        })
    );
    // No matching RTR: code 7, CRC as the Reply said (off).
    let mut init = Startup::initiator(
        InitiatorConfig {
            peer_to_peer: Some(RtrSet::only(Rtr::Write)),
            ird: 1,
            ord: 1,
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    let reply = hex("4d504120494420526570204672616d65 10 02 0004 80014001");
    assert!(init.handle_bytes(&reply, now).is_err());
    assert_eq!(init.terminate().map(|t| (t.code, t.crc)), Some((7, false)));
    // A Reply that is not one: code 4, framed by our own CRC policy.
    for (crc, want) in [(CrcPolicy::Off, false), (CrcPolicy::Required, true)] {
        let mut init = Startup::initiator(
            InitiatorConfig {
                crc,
                ..InitiatorConfig::default()
            },
            now,
        )
        .expect("config");
        assert_eq!(
            init.handle_bytes(b"HTTP/1.1 400 Bad", now),
            Err(StartupError::BadKey)
        );
        assert_eq!(init.terminate().map(|t| (t.code, t.crc)), Some((4, want)));
    }
    // A Responder given garbage: code 4.
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    assert!(resp.handle_bytes(b"GET / HTTP/1.1\r\n", now).is_err());
    assert_eq!(resp.terminate().map(|t| (t.etype, t.code)), Some((0, 4)));
    // A timeout, a closed stream and a CRC refusal carry none.
    let mut resp = Startup::responder(ResponderConfig::default(), now).expect("config");
    resp.handle_timeout(now + Duration::from_secs(60));
    assert_eq!(resp.terminate(), None);
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    init.handle_peer_closed();
    assert_eq!(init.terminate(), None);
    let o = converse(
        InitiatorConfig {
            crc: CrcPolicy::Required,
            ..InitiatorConfig::default()
        },
        ResponderConfig {
            crc: CrcPolicy::Never,
            ..ResponderConfig::default()
        },
        params(1, 1),
        None,
    );
    assert_eq!(o.resp.terminate(), None);
}

#[test]
fn initiator_refuses_a_higher_reply_revision() {
    let now = t0();
    let mut init = Startup::initiator(
        InitiatorConfig {
            rev: 1,
            ..InitiatorConfig::default()
        },
        now,
    )
    .expect("config");
    let reply = hex("4d504120494420526570204672616d65 50 02 0004 00010001");
    assert_eq!(
        init.handle_bytes(&reply, now),
        Err(StartupError::BadRev { rev: 2 })
    );
}

#[test]
fn peer_closing_midway() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    init.handle_bytes(b"MPA ID Rep", now).expect("partial");
    init.handle_peer_closed();
    assert_eq!(
        events(&mut init),
        vec![StartupEvent::Failed(StartupError::PeerClosed)]
    );
    // After establishment a close is not a start-up matter.
    let o = converse(
        InitiatorConfig::default(),
        ResponderConfig::default(),
        params(1, 1),
        None,
    );
    let mut init = o.init;
    init.handle_peer_closed();
    assert!(init.is_established());
}

#[test]
fn transmit_into_a_small_buffer() {
    let now = t0();
    let mut init = Startup::initiator(InitiatorConfig::default(), now).expect("config");
    let mut out = [0u8; 10];
    assert_eq!(init.transmit_into(&mut out), 10);
    assert_eq!(&out, b"MPA ID Req");
    assert!(init.has_transmit());
    let mut rest = [0u8; 100];
    assert_eq!(init.transmit_into(&mut rest), 14);
    assert!(!init.has_transmit());
    assert_eq!(init.transmit_into(&mut rest), 0);
}

/// siw-compatible settings that reproduce the captured frames.
mod captures {
    use super::*;

    const REQ_DEFAULT: &str = "4d504120494420526571204672616d65 10 02 0004 00010001";
    const REP_DEFAULT: &str = "4d504120494420526570204672616d65 10 02 0004 00010001";
    const REQ_CRC: &str = "4d504120494420526571204672616d65 50 02 0004 00010001";
    const REP_CRC: &str = "4d504120494420526570204672616d65 50 02 0004 00010001";
    const REQ_CXGB: &str = "4d504120494420526571204672616d65 50 02 0004 8001c001";
    const REP_CXGB: &str = "4d504120494420526570204672616d65 50 02 0004 80018001";
    const REQ_V1: &str = "4d504120494420526571204672616d65 40 01 0000";
    const REP_V1: &str = "4d504120494420526570204672616d65 40 01 0000";

    fn siw_initiator(crc: CrcPolicy, rev: u8, p2p: Option<RtrSet>) -> InitiatorConfig {
        InitiatorConfig {
            rev,
            crc,
            ird: 1,
            ord: 1,
            peer_to_peer: p2p,
            ..InitiatorConfig::default()
        }
    }

    fn siw_responder(crc: CrcPolicy, rev: u8) -> ResponderConfig {
        ResponderConfig {
            max_rev: rev,
            crc,
            ..ResponderConfig::default()
        }
    }

    fn replay(
        icfg: InitiatorConfig,
        rcfg: ResponderConfig,
        req: &str,
        rep: &str,
    ) -> (Negotiated, Negotiated) {
        let now = t0();
        let mut init = Startup::initiator(icfg, now).expect("config");
        assert_eq!(
            take_tx(&mut init),
            hex(req),
            "our Request matches the capture"
        );
        let mut resp = Startup::responder(rcfg, now).expect("config");
        resp.handle_bytes(&hex(req), now).expect("captured Request");
        resp.accept(params(1, 1), now).expect("accept");
        assert_eq!(
            take_tx(&mut resp),
            hex(rep),
            "our Reply matches the capture"
        );
        assert_eq!(init.handle_bytes(&hex(rep), now), Ok(hex(rep).len()));
        let i = match events(&mut init).pop() {
            Some(StartupEvent::Established(n)) => n,
            e => panic!("{e:?}"),
        };
        let r = resp.negotiated().cloned().expect("established");
        (i, r)
    }

    #[test]
    fn rping_default() {
        let (i, r) = replay(
            siw_initiator(CrcPolicy::Off, 2, None),
            siw_responder(CrcPolicy::Off, 2),
            REQ_DEFAULT,
            REP_DEFAULT,
        );
        assert!(!i.crc && !r.crc);
        assert_eq!((i.ird, i.ord, r.ird, r.ord), (1, 1, 1, 1));
    }

    #[test]
    fn rping_crc() {
        let (i, _) = replay(
            siw_initiator(CrcPolicy::Required, 2, None),
            siw_responder(CrcPolicy::Required, 2),
            REQ_CRC,
            REP_CRC,
        );
        assert!(i.crc);
    }

    #[test]
    fn rping_cxgb_peer_to_peer() {
        let offered = RtrSet {
            send: false,
            write: true,
            read: true,
        };
        let (i, r) = replay(
            siw_initiator(CrcPolicy::Required, 2, Some(offered)),
            siw_responder(CrcPolicy::Required, 2),
            REQ_CXGB,
            REP_CXGB,
        );
        assert_eq!((i.rtr, r.rtr), (Some(Rtr::Write), Some(Rtr::Write)));
    }

    #[test]
    fn rping_mpav1() {
        let (i, r) = replay(
            siw_initiator(CrcPolicy::Required, 1, None),
            siw_responder(CrcPolicy::Required, 2),
            REQ_V1,
            REP_V1,
        );
        assert_eq!((i.rev, r.rev), (1, 1));
        assert_eq!(i.peer_ird_ord, None);
    }

    #[test]
    fn siw_initiator_request_with_default_crc_to_a_crc_responder() {
        // A siw default-build Request (C clear) to our CRC-requiring
        // Responder: the Reply turns CRC on.
        let now = t0();
        let mut resp =
            Startup::responder(siw_responder(CrcPolicy::Required, 2), now).expect("config");
        resp.handle_bytes(&hex(REQ_DEFAULT), now).expect("request");
        resp.accept(params(1, 1), now).expect("accept");
        assert_eq!(take_tx(&mut resp), hex(REP_CRC));
    }
}
