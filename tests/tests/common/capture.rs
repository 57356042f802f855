//! An in-memory pcap a transport records into, and what our own decoder
//! makes of it.

use std::io::Write;
use std::sync::{Arc, Mutex};

use capture::pcap::PcapSink;
use capture::reassembly::Direction;
use iwarp_decode::{decode, Event, Fpdu, Summary};

/// A shared byte buffer a [`PcapSink`] writes straight into (no
/// buffering, so the bytes are complete whenever the test looks).
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    pub fn sink(&self) -> PcapSink {
        PcapSink::new(Box::new(self.clone())).expect("pcap header into memory")
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Decodes with the `iwarp decode` library.
    pub fn decode(&self) -> (Vec<Event>, Summary) {
        let bytes = self.bytes();
        let mut events = Vec::new();
        let summary = decode(&bytes[..], &mut |e| events.push(e.clone()));
        (events, summary)
    }

    /// Writes the capture to a fresh file in the temporary directory.
    pub fn to_file(&self, name: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("{name}-{}.pcap", std::process::id()));
        std::fs::write(&path, self.bytes()).expect("writing the capture");
        path
    }
}

/// The FPDUs of decoded events, in capture order.
pub fn fpdus(events: &[Event]) -> Vec<Fpdu> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fpdu(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

/// A TERMINATE as decoded from the wire: who sent it and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireTerminate {
    /// Sent by the connection's client (initiator).
    pub from_client: bool,
    pub layer: u8,
    pub etype: u8,
    pub code: u8,
}

/// Every TERMINATE in the capture.
pub fn terminates(events: &[Event]) -> Vec<WireTerminate> {
    fpdus(events)
        .iter()
        .filter_map(|f| {
            let t = f.terminate.as_ref()?;
            Some(WireTerminate {
                from_client: f.at.direction == Direction::ClientToServer,
                layer: t.control.layer,
                etype: t.control.etype,
                code: t.control.code,
            })
        })
        .collect()
}
