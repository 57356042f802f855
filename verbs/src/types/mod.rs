//! The plain data of the verbs API: parameters, events, completions,
//! states, work requests and errors. Values only, no handles and no
//! behaviour that needs a device, so every other module may use them and
//! they use none of those modules.

mod completion;
mod connect_error;
mod connection;
mod error;
mod queue_pair;
mod srq;
mod work_request;

pub(crate) use completion::PLACEHOLDER;
pub use completion::{WcOpcode, WcStatus, WorkCompletion};
pub use connect_error::{ConnectError, MpaFailure, MpaSettingsError};
pub use connection::{
    AcceptParams, CmEvent, ConnectParams, ConnectionInfo, CrcPolicy, DisconnectReason,
    ListenOptions, MpaOptions, Rtr, RtrSet,
};
pub use error::{PostListError, VerbsError};
pub(crate) use queue_pair::QpLimits;
pub use queue_pair::{QpCap, QpState};
pub use srq::{SrqAttr, SrqEvent, SrqInit, MAX_SRQ_SGE, MAX_SRQ_WR};
pub use work_request::{wr, AtomicArgs, AtomicOp, RecvWr, STag, SendOp, SendWr, Sge};
