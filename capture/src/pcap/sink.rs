//! Recording a transport's frames as a classic pcap file (LINKTYPE_ETHERNET).
//!
//! Every transport records through a [`PcapSink`]: the smoltcp transports
//! record the Ethernet frames their device sends and receives, the kernel
//! transport records Ethernet/IPv4/TCP frames it synthesizes for the bytes
//! it writes and reads. Frames are stamped from the `Instant`s the caller
//! passes to `poll`, mapped onto the wall clock once, so a capture taken
//! under virtual time is still deterministic.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{LinkType, PcapWriter, Timestamp};

/// A capture a transport writes into: writer, clock mapping, first error.
///
/// Recording happens inside `poll`, which cannot fail; the first write error
/// stops the capture and is kept for [`PcapSink::error`].
pub struct PcapSink {
    writer: PcapWriter<Box<dyn Write + Send>>,
    wall_base: Duration,
    instant_base: Option<Instant>,
    error: Option<io::Error>,
    frames: u64,
}

impl std::fmt::Debug for PcapSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapSink")
            .field("frames", &self.frames)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl PcapSink {
    /// Creates (truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = File::create(path)?;
        Self::new(Box::new(BufWriter::with_capacity(1 << 16, file)))
    }

    /// Records into any writer, stamping frames from the current wall clock.
    pub fn new(out: Box<dyn Write + Send>) -> io::Result<Self> {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self::with_wall_base(out, wall)
    }

    /// Records into any writer; the first `Instant` seen is stamped
    /// `wall_base` after the Unix epoch (fixed bases make captures
    /// reproducible byte for byte).
    pub fn with_wall_base(out: Box<dyn Write + Send>, wall_base: Duration) -> io::Result<Self> {
        Ok(PcapSink {
            writer: PcapWriter::new(out, LinkType::ETHERNET)?,
            wall_base,
            instant_base: None,
            error: None,
            frames: 0,
        })
    }

    /// Records one frame seen at `now`.
    pub fn record(&mut self, now: Instant, frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let base = *self.instant_base.get_or_insert(now);
        let ts = self.wall_base + now.saturating_duration_since(base);
        let ts = Timestamp::new(ts.as_secs(), ts.subsec_nanos());
        match self.writer.packet(ts, frame) {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The write error that stopped the capture, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Pushes buffered records to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        self.writer.flush()
    }
}

impl Drop for PcapSink {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{CaptureReader, Format};
    use std::sync::{Arc, Mutex};

    /// A `Write` whose bytes the test can still read after handing it over.
    #[derive(Clone, Default)]
    struct SharedBuf(Arc<Mutex<Vec<u8>>>);

    impl Write for SharedBuf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Every record: time since the epoch, original length, bytes.
    fn records(bytes: &[u8]) -> Vec<(Duration, u32, Vec<u8>)> {
        let mut r = CaptureReader::new(bytes).unwrap();
        assert!(matches!(r.format(), Format::Pcap(h) if h.link == LinkType::ETHERNET));
        let mut out = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            let t = Duration::new(p.timestamp.secs(), p.timestamp.subsec_nanos());
            out.push((t, p.original_len, p.data.to_vec()));
        }
        out
    }

    #[test]
    fn sink_stamps_relative_to_first_instant() {
        let buf = SharedBuf::default();
        let base = Duration::from_secs(1_700_000_000);
        let mut sink = PcapSink::with_wall_base(Box::new(buf.clone()), base).unwrap();
        let t0 = Instant::now();
        sink.record(t0, &[1]);
        sink.record(t0 + Duration::from_micros(1_500_250), &[2, 2]);
        assert_eq!(sink.frames(), 2);
        sink.flush().unwrap();
        let recs = records(&buf.0.lock().unwrap());
        assert_eq!(recs[0].0, base);
        assert_eq!(recs[1].0, base + Duration::from_micros(1_500_250));
        assert_eq!(recs[1].2, vec![2, 2]);
    }

    struct FailingWriter;
    impl Write for FailingWriter {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn sink_keeps_first_error_and_stops() {
        // The header write fails straight away.
        assert!(PcapSink::with_wall_base(Box::new(FailingWriter), Duration::ZERO).is_err());
        // A writer that fails later: header fits, records do not.
        struct Budget(usize);
        impl Write for Budget {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 < b.len() {
                    return Err(io::Error::other("full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = PcapSink::with_wall_base(Box::new(Budget(24)), Duration::ZERO).unwrap();
        let now = Instant::now();
        sink.record(now, &[0; 10]);
        sink.record(now, &[0; 10]);
        assert_eq!(sink.frames(), 0);
        assert!(sink.error().is_some());
        assert!(sink.flush().is_err());
    }

    #[test]
    fn create_writes_a_readable_file() {
        let path = std::env::temp_dir().join(format!("iwarp-pcap-{}.pcap", std::process::id()));
        {
            let mut sink = PcapSink::create(&path).unwrap();
            sink.record(Instant::now(), &[9; 60]);
        }
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let recs = records(&bytes);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].2, vec![9; 60]);
    }
}
