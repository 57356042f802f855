//! Seeds for the `verbs_engine` target: its input layout
//! ([`EngineInput`]) and streams that reach each part of the endpoint,
//! built with the hostile-peer crate's message builders and aimed at the
//! endpoint's regions through the target's placeholders.

use ddp::STag;
use hostile::build;
use rdmap::wire::{ReadRequestRepr, TermControl};
use rdmap::Opcode;
use verbs::fuzzing::{PLACEHOLDER_STAG, PLACEHOLDER_TO, RECVS, SLOT};

use super::retarget::frame_all;
use super::seeds::Seed;
use super::synthetic::ulpdus;
use super::targets::Target;

/// A `verbs_engine` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInput {
    pub crc: bool,
    /// Peer-to-peer, the endpoint accepting any RTR (it picks WRITE).
    pub p2p: bool,
    /// The endpoint's IRD minus one, 0..=3.
    pub ird: u8,
    /// Receives posted to a shared receive queue.
    pub srq: bool,
    pub chunk_seed: u8,
    pub stream: Vec<u8>,
}

impl EngineInput {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![
            u8::from(self.crc)
                | u8::from(self.p2p) << 1
                | u8::from(self.srq) << 2
                | (self.ird & 3) << 4,
            self.chunk_seed,
        ];
        out.extend_from_slice(&self.stream);
        out
    }
}

/// The endpoint's regions, by the target's placeholder numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Region {
    Window = 1,
    Readable = 2,
    NoAccess = 3,
    ReadSink = 4,
}

/// The STag placeholder of `r`.
pub fn stag(r: Region) -> STag {
    let [a, b, c] = PLACEHOLDER_STAG;
    STag(u32::from_be_bytes([a, b, c, r as u8]))
}

/// The tagged-offset placeholder of `offset` octets into `r`.
pub fn to(r: Region, offset: u16) -> u64 {
    let [a, b, c] = PLACEHOLDER_TO;
    let [hi, lo] = offset.to_be_bytes();
    u64::from_be_bytes([a, b, c, r as u8, 0, 0, hi, lo])
}

/// Where the endpoint's own Read lands in its sink region.
pub const READ_SINK_OFFSET: u16 = 16;

/// The stream of `ulpdus`, its first chunk ending with the first FPDU.
pub fn input(crc: bool, ulpdus: &[Vec<u8>]) -> EngineInput {
    let first = ulpdus
        .first()
        .map_or(0, |u| frame_all(std::slice::from_ref(u), crc).len());
    EngineInput {
        crc,
        p2p: false,
        ird: 1,
        srq: false,
        chunk_seed: u8::try_from(first).unwrap_or(0),
        stream: frame_all(ulpdus, crc),
    }
}

/// Streams that each reach one thing the endpoint does.
pub fn aimed() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let data: Vec<u8> = (0..=255).collect();
    let send = |msn, len: usize| build::send(msn, &data[..len], true);
    let write = |r, off, len: usize| build::write(stag(r), to(r, off), &data[..len]);
    let read_request = |source, size| {
        build::read_request(
            1,
            ReadRequestRepr {
                sink_stag: STag(0x0000_6601),
                sink_to: 0x1000,
                size,
                source_stag: stag(source),
                source_to: to(source, 8),
            },
        )
    };
    let read_response = build::tagged(
        Opcode::ReadResponse,
        stag(Region::ReadSink),
        to(Region::ReadSink, READ_SINK_OFFSET),
        &data[..SLOT],
    );
    let terminate = build::terminate(
        1,
        TermControl {
            layer: 1,
            etype: 2,
            code: 1,
            ..TermControl::default()
        },
    );
    vec![
        ("send", vec![send(1, 16)]),
        // The Initiator speaks first; the endpoint's Read follows, then
        // the answer (the first chunk ends with the first FPDU).
        (
            "send-then-read-response",
            vec![send(1, 16), read_response.clone()],
        ),
        (
            "send-every-receive",
            (1..=RECVS as u32).map(|m| send(m, SLOT)).collect(),
        ),
        ("send-too-long", vec![send(1, SLOT + 1)]),
        ("send-then-msn-gap", vec![send(1, 8), send(3, 8)]),
        ("write-window", vec![write(Region::Window, 32, 64)]),
        ("write-window-end", vec![write(Region::Window, 192, 64)]),
        ("write-past-window", vec![write(Region::Window, 250, 64)]),
        ("write-no-access", vec![write(Region::NoAccess, 0, 16)]),
        ("write-read-only", vec![write(Region::Readable, 0, 16)]),
        ("read-readable", vec![read_request(Region::Readable, 64)]),
        ("read-window", vec![read_request(Region::Window, 32)]),
        ("read-no-access", vec![read_request(Region::NoAccess, 16)]),
        (
            "read-past-readable",
            vec![read_request(Region::Readable, 4096)],
        ),
        ("read-response-first", vec![read_response]),
        ("terminate", vec![send(1, 8), terminate]),
        (
            "everything",
            vec![
                send(1, 16),
                write(Region::Window, 0, 128),
                read_request(Region::Readable, 128),
                send(2, SLOT),
            ],
        ),
    ]
}

/// Every `verbs_engine` seed: the aimed streams with CRC off and on, one
/// stream per synthetic message shape, a peer-to-peer start, and an empty
/// stream.
pub fn engine_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    for crc in [false, true] {
        for (name, ulpdus) in aimed() {
            out.push(Seed::new(
                Target::VerbsEngine,
                format!("engine-{name}-crc{}", u8::from(crc)),
                input(crc, &ulpdus).encode(),
            ));
        }
    }
    for (name, u) in ulpdus() {
        out.push(Seed::new(
            Target::VerbsEngine,
            format!("engine-shape-{name}"),
            input(false, &[u]).encode(),
        ));
    }
    let rtr = build::write(STag(1), 0, &[]);
    let p2p = EngineInput {
        p2p: true,
        ..input(false, &[rtr, build::send(1, &[0x11; 16], true)])
    };
    out.push(Seed::new(
        Target::VerbsEngine,
        "engine-p2p-write-rtr",
        p2p.encode(),
    ));
    for (name, ulpdus) in aimed() {
        if name.starts_with("send") {
            let srq = EngineInput {
                srq: true,
                ..input(false, &ulpdus)
            };
            out.push(Seed::new(
                Target::VerbsEngine,
                format!("engine-srq-{name}"),
                srq.encode(),
            ));
        }
    }
    out.push(Seed::new(
        Target::VerbsEngine,
        "engine-empty",
        input(false, &[]).encode(),
    ));
    out
}
