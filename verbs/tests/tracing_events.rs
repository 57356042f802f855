//! With the `tracing` feature: a TERMINATE is traced on both sides with
//! its layer, type and code, inside the connection's span.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use verbs::{wr, AcceptParams, ConnectParams, ListenOptions, QpInit};

const PORT: u16 = 4795;
const LONG: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_send_without_a_receive_traces_the_terminate_both_ways() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // Progress threads emit too: the subscriber is the process's.
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let (cfg, client, server, _threads) = common::linked_devices();
    let (cpd, spd) = (client.alloc_pd(), server.alloc_pd());
    let (ccq, scq) = (client.create_cq(8), server.create_cq(8));
    let cqp = client.create_qp(&cpd, QpInit::new(&ccq)).unwrap();
    let sqp = server.create_qp(&spd, QpInit::new(&scq)).unwrap();
    let listener = server.listen(PORT, ListenOptions::default()).unwrap();
    cqp.connect(cfg.endpoint_b(PORT), ConnectParams::default())
        .unwrap();
    listener
        .request(LONG)
        .unwrap()
        .accept(&sqp, AcceptParams::default())
        .unwrap();
    cqp.wait_established(LONG).unwrap();
    sqp.wait_established(LONG).unwrap();
    // The server posted no receive: the Send is refused with a TERMINATE.
    cqp.post_send(wr::send(1, vec![])).unwrap();
    // Both sides report the disconnect the TERMINATE caused.
    for qp in [&sqp, &cqp] {
        let ev = qp.wait_event(LONG);
        assert!(
            matches!(ev, Some(verbs::CmEvent::Disconnected { .. })),
            "{ev:?}"
        );
    }
    let text = || String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    let deadline = std::time::Instant::now() + LONG;
    while !text().contains("TERMINATE received") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let text = text();
    let line = |what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what:?} in:\n{text}"))
            .to_string()
    };
    let sent = line("TERMINATE sent");
    let received = line("TERMINATE received");
    // In the connection's span: the initiator's inside its queue pair's,
    // the responder's naming the queue pair that accepted it.
    assert!(received.contains("qp{num=1}:conn{"), "{received}");
    assert!(sent.contains("role=\"responder\" qp=1}"), "{sent}");
    for l in [&sent, &received] {
        assert!(l.contains("WARN") && l.contains(" qp=1 "), "{l}");
    }
    // The same triple both ways: DDP, untagged buffer error (type 2).
    assert!(sent.contains("by_peer=false") && received.contains("by_peer=true"));
    assert!(sent.contains("layer=Ddp etype=2"), "{sent}");
    let code = |l: &str| {
        l.split("code=")
            .nth(1)
            .map(|c| c.split(' ').next().map(str::to_owned))
    };
    assert_eq!(code(&sent), code(&received));
}
