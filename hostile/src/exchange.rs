//! Legitimate rping exchanges as scripts: one ping as rping's client (to a
//! target that serves) or as rping's server (to a target that connects).
//! Run on a fresh connection after a hostile case, one shows the target is
//! still serving; its first half hands the hostile side a valid STag.
//!
//! rping's ping: the client advertises its source buffer in a Send, the
//! server RDMA READs it and answers with a Send; the client advertises its
//! sink buffer, the server RDMA WRITEs the data there and answers again.

use std::time::Duration;

use crate::build::{self, OUR_SINK, OUR_SOURCE};
use crate::script::{Learned, Step, Want};
use crate::target::Target;

/// The first half of rping's client side, after start-up: our source
/// advert, the target's Read of it answered, its go-ahead. The target's
/// Read Request names a buffer of its own (its sink) that later steps may
/// use with [`Learned`].
pub fn client_first_half() -> Vec<Step> {
    vec![
        Step::fpdu(build::send(1, &OUR_SOURCE.to_bytes(), true)),
        Step::Await(Want {
            read_requests: 1,
            ..Want::default()
        }),
        Step::Learned {
            what: Learned::AnswerRead,
            mangle: crate::script::Mangle::None,
        },
        Step::Await(Want {
            sends: 1,
            read_requests: 1,
            tagged: 0,
        }),
    ]
}

/// One whole ping as rping's client, then FIN.
pub fn client_ping(t: &Target) -> Vec<Step> {
    let mut s = vec![Step::StartUp(Box::new(t.initiator()))];
    s.extend(client_first_half());
    s.push(Step::fpdu(build::send(2, &OUR_SINK.to_bytes(), true)));
    s.push(Step::Await(Want {
        sends: 2,
        read_requests: 1,
        tagged: 1,
    }));
    s.push(Step::Fin);
    s
}

/// The first half of rping's server side, after start-up: the target's
/// source advert read (a valid STag with remote read access), our Read of
/// it, its data, our go-ahead.
pub fn server_first_half() -> Vec<Step> {
    vec![
        Step::Await(Want {
            sends: 1,
            ..Want::default()
        }),
        Step::Learned {
            what: Learned::ReadFromAdvert {
                msn: 1,
                offset: 0,
                extra: 0,
            },
            mangle: crate::script::Mangle::None,
        },
        Step::Await(Want {
            sends: 1,
            read_requests: 0,
            tagged: 1,
        }),
        Step::fpdu(go_ahead(1)),
    ]
}

/// One whole ping as rping's server; the target (rping's client) closes
/// once it has done its pings.
pub fn server_ping(t: &Target) -> Vec<Step> {
    let mut s = vec![Step::Accept(Box::new(t.responder()))];
    s.extend(server_first_half());
    s.push(Step::Await(Want {
        sends: 2,
        read_requests: 0,
        tagged: 1,
    }));
    s.push(Step::Learned {
        what: Learned::WriteToAdvert { offset: 0, len: 0 },
        mangle: crate::script::Mangle::None,
    });
    s.push(Step::fpdu(go_ahead(2)));
    // Give the client a moment to see the go-ahead before we close.
    s.push(Step::Pause(Duration::from_millis(200)));
    s.push(Step::Fin);
    s
}

/// rping's server "go ahead": 16 octets, all zero.
fn go_ahead(msn: u32) -> Vec<u8> {
    build::send(msn, &[0; 16], true)
}
